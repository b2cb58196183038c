//! A few live keys of a domain, drawn at random for callers that need keys
//! to read without knowing the state (`strata observe` without a trace):
//! one merged pass over the tiers, newest version of each key deciding,
//! feeding a seeded reservoir. Memory stays at the sample's size whatever
//! the state's; time is one scan of the domain.

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redb::ReadableTable;

use crate::db::guard::guarded;
use crate::db::value;
use crate::domain::Domain;
use crate::error::{Result, db_err};
use crate::read_only::ReadOnlyStateDb;
use crate::snapshot::Snapshot;

/// One tier's entries of a domain in key order: each key and whether its
/// version there is a value (`false`: a tombstone).
type Source<'a> = Box<dyn Iterator<Item = Result<(Bytes, bool)>> + 'a>;

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
    /// address ‖ slot ([`crate::keys`]).
    pub fn sample_keys(&self, domain: Domain, count: usize, seed: u64) -> Result<Vec<Bytes>> {
        sample(self.snapshot()?.as_ref(), domain, count, seed)
    }
}

/// [`ReadOnlyStateDb::sample_keys`] over one snapshot.
fn sample(snapshot: &Snapshot, domain: Domain, count: usize, seed: u64) -> Result<Vec<Bytes>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let memory = snapshot
        .memory
        .entries(domain)
        .into_iter()
        .map(|(key, value)| Ok((key, value.is_some())));
    // redb may panic on a damaged page anywhere in the walk.
    guarded(domain.name(), || {
        let db = snapshot
            .db_table(domain)
            .iter()
            .map_err(db_err("iterate"))?
            .map(move |entry| {
                let (key, raw) = entry.map_err(db_err("iterate"))?;
                let (_, found) = value::decode(domain, key.value(), raw.value())?;
                Ok((Bytes::copy_from_slice(key.value()), found.is_some()))
            });
        let mut sources: Vec<Source<'_>> = vec![Box::new(memory), Box::new(db)];
        // Newest file first, as reads search them.
        for file in snapshot.files.files(domain) {
            sources.push(Box::new(file.iter().map(|entry| {
                let (key, found) = entry?;
                Ok((key, found.value().is_some()))
            })));
        }
        let mut reservoir = Reservoir::new(count, seed);
        for_each_live_key(sources, |key| reservoir.offer(key))?;
        Ok(reservoir.into_sorted())
    })
}

/// Calls `visit` with every key of the union of `sources` whose newest
/// version is a value, in key order. Each source must be in strictly
/// increasing key order; among sources holding a key, the earliest is the
/// newest. Holds one entry per source.
fn for_each_live_key(mut sources: Vec<Source<'_>>, mut visit: impl FnMut(Bytes)) -> Result<()> {
    let mut heads = sources
        .iter_mut()
        .map(|source| source.next().transpose())
        .collect::<Result<Vec<_>>>()?;
    loop {
        // `min_by` keeps the first of equal keys: the newest source's version.
        let Some((key, live)) = heads.iter().flatten().min_by(|a, b| a.0.cmp(&b.0)).cloned() else {
            return Ok(());
        };
        for (head, source) in heads.iter_mut().zip(&mut sources) {
            if head.as_ref().is_some_and(|(at, _)| *at == key) {
                *head = source.next().transpose()?;
                debug_assert!(
                    head.as_ref().is_none_or(|(next, _)| *next > key),
                    "a tier's entries out of key order after {key:?}"
                );
            }
        }
        if live {
            visit(key);
        }
    }
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
    use std::collections::BTreeMap;

    use super::*;

    /// A source over `entries` (key byte, live).
    fn source(entries: &[(u8, bool)]) -> Source<'static> {
        let entries: Vec<_> = entries
            .iter()
            .map(|&(key, live)| Ok((Bytes::from(vec![key]), live)))
            .collect();
        Box::new(entries.into_iter())
    }

    fn live_keys(tiers: &[&[(u8, bool)]]) -> Vec<u8> {
        let mut out = Vec::new();
        for_each_live_key(tiers.iter().map(|t| source(t)).collect(), |key| {
            out.push(key[0]);
        })
        .unwrap();
        out
    }

    /// The model: apply the tiers oldest first into a map.
    fn model(tiers: &[&[(u8, bool)]]) -> Vec<u8> {
        let mut newest = BTreeMap::new();
        for tier in tiers.iter().rev() {
            for &(key, live) in *tier {
                newest.insert(key, live);
            }
        }
        newest
            .into_iter()
            .filter_map(|(k, live)| live.then_some(k))
            .collect()
    }

    #[test]
    fn the_newest_tier_decides_and_each_key_comes_once() {
        let cases: [&[&[(u8, bool)]]; 5] = [
            &[],
            &[&[], &[]],
            &[
                &[(1, true), (3, false)],
                &[(1, false), (2, true), (3, true)],
            ],
            &[
                &[(5, false)],
                &[(5, true), (6, true)],
                &[(4, true), (5, true)],
            ],
            &[
                &[(2, true)],
                &[(1, false), (2, false), (9, true)],
                &[(1, true), (2, true), (3, true), (9, false)],
            ],
        ];
        for tiers in cases {
            assert_eq!(live_keys(tiers), model(tiers), "{tiers:?}");
        }
        assert_eq!(live_keys(cases[3]), vec![4, 6]);
    }

    #[test]
    fn an_error_in_a_tier_ends_the_walk_with_it() {
        let failing: Source<'static> = Box::new(
            [
                Ok((Bytes::from_static(b"a"), true)),
                Err(crate::Error::Maintenance("bad tier".into())),
            ]
            .into_iter(),
        );
        let mut seen = Vec::new();
        let result = for_each_live_key(vec![failing], |key| seen.push(key));
        assert!(
            matches!(result, Err(crate::Error::Maintenance(_))),
            "{result:?}"
        );
    }

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
