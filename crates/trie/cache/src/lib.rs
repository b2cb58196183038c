//! strata-cache: the sharded branch cache, the baseline caches it is measured
//! against, the state value cache ([`ValueCache`]), and the rayon warmup pool
//! that fills them ahead of the commitment and of execution.
//!
//! Every cache implements [`PrefixCache`]: keys are byte strings (nibble
//! paths, one nibble per byte), values are [`bytes::Bytes`] (cheap clones),
//! capacity is in bytes (see [`entry_weight`]). [`BranchCache`] is the one the
//! engine uses; [`MutexLruCache`] and [`ShardedLruCache`] exist so benchmarks
//! can show it beside the designs it replaces. [`build_cache`] picks one by
//! [`CacheKind`], which is what the CLI and the benches sweep.
//!
//! ```
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use strata_cache::{build_cache, CacheKind, WarmupPool};
//!
//! let cache = build_cache(CacheKind::Sharded, 64 << 20);
//! cache.insert(&[0x1, 0x2], Bytes::from_static(b"branch"));
//! assert_eq!(cache.get(&[0x1, 0x2]).as_deref(), Some(&b"branch"[..]));
//!
//! // Two warmers pull prefixes in; a miss of one prefix is loaded once.
//! let pool = WarmupPool::new(2).unwrap();
//! let shared = cache.clone();
//! let ticket = pool.warm(
//!     vec![vec![0x3u8], vec![0x4]],
//!     Arc::new(move |path: &Vec<u8>| {
//!         shared.get_or_load(path, &mut || Ok(Some(Bytes::from_static(b"loaded"))))?;
//!         Ok(())
//!     }),
//! );
//! let report = ticket.wait();
//! assert!(report.errors.is_empty());
//! assert_eq!(cache.get(&[0x3]).as_deref(), Some(&b"loaded"[..]));
//! ```
#![deny(missing_docs)]

mod branch;
mod error;
mod key;
mod kind;
#[cfg(feature = "baselines")]
mod lru_core;
#[cfg(feature = "baselines")]
mod mutex_lru;
mod pinned;
#[cfg(feature = "baselines")]
mod sharded_lru;
mod single_flight;
mod stats;
pub mod stripe;
mod value;
mod warmup;

use std::sync::Arc;

use bytes::Bytes;

pub use branch::BranchCache;
pub use error::CacheError;
pub use kind::CacheKind;
#[cfg(feature = "baselines")]
pub use mutex_lru::MutexLruCache;
pub use pinned::{PINNED_DEPTH, PINNED_SLOTS};
#[cfg(feature = "baselines")]
pub use sharded_lru::ShardedLruCache;
pub use stats::CacheStats;
pub use value::{Coalescing, ValueCache, ValueLookup, ValueSource};
pub use warmup::{MAX_WARMERS, WarmupFailure, WarmupJob, WarmupPool, WarmupReport, WarmupTicket};

/// The error a loader (or a warmup job) returns: whatever the storage layer
/// failed with, boxed so this crate stays independent of it.
pub type LoadError = Box<dyn std::error::Error + Send + Sync>;

/// Fixed per-entry bookkeeping cost, in bytes, added to key and value lengths
/// when weighing an entry against a cache's byte capacity.
pub const ENTRY_OVERHEAD: u64 = 64;

/// The weight of one entry in bytes: key length + value length +
/// [`ENTRY_OVERHEAD`]. All cache kinds weigh entries the same way, so a
/// capacity means the same thing for each of them.
pub fn entry_weight(key: &[u8], value: &[u8]) -> u64 {
    key.len() as u64 + value.len() as u64 + ENTRY_OVERHEAD
}

/// The outcome of [`PrefixCache::get_or_load`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// The value, from the cache or from a loader; `None` when the loader
    /// found nothing (absent keys are not cached).
    pub value: Option<Bytes>,
    /// `true` when a value was returned without running this call's loader:
    /// it was cached, or a concurrent caller loaded it and shared the result.
    pub hit: bool,
}

/// A concurrent, byte-bounded map from nibble prefix to encoded branch.
///
/// Object-safe: the storage layer holds an `Arc<dyn PrefixCache>` and the
/// benches swap implementations through [`build_cache`].
pub trait PrefixCache: Send + Sync {
    /// The cached value for `key`, if any.
    fn get(&self, key: &[u8]) -> Option<Bytes>;

    /// Stores `value` under `key` (write-through from the commitment),
    /// replacing any previous value. Entries that alone exceed the capacity
    /// are rejected and counted as evictions.
    fn insert(&self, key: &[u8], value: Bytes);

    /// Drops `key` from the cache (the branch was deleted or unwound).
    fn remove(&self, key: &[u8]);

    /// Drops every entry (statistics are kept).
    fn clear(&self);

    /// Returns the cached value or runs `load` and caches its `Some` result.
    ///
    /// When several threads miss the same key at once, one of them runs its
    /// loader and the others wait for and share that result (a `None` result
    /// is shared but not cached). If the loader fails, its caller gets the
    /// error and one waiting caller runs its own loader instead. A load that
    /// overlaps an [`insert`](Self::insert) or [`remove`](Self::remove) of
    /// the same key does not overwrite what that write left behind.
    fn get_or_load(
        &self,
        key: &[u8],
        load: &mut dyn FnMut() -> Result<Option<Bytes>, LoadError>,
    ) -> Result<Lookup, LoadError>;

    /// Counters and occupancy, read from striped atomics.
    fn stats(&self) -> CacheStats;

    /// Which implementation this is.
    fn kind(&self) -> CacheKind;
}

/// Builds a cache of the given kind holding up to `capacity_bytes` (weighed
/// with [`entry_weight`]).
pub fn build_cache(kind: CacheKind, capacity_bytes: u64) -> Arc<dyn PrefixCache> {
    match kind {
        CacheKind::Sharded => Arc::new(BranchCache::new(capacity_bytes)),
        #[cfg(feature = "baselines")]
        CacheKind::MutexLru => Arc::new(MutexLruCache::new(capacity_bytes)),
        #[cfg(feature = "baselines")]
        CacheKind::ShardedLru => Arc::new(ShardedLruCache::new(
            capacity_bytes,
            ShardedLruCache::DEFAULT_SHARDS,
        )),
    }
}
