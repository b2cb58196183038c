//! A few live keys of a domain, drawn at random for callers that need keys
//! to read without knowing the state (`strata observe` without a trace):
//! one merged pass over the tiers, newest version of each key deciding,
//! feeding a seeded reservoir. Memory stays at the sample's size whatever
//! the state's; time is one scan of the domain.

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::Result;
use crate::read_only::ReadOnlyStateDb;
use strata_types::domain::Domain;
use strata_view::snapshot::Snapshot;

impl ReadOnlyStateDb {
    /// Up to `count` live keys of `domain` at the newest published block,
    /// in key order, drawn uniformly: every live key is equally likely, each
    /// counted once however many tiers hold a version of it, and deleted keys
    /// are never drawn. The same state, `count` and `seed` give the same keys.
    ///
    /// One pass over the domain's memory tier, redb table and files, holding
    /// `count` keys (the memory tier's entries are listed first; they are in
    /// memory already). Fewer than `count` keys come back when the domain
    /// holds fewer. Account and code keys are addresses, storage keys
    /// address ‖ slot ([`strata_types::keys`]).
    pub fn sample_keys(&self, domain: Domain, count: usize, seed: u64) -> Result<Vec<Bytes>> {
        sample(self.snapshot()?.as_ref(), domain, count, seed)
    }
}

/// [`ReadOnlyStateDb::sample_keys`] over one snapshot.
fn sample(snapshot: &Snapshot, domain: Domain, count: usize, seed: u64) -> Result<Vec<Bytes>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    // The same merged walk as the range reads, over the whole domain.
    let mut reservoir = Reservoir::new(count, seed);
    snapshot.visit_live_range(domain, Vec::new(), &[], None, |key, _| {
        reservoir.offer(key);
        true
    })?;
    Ok(reservoir.into_sorted())
}

/// Uniform sampling of `capacity` items from a stream of unknown length
/// (reservoir sampling): after `n` offers, each offered item is held with
/// probability `capacity / n`.
struct Reservoir {
    keys: Vec<Bytes>,
    capacity: usize,
    offered: u64,
    rng: StdRng,
}

impl Reservoir {
    fn new(capacity: usize, seed: u64) -> Reservoir {
        Reservoir {
            keys: Vec::with_capacity(capacity.min(1 << 16)),
            capacity,
            offered: 0,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    fn offer(&mut self, key: Bytes) {
        // A copy: a file's key is a slice of its whole map.
        let copy = || Bytes::copy_from_slice(&key);
        if self.keys.len() < self.capacity {
            self.keys.push(copy());
        } else {
            let slot = self.rng.random_range(0..=self.offered);
            if let Some(kept) = usize::try_from(slot)
                .ok()
                .and_then(|slot| self.keys.get_mut(slot))
            {
                *kept = copy();
            }
        }
        self.offered += 1;
    }

    fn into_sorted(mut self) -> Vec<Bytes> {
        self.keys.sort_unstable();
        self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reservoir_keeps_everything_when_it_fits_and_is_uniform_otherwise() {
        let keys: Vec<Bytes> = (0u8..10).map(|k| Bytes::from(vec![k])).collect();
        let mut all = Reservoir::new(20, 1);
        keys.iter().cloned().for_each(|k| all.offer(k));
        assert_eq!(all.into_sorted(), keys);

        // One key of ten, 1,000 seeds: each drawn near 100 times.
        let mut drawn = [0u32; 10];
        for seed in 0..1_000 {
            let mut one = Reservoir::new(1, seed);
            keys.iter().cloned().for_each(|k| one.offer(k));
            let kept = one.into_sorted();
            assert_eq!(kept.len(), 1);
            drawn[usize::from(kept[0][0])] += 1;
        }
        assert!(drawn.iter().all(|&n| (60..=140).contains(&n)), "{drawn:?}");

        let sample = |seed| {
            let mut r = Reservoir::new(3, seed);
            keys.iter().cloned().for_each(|k| r.offer(k));
            r.into_sorted()
        };
        assert_eq!(sample(7), sample(7));
        assert!((0..20).any(|seed| sample(seed) != sample(7)));
    }
}
