//! A cache's counters as the commands' JSON documents show them (`stats
//! --json`, the replay report).

use serde::Serialize;
use strata_storage::CacheStats;

/// Counters and occupancy of one cache.
#[derive(Debug, Serialize)]
pub(crate) struct CacheJson {
    /// Lookups answered without a load.
    hits: u64,
    /// Lookups that found nothing or loaded.
    misses: u64,
    /// Hits over lookups, 0 to 1.
    hit_rate: f64,
    /// Entries stored (write-through and loads).
    inserts: u64,
    /// Entries dropped to stay within capacity.
    evictions: u64,
    /// Entries held.
    entries: u64,
    /// Bytes held.
    bytes: u64,
    /// The configured capacity in bytes.
    capacity_bytes: u64,
}

impl From<&CacheStats> for CacheJson {
    fn from(cache: &CacheStats) -> Self {
        CacheJson {
            hits: cache.hits,
            misses: cache.misses,
            hit_rate: cache.hit_rate(),
            inserts: cache.inserts,
            evictions: cache.evictions,
            entries: cache.entries,
            bytes: cache.weight_bytes,
            capacity_bytes: cache.capacity_bytes,
        }
    }
}
