//! The engine's branch cache: quick_cache shards for the tail, lock-free
//! slots for the pinned top levels.

use std::sync::Arc;

use bytes::Bytes;
use quick_cache::sync::{Cache, GuardResult};
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};

use crate::key::PathKey;
use crate::pinned::{self, PinnedLevels};
use crate::stats::Counters;
use crate::{CacheKind, CacheStats, ENTRY_OVERHEAD, LoadError, Lookup, PrefixCache};

/// A tail entry. `None` only transiently: it hands a loader's "absent"
/// result to the callers waiting on its placeholder and is removed at once.
#[derive(Clone)]
struct Slot(Option<Bytes>);

#[derive(Clone)]
struct ByteWeighter;

impl Weighter<PathKey, Slot> for ByteWeighter {
    /// The same figure as [`entry_weight`](crate::entry_weight).
    fn weight(&self, key: &PathKey, slot: &Slot) -> u64 {
        let value = slot.0.as_ref().map_or(0, Bytes::len);
        key.len() as u64 + value as u64 + ENTRY_OVERHEAD
    }
}

/// Counts quick_cache's evictions (and its rejections of oversized entries).
#[derive(Clone)]
struct EvictionHook(Arc<Counters>);

/// What an insert tells the eviction hook: quick_cache hands a replaced
/// value to `on_evict` too, and a replacement is not an eviction.
#[derive(Default)]
struct Inserting {
    /// The key being inserted and the address of its new value's bytes.
    entry: Option<(PathKey, *const u8)>,
}

impl Lifecycle<PathKey, Slot> for EvictionHook {
    type RequestState = Inserting;

    fn on_evict(&self, state: &mut Inserting, key: PathKey, slot: Slot) {
        let Some(value) = slot.0 else { return };
        let replaced = state
            .entry
            .as_ref()
            // Same key, other bytes: the old value of an overwrite. (The
            // new value itself, rejected as oversized, still counts.)
            .is_some_and(|(inserted, bytes)| {
                *inserted == key && (*bytes != value.as_ptr() || value.is_empty())
            });
        if !replaced {
            self.0.evictions.add(1);
        }
    }
}

type Tail = Cache<PathKey, Slot, ByteWeighter, DefaultHashBuilder, EvictionHook>;

/// Nibble prefix → encoded branch node.
///
/// Paths of length ≤ [`PINNED_DEPTH`](crate::PINNED_DEPTH) (root and its two
/// levels of children: 273 slots) are pinned: never evicted, read with a
/// single `ArcSwapOption` load and no lock, and do not count against the
/// capacity. Every other path lives in a byte-bounded `quick_cache`
/// `sync::Cache` split into shards, keyed inline (nibbles packed sixteen
/// to a word, up to 80 nibbles) so a probe does not chase a key pointer; a hit
/// takes only its shard's read lock
/// (quick_cache's clock-based policy needs no recency bump under an
/// exclusive lock). Concurrent misses of one key are coalesced through
/// quick_cache placeholders.
pub struct BranchCache {
    tail: Tail,
    pinned: PinnedLevels,
    counters: Arc<Counters>,
    capacity: u64,
}

impl BranchCache {
    /// Tail shards used by [`BranchCache::new`] (quick_cache merges shards
    /// for small capacities so each holds at least ~32 entries).
    pub const DEFAULT_SHARDS: usize = 64;

    /// Entry size assumed when sizing the tail's tables: a ~300-byte branch
    /// (the mainnet average) plus key and [`ENTRY_OVERHEAD`].
    const TYPICAL_ENTRY: u64 = 320 + ENTRY_OVERHEAD;

    /// An empty cache whose tail holds up to `capacity_bytes`.
    pub fn new(capacity_bytes: u64) -> Self {
        Self::with_shards(capacity_bytes, Self::DEFAULT_SHARDS)
    }

