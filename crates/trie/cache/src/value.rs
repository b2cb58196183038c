//! The state value cache: byte-weighted quick_cache shards holding the
//! newest value (or the known absence) of account, storage and code keys,
//! valid for one *view* of the state at a time.
//!
//! The cache describes exactly one committed state, its view (the storage
//! layer uses the block number and state root). Readers of that view are
//! served from it; readers of any other view (an older snapshot still in
//! use, a reader racing a commit) bypass it and read the tiers. A commit
//! moves the cache to the next view with [`ValueCache::advance`], writing
//! the block's values through under an exclusive gate, so that no entry
//! ever describes another state than the gate's view:
//!
//! - a loaded value is inserted only while the gate still shows the view it
//!   was loaded at (checked under the shared gate, so no commit overlaps
//!   the insert);
//! - a reader takes its value under the shared gate after checking the
//!   view, so it never sees a value written through for a later block.
//!
//! Readers never wait for the gate: while a commit holds it, they read the
//! tiers. While a prefetch runs ([`ValueCache::coalesce`]), concurrent
//! misses of one key are coalesced (quick_cache placeholders): one caller
//! loads, the others wait for its value, so a read that arrives while the
//! prefetch loads its key does not load it again. Otherwise a miss loads
//! and inserts without a placeholder, which costs a miss about half as
//! much (two concurrent misses of one key then both load it).

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::RwLock;
use quick_cache::sync::{Cache, GuardResult};
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};

use crate::stats::Counters;
use crate::{CacheStats, ENTRY_OVERHEAD};

/// Keys up to this many bytes are stored inline (a storage key is 52 bytes,
/// plus the storage layer's one-byte domain tag).
const INLINE: usize = 55;

/// A value-cache key, inline when short.
#[derive(Clone, PartialEq, Eq)]
enum ValueKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl ValueKey {
    #[inline]
    fn new(key: &[u8]) -> Self {
        if key.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            ValueKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            ValueKey::Heap(key.into())
        }
    }

    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self {
            ValueKey::Inline { len, bytes } => &bytes[..*len as usize],
            ValueKey::Heap(bytes) => bytes,
        }
    }
}

impl Hash for ValueKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.as_slice());
    }
}

/// A cached value: `None` records that the key holds nothing.
type Slot = Option<Bytes>;

#[derive(Clone)]
struct ByteWeighter;

impl Weighter<ValueKey, Slot> for ByteWeighter {
    /// The same figure as [`entry_weight`](crate::entry_weight); an absent
    /// value weighs its key and the overhead.
    fn weight(&self, key: &ValueKey, slot: &Slot) -> u64 {
        key.as_slice().len() as u64 + slot.as_ref().map_or(0, Bytes::len) as u64 + ENTRY_OVERHEAD
    }
}

/// Counts evictions: an entry dropped for room, not one replaced by an
/// insert of its own key (quick_cache reports both to `on_evict`).
#[derive(Clone)]
struct EvictionHook(Arc<Counters>);

impl Lifecycle<ValueKey, Slot> for EvictionHook {
    /// The key being inserted, whose old value is a replacement.
    type RequestState = Option<ValueKey>;

    fn on_evict(&self, inserting: &mut Option<ValueKey>, key: ValueKey, _slot: Slot) {
        if inserting.as_ref() != Some(&key) {
            self.0.evictions.add(1);
        }
    }
}

type Entries = Cache<ValueKey, Slot, ByteWeighter, DefaultHashBuilder, EvictionHook>;

/// What [`ValueCache::get_or_load`] answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueLookup {
    /// The value (`None`: the key holds nothing).
    pub value: Option<Bytes>,
    /// Where it came from.
    pub source: ValueSource,
}

/// Where a [`ValueLookup`]'s value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueSource {
    /// The cache held it (or a concurrent load of the same key shared it).
    Cache,
    /// This call's loader ran (a miss, or the cache serves another view).
    Loaded,
}

