//! The mutex-guarded recorder the lock-free one is measured against.

use std::sync::{Mutex, PoisonError};

use super::buckets::Histogram;
use super::cell::{CELLS, all_cells, cell_index};
use super::snapshot::{CellSummary, MetricsSnapshot};
use super::{ReadRecorder, Tier};
use strata_types::{Domain, Regime};

/// One `std::sync::Mutex` per (domain × tier × regime) histogram: the design
/// whose lock, contended by many readers, ends up measuring itself (Erigon's
/// `DomainMetrics` before it went lock-free). **For benchmarks only**; the
/// engine uses [`ReadMetrics`](super::ReadMetrics).
pub struct MutexReadMetrics {
    cells: Box<[Mutex<Histogram>]>,
}

impl MutexReadMetrics {
    /// Allocates every histogram.
    pub fn new() -> Self {
        Self {
            cells: (0..CELLS).map(|_| Mutex::new(Histogram::new())).collect(),
        }
    }
}

impl MutexReadMetrics {
    /// Summaries of every cell with samples, emptying each cell under its lock.
    pub fn snapshot_and_reset(&self) -> MetricsSnapshot {
        let cells = all_cells()
            .filter_map(|(cell, domain, tier, regime)| {
                let mut histogram = self.cells[cell]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let summary = CellSummary::from_histogram(domain, tier, regime, &histogram);
                *histogram = Histogram::new();
                summary
            })
            .collect();
        MetricsSnapshot { cells }
    }
}

impl Default for MutexReadMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadRecorder for MutexReadMetrics {
    fn record(&self, domain: Domain, tier: Tier, regime: Regime, nanos: u64) {
        let cell = &self.cells[cell_index(domain, tier, regime)];
        cell.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(nanos);
    }

    fn snapshot(&self) -> MetricsSnapshot {
        let cells = all_cells()
            .filter_map(|(cell, domain, tier, regime)| {
                let histogram = self.cells[cell]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                CellSummary::from_histogram(domain, tier, regime, &histogram)
            })
            .collect();
        MetricsSnapshot { cells }
    }
}

impl std::fmt::Debug for MutexReadMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutexReadMetrics").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::super::ReadMetrics;
    use super::*;

    #[test]
    fn agrees_with_the_lock_free_recorder() {
        let ours = ReadMetrics::new(true);
        let baseline = MutexReadMetrics::new();
        for i in 0..10_000u64 {
            let domain = Domain::ALL[(i % 4) as usize];
            let tier = Tier::ALL[(i % 7) as usize];
            let regime = Regime::ALL[(i % 2) as usize];
            let nanos = 50 + (i * 7919) % 200_000;
            ours.record(domain, tier, regime, nanos);
            baseline.record(domain, tier, regime, nanos);
        }
        assert_eq!(ours.snapshot(), baseline.snapshot());
        assert_eq!(ours.snapshot().cells.len(), 28);
    }
}
