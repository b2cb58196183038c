//! The warmup pool runs batches off the caller's thread, reports every
//! error, stops on cancel, and does nothing when disabled.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use strata_cache::{CacheKind, LoadError, WarmupJob, WarmupPool, build_cache};

use crate::{tail_key, value};

#[test]
fn warmers_fill_the_cache() {
    let pool = WarmupPool::new(4).expect("pool");
    assert_eq!(pool.warmers(), 4);
    let cache = build_cache(CacheKind::Sharded, 16 << 20);
    let names = Arc::new(Mutex::new(Vec::new()));
    let job: WarmupJob<u32> = {
        let cache = Arc::clone(&cache);
        let names = Arc::clone(&names);
        Arc::new(move |n: &u32| {
            let name = std::thread::current().name().map(str::to_owned);
            names.lock().map_err(|e| e.to_string())?.push(name);
            cache.get_or_load(&tail_key(*n), &mut || Ok(Some(value(*n, 100))))?;
            Ok(())
        })
    };
    let report = pool.warm((0..1000).collect(), job).wait();
    assert_eq!((report.items_total, report.items_done), (1000, 1000));
    assert!(report.errors.is_empty() && !report.cancelled);
    for n in 0..1000 {
        assert_eq!(cache.get(&tail_key(n)), Some(value(n, 100)));
    }
    let names = names.lock().expect("names");
    assert!(names.iter().all(|n| {
        n.as_deref()
            .is_some_and(|n| n.starts_with("strata-warmer-"))
    }));
}

#[test]
fn warm_returns_before_the_work_is_done() {
    let pool = WarmupPool::new(2).expect("pool");
    let gate = Arc::new(Barrier::new(2));
    let job: WarmupJob<()> = {
        let gate = Arc::clone(&gate);
        Arc::new(move |_: &()| {
            gate.wait();
            Ok(())
        })
    };
    // The job blocks until this thread reaches the barrier, which it can
    // only do once `warm` has returned.
    let ticket = pool.warm(vec![()], job);
    gate.wait();
    assert_eq!(ticket.wait().items_done, 1);
}

#[test]
fn errors_and_panics_are_reported_not_dropped() {
    let pool = WarmupPool::new(3).expect("pool");
    let job: WarmupJob<u32> = Arc::new(|n: &u32| -> Result<(), LoadError> {
        match n % 100 {
            7 => Err(format!("branch {n} unreadable").into()),
            13 => panic!("warmer bug at {n}"),
            _ => Ok(()),
        }
    });
    let report = pool.warm((0..500).collect(), job).wait();
    assert_eq!(report.items_done, 500);
    let items: Vec<_> = report.errors.iter().map(|f| f.item).collect();
    let expected: Vec<_> = (0..500).filter(|n| n % 100 == 7 || n % 100 == 13).collect();
    assert_eq!(items, expected);
    assert_eq!(
        report.errors[0].to_string(),
        "warmup item 7: branch 7 unreadable"
    );
    assert!(
        report.errors[1]
            .error
            .to_string()
            .contains("panicked: warmer bug at 13")
    );
    assert_eq!(pool.error_count(), 10);
}

#[test]
fn cancel_stops_claiming_items() {
    let pool = WarmupPool::new(2).expect("pool");
    let started = Arc::new(Barrier::new(3));
    let count = Arc::new(AtomicUsize::new(0));
    let job: WarmupJob<u32> = {
        let (started, count) = (Arc::clone(&started), Arc::clone(&count));
        Arc::new(move |n: &u32| {
            if *n < 2 {
                started.wait(); // both warmers hold an item
                started.wait(); // until the ticket is cancelled
            }
            count.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    };
    let ticket = pool.warm((0..10_000).collect(), job);
    started.wait();
    ticket.cancel();
    started.wait();
    let report = ticket.wait();
    assert!(report.cancelled);
    assert_eq!(report.items_done, 2, "only the items in flight finish");
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[test]
fn zero_warmers_disable_warmup() {
    let pool = WarmupPool::new(0).expect("pool");
    assert_eq!(pool.warmers(), 0);
    let ran = Arc::new(AtomicUsize::new(0));
    let job: WarmupJob<u32> = {
        let ran = Arc::clone(&ran);
        Arc::new(move |_: &u32| {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    };
    let report = pool.warm((0..100).collect(), job).wait();
    assert_eq!((report.items_total, report.items_done), (100, 0));
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn more_than_max_warmers_is_refused_before_any_thread_starts() {
    let err = WarmupPool::new(strata_cache::MAX_WARMERS + 1).unwrap_err();
    assert!(matches!(
        err,
        strata_cache::CacheError::TooManyWarmers {
            warmers: 1025,
            max: 1024
        }
    ));
    assert_eq!(
        err.to_string(),
        "1025 warmers asked for; at most 1024 are allowed"
    );
    let err = WarmupPool::new(usize::MAX).unwrap_err().to_string();
    assert!(err.contains(&usize::MAX.to_string()), "{err}");
}
