//! The lock-free recorder: striped, cache-padded atomic histograms.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use strata_cache::stripe::thread_stripe;

use super::buckets::{BUCKETS, Histogram, bucket_of};
use super::cell::{CELLS, all_cells, cell_index};
use super::mutex_metrics::MutexReadMetrics;
use super::snapshot::{CellSummary, MetricsSnapshot};
use super::{ReadRecorder, Tier};
use strata_types::{Domain, Regime};

/// Stripes per cell. A thread always records into the same stripe (assigned
/// round-robin on its first record), so up to this many threads record
/// without sharing a cache line.
pub use strata_cache::stripe::STRIPES;

/// The environment variable [`ReadMetrics::from_env`] reads:
/// `0`/`false`/`off`/`no` or `1`/`true`/`on`/`yes`.
pub const ENV_SWITCH: &str = "STRATA_READ_METRICS";

/// One cell's counters in one stripe. u32 bucket counts keep the whole
/// array at ~5 MB; a count that wraps adds 2^32 to the cell's shared spill.
struct StripeCell {
    counts: [AtomicU32; BUCKETS],
    sum: AtomicU64,
    max: AtomicU64,
}

impl StripeCell {
    fn new() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU32::new(0)),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

/// Read-latency histograms per (domain × tier × regime), recorded without
/// locks, allocation or channels.
///
/// All memory is allocated by the constructor: [`STRIPES`] × 104 cells ×
/// [`BUCKETS`] u32 counts plus a sum and a max per cell and stripe, each
/// cell cache-padded (≈ 6.4 MB in total, see [`memory_bytes`](Self::memory_bytes)).
/// A record is one bucket `fetch_add`, one sum `fetch_add` and a max load
/// (a `fetch_max` only when the maximum grows), all `Relaxed` and on the
/// recording thread's own stripe.
///
/// When disabled, [`start`](Self::start) returns `None` after one relaxed
/// load and [`finish`](Self::finish) does nothing with it: no clock is read.
pub struct ReadMetrics {
    enabled: AtomicBool,
    /// `stripes[s][cell]`.
    stripes: Box<[Box<[CachePadded<StripeCell>]>]>,
    /// Multiples of 2^32 that wrapped out of a stripe's u32 count, by
    /// `cell * BUCKETS + bucket`. Touched once per 2^32 records of a bucket.
    spill: Box<[AtomicU64]>,
    /// When set, samples go to this mutex-guarded recorder instead: the
    /// baseline configuration benchmarks compare against.
    baseline: Option<MutexReadMetrics>,
}

impl ReadMetrics {
    /// Allocates every histogram; records only when `enabled`.
    pub fn new(enabled: bool) -> Self {
        let stripes = (0..STRIPES)
            .map(|_| {
                (0..CELLS)
                    .map(|_| CachePadded::new(StripeCell::new()))
                    .collect()
            })
            .collect();
        let spill = (0..CELLS * BUCKETS).map(|_| AtomicU64::new(0)).collect();
        Self {
            enabled: AtomicBool::new(enabled),
            stripes,
            spill,
            baseline: None,
        }
    }

    /// A recorder that takes every sample under one mutex per cell
    /// ([`MutexReadMetrics`]) — **for benchmarks only**, to run a whole
    /// store in the baseline configuration beside the lock-free one.
    pub fn mutex_baseline(enabled: bool) -> Self {
        Self {
            baseline: Some(MutexReadMetrics::new()),
            ..Self::new(enabled)
        }
    }

    /// Like [`new`](Self::new), switched by the [`ENV_SWITCH`] variable
    /// (`STRATA_READ_METRICS`); `default` applies when it is unset or not
    /// one of the accepted words (which is logged as a warning).
    pub fn from_env(default: bool) -> Self {
        let value = std::env::var(ENV_SWITCH).ok();
        Self::new(switch_or_default(value.as_deref(), default))
    }

    /// Whether samples are being taken.
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns recording on or off at runtime (readers in flight may still
    /// record one sample each).
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
    }

