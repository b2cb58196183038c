//! strata-telemetry: lock-free read-latency telemetry per domain, tier and regime.
//!
//! Every domain read is timed and recorded into a fixed array of histograms
//! indexed by (domain × [`Tier`] × regime). [`ReadMetrics`] records with
//! striped, cache-padded atomics: no mutex, no allocation and no channel on
//! the read path, so the metric is never the contention it measures.
//! [`MutexReadMetrics`] is the mutex-guarded design it replaces, kept for the
//! benchmarks. Both implement [`ReadRecorder`] and summarise into a
//! [`MetricsSnapshot`] (count, mean, p50/p99/max per cell) that renders as a
//! `tracing` "domain reads" event, JSON or Prometheus text. [`StoreMetrics`]
//! holds the block-level durations (commit, root, journal write, flush,
//! collate, merge). The Prometheus exporter is a crate above the engine
//! (strata-prometheus); nothing here knows the store.
//!
//! Call sites are one line each:
//!
//! ```
//! use strata_telemetry::{ReadMetrics, Tier};
//! use strata_types::{Domain, Regime};
//!
//! let metrics = ReadMetrics::new(true);
//! let started = metrics.start();
//! // ... look the key up; it was found in the redb tier ...
//! metrics.finish(started, Domain::Account, Tier::Db, Regime::Exec);
//! assert_eq!(metrics.snapshot().cells[0].count, 1);
//! ```
#![deny(missing_docs)]

mod buckets;
mod cell;
mod durations;
mod mutex_metrics;
mod read_metrics;
mod snapshot;
mod store_metrics;
mod tier;

pub use buckets::{BUCKETS, Histogram, MAX_TRACKED_NS, bucket_of};
pub use durations::{DurationCounts, DurationHistogram};
pub use mutex_metrics::MutexReadMetrics;
pub use read_metrics::{ENV_SWITCH, ReadMetrics, STRIPES, parse_switch};
pub use snapshot::{CellSummary, MetricsSnapshot, format_ns};
pub use store_metrics::{CommitFigures, StoreMetrics};
pub use tier::{MAX_FILE_LEVELS, TIER_COUNT, Tier};

use strata_types::{Domain, Regime};

/// Something that takes read-latency samples. Implemented by the lock-free
/// [`ReadMetrics`] and, for comparison in benchmarks, [`MutexReadMetrics`].
pub trait ReadRecorder: Send + Sync {
    /// Records one read of `domain` answered by `tier`, issued by `regime`,
    /// that took `nanos` nanoseconds.
    fn record(&self, domain: Domain, tier: Tier, regime: Regime, nanos: u64);

    /// Summaries of every cell that has samples.
    fn snapshot(&self) -> MetricsSnapshot;
}
