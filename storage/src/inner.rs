//! The shared state behind a [`crate::StateDb`] and its background thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use strata_cache::{PrefixCache, WarmupPool};

use crate::error::{Error, Result};
use crate::files::FileSystem;
use crate::options::Options;
use crate::snapshot::Snapshot;
use crate::telemetry::ReadMetrics;

/// Everything a `StateDb`, its writers and its maintenance thread share.
pub(crate) struct Inner {
    pub(crate) files_dir: PathBuf,
    pub(crate) db: redb::Database,
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) options: Options,
    /// Blocks per step, as fixed when the datadir was created.
    pub(crate) step_size: u64,
    /// The snapshot new readers get; swapped at every commit and file change.
    pub(crate) current: ArcSwap<Snapshot>,
    /// Held by the one open `BlockWriter` and by unwind: one writer at a time.
    pub(crate) writer_lock: Mutex<()>,
    /// Held briefly around each redb write transaction and snapshot swap.
    pub(crate) commit_lock: Mutex<()>,
    /// Serialises maintenance runs (background and on demand).
    pub(crate) maintenance_lock: Mutex<()>,
    pub(crate) metrics: Arc<ReadMetrics>,
    pub(crate) cache: Arc<dyn PrefixCache>,
    pub(crate) warmup: WarmupPool,
    poisoned: Mutex<Option<String>>,
    pub(crate) commits_since_sync: AtomicU64,
    /// Wakes the background maintenance thread.
    pub(crate) maintenance: crate::maintenance::MaintenanceSignal,
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
    ) -> Inner {
        Inner {
            files_dir,
            db,
            fs,
            options,
            step_size,
            current: ArcSwap::from_pointee(snapshot),
            writer_lock: Mutex::new(()),
            commit_lock: Mutex::new(()),
            maintenance_lock: Mutex::new(()),
            metrics,
            cache,
            warmup,
            poisoned: Mutex::new(None),
            commits_since_sync: AtomicU64::new(0),
            maintenance: Default::default(),
        }
    }

    /// The step a block's writes belong to.
    pub(crate) fn step_of(&self, block: u64) -> u64 {
        block / self.step_size
    }

    /// Fails when an earlier write failure poisoned the store.
    pub(crate) fn check_poisoned(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(cause) => Err(Error::Poisoned {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Runs a write step; on failure the store refuses further writes.
    pub(crate) fn poison_on_error<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(error) = &result
            && error.poisons()
        {
            let mut poisoned = self.poisoned.lock();
            if poisoned.is_none() {
                tracing::error!(%error, "write failed; the store is poisoned until reopened");
                *poisoned = Some(error.to_string());
            }
        }
        result
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
