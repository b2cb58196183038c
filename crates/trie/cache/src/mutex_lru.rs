//! The single-lock baseline: one `std::sync::Mutex` around one LRU.

use std::sync::Mutex;

use bytes::Bytes;

use crate::lru_core::{self, ByteLru};
use crate::single_flight::SingleFlight;
use crate::stats::Counters;
use crate::{CacheKind, CacheStats, LoadError, Lookup, PrefixCache};

/// One `std::sync::Mutex<lru::LruCache>` bounded by bytes: the design
/// Erigon's BranchCache tail started with. Every get takes the exclusive lock
/// (an LRU hit moves the entry to the front). Kept as a baseline for
/// benchmarks; use [`BranchCache`](crate::BranchCache) in the engine.
pub struct MutexLruCache {
    lru: Mutex<ByteLru>,
    flights: SingleFlight,
    counters: Counters,
    capacity: u64,
}

impl MutexLruCache {
    /// An empty cache holding up to `capacity_bytes`.
    pub fn new(capacity_bytes: u64) -> Self {
        Self {
            lru: Mutex::new(ByteLru::new(capacity_bytes)),
            flights: SingleFlight::default(),
            counters: Counters::new(),
            capacity: capacity_bytes,
        }
    }
}

impl PrefixCache for MutexLruCache {
    fn get(&self, key: &[u8]) -> Option<Bytes> {
        let value = lru_core::lock(&self.lru).get(key);
        self.counters.lookup(value.is_some());
        value
    }

    fn insert(&self, key: &[u8], value: Bytes) {
        let evicted = lru_core::lock(&self.lru).insert(key, value);
        self.counters.inserts.add(1);
        self.counters.evictions.add(evicted);
    }

    fn remove(&self, key: &[u8]) {
        lru_core::lock(&self.lru).remove(key);
    }

    fn clear(&self) {
        lru_core::lock(&self.lru).clear();
    }

    fn get_or_load(
        &self,
        key: &[u8],
        load: &mut dyn FnMut() -> Result<Option<Bytes>, LoadError>,
    ) -> Result<Lookup, LoadError> {
        lru_core::get_or_load(&self.lru, &self.flights, &self.counters, key, load)
    }

    fn stats(&self) -> CacheStats {
        let (entries, weight) = {
            let lru = lru_core::lock(&self.lru);
            (lru.len(), lru.weight())
        };
        self.counters.snapshot(entries, weight, self.capacity)
    }

    fn kind(&self) -> CacheKind {
        CacheKind::MutexLru
    }
}
