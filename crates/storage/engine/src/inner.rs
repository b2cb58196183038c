//! The shared state behind a [`crate::StateDb`] and its background thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::{Mutex, MutexGuard};
use strata_cache::{PrefixCache, ValueCache, WarmupPool};

use crate::error::{Error, Result};
use crate::ledger::Ledger;
use crate::options::Options;
use strata_files::FileSystem;
use strata_telemetry::{ReadMetrics, StoreMetrics};
use strata_types::Head;
use strata_types::domain::Regime;
use strata_view::overlay::Overlay;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;

/// Everything a `StateDb`, its writers and its maintenance thread share.
///
/// Lock order: `writer_slot` → `maintenance_lock` → the ledger's
/// `flush_lock` → the ledger's `journal` → `commit_lock` → `poisoned`; the
/// ledger's pending-block and encode-buffer mutexes are leaves (nothing is
/// taken under them). The journal is not a leaf: unwind takes it under
/// `flush_lock` (`Ledger::flushed_and_locked`) and then `commit_lock` under
/// it. A thread holding a later lock never waits for an earlier one: a
/// block's commit and unwind take `commit_lock` under `writer_slot`; unwind
/// takes `flush_lock` under `writer_slot`; the flusher takes `commit_lock`
/// under `flush_lock`; maintenance takes `commit_lock` under `maintenance_lock`;
/// nothing waits for `maintenance_lock` while holding `flush_lock` or
/// `commit_lock` (see [`Inner::poison_on_error`]). No redb write
/// transaction is held open while waiting for `commit_lock`. `commit_lock` is taken only through
/// [`Inner::lock_commit`], whose guard the functions relying on it take as
/// an argument.
pub(crate) struct Inner {
    pub(crate) files_dir: PathBuf,
    pub(crate) db: redb::Database,
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) options: Options,
    /// Blocks per step, as fixed when the datadir was created.
    pub(crate) step_size: u64,
    /// The snapshot new readers get; swapped at every commit and file change.
    pub(crate) current: ArcSwap<Snapshot>,
    /// Taken by the one open `BlockWriter`, genesis and unwind: one writer
    /// at a time. First in the lock order.
    pub(crate) writer_slot: Arc<crate::writer_slot::WriterSlot>,
    /// Drops what the writer lets go of off its thread (old snapshots).
    pub(crate) drop_behind: crate::drop_behind::DropBehind,
    /// Serialises maintenance runs (background and on demand); a run records
    /// its failure (poison) before releasing it. After `writer_slot`, before
    /// `commit_lock`.
    pub(crate) maintenance_lock: Mutex<()>,
    /// Held briefly around each snapshot swap (and maintenance's redb
    /// transactions); taken through [`Inner::lock_commit`]. Last of the locks.
    commit_lock: Mutex<()>,
    pub(crate) metrics: Arc<ReadMetrics>,
    /// Durations and totals of commits, flushes and maintenance.
    pub(crate) store_metrics: StoreMetrics,
    pub(crate) cache: Arc<dyn PrefixCache>,
    /// The state value cache, valid for one head at a time (moved on by
    /// every commit, reset by unwind and genesis).
    pub(crate) values: Arc<ValueCache<Head>>,
    pub(crate) warmup: WarmupPool,
    /// The first failure that poisoned the store (innermost lock).
    poisoned: Mutex<Option<String>>,
    pub(crate) commits_since_sync: AtomicU64,
    /// Wakes the background maintenance thread.
    pub(crate) maintenance: crate::worker::Signal,
    /// The journal, the unflushed blocks and the flush: what makes a block
    /// durable and visible.
    pub(crate) ledger: Ledger,
}