/// Newest values of state keys for one view of the state; see the module
/// documentation for how views keep readers of other states correct.
///
/// `V` identifies a state (the storage layer uses `(block, root)`). A cache
/// of capacity 0 holds nothing and every lookup loads.
pub struct ValueCache<V> {
    entries: Option<Entries>,
    /// The state the entries describe; `None` before the first `advance`.
    gate: RwLock<Option<V>>,
    /// Prefetches running: while above 0, misses are coalesced.
    coalescing: Arc<AtomicUsize>,
    counters: Arc<Counters>,
    capacity: u64,
}

/// Keeps a [`ValueCache`] coalescing concurrent misses until dropped.
#[derive(Debug)]
pub struct Coalescing(Arc<AtomicUsize>);

impl Drop for Coalescing {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<V: Copy + Eq> ValueCache<V> {
    /// Tail shards (quick_cache merges shards for small capacities).
    const SHARDS: usize = 64;

    /// Entry size assumed when sizing the tables: an account or slot key
    /// with a short value.
    const TYPICAL_ENTRY: u64 = 48 + 32 + ENTRY_OVERHEAD;

    /// An empty cache of `capacity_bytes` (weighed like
    /// [`entry_weight`](crate::entry_weight)), serving no view yet.
    pub fn new(capacity_bytes: u64) -> Self {
        let counters = Arc::new(Counters::new());
        let entries = (capacity_bytes > 0).then(|| {
            let estimated = (capacity_bytes / Self::TYPICAL_ENTRY).max(1);
            let options = OptionsBuilder::new()
                .shards(Self::SHARDS)
                .estimated_items_capacity(usize::try_from(estimated).unwrap_or(usize::MAX))
                .weight_capacity(capacity_bytes)
                .build()
                .expect("invariant: both required quick_cache options are set just above");
            Cache::with_options(
                options,
                ByteWeighter,
                DefaultHashBuilder::default(),
                EvictionHook(Arc::clone(&counters)),
            )
        });
        ValueCache {
            entries,
            gate: RwLock::new(None),
            coalescing: Arc::new(AtomicUsize::new(0)),
            counters,
            capacity: capacity_bytes,
        }
    }

    /// Coalesces concurrent misses of a key (one loads, the others wait)
    /// until the returned guard is dropped: for the time a prefetch runs.
    pub fn coalesce(&self) -> Coalescing {
        self.coalescing.fetch_add(1, Ordering::Relaxed);
        Coalescing(Arc::clone(&self.coalescing))
    }

    /// Whether the cache can hold anything (capacity above 0).
    pub fn is_enabled(&self) -> bool {
        self.entries.is_some()
    }

    /// The view the entries describe now.
    pub fn view(&self) -> Option<V> {
        *self.gate.read()
    }

    /// The cached value of `key` for a reader of `view`: `Some(value)` on a
    /// hit (`Some(None)`: known absent), `None` when not cached, when the
    /// cache serves another view, or while a commit moves it on.
    pub fn get(&self, view: V, key: &[u8]) -> Option<Option<Bytes>> {
        let entries = self.entries.as_ref()?;
        let gate = self.gate.try_read()?;
        if *gate != Some(view) {
            return None;
        }
        let found = entries.get(&ValueKey::new(key));
        drop(gate);
        self.counters.lookup(found.is_some());
        found
    }