    /// Starts timing a read: `Some(now)` when enabled, else `None`.
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        if self.is_enabled() {
            Some(Instant::now())
        } else {
            None
        }
    }

    /// Ends timing a read started with [`start`](Self::start) and records it
    /// under the tier that answered it. Does nothing for `None`.
    #[inline]
    pub fn finish(&self, started: Option<Instant>, domain: Domain, tier: Tier, regime: Regime) {
        if let Some(started) = started {
            let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            match &self.baseline {
                None => self.record_always(cell_index(domain, tier, regime), nanos),
                Some(baseline) => baseline.record(domain, tier, regime, nanos),
            }
        }
    }

    /// Records one read of `domain` answered by `tier`, issued by `regime`,
    /// that took `nanos` nanoseconds — when enabled (one relaxed load
    /// decides). Use it when the caller already has the duration.
    #[inline]
    pub fn record(&self, domain: Domain, tier: Tier, regime: Regime, nanos: u64) {
        if self.is_enabled() {
            match &self.baseline {
                None => self.record_always(cell_index(domain, tier, regime), nanos),
                Some(baseline) => baseline.record(domain, tier, regime, nanos),
            }
        }
    }

    #[inline]
    fn record_always(&self, cell: usize, nanos: u64) {
        let bucket = bucket_of(nanos);
        let counters = &self.stripes[thread_stripe()][cell];
        if counters.counts[bucket].fetch_add(1, Ordering::Relaxed) == u32::MAX {
            self.spill[cell * BUCKETS + bucket].fetch_add(1 << 32, Ordering::Relaxed);
        }
        counters.sum.fetch_add(nanos, Ordering::Relaxed);
        if nanos > counters.max.load(Ordering::Relaxed) {
            counters.max.fetch_max(nanos, Ordering::Relaxed);
        }
    }

    /// Bytes of counters allocated at construction.
    pub fn memory_bytes(&self) -> usize {
        STRIPES * CELLS * std::mem::size_of::<CachePadded<StripeCell>>()
            + CELLS * BUCKETS * std::mem::size_of::<AtomicU64>()
    }

    /// Summaries of every cell with samples, leaving the counters as they
    /// are. Records racing with it may be half counted (bucket without sum).
    pub fn snapshot(&self) -> MetricsSnapshot {
        if let Some(baseline) = &self.baseline {
            return baseline.snapshot();
        }
        self.collect(
            |atomic| atomic.load(Ordering::Relaxed),
            |a| a.load(Ordering::Relaxed),
        )
    }

    /// Summaries of every cell with samples, zeroing the counters as they
    /// are read, so each sample lands in exactly one interval.
    pub fn snapshot_and_reset(&self) -> MetricsSnapshot {
        if let Some(baseline) = &self.baseline {
            return baseline.snapshot_and_reset();
        }
        // Read-then-swap skips the write for the (many) counters still zero.
        let take32 = |a: &AtomicU32| {
            if a.load(Ordering::Relaxed) == 0 {
                0
            } else {
                a.swap(0, Ordering::Relaxed)
            }
        };
        let take64 = |a: &AtomicU64| {
            if a.load(Ordering::Relaxed) == 0 {
                0
            } else {
                a.swap(0, Ordering::Relaxed)
            }
        };
        self.collect(take32, take64)
    }

    /// Zeroes every counter.
    pub fn reset(&self) {
        self.snapshot_and_reset();
    }

    fn collect(
        &self,
        read32: impl Fn(&AtomicU32) -> u32,
        read64: impl Fn(&AtomicU64) -> u64,
    ) -> MetricsSnapshot {
        let mut cells = Vec::new();
        self.for_each_cell(read32, read64, |domain, tier, regime, histogram| {
            if let Some(summary) = CellSummary::from_histogram(domain, tier, regime, histogram) {
                cells.push(summary);
            }
        });
        MetricsSnapshot { cells }
    }

    /// Calls `visit` with every cell's merged counts (all stripes and the
    /// spill), leaving the counters as they are; for exporters that need the
    /// buckets rather than a summary. Empty with the mutex baseline.
    pub fn visit_cells(&self, visit: impl FnMut(Domain, Tier, Regime, &Histogram)) {
        if self.baseline.is_none() {
            self.for_each_cell(
                |a| a.load(Ordering::Relaxed),
                |a| a.load(Ordering::Relaxed),
                visit,
            );
        }
    }

    fn for_each_cell(
        &self,
        read32: impl Fn(&AtomicU32) -> u32,
        read64: impl Fn(&AtomicU64) -> u64,
        mut visit: impl FnMut(Domain, Tier, Regime, &Histogram),
    ) {
        let mut histogram = Histogram::new();
        for (cell, domain, tier, regime) in all_cells() {
            histogram.counts.fill(0);
            histogram.sum = 0;
            histogram.max = 0;
            for stripe in self.stripes.iter() {
                let counters = &stripe[cell];
                for (total, count) in histogram.counts.iter_mut().zip(&counters.counts) {
                    *total += u64::from(read32(count));
                }
                histogram.sum = histogram.sum.saturating_add(read64(&counters.sum));
                histogram.max = histogram.max.max(read64(&counters.max));
            }
            let spill = &self.spill[cell * BUCKETS..(cell + 1) * BUCKETS];
            for (total, wrapped) in histogram.counts.iter_mut().zip(spill) {
                *total += read64(wrapped);
            }
            visit(domain, tier, regime, &histogram);
        }
    }
}

impl ReadRecorder for ReadMetrics {
    #[inline]
    fn record(&self, domain: Domain, tier: Tier, regime: Regime, nanos: u64) {
        ReadMetrics::record(self, domain, tier, regime, nanos);
    }

