//! A Zipf sampler over ranks 0..n: rank r is drawn with probability
//! proportional to 1 / (r + 1)^s. Hot contracts and busy accounts on mainnet
//! follow roughly this law.
//!
//! Only s = 1 and s = 1/2 are offered: their weights need only division and
//! `sqrt`, which IEEE 754 rounds exactly on every platform, whereas `powf`
//! comes from the platform's libm and may differ in the last bit — and a
//! generated trace must be the same bytes everywhere.

use rand::Rng;

/// The exponent s of a [`Zipf`] law.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exponent {
    /// s = 1: the classic law (popular contracts, shared bytecodes).
    One,
    /// s = 1/2: a flatter law (activity of EOAs).
    Half,
}

/// Samples ranks 0..n with Zipf weights (precomputed cumulative table).
#[derive(Debug, Clone)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// A sampler over `n` ranks (at least one) with the given exponent.
    pub fn new(n: usize, exponent: Exponent) -> Self {
        let mut total = 0.0;
        let cdf = (0..n.max(1))
            .map(|r| {
                let x = (r + 1) as f64;
                total += match exponent {
                    Exponent::One => 1.0 / x,
                    Exponent::Half => 1.0 / x.sqrt(),
                };
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

    use super::{Exponent, Zipf};

    #[test]
    fn low_ranks_are_drawn_most() {
        let zipf = Zipf::new(100, Exponent::One);
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
