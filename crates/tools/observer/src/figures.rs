//! What observations add up to: percentiles per kind of read in an idle and
//! a loaded window, and how many observations saw a block more than one
//! behind the last commit.

pub use strata_storage::telemetry::format_ns;

use crate::{READS, Sample};

/// A span of the monotonic clock, `[start_ns, end_ns)`.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// First nanosecond of the window.
    pub start_ns: u64,
    /// First nanosecond after it.
    pub end_ns: u64,
}

impl Window {
    fn holds(&self, at_ns: u64) -> bool {
        (self.start_ns..self.end_ns).contains(&at_ns)
    }
}

/// Percentiles of one kind of read.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: usize,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Worst, ns.
    pub max_ns: u64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples`.
    pub fn of(samples: impl IntoIterator<Item = u64>) -> Self {
        let mut sorted: Vec<u64> = samples.into_iter().collect();
        sorted.sort_unstable();
        let at = |q: f64| {
            if sorted.is_empty() {
                0
            } else {
                let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
                sorted[rank - 1]
            }
        };
        Percentiles {
            count: sorted.len(),
            p50_ns: at(0.5),
            p99_ns: at(0.99),
            p999_ns: at(0.999),
            max_ns: sorted.last().copied().unwrap_or(0),
        }
    }
}

/// What one observer (the thread, or the second process) saw.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ObserverFigures {
    /// "thread" or "process".
    pub observer: &'static str,
    /// (kind, idle, under load) for "head", "account", "storage".
    pub rows: Vec<(&'static str, Percentiles, Percentiles)>,
    /// Observations under load that saw a block more than one behind the last commit.
    pub stale_under_load: u64,
    /// Observations under load.
    pub observations_under_load: usize,
    /// Reads that returned an error (idle + under load).
    pub errors: u64,
    /// Observations under load whose reads took more than [`SLOW_NS`] in all.
    pub slow_under_load: u64,
    /// Of those, the ones whose thread waited for a CPU for at least half
    /// the time the reads took (preempted, not blocked by the store).
    pub slow_preempted: u64,
}

/// An observation slower than this (all its reads together) counts as slow.
pub const SLOW_NS: u64 = 1_000_000;

impl ObserverFigures {
    /// Figures of `samples` split into `idle` and `load`. `commits` lists
    /// `(monotonic ns once commit() had returned, block)` in order;
    /// `committed_before` is the last block committed before the first.
    pub fn new(
        observer: &'static str,
        samples: &[Sample],
        idle: Window,
        load: Window,
        committed_before: Option<u64>,
        commits: &[(u64, u64)],
    ) -> Self {
        let in_idle = || samples.iter().filter(|s| idle.holds(s.at_ns));
        let in_load = || samples.iter().filter(|s| load.holds(s.at_ns));
        let rows = READS
            .iter()
            .map(|&(kind, read)| {
                (
                    kind,
                    Percentiles::of(in_idle().filter_map(read)),
                    Percentiles::of(in_load().filter_map(read)),
                )
            })
            .collect();
        let committed_at = |at_ns: u64| {
            let landed = commits.partition_point(|&(t, _)| t <= at_ns);
            match landed {
                0 => committed_before,
                n => Some(commits[n - 1].1),
            }
        };
        let stale_under_load = in_load()
            .filter(|s| committed_at(s.at_ns).is_some_and(|c| s.block.map_or(0, |b| b + 1) < c))
            .count() as u64;
        let slow = || in_load().filter(|s| s.total_ns() > SLOW_NS);
        ObserverFigures {
            observer,
            slow_under_load: slow().count() as u64,
            slow_preempted: slow()
                .filter(|s| s.waited_ns.is_some_and(|w| w * 2 >= s.total_ns()))
                .count() as u64,
            rows,
            stale_under_load,
            observations_under_load: in_load().count(),
            errors: in_idle()
                .chain(in_load())
                .map(|s| u64::from(s.errors))
                .sum(),
        }
    }
}

impl ObserverFigures {
    /// The idle-vs-load table of this observer, line by line.
    pub fn table(&self, rate: f64) -> Vec<String> {
        let mut lines = vec![
            format!(
                "observer ({}) at {rate} reads/s: idle vs under load",
                self.observer
            ),
            format!(
                "{:<8} {:>7} {:>9} {:>9} {:>9} {:>9} | {:>7} {:>9} {:>9} {:>9} {:>9}",
                "read",
                "idle n",
                "p50",
                "p99",
                "p99.9",
                "worst",
                "load n",
                "p50",
                "p99",
                "p99.9",
                "worst"
            ),
        ];
        for (kind, idle, load) in &self.rows {
            lines.push(format!(
                "{:<8} {:>7} {:>9} {:>9} {:>9} {:>9} | {:>7} {:>9} {:>9} {:>9} {:>9}",
                kind,
                idle.count,
                format_ns(idle.p50_ns),
                format_ns(idle.p99_ns),
                format_ns(idle.p999_ns),
                format_ns(idle.max_ns),
                load.count,
                format_ns(load.p50_ns),
                format_ns(load.p99_ns),
                format_ns(load.p999_ns),
                format_ns(load.max_ns)
            ));
        }
        lines.push(format!(
            "observer ({}): {} of {} observations under load saw a block more than one behind the last commit; {} read errors",
            self.observer, self.stale_under_load, self.observations_under_load, self.errors
        ));
        lines.push(format!(
            "observer ({}): {} observations under load took over {} in all; {} of them waited at least half that time for a CPU",
            self.observer,
            self.slow_under_load,
            format_ns(SLOW_NS),
            self.slow_preempted
        ));
        lines
    }
}

/// What the observers saw, idle and under load.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ObserverReport {
    /// Target observations per second.
    pub rate: f64,
    /// The thread observer, then the second process if one ran.
    pub observers: Vec<ObserverFigures>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ns: u64, block: Option<u64>, head_ns: u64) -> Sample {
        Sample {
            at_ns,
            block,
            head_ns,
            account_ns: Some(head_ns * 2),
            storage_ns: None,
            errors: 0,
            waited_ns: Some(0),
        }
    }

    #[test]
    fn samples_split_by_window_and_stale_ones_are_counted() {
        let idle = Window {
            start_ns: 0,
            end_ns: 100,
        };
        let load = Window {
            start_ns: 100,
            end_ns: 1_000,
        };
        // Block 5 before the run; 6 lands at 200, 7 at 300, 8 at 400.
        let commits = [(200, 6), (300, 7), (400, 8)];
        let samples = [
            sample(10, Some(5), 1),
            sample(150, Some(5), 10),  // current
            sample(250, Some(5), 20),  // one behind 6: fine
            sample(350, Some(5), 30),  // two behind 7: stale
            sample(450, Some(8), 40),  // current
            sample(460, None, 50),     // nothing seen while 8 is committed: stale
            sample(2_000, Some(1), 9), // outside both windows
        ];
        let figures = ObserverFigures::new("thread", &samples, idle, load, Some(5), &commits);
        assert_eq!(figures.observations_under_load, 5);
        assert_eq!(figures.stale_under_load, 2);
        let (kind, idle_head, load_head) = figures.rows[0];
        assert_eq!(kind, "head");
        assert_eq!((idle_head.count, idle_head.max_ns), (1, 1));
        assert_eq!(
            (load_head.count, load_head.p50_ns, load_head.max_ns),
            (5, 30, 50)
        );
        let (_, _, load_storage) = figures.rows[2];
        assert_eq!(load_storage.count, 0);
    }

    #[test]
    fn slow_observations_are_split_by_their_wait_for_a_cpu() {
        let window = Window {
            start_ns: 0,
            end_ns: 100,
        };
        let slow = |waited| Sample {
            waited_ns: waited,
            ..sample(10, Some(1), 2 * SLOW_NS / 3)
        };
        // Reads of 2/3 ms + 4/3 ms (account) = 2 ms each.
        let samples = [
            slow(Some(SLOW_NS)),     // waited half of 2 ms: preempted
            slow(Some(SLOW_NS / 2)), // waited a quarter: not
            slow(None),              // unknown: not counted as preempted
            sample(20, Some(1), 10), // fast
        ];
        let figures = ObserverFigures::new("t", &samples, window, window, Some(1), &[]);
        assert_eq!((figures.slow_under_load, figures.slow_preempted), (3, 1));
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let p = Percentiles::of(1..=1000);
        assert_eq!(
            (p.count, p.p50_ns, p.p99_ns, p.p999_ns, p.max_ns),
            (1000, 500, 990, 999, 1000)
        );
        assert_eq!(Percentiles::of([]).count, 0);
    }
}
