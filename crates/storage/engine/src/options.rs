//! Settings of a [`crate::StateDb`].

use strata_cache::CacheKind;
use strata_types::HistoryRetention;

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
/// New settings may come in any release: build one from the default with
/// the `with_*` methods (`Options::default().with_warmers(4)`), or set
/// its fields on a default value.
#[derive(Clone, Debug)]
#[non_exhaustive]
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
    /// Capacity in bytes of the state value cache: account, storage and
    /// code values (and known absences) read, prefetched or written by a
    /// commit, served before the memory tier, redb and the files. 0 turns
    /// it off.
    pub value_cache_bytes: u64,
    /// Number of warmers prefetching branches ahead of the commitment (0: none).
    pub warmers: usize,
    /// Whether the branch cache is warmed before the first block: at open,
    /// and after a genesis or a state is imported, the account trie's top
    /// levels are read into it, whole levels within a quarter of
    /// [`Options::cache_bytes`] (at 1M accounts the root and four levels,
    /// about 70,000 records), so the first blocks' roots do not read them
    /// from the files one miss at a time.
    pub warm_start: bool,
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
    /// benchmarks only. Feature `test-utils`.
    #[cfg(feature = "test-utils")]
    pub mutex_telemetry_baseline: bool,
    /// Points where tests hold the background tasks to drive their
    /// interleavings ([`crate::PausePoints`]). Feature `test-utils`.
    #[cfg(feature = "test-utils")]
    pub pause_points: Option<std::sync::Arc<crate::PausePoints>>,
    /// Let other processes open the datadir read-only
    /// ([`crate::ReadOnlyStateDb`]) and follow the commits while this one
    /// writes. Every commit must then be durable: it requires
    /// [`Durability::EveryBlock`], since a non-durable commit exists only in
    /// the writer's memory.
    pub share_with_readers: bool,
    /// With [`Options::share_with_readers`], also publish each block's
    /// branch records beside the journal (`branches/`, never synced), so
    /// that readers in other processes apply them instead of rebuilding
    /// them from the block's plain writes (one commitment walk per block:
    /// at 1M accounts a follower's CPU per block is about 36 ms rebuilding
    /// and 13 ms applying, for about 2.9 MB a block written). On by
    /// default; off, followers rebuild.
    pub publish_branches: bool,
    /// How much history a datadir created by this open keeps
    /// ([`HistoryRetention`]: each key's value before every change, read
    /// back by `reader_at` at any kept block, proofs included). Fixed when
    /// the datadir is made and recorded in it: `None` opens an existing
    /// datadir with what it recorded (and makes a new one without
    /// history); a value that differs from the recorded one is refused
    /// ([`crate::Error::HistoryRetentionMismatch`]).
    pub history: Option<HistoryRetention>,
    /// How often a [`crate::ReadOnlyStateDb`] looks for new commits (its
    /// readers see a commit within about this long of its landing).
    pub follow_interval: std::time::Duration,
    /// Raw bytes (keys + values) of committed blocks held in the memory
    /// tier beyond which a flush to redb starts in the background.
    pub flush_batch_bytes: u64,
    /// Raw bytes the memory tier may hold: a commit that finds it fuller
    /// waits for the flush (back-pressure, counted in
    /// [`crate::FlushStats::waits`]). Sized for mainnet: ~64 blocks of
    /// ~4 MB of writes and commitment records each. At least 1 and at
    /// least `flush_batch_bytes` (else open refuses the options).
    pub memory_budget_bytes: u64,
    /// Size at which the journal starts a new segment file.
    pub journal_segment_bytes: u64,
    /// Plain keys (account, storage, code) a flush writes per redb
    /// transaction (at least 1). redb copies the pages a transaction
    /// changes and reuses the old copies only after it commits and readers
    /// moved on, so one transaction over a large batch of scattered keys
    /// would rewrite most of a big table and double the file; smaller
    /// transactions bound that growth at the cost of one fsync each. The
    /// batch's commitment records all go in the last transaction, with the
    /// head, so that redb's records are always those of its head (what a
    /// replay of lean journal records rebuilds over).
    pub flush_txn_keys: usize,
    /// Where the immutable files are read and written: `None`, the
    /// datadir's own folders. A replica gives one that reads the files it
    /// does not hold from its bucket (`FileSystem::remote`).
    pub file_system: Option<std::sync::Arc<dyn strata_files::FileSystem>>,
}

impl Options {
    /// Whether reads record under the mutex baseline (only with feature
    /// `test-utils`).
    pub(crate) fn mutex_telemetry_baseline(&self) -> bool {
        #[cfg(feature = "test-utils")]
        return self.mutex_telemetry_baseline;
        #[cfg(not(feature = "test-utils"))]
        return false;
    }
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
            value_cache_bytes: 128 << 20,
            warmers: 0,
            warm_start: true,
            read_metrics: true,
            background_maintenance: true,
            parallel_commitment_threshold: 1024,
            db_cache_bytes: 1 << 30,
            #[cfg(feature = "test-utils")]
            mutex_telemetry_baseline: false,
            #[cfg(feature = "test-utils")]
            pause_points: None,
            share_with_readers: false,
            publish_branches: true,
            history: None,
            follow_interval: std::time::Duration::from_millis(1),
            flush_batch_bytes: 64 << 20,
            memory_budget_bytes: 256 << 20,
            journal_segment_bytes: 64 << 20,
            flush_txn_keys: 16_384,
            file_system: None,
        }
    }
}

/// One `with_*` method per setting: `Options::default().with_warmers(4)`.
macro_rules! with_setters {
    ($($(#[$cfg:meta])* $field:ident: $ty:ty => $name:ident;)*) => {
        impl Options {
            $(
                $(#[$cfg])*
                #[doc = concat!("Returns these options with [`Options::", stringify!($field), "`] set to `value`.")]
                #[must_use]
                pub fn $name(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

with_setters! {
    step_size: u64 => with_step_size;
    keep_steps_in_db: u64 => with_keep_steps_in_db;
    unwind_depth: u64 => with_unwind_depth;
    durability: Durability => with_durability;
    cache_kind: CacheKind => with_cache_kind;
    cache_bytes: u64 => with_cache_bytes;
    value_cache_bytes: u64 => with_value_cache_bytes;
    warmers: usize => with_warmers;
    warm_start: bool => with_warm_start;
    read_metrics: bool => with_read_metrics;
    background_maintenance: bool => with_background_maintenance;
    parallel_commitment_threshold: usize => with_parallel_commitment_threshold;
    db_cache_bytes: usize => with_db_cache_bytes;
    #[cfg(feature = "test-utils")]
    mutex_telemetry_baseline: bool => with_mutex_telemetry_baseline;
    #[cfg(feature = "test-utils")]
    pause_points: Option<std::sync::Arc<crate::PausePoints>> => with_pause_points;
    share_with_readers: bool => with_share_with_readers;
    publish_branches: bool => with_publish_branches;
    history: Option<HistoryRetention> => with_history;
    follow_interval: std::time::Duration => with_follow_interval;
    flush_batch_bytes: u64 => with_flush_batch_bytes;
    memory_budget_bytes: u64 => with_memory_budget_bytes;
    journal_segment_bytes: u64 => with_journal_segment_bytes;
    flush_txn_keys: usize => with_flush_txn_keys;
    file_system: Option<std::sync::Arc<dyn strata_files::FileSystem>> => with_file_system;
}