    /// The value of `key` for a reader of `view`: from the cache, from a
    /// concurrent load of the same key (waited for), or from `load`, whose
    /// result is cached if the cache still serves `view`. A loader's error
    /// is returned as is and nothing is cached.
    pub fn get_or_load<E>(
        &self,
        view: V,
        key: &[u8],
        load: impl FnOnce() -> Result<Option<Bytes>, E>,
    ) -> Result<ValueLookup, E> {
        let loaded = |value| ValueLookup {
            value,
            source: ValueSource::Loaded,
        };
        let cached = |value| ValueLookup {
            value,
            source: ValueSource::Cache,
        };
        let Some(entries) = &self.entries else {
            return load().map(loaded);
        };
        let key = ValueKey::new(key);
        if self.coalescing.load(Ordering::Relaxed) == 0 {
            return self.load_uncoalesced(entries, view, key, load);
        }
        // First look without waiting on another caller's load.
        let guard = {
            let Some(gate) = self.gate.try_read() else {
                return load().map(loaded);
            };
            if *gate != Some(view) {
                return load().map(loaded);
            }
            match entries.get_value_or_guard(&key, Some(Duration::ZERO)) {
                GuardResult::Value(value) => {
                    self.counters.hits.add(1);
                    return Ok(cached(value));
                }
                GuardResult::Guard(guard) => Some(guard),
                GuardResult::Timeout => None,
            }
        };
        let guard = match guard {
            Some(guard) => guard,
            // Another caller is loading this key: wait for its value
            // outside the gate, then make sure no commit came between.
            None => match entries.get_value_or_guard(&key, None) {
                GuardResult::Value(value) => {
                    if self.gate.try_read().is_some_and(|gate| *gate == Some(view)) {
                        self.counters.hits.add(1);
                        return Ok(cached(value));
                    }
                    return load().map(loaded);
                }
                GuardResult::Guard(guard) => guard,
                GuardResult::Timeout => return load().map(loaded),
            },
        };
        self.counters.misses.add(1);
        let value = load()?;
        if let Some(gate) = self.gate.try_read()
            && *gate == Some(view)
        {
            let mut inserting = Some(key);
            if guard
                .insert_with_lifecycle(value.clone(), &mut inserting)
                .is_ok()
            {
                self.counters.inserts.add(1);
            }
        }
        // Otherwise the guard drops uninserted: a waiter loads for itself.
        Ok(loaded(value))
    }

    /// A lookup whose miss loads and inserts without a placeholder.
    fn load_uncoalesced<E>(
        &self,
        entries: &Entries,
        view: V,
        key: ValueKey,
        load: impl FnOnce() -> Result<Option<Bytes>, E>,
    ) -> Result<ValueLookup, E> {
        {
            let Some(gate) = self.gate.try_read() else {
                return load().map(|value| ValueLookup {
                    value,
                    source: ValueSource::Loaded,
                });
            };
            if *gate == Some(view)
                && let Some(value) = entries.get(&key)
            {
                drop(gate);
                self.counters.hits.add(1);
                return Ok(ValueLookup {
                    value,
                    source: ValueSource::Cache,
                });
            }
        }
        self.counters.misses.add(1);
        let value = load()?;
        if let Some(gate) = self.gate.try_read()
            && *gate == Some(view)
        {
            let mut inserting = Some(key.clone());
            entries.insert_with_lifecycle(key, value.clone(), &mut inserting);
            self.counters.inserts.add(1);
        }
        Ok(ValueLookup {
            value,
            source: ValueSource::Loaded,
        })
    }

    /// Moves the cache from view `from` to view `to`, writing `writes` (the
    /// values the new state gives their keys; `None`: deleted) through. If
    /// the cache did not serve `from` (a commit failed, an unwind
    /// happened), everything is dropped first, since its entries may
    /// describe another state. Readers read the tiers meanwhile.
    pub fn advance<K: AsRef<[u8]>>(
        &self,
        from: Option<V>,
        to: V,
        writes: impl IntoIterator<Item = (K, Option<Bytes>)>,
    ) {
        let mut gate = self.gate.write();
        if let Some(entries) = &self.entries {
            if *gate != from || from.is_none() {
                entries.clear();
            }
            for (key, value) in writes {
                let key = ValueKey::new(key.as_ref());
                let mut inserting = Some(key.clone());
                entries.insert_with_lifecycle(key, value, &mut inserting);
                self.counters.inserts.add(1);
            }
        }
        *gate = Some(to);
    }

