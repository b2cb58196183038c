//! Concurrent misses of one key run one loader; counts stay exact.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use bytes::Bytes;
use strata_cache::{CacheKind, LoadError, Lookup, PrefixCache, build_cache};

use crate::{tail_key, value};

const THREADS: usize = 16;
/// Long enough that every thread reaches the cache while the loader runs;
/// a thread arriving later finds the value cached, which keeps the count.
const LOAD_TIME: Duration = Duration::from_millis(200);

/// THREADS threads call `get_or_load(key)` at once with `load`; returns
/// every thread's result and how many times a loader ran.
fn stampede(
    cache: &Arc<dyn PrefixCache>,
    key: &[u8],
    load: impl Fn(usize) -> Result<Option<Bytes>, LoadError> + Sync,
) -> (Vec<Result<Lookup, String>>, usize) {
    let calls = AtomicUsize::new(0);
    let barrier = Barrier::new(THREADS);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    cache
                        .get_or_load(key, &mut || {
                            let call = calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(LOAD_TIME);
                            load(call)
                        })
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    (results, calls.load(Ordering::SeqCst))
}

#[test]
fn concurrent_misses_run_the_loader_once() {
    for &kind in CacheKind::ALL {
        for key in [tail_key(77), vec![9], vec![]] {
            let cache = build_cache(kind, 1 << 20);
            let (results, calls) = stampede(&cache, &key, |_| Ok(Some(value(77, 300))));
            assert_eq!(calls, 1, "{kind} {key:?}: loader ran {calls} times");
            let mut loaded_here = 0;
            for result in &results {
                let lookup = result.as_ref().expect("loader never fails here");
                assert_eq!(lookup.value, Some(value(77, 300)), "{kind} {key:?}");
                loaded_here += usize::from(!lookup.hit);
            }
            assert_eq!(loaded_here, 1, "{kind} {key:?}");
            let stats = cache.stats();
            assert_eq!(
                (stats.hits, stats.misses, stats.inserts),
                (THREADS as u64 - 1, 1, 1),
                "{kind}"
            );
            assert_eq!(
                cache.get(&key),
                Some(value(77, 300)),
                "{kind} {key:?}: not cached"
            );
        }
    }
}

#[test]
fn an_absent_result_is_shared_but_not_cached() {
    for &kind in CacheKind::ALL {
        for key in [tail_key(5), vec![1, 2]] {
            let cache = build_cache(kind, 1 << 20);
            let (results, calls) = stampede(&cache, &key, |_| Ok(None));
            assert_eq!(calls, 1, "{kind} {key:?}: loader ran {calls} times");
            assert!(results.iter().all(|r| matches!(
                r,
                Ok(Lookup {
                    value: None,
                    hit: false
                })
            )));
            assert_eq!(cache.get(&key), None, "{kind} {key:?}");
            assert_eq!(
                cache.stats().entries,
                0,
                "{kind} {key:?}: absent value cached"
            );
            let mut again = 0;
            cache
                .get_or_load(&key, &mut || {
                    again += 1;
                    Ok(None)
                })
                .expect("load");
            assert_eq!(again, 1, "{kind}: None must not be cached");
        }
    }
}

#[test]
fn a_failed_load_is_reported_and_retried_by_one_waiter() {
    for &kind in CacheKind::ALL {
        for key in [tail_key(6), vec![4]] {
            let cache = build_cache(kind, 1 << 20);
            let (results, calls) = stampede(&cache, &key, |call| {
                if call == 0 {
                    Err("disk on fire at offset 42".into())
                } else {
                    Ok(Some(value(6, 20)))
                }
            });
            assert_eq!(calls, 2, "{kind} {key:?}: one failure, one retry");
            let errors: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
            assert_eq!(errors, ["disk on fire at offset 42"], "{kind} {key:?}");
            assert_eq!(cache.get(&key), Some(value(6, 20)), "{kind} {key:?}");
        }
    }
}

#[test]
fn concurrent_gets_and_inserts_lose_no_counts() {
    const PER_THREAD: u32 = 5_000;
    for &kind in CacheKind::ALL {
        let cache = build_cache(kind, 64 << 20);
        for i in 0..100 {
            cache.insert(&tail_key(i), value(i, 64));
        }
        std::thread::scope(|scope| {
            for t in 0..8u32 {
                let cache = &cache;
                scope.spawn(move || {
                    for i in 0..PER_THREAD {
                        let n = (i * 7 + t) % 200;
                        if cache.get(&tail_key(n)).is_none() {
                            cache.insert(&tail_key(1000 + t * PER_THREAD + i), value(n, 64));
                        }
                    }
                });
            }
        });
        let stats = cache.stats();
        assert_eq!(
            stats.hits + stats.misses,
            u64::from(8 * PER_THREAD),
            "{kind}: {stats:?}"
        );
        assert_eq!(stats.inserts, 100 + stats.misses, "{kind}: {stats:?}");
        assert_eq!(stats.entries, stats.inserts, "{kind}: {stats:?}");
    }
}
