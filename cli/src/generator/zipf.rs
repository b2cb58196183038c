//! A Zipf sampler over ranks 0..n: rank r is drawn with probability
//! proportional to 1 / (r + 1)^s. Hot contracts and busy accounts on mainnet
//! follow roughly this law.

use rand::Rng;

/// Samples ranks 0..n with Zipf weights (precomputed cumulative table).
#[derive(Debug, Clone)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// A sampler over `n` ranks (n ≥ 1) with exponent `s` (0 = uniform).
    pub fn new(n: usize, s: f64) -> Self {
        let mut total = 0.0;
        let cdf = (0..n.max(1))
            .map(|r| {
                total += 1.0 / ((r + 1) as f64).powf(s);
                total
            })
            .collect();
        Self { cdf }
    }

    /// Number of ranks.
    pub fn len(&self) -> usize {
        self.cdf.len()
    }

    /// Always false: a sampler has at least one rank.
    pub fn is_empty(&self) -> bool {
        self.cdf.is_empty()
    }

    /// The probability mass of rank `r`.
    pub fn weight(&self, r: usize) -> f64 {
        let total = self.cdf[self.cdf.len() - 1];
        let below = if r == 0 { 0.0 } else { self.cdf[r - 1] };
        (self.cdf[r] - below) / total
    }

    /// Draw a rank.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        let total = self.cdf[self.cdf.len() - 1];
        let u = rng.random::<f64>() * total;
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::Zipf;

    #[test]
    fn low_ranks_are_drawn_most() {
        let zipf = Zipf::new(100, 1.0);
        let mut rng = StdRng::seed_from_u64(7);
        let mut counts = [0usize; 100];
        for _ in 0..100_000 {
            counts[zipf.sample(&mut rng)] += 1;
        }
        assert!(counts[0] > counts[1] && counts[1] > counts[9] && counts[9] > counts[99]);
        // Rank 0 holds 1/H(100) ≈ 19.3% of the mass.
        let share = counts[0] as f64 / 100_000.0;
        assert!((share - zipf.weight(0)).abs() < 0.01, "share {share}");
    }
}
