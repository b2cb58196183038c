//! What an exporter reads of a store at scrape time, through the public
//! API: [`StateDb::downgrade`](crate::StateDb::downgrade) gives a
//! [`WeakStateDb`] that does not keep the store open, and
//! [`WeakStateDb::figures`] hands one [`StoreFigures`] to a closure while the
//! store is still open. Reading the figures takes no lock a commit takes.

use std::sync::{Arc, Weak};

use strata_cache::CacheStats;
use strata_telemetry::{ReadMetrics, StoreMetrics};
use strata_types::Domain;

use crate::inner::Inner;
use crate::ledger::FlushStats;

/// A store's figures of one moment. The read histograms and block-level
/// durations are borrowed (they are read as they are encoded); the rest is
/// copied out.
#[derive(Debug)]
pub struct StoreFigures<'a> {
    /// Read latencies per (domain, tier, regime).
    pub reads: &'a ReadMetrics,
    /// Durations and totals of commits, flushes and maintenance.
    pub store: &'a StoreMetrics,
    /// Flushes of the memory tier into redb.
    pub flush: FlushStats,
    /// The branch cache's counters and occupancy.
    pub branch_cache: CacheStats,
    /// The state value cache's counters and occupancy.
    pub value_cache: CacheStats,
    /// The last committed block (`None` before genesis).
    pub head: Option<u64>,
    /// Bytes of keys and values in the memory tier (blocks not yet flushed).
    pub memory_tier_bytes: u64,
    /// The immutable files of each domain, indexed by [`Domain::index`].
    pub files: [DomainFiles; 4],
    /// Warmer threads of the store.
    pub warmers: usize,
    /// Warmer reads that failed.
    pub warmer_errors: u64,
    /// Whether a failed write has poisoned the store.
    pub poisoned: bool,
}

/// How many immutable files a domain has and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DomainFiles {
    /// Files.
    pub count: u64,
    /// Their bytes on disk.
    pub bytes: u64,
}

impl<'a> StoreFigures<'a> {
    /// The figures of the store `inner` now.
    pub(crate) fn of(inner: &'a Inner) -> StoreFigures<'a> {
        let snapshot = inner.current.load();
        let files = Domain::ALL.map(|domain| {
            let files = snapshot.files.files(domain);
            DomainFiles {
                count: files.len() as u64,
                bytes: files.iter().map(|f| f.size_bytes()).sum(),
            }
        });
        StoreFigures {
            reads: &inner.metrics,
            store: &inner.store_metrics,
            flush: inner.ledger.stats(),
            branch_cache: inner.cache.stats(),
            value_cache: inner.values.stats(),
            head: snapshot.block(),
            memory_tier_bytes: snapshot.memory.bytes(),
            files,
            warmers: inner.warmup.warmers(),
            warmer_errors: inner.warmup.error_count(),
            poisoned: inner.check_poisoned().is_err(),
        }
    }
}

/// A handle on a store that does not keep it open (for exporters whose
/// registry outlives the store).
#[derive(Clone)]
pub struct WeakStateDb {
    inner: Weak<Inner>,
}

impl std::fmt::Debug for WeakStateDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakStateDb")
            .field("open", &self.is_open())
            .finish()
    }
}

impl WeakStateDb {
    pub(crate) fn new(inner: &Arc<Inner>) -> WeakStateDb {
        WeakStateDb {
            inner: Arc::downgrade(inner),
        }
    }

    /// Whether the store is still open.
    pub fn is_open(&self) -> bool {
        self.inner.strong_count() > 0
    }

    /// Calls `read` with the store's figures now; `None` once it is closed.
    pub fn figures<R>(&self, read: impl FnOnce(&StoreFigures<'_>) -> R) -> Option<R> {
        let inner = self.inner.upgrade()?;
        Some(read(&StoreFigures::of(&inner)))
    }
}
