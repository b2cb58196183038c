//! The sharded-lock baseline: LRU shards, each behind its own padded mutex.

use std::sync::Mutex;

use bytes::Bytes;
use crossbeam_utils::CachePadded;

use crate::lru_core::{self, ByteLru};
use crate::single_flight::SingleFlight;
use crate::stats::Counters;
use crate::{CacheKind, CacheStats, LoadError, Lookup, PrefixCache};

/// N `std::sync::Mutex<lru::LruCache>` shards picked by an xxh3 hash of the
/// key, each cache-padded and bounded by `capacity / N` bytes (what Erigon's
/// BranchCache tail became after PR #21982). Kept as a baseline for
/// benchmarks; use [`BranchCache`](crate::BranchCache) in the engine.
pub struct ShardedLruCache {
    shards: Box<[CachePadded<Mutex<ByteLru>>]>,
    mask: u64,
    flights: SingleFlight,
    counters: Counters,
    capacity: u64,
}

impl ShardedLruCache {
    /// The shard count [`build_cache`](crate::build_cache) uses.
    pub const DEFAULT_SHARDS: usize = 64;

    /// An empty cache of `shards` shards (rounded up to a power of two, at
    /// least 1) holding up to `capacity_bytes` in total.
    pub fn new(capacity_bytes: u64, shards: usize) -> Self {
        let count = shards.max(1).next_power_of_two();
        let per_shard = capacity_bytes.div_ceil(count as u64);
        Self {
            shards: (0..count)
                .map(|_| CachePadded::new(Mutex::new(ByteLru::new(per_shard))))
                .collect(),
            mask: count as u64 - 1,
            flights: SingleFlight::default(),
            counters: Counters::new(),
            capacity: capacity_bytes,
        }
    }

    /// How many shards there are.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    #[inline]
    fn shard(&self, key: &[u8]) -> &Mutex<ByteLru> {
        let hash = xxhash_rust::xxh3::xxh3_64(key);
        &self.shards[(hash & self.mask) as usize]
    }
}

impl PrefixCache for ShardedLruCache {
    fn get(&self, key: &[u8]) -> Option<Bytes> {
        let value = lru_core::lock(self.shard(key)).get(key);
        self.counters.lookup(value.is_some());
        value
    }

    fn insert(&self, key: &[u8], value: Bytes) {
        let evicted = lru_core::lock(self.shard(key)).insert(key, value);
        self.counters.inserts.add(1);
        self.counters.evictions.add(evicted);
    }

    fn remove(&self, key: &[u8]) {
        lru_core::lock(self.shard(key)).remove(key);
    }

    fn clear(&self) {
        for shard in self.shards.iter() {
            lru_core::lock(shard).clear();
        }
    }

    fn get_or_load(
        &self,
        key: &[u8],
        load: &mut dyn FnMut() -> Result<Option<Bytes>, LoadError>,
    ) -> Result<Lookup, LoadError> {
        lru_core::get_or_load(self.shard(key), &self.flights, &self.counters, key, load)
    }

    fn stats(&self) -> CacheStats {
        let (mut entries, mut weight) = (0, 0);
        for shard in self.shards.iter() {
            let lru = lru_core::lock(shard);
            entries += lru.len();
            weight += lru.weight();
        }
        self.counters.snapshot(entries, weight, self.capacity)
    }

    fn kind(&self) -> CacheKind {
        CacheKind::ShardedLru
    }
}