    /// An empty cache with `shards` tail shards (rounded to a power of two).
    pub fn with_shards(capacity_bytes: u64, shards: usize) -> Self {
        let counters = Arc::new(Counters::new());
        let estimated_items = (capacity_bytes / Self::TYPICAL_ENTRY).max(1);
        let options = OptionsBuilder::new()
            .shards(shards.max(1))
            .estimated_items_capacity(usize::try_from(estimated_items).unwrap_or(usize::MAX))
            .weight_capacity(capacity_bytes)
            .build()
            .expect("invariant: both required quick_cache options are set just above");
        let tail = Cache::with_options(
            options,
            ByteWeighter,
            DefaultHashBuilder::default(),
            EvictionHook(Arc::clone(&counters)),
        );
        Self {
            tail,
            pinned: PinnedLevels::new(),
            counters,
            capacity: capacity_bytes,
        }
    }

    /// The number of tail shards quick_cache settled on.
    pub fn shard_count(&self) -> usize {
        self.tail.num_shards()
    }

    fn load_tail(
        &self,
        key: &[u8],
        load: &mut dyn FnMut() -> Result<Option<Bytes>, LoadError>,
    ) -> Result<Lookup, LoadError> {
        let key = PathKey::new(key);
        match self.tail.get_value_or_guard(&key, None) {
            GuardResult::Value(Slot(value)) => Ok(Lookup {
                hit: value.is_some(),
                value,
            }),
            GuardResult::Guard(guard) => match load()? {
                Some(value) => {
                    if guard.insert(Slot(Some(value.clone()))).is_ok() {
                        self.counters.inserts.add(1);
                    }
                    Ok(Lookup {
                        value: Some(value),
                        hit: false,
                    })
                }
                None => {
                    // Hand "absent" to the waiters, then forget it.
                    if guard.insert(Slot(None)).is_ok() {
                        self.tail.remove_if(&key, |slot| slot.0.is_none());
                    }
                    Ok(Lookup {
                        value: None,
                        hit: false,
                    })
                }
            },
            // Only reachable with a finite timeout; load uncoalesced.
            GuardResult::Timeout => Ok(Lookup {
                value: load()?,
                hit: false,
            }),
        }
    }
}

impl PrefixCache for BranchCache {
    #[inline]
    fn get(&self, key: &[u8]) -> Option<Bytes> {
        let value = match pinned::slot_of(key) {
            Some(slot) => self.pinned.get(slot),
            None => self.tail.get(&PathKey::new(key)).and_then(|slot| slot.0),
        };
        self.counters.lookup(value.is_some());
        value
    }

    fn insert(&self, key: &[u8], value: Bytes) {
        match pinned::slot_of(key) {
            Some(slot) => self.pinned.insert(slot, value),
            None => {
                let mut inserting = Inserting {
                    entry: Some((PathKey::new(key), value.as_ptr())),
                };
                self.tail.insert_with_lifecycle(
                    PathKey::new(key),
                    Slot(Some(value)),
                    &mut inserting,
                );
            }
        }
        self.counters.inserts.add(1);
    }

    fn remove(&self, key: &[u8]) {
        match pinned::slot_of(key) {
            Some(slot) => self.pinned.remove(slot),
            None => {
                self.tail.remove(&PathKey::new(key));
            }
        }
    }

    fn clear(&self) {
        self.pinned.clear();
        self.tail.clear();
    }

    fn get_or_load(
        &self,
        key: &[u8],
        load: &mut dyn FnMut() -> Result<Option<Bytes>, LoadError>,
    ) -> Result<Lookup, LoadError> {
        if let Some(slot) = pinned::slot_of(key) {
            return self.pinned.get_or_load(slot, key, &self.counters, load);
        }
        let lookup = self.load_tail(key, load);
        if let Ok(found) = &lookup {
            self.counters.lookup(found.hit);
        }
        lookup
    }

    fn stats(&self) -> CacheStats {
        let (pinned_entries, pinned_weight) = self.pinned.occupancy();
        self.counters.snapshot(
            self.tail.len() as u64 + pinned_entries,
            self.tail.weight() + pinned_weight,
            self.capacity,
        )
    }

    fn kind(&self) -> CacheKind {
        CacheKind::Sharded
    }
}
