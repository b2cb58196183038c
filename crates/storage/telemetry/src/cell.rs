//! The dense (domain × tier × regime) cell index of the histogram arrays.

use super::tier::{TIER_COUNT, Tier};
use strata_types::{Domain, Regime};

/// Number of histograms: 4 domains × 13 tiers × 2 regimes.
pub(crate) const CELLS: usize = Domain::ALL.len() * TIER_COUNT * Regime::ALL.len();

#[inline]
pub(crate) const fn cell_index(domain: Domain, tier: Tier, regime: Regime) -> usize {
    (domain.index() * TIER_COUNT + tier.index()) * Regime::ALL.len() + regime.index()
}

/// Every cell with its coordinates, in index order.
pub(crate) fn all_cells() -> impl Iterator<Item = (usize, Domain, Tier, Regime)> {
    Domain::ALL.into_iter().flat_map(|domain| {
        Tier::ALL.into_iter().flat_map(move |tier| {
            Regime::ALL
                .into_iter()
                .map(move |regime| (cell_index(domain, tier, regime), domain, tier, regime))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_dense_and_in_order() {
        let indices: Vec<_> = all_cells().map(|(i, ..)| i).collect();
        assert_eq!(indices, (0..CELLS).collect::<Vec<_>>());
    }
}
