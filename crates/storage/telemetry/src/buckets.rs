//! Log-linear latency buckets (HdrHistogram-style) and quantiles over them.
//!
//! Values below 64 ns get one bucket each. Above, every power of two is cut
//! into 32 equal sub-buckets, so a bucket is at most 1/32 of its lower bound
//! wide and its midpoint is within 1/64 (≈1.6%) of any value in it.

/// Sub-buckets per power of two (5 bits of precision).
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
/// Values below this get exact buckets.
const LINEAR: u64 = 2 * SUB as u64;
/// Octaves above the linear range that are tracked: [2^6, 2^30).
const OCTAVES: usize = 30 - 6;

/// Latencies at or above this (≈1.07 s) share one overflow bucket; their
/// exact maximum is still kept.
pub const MAX_TRACKED_NS: u64 = 1 << 30;

/// Buckets per histogram, including the overflow bucket.
pub const BUCKETS: usize = LINEAR as usize + OCTAVES * SUB + 1;

/// The bucket of a latency in nanoseconds.
#[inline]
pub fn bucket_of(nanos: u64) -> usize {
    if nanos < LINEAR {
        return nanos as usize;
    }
    if nanos >= MAX_TRACKED_NS {
        return BUCKETS - 1;
    }
    let octave = 63 - nanos.leading_zeros(); // ≥ 6
    let shift = octave - SUB_BITS;
    let sub = (nanos >> shift) as usize - SUB;
    LINEAR as usize + (octave as usize - 6) * SUB + sub
}

/// The value reported for a bucket: its midpoint (the overflow bucket
/// reports its lower bound; quantiles report the recorded maximum there).
pub(crate) fn representative(bucket: usize) -> u64 {
    if bucket < LINEAR as usize {
        return bucket as u64;
    }
    if bucket >= BUCKETS - 1 {
        return MAX_TRACKED_NS;
    }
    let j = bucket - LINEAR as usize;
    let octave = 6 + (j / SUB) as u32;
    let shift = octave - SUB_BITS;
    let lower = ((SUB + j % SUB) as u64) << shift;
    lower + ((1u64 << shift) - 1) / 2
}

/// Plain (non-atomic) counts of one cell, merged from whatever recorded them.
#[derive(Clone, Debug)]
pub struct Histogram {
    /// Samples per bucket ([`bucket_of`] gives a latency's bucket).
    pub counts: Box<[u64; BUCKETS]>,
    /// The sum of every sample, in nanoseconds.
    pub sum: u64,
    /// The largest sample, in nanoseconds.
    pub max: u64,
}

impl Histogram {
    pub(crate) fn new() -> Self {
        Self {
            counts: Box::new([0; BUCKETS]),
            sum: 0,
            max: 0,
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, nanos: u64) {
        self.counts[bucket_of(nanos)] += 1;
        self.sum = self.sum.saturating_add(nanos);
        self.max = self.max.max(nanos);
    }

    /// Samples in every bucket.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value at quantile `q` (0..=1): the sample of rank ⌈q·count⌉,
    /// estimated by its bucket's midpoint and clamped to the maximum.
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        let count = self.count();
        if count == 0 {
            return 0;
        }
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for (bucket, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                if bucket == BUCKETS - 1 {
                    return self.max;
                }
                return representative(bucket).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut last = 0;
        let mut value = 0u64;
        while value < MAX_TRACKED_NS {
            let bucket = bucket_of(value);
            assert!(bucket >= last, "bucket of {value} went back");
            assert!(bucket < BUCKETS - 1);
            let mid = representative(bucket) as f64;
            let error = (mid - value as f64).abs() / (value.max(1) as f64);
            assert!(
                error <= 1.0 / 64.0 + 1e-9,
                "{value}: midpoint {mid}, error {error}"
            );
            last = bucket;
            value = value + 1 + value / 97;
        }
        assert_eq!(bucket_of(MAX_TRACKED_NS - 1), BUCKETS - 2);
        assert_eq!(bucket_of(MAX_TRACKED_NS), BUCKETS - 1);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_of(63), 63);
        assert_eq!(bucket_of(64), 64);
    }

    #[test]
    fn quantiles_are_within_3_percent_of_exact() {
        // A deterministic log-uniform spread from ~50 ns to ~10 ms.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut samples: Vec<u64> = (0..100_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let exponent = 5.6 + (state % 10_000) as f64 / 10_000.0 * 17.7;
                exponent.exp2() as u64
            })
            .collect();
        let mut histogram = Histogram::new();
        for &s in &samples {
            histogram.add(s);
        }
        samples.sort_unstable();
        for q in [0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            let exact = samples[rank - 1] as f64;
            let estimate = histogram.quantile(q) as f64;
            let error = (estimate - exact).abs() / exact;
            assert!(
                error <= 0.03,
                "q={q}: exact {exact}, estimate {estimate}, error {error:.4}"
            );
        }
        assert_eq!(histogram.count(), 100_000);
        assert_eq!(histogram.max, *samples.last().unwrap_or(&0));
        assert_eq!(histogram.sum, samples.iter().sum::<u64>());
    }

    #[test]
    fn overflow_reports_the_maximum() {
        let mut histogram = Histogram::new();
        histogram.add(5 * MAX_TRACKED_NS);
        assert_eq!(histogram.quantile(0.5), 5 * MAX_TRACKED_NS);
        assert_eq!(histogram.quantile(1.0), 5 * MAX_TRACKED_NS);
        let mut single = Histogram::new();
        single.add(1217); // bucket [1216, 1248), midpoint 1231
        assert_eq!(single.quantile(0.99), 1217, "clamped to the max");
    }
}