    fn snapshot(&self) -> MetricsSnapshot {
        ReadMetrics::snapshot(self)
    }
}

impl std::fmt::Debug for ReadMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadMetrics")
            .field("enabled", &self.is_enabled())
            .field("memory_bytes", &self.memory_bytes())
            .finish_non_exhaustive()
    }
}

/// Parses an on/off switch value: `1`/`true`/`on`/`yes` or
/// `0`/`false`/`off`/`no`, case-insensitive, surrounding spaces ignored.
pub fn parse_switch(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

fn switch_or_default(value: Option<&str>, default: bool) -> bool {
    match value {
        None => default,
        Some(text) => parse_switch(text).unwrap_or_else(|| {
            tracing::warn!(
                variable = ENV_SWITCH,
                value = text,
                default,
                "unrecognised read-metrics switch; expected 0/false/off/no or 1/true/on/yes"
            );
            default
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_switch_words() {
        for on in ["1", "true", "ON", " yes "] {
            assert_eq!(parse_switch(on), Some(true), "{on:?}");
        }
        for off in ["0", "False", "off", "no"] {
            assert_eq!(parse_switch(off), Some(false), "{off:?}");
        }
        assert_eq!(parse_switch("maybe"), None);
        assert!(switch_or_default(None, true));
        assert!(!switch_or_default(None, false));
        assert!(switch_or_default(Some("on"), false));
        assert!(!switch_or_default(Some("0"), true));
        assert!(switch_or_default(Some("garbage"), true));
        // from_env must agree with whatever the test environment holds.
        let env = std::env::var(ENV_SWITCH).ok();
        let expected = env.as_deref().and_then(parse_switch).unwrap_or(true);
        assert_eq!(ReadMetrics::from_env(true).is_enabled(), expected);
    }

    #[test]
    fn disabled_metrics_record_nothing() {
        let metrics = ReadMetrics::new(false);
        assert!(metrics.start().is_none());
        metrics.finish(None, Domain::Code, Tier::Db, Regime::Exec);
        metrics.record(Domain::Code, Tier::Db, Regime::Exec, 100);
        assert!(metrics.snapshot().cells.is_empty());
        metrics.set_enabled(true);
        let started = metrics.start();
        assert!(started.is_some());
        metrics.finish(started, Domain::Code, Tier::Db, Regime::Exec);
        metrics.record(Domain::Code, Tier::Db, Regime::Exec, 100);
        assert_eq!(metrics.snapshot().cells[0].count, 2);
    }

    #[test]
    fn concurrent_recording_loses_no_counts() {
        const THREADS: u64 = 8;
        const PER_THREAD: u64 = 50_000;
        let metrics = ReadMetrics::new(true);
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let metrics = &metrics;
                scope.spawn(move || {
                    for i in 0..PER_THREAD {
                        let regime = Regime::ALL[(i % 2) as usize];
                        metrics.record(
                            Domain::Commitment,
                            Tier::File(3),
                            regime,
                            100 + t + i % 1000,
                        );
                    }
                });
            }
        });
        let snapshot = metrics.snapshot();
        let total: u64 = snapshot.cells.iter().map(|c| c.count).sum();
        assert_eq!(total, THREADS * PER_THREAD);
        assert_eq!(snapshot.cells.len(), 2);
        let expected_sum: u64 = (0..THREADS)
            .flat_map(|t| (0..PER_THREAD).map(move |i| 100 + t + i % 1000))
            .sum();
        assert_eq!(
            snapshot.cells.iter().map(|c| c.sum_ns).sum::<u64>(),
            expected_sum
        );
        assert_eq!(
            snapshot.cells.iter().map(|c| c.max_ns).max(),
            Some(100 + THREADS - 1 + 999)
        );
    }

    #[test]
    fn snapshot_and_reset_drains_every_sample_once() {
        let metrics = ReadMetrics::new(true);
        metrics.record(Domain::Account, Tier::Memory, Regime::Exec, 40);
        metrics.record(Domain::Account, Tier::Memory, Regime::Exec, 60);
        let first = metrics.snapshot_and_reset();
        assert_eq!(first.cells.len(), 1);
        assert_eq!(
            (
                first.cells[0].count,
                first.cells[0].sum_ns,
                first.cells[0].max_ns
            ),
            (2, 100, 60)
        );
        assert!(metrics.snapshot().cells.is_empty());
        metrics.record(Domain::Account, Tier::Memory, Regime::Exec, 7);
        metrics.reset();
        assert!(metrics.snapshot().cells.is_empty());
    }

    #[test]
    fn memory_stays_within_a_few_megabytes() {
        let bytes = ReadMetrics::new(true).memory_bytes();
        assert!(bytes < 7 << 20, "{bytes} bytes");
    }
}
