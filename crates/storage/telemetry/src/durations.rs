//! Histograms of block-level durations (commit, root, journal write, flush,
//! maintenance steps): a few events a second at most, so one set of atomic
//! buckets (no stripes) is enough; recording takes no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the duration buckets in microseconds: 100 µs doubling up
/// to ~52 s (`100 · 2^i`, i = 0..=19); a last bucket takes the rest.
const BOUNDS_US: [u64; 20] = {
    let mut bounds = [0u64; 20];
    let mut i = 0;
    while i < bounds.len() {
        bounds[i] = 100 << i;
        i += 1;
    }
    bounds
};

/// A histogram of durations with fixed power-of-two buckets from 100 µs to
/// ~52 s, recorded with relaxed atomics.
#[derive(Debug)]
pub struct DurationHistogram {
    /// `counts[i]`: durations ≤ `BOUNDS_US[i]` µs and above the bound before;
    /// the last slot holds those above every bound.
    counts: [AtomicU64; BOUNDS_US.len() + 1],
    sum_nanos: AtomicU64,
}

impl Default for DurationHistogram {
    fn default() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
        }
    }
}

/// What a [`DurationHistogram`] held at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DurationCounts {
    /// `(upper bound in seconds, durations in this bucket)`, bounds rising,
    /// the last one `f64::INFINITY`. Counts are per bucket, not cumulative.
    pub buckets: Vec<(f64, u64)>,
    /// Durations recorded.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
}

impl DurationHistogram {
    /// Records one duration.
    pub fn record(&self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let micros = nanos.div_ceil(1_000);
        let slot = BOUNDS_US.partition_point(|&bound| bound < micros);
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The counts now (a record racing with it may be seen in its bucket
    /// before its sum).
    pub fn counts(&self) -> DurationCounts {
        let buckets: Vec<(f64, u64)> = BOUNDS_US
            .iter()
            .map(|&us| us as f64 / 1e6)
            .chain([f64::INFINITY])
            .zip(&self.counts)
            .map(|(bound, count)| (bound, count.load(Ordering::Relaxed)))
            .collect();
        DurationCounts {
            count: buckets.iter().map(|(_, n)| n).sum(),
            buckets,
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_land_in_the_bucket_whose_bound_they_do_not_exceed() {
        let histogram = DurationHistogram::default();
        histogram.record(Duration::from_micros(100)); // ≤ 100 µs
        histogram.record(Duration::from_nanos(100_001)); // ≤ 200 µs
        histogram.record(Duration::from_millis(3)); // ≤ 3.2 ms
        histogram.record(Duration::from_secs(3600)); // above every bound
        let counts = histogram.counts();
        assert_eq!(counts.count, 4);
        assert_eq!(counts.buckets.len(), 21);
        assert_eq!(counts.buckets[0], (0.0001, 1));
        assert_eq!(counts.buckets[1], (0.0002, 1));
        assert_eq!(counts.buckets[5], (0.0032, 1));
        assert_eq!(counts.buckets[20], (f64::INFINITY, 1));
        assert!((counts.sum_seconds - 3_600.003_200_001).abs() < 1e-6);
        assert_eq!(
            counts.buckets.iter().map(|(_, n)| n).sum::<u64>(),
            counts.count
        );
    }
}
