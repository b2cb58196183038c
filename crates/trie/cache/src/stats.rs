//! Striped event counters and the statistics snapshot they feed.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use crate::stripe::{OWNED_STRIPES, STRIPES, owned_stripe, thread_stripe};

/// A monotonically increasing count spread over cache-padded stripes, so
/// threads counting at once do not bounce one cache line between cores.
pub(crate) struct StripedCounter {
    /// Written only by the thread that owns the stripe ([`owned_stripe`]).
    owned: Box<[CachePadded<AtomicU64>; OWNED_STRIPES]>,
    /// Written atomically by threads that own none ([`thread_stripe`]).
    shared: Box<[CachePadded<AtomicU64>; STRIPES]>,
}

impl StripedCounter {
    pub(crate) fn new() -> Self {
        Self {
            owned: Box::new(std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0)))),
            shared: Box::new(std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0)))),
        }
    }

    #[inline]
    pub(crate) fn add(&self, n: u64) {
        match owned_stripe() {
            Some(stripe) => {
                // This thread is the stripe's only writer: a plain
                // load and store loses nothing.
                let count = &self.owned[stripe];
                count.store(count.load(Ordering::Relaxed) + n, Ordering::Relaxed);
            }
            None => {
                self.shared[thread_stripe()].fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn sum(&self) -> u64 {
        let owned = self.owned.iter().map(|s| s.load(Ordering::Relaxed));
        let shared = self.shared.iter().map(|s| s.load(Ordering::Relaxed));
        owned.chain(shared).sum()
    }
}

/// The four event counters every cache keeps.
pub(crate) struct Counters {
    pub(crate) hits: StripedCounter,
    pub(crate) misses: StripedCounter,
    pub(crate) inserts: StripedCounter,
    pub(crate) evictions: StripedCounter,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Self {
            hits: StripedCounter::new(),
            misses: StripedCounter::new(),
            inserts: StripedCounter::new(),
            evictions: StripedCounter::new(),
        }
    }

    /// Counts a lookup as a hit or a miss.
    #[inline]
    pub(crate) fn lookup(&self, hit: bool) {
        if hit {
            self.hits.add(1)
        } else {
            self.misses.add(1)
        }
    }

    pub(crate) fn snapshot(
        &self,
        entries: u64,
        weight_bytes: u64,
        capacity_bytes: u64,
    ) -> CacheStats {
        CacheStats {
            hits: self.hits.sum(),
            misses: self.misses.sum(),
            inserts: self.inserts.sum(),
            evictions: self.evictions.sum(),
            entries,
            weight_bytes,
            capacity_bytes,
        }
    }
}

/// A point-in-time view of a cache's counters and occupancy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered with a value without running the caller's loader.
    pub hits: u64,
    /// Lookups that found nothing or ran the caller's loader.
    pub misses: u64,
    /// Values stored, by `insert` or by a successful load.
    pub inserts: u64,
    /// Entries dropped to stay within capacity (or rejected as too large).
    pub evictions: u64,
    /// Entries held now.
    pub entries: u64,
    /// Bytes held now, weighed with [`entry_weight`](crate::entry_weight).
    pub weight_bytes: u64,
    /// The configured capacity in bytes (pinned top levels come on top).
    pub capacity_bytes: u64,
}

impl CacheStats {
    /// The lookups, stores and evictions since `earlier` (a reading of the
    /// same cache), with the occupancy as it is now.
    pub fn since(&self, earlier: &CacheStats) -> CacheStats {
        CacheStats {
            hits: self.hits.saturating_sub(earlier.hits),
            misses: self.misses.saturating_sub(earlier.misses),
            inserts: self.inserts.saturating_sub(earlier.inserts),
            evictions: self.evictions.saturating_sub(earlier.evictions),
            ..*self
        }
    }

    /// hits / (hits + misses), or 0 before the first lookup.
    pub fn hit_rate(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0 {
            0.0
        } else {
            self.hits as f64 / lookups as f64
        }
    }
}