    /// Drops every entry and serves `view` (`None`: no view until the next
    /// [`advance`](Self::advance)); statistics are kept.
    pub fn reset(&self, view: Option<V>) {
        let mut gate = self.gate.write();
        if let Some(entries) = &self.entries {
            entries.clear();
        }
        *gate = view;
    }

    /// Counters and occupancy.
    pub fn stats(&self) -> CacheStats {
        let (entries, weight) = self
            .entries
            .as_ref()
            .map_or((0, 0), |e| (e.len() as u64, e.weight()));
        self.counters.snapshot(entries, weight, self.capacity)
    }
}

impl<V> std::fmt::Debug for ValueCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueCache")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn load_ok(value: &'static [u8]) -> impl FnOnce() -> Result<Option<Bytes>, ()> {
        move || Ok(Some(Bytes::from_static(value)))
    }

    #[test]
    fn serves_only_its_view() {
        let cache = ValueCache::<u64>::new(1 << 20);
        // No view yet: loads, caches nothing.
        let first = cache.get_or_load(1, b"k", load_ok(b"v1")).unwrap();
        assert_eq!(first.source, ValueSource::Loaded);
        assert_eq!(cache.get(1, b"k"), None);

        cache.advance(None, 1, [] as [(&[u8], _); 0]);
        cache.get_or_load(1, b"k", load_ok(b"v1")).unwrap();
        assert_eq!(cache.get(1, b"k"), Some(Some(Bytes::from_static(b"v1"))));
        // A reader of another view never sees it.
        assert_eq!(cache.get(0, b"k"), None);
        assert_eq!(
            cache.get_or_load(0, b"k", load_ok(b"v0")).unwrap().value,
            Some(Bytes::from_static(b"v0"))
        );
        // The loaded value of view 0 was not cached over view 1's.
        assert_eq!(cache.get(1, b"k"), Some(Some(Bytes::from_static(b"v1"))));
    }

    #[test]
    fn advance_writes_through_and_hides_the_new_values_from_old_readers() {
        let cache = ValueCache::<u64>::new(1 << 20);
        cache.advance(None, 1, [(&b"a"[..], Some(Bytes::from_static(b"1")))]);
        cache.get_or_load(1, b"b", || Ok::<_, ()>(None)).unwrap();
        assert_eq!(cache.get(1, b"b"), Some(None), "absence is cached");
        cache.advance(
            Some(1),
            2,
            [
                (&b"a"[..], Some(Bytes::from_static(b"2"))),
                (&b"b"[..], Some(Bytes::from_static(b"new"))),
            ],
        );
        assert_eq!(cache.get(2, b"a"), Some(Some(Bytes::from_static(b"2"))));
        assert_eq!(cache.get(2, b"b"), Some(Some(Bytes::from_static(b"new"))));
        assert_eq!(cache.get(1, b"a"), None);
        assert_eq!(cache.stats().evictions, 0, "replacements are not evictions");
    }

    #[test]
    fn advancing_from_another_view_drops_everything() {
        let cache = ValueCache::<u64>::new(1 << 20);
        cache.advance(None, 5, [(&b"a"[..], Some(Bytes::from_static(b"1")))]);
        // The commit of 6 failed after moving the cache; 6 is committed again
        // on top of 5 with other values.
        cache.advance(Some(5), 6, [(&b"a"[..], Some(Bytes::from_static(b"x")))]);
        cache.advance(Some(5), 6, [(&b"b"[..], Some(Bytes::from_static(b"y")))]);
        assert_eq!(cache.get(6, b"a"), None, "the failed block's value is gone");
        assert_eq!(cache.get(6, b"b"), Some(Some(Bytes::from_static(b"y"))));
        cache.reset(Some(3));
        assert_eq!(cache.get(3, b"b"), None);
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn a_load_finishing_after_a_commit_is_not_cached() {
        let cache = ValueCache::<u64>::new(1 << 20);
        cache.advance(None, 1, [] as [(&[u8], _); 0]);
        let _prefetch = cache.coalesce();
        let looked = cache
            .get_or_load(1, b"k", || {
                // The commit of block 2 lands while this load reads block 1.
                cache.advance(Some(1), 2, [] as [(&[u8], _); 0]);
                Ok::<_, ()>(Some(Bytes::from_static(b"old")))
            })
            .unwrap();
        assert_eq!(looked.value, Some(Bytes::from_static(b"old")));
        assert_eq!(cache.get(2, b"k"), None);
    }

    #[test]
    fn concurrent_misses_of_one_key_load_once_while_coalescing() {
        let cache = Arc::new(ValueCache::<u64>::new(1 << 20));
        cache.advance(None, 1, [] as [(&[u8], _); 0]);
        let _prefetch = cache.coalesce();
        let loads = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, loads, barrier) = (cache.clone(), loads.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    cache
                        .get_or_load(1, b"hot", || {
                            loads.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(50));
                            Ok::<_, ()>(Some(Bytes::from_static(b"v")))
                        })
                        .unwrap()
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(thread.join().unwrap().value, Some(Bytes::from_static(b"v")));
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (7, 1));
    }

    #[test]
    fn without_coalescing_a_miss_loads_and_caches_and_old_views_stay_out() {
        let cache = ValueCache::<u64>::new(1 << 20);
        cache.advance(None, 1, [] as [(&[u8], _); 0]);
        assert_eq!(
            cache.get_or_load(1, b"k", load_ok(b"v")).unwrap().source,
            ValueSource::Loaded
        );
        assert_eq!(
            cache.get_or_load(1, b"k", load_ok(b"other")).unwrap(),
            ValueLookup {
                value: Some(Bytes::from_static(b"v")),
                source: ValueSource::Cache
            }
        );
        let looked = cache
            .get_or_load(1, b"late", || {
                cache.advance(Some(1), 2, [] as [(&[u8], _); 0]);
                Ok::<_, ()>(Some(Bytes::from_static(b"old")))
            })
            .unwrap();
        assert_eq!(looked.source, ValueSource::Loaded);
        assert_eq!(cache.get(2, b"late"), None);
        let guard = cache.coalesce();
        drop(guard);
        assert_eq!(cache.coalescing.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_failed_load_caches_nothing_and_a_zero_capacity_cache_holds_nothing() {
        let cache = ValueCache::<u64>::new(1 << 20);
        cache.advance(None, 1, [] as [(&[u8], _); 0]);
        assert_eq!(cache.get_or_load(1, b"k", || Err("disk")), Err("disk"));
        assert_eq!(cache.get(1, b"k"), None);

        let off = ValueCache::<u64>::new(0);
        off.advance(None, 1, [(&b"a"[..], Some(Bytes::from_static(b"1")))]);
        assert!(!off.is_enabled());
        assert_eq!(off.get(1, b"a"), None);
        assert_eq!(off.stats().entries, 0);
    }

    #[test]
    fn long_keys_work_and_capacity_bounds_the_bytes() {
        let cache = ValueCache::<u64>::new(64 << 10);
        cache.advance(None, 1, [] as [(&[u8], _); 0]);
        let long = [7u8; 200];
        cache
            .get_or_load(1, &long, load_ok(b"long key value"))
            .unwrap();
        assert_eq!(
            cache.get(1, &long),
            Some(Some(Bytes::from_static(b"long key value")))
        );
        for i in 0..10_000u32 {
            cache
                .get_or_load(1, &i.to_be_bytes(), || {
                    Ok::<_, ()>(Some(Bytes::from(vec![0u8; 100])))
                })
                .unwrap();
        }
        let stats = cache.stats();
        assert!(stats.weight_bytes <= 64 << 10, "{stats:?}");
        assert!(stats.evictions > 0, "{stats:?}");
    }
}
