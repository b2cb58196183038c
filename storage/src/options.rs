//! Settings of a [`crate::StateDb`].

use strata_cache::CacheKind;

/// When block commits reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every block commit is fsynced before `commit()` returns.
    EveryBlock,
    /// Every n-th block commit is fsynced; a power cut loses at most the last
    /// n − 1 blocks, never part of one. A process crash loses nothing.
    EveryN(u64),
}

/// Settings of a [`crate::StateDb`]; `Options::default()` suits a full node.
#[derive(Clone, Debug)]
pub struct Options {
    /// Blocks per step: the unit of collation into files. Fixed at creation.
    pub step_size: u64,
    /// Steps kept in redb before they are collated into files.
    pub keep_steps_in_db: u64,
    /// How many recent blocks can be unwound (like geth's 128 diff layers).
    pub unwind_depth: u64,
    /// When commits are fsynced.
    pub durability: Durability,
    /// Which branch cache to run (the sharded one, or a baseline to compare).
    pub cache_kind: CacheKind,
    /// Capacity of the branch cache in bytes.
    pub cache_bytes: u64,
    /// Number of warmers prefetching branches ahead of the commitment (0: none).
    pub warmers: usize,
    /// Whether reads record their latency (overridden by `STRATA_READ_METRICS`).
    pub read_metrics: bool,
    /// Whether collate/merge/prune run on a background thread after commits.
    pub background_maintenance: bool,
    /// Touched keys above which the commitment hashes sub-tries in parallel.
    pub parallel_commitment_threshold: usize,
    /// redb's page cache in bytes.
    pub db_cache_bytes: usize,
    /// Record read latencies under one mutex per cell instead of the
    /// lock-free striped histograms: the baseline configuration, for
    /// benchmarks only.
    pub mutex_telemetry_baseline: bool,
    /// Let other processes open the datadir read-only
    /// ([`crate::ReadOnlyStateDb`]) and follow the commits while this one
    /// writes. Every commit must then be durable: it requires
    /// [`Durability::EveryBlock`], since a non-durable commit exists only in
    /// the writer's memory.
    pub share_with_readers: bool,
    /// How often a [`crate::ReadOnlyStateDb`] looks for new commits (its
    /// readers see a commit within about this long of its landing).
    pub follow_interval: std::time::Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            step_size: 64,
            keep_steps_in_db: 2,
            unwind_depth: 128,
            durability: Durability::EveryBlock,
            cache_kind: CacheKind::Sharded,
            cache_bytes: 256 << 20,
            warmers: 0,
            read_metrics: true,
            background_maintenance: true,
            parallel_commitment_threshold: 1024,
            db_cache_bytes: 1 << 30,
            mutex_telemetry_baseline: false,
            share_with_readers: false,
            follow_interval: std::time::Duration::from_millis(1),
        }
    }
}