impl Inner {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        files_dir: PathBuf,
        db: redb::Database,
        fs: Arc<dyn FileSystem>,
        options: Options,
        step_size: u64,
        snapshot: Snapshot,
        metrics: Arc<ReadMetrics>,
        cache: Arc<dyn PrefixCache>,
        warmup: WarmupPool,
        ledger: Ledger,
    ) -> Inner {
        let values = Arc::new(ValueCache::new(options.value_cache_bytes));
        // An empty cache is valid for any state: serve the head at once.
        if let Some(head) = snapshot.head {
            values.reset(Some(head));
        }
        Inner {
            files_dir,
            db,
            fs,
            options,
            step_size,
            current: ArcSwap::from_pointee(snapshot),
            writer_slot: Default::default(),
            drop_behind: Default::default(),
            maintenance_lock: Mutex::new(()),
            commit_lock: Mutex::new(()),
            metrics,
            store_metrics: StoreMetrics::default(),
            cache,
            values,
            warmup,
            poisoned: Mutex::new(None),
            commits_since_sync: AtomicU64::new(0),
            maintenance: Default::default(),
            ledger,
        }
    }

    /// The datadir's folder of history files (beside `files/`).
    pub(crate) fn history_dir(&self) -> PathBuf {
        strata_view::history_files::history_dir_beside(&self.files_dir)
    }

    /// A read handle on `snapshot` (with a block's uncommitted `overlay`)
    /// that records into the store's telemetry and reads through the value
    /// cache.
    pub(crate) fn reader(
        &self,
        snapshot: Arc<Snapshot>,
        overlay: Option<Arc<Overlay>>,
        regime: Regime,
    ) -> ViewReader {
        ViewReader::new(snapshot, overlay, regime, self.metrics.clone())
            .with_values(self.values.clone())
    }

    /// The step a block's writes belong to.
    pub(crate) fn step_of(&self, block: u64) -> u64 {
        block / self.step_size
    }

    /// Takes `commit_lock` (see the lock order on [`Inner`]).
    pub(crate) fn lock_commit(&self) -> CommitGuard<'_> {
        CommitGuard {
            _held: self.commit_lock.lock(),
        }
    }

    /// Fails when an earlier write failure poisoned the store; the error
    /// carries that first failure.
    pub(crate) fn check_poisoned(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(cause) => Err(Error::Poisoned {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Runs a write step's result through the poison state: a failure that
    /// poisons is recorded when it is the first. redb answers every call
    /// after an I/O failure with "Previous I/O error occurred"; such an
    /// error is replaced by the first failure's cause when one is recorded.
    ///
    /// That first failure may be a maintenance run's still on its way up,
    /// so a "previous I/O" error first waits for `maintenance_lock` (a run
    /// records its failure before releasing it). The caller must hold
    /// neither `maintenance_lock` nor `commit_lock`; under
    /// `maintenance_lock`, use [`Inner::record_poison`].
    pub(crate) fn poison_on_error<T>(&self, result: Result<T>) -> Result<T> {
        if matches!(&result, Err(error) if error.is_previous_io()) {
            drop(self.maintenance_lock.lock());
        }
        self.record_poison(result)
    }

    /// [`Inner::poison_on_error`] without waiting for a maintenance run:
    /// for the maintenance run itself, which holds `maintenance_lock`.
    pub(crate) fn record_poison<T>(&self, result: Result<T>) -> Result<T> {
        let error = match result {
            Err(error) if error.poisons() => error,
            other => return other,
        };
        let mut poisoned = self.poisoned.lock();
        match &*poisoned {
            None => {
                tracing::error!(%error, "write failed; the store is poisoned until reopened");
                *poisoned = Some(error.to_string());
                Err(error)
            }
            Some(cause) if error.is_previous_io() => Err(Error::Poisoned {
                cause: cause.clone(),
            }),
            Some(_) => Err(error),
        }
    }

    /// Whether this commit must be durable, by the durability setting.
    pub(crate) fn next_commit_durable(&self) -> bool {
        match self.options.durability {
            crate::options::Durability::EveryBlock => true,
            crate::options::Durability::EveryN(n) => {
                let count = self.commits_since_sync.fetch_add(1, Ordering::Relaxed) + 1;
                if count >= n.max(1) {
                    self.commits_since_sync.store(0, Ordering::Relaxed);
                    true
                } else {
                    false
                }
            }
        }
    }
}

/// Proof that the holder has `commit_lock`: functions that swap the
/// published snapshot or write redb on the commit path take it as an
/// argument instead of saying so in prose.
pub(crate) struct CommitGuard<'a> {
    _held: MutexGuard<'a, ()>,
}
