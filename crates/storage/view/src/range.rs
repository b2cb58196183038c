//! Range reads: a domain's live entries in key order from a start key,
//! merged across the tiers — a block writer's own writes, the memory tier,
//! redb and the files newest first — with the newest version of each key
//! deciding and deleted keys left out. What snap-sync serving,
//! `debug_storageRangeAt` and a state export need.

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;

use crate::error::guarded;
use crate::error::{Result, db_err};
use crate::overlay::Overlay;
use crate::reader::{StateReader, decode_account, decode_slot};
use crate::snapshot::Snapshot;
use strata_db::value;
use strata_types::account::Account;
use strata_types::domain::Domain;
use strata_types::keys::{STORAGE_KEY_LEN, next_key, storage_key};

/// One tier's entries of a domain in key order: each key and its version
/// there (`None`: a tombstone).
pub type Source<'a> = Box<dyn Iterator<Item = Result<(Bytes, Option<Bytes>)>> + 'a>;

/// Calls `visit` with every key of the union of `sources` whose newest
/// version is a value, and that value, in key order, until `visit` returns
/// `false`. Each source must be in strictly increasing key order; among
/// sources holding a key, the earliest is the newest. Holds one entry per
/// source.
pub fn merge_newest(
    mut sources: Vec<Source<'_>>,
    mut visit: impl FnMut(Bytes, Bytes) -> bool,
) -> Result<()> {
    let mut heads = sources
        .iter_mut()
        .map(|source| source.next().transpose())
        .collect::<Result<Vec<_>>>()?;
    loop {
        // `min_by` keeps the first of equal keys: the newest source's version.
        let Some((key, newest)) = heads.iter().flatten().min_by(|a, b| a.0.cmp(&b.0)).cloned()
        else {
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
        if let Some(value) = newest
            && !visit(key, value)
        {
            return Ok(());
        }
    }
}

impl Snapshot {
    /// Calls `visit` with the live entries of `domain` with keys in
    /// `[from, to)` (`to` = `None`: to the end), newest version first among
    /// `newer` (newest first: a block's own writes, or an old block's
    /// history and undo, searched before the snapshot) and the tiers,
    /// until `visit` returns `false`.
    pub fn visit_live_range(
        &self,
        domain: Domain,
        newer: Vec<Source<'_>>,
        from: &[u8],
        to: Option<&[u8]>,
        visit: impl FnMut(Bytes, Bytes) -> bool,
    ) -> Result<()> {
        let before_end = move |key: &[u8]| to.is_none_or(|to| key < to);
        let memory = self
            .memory
            .entries_from(domain, from)
            .take_while(move |(key, _)| before_end(key))
            .map(Ok);
        // redb may panic on a damaged page anywhere in the walk.
        guarded(domain.name(), || {
            let db = self
                .db_table(domain)
                .range(from..)
                .map_err(db_err("range"))?
                .map(move |entry| {
                    let (key, raw) = entry.map_err(db_err("range"))?;
                    let (_, found) = value::decode(domain, key.value(), raw.value())?;
                    Ok((
                        Bytes::copy_from_slice(key.value()),
                        found.map(Bytes::copy_from_slice),
                    ))
                })
                .take_while(move |entry| entry.as_ref().map_or(true, |(key, _)| before_end(key)));
            let mut sources: Vec<Source<'_>> = newer;
            sources.push(Box::new(memory));
            sources.push(Box::new(db));
            // Newest file first, as reads search them.
            for file in self.files.files(domain) {
                sources.push(Box::new(
                    file.iter_from(from)
                        .map(|entry| {
                            let (key, found) = entry?;
                            Ok((key, found.into_value()))
                        })
                        .take_while(move |entry| {
                            entry.as_ref().map_or(true, |(key, _)| before_end(key))
                        }),
                ));
            }
            merge_newest(sources, visit)
        })
    }
}

/// The entries of `overlay` in `domain` from `from` (below `to`), as a
/// source newer than every tier.
fn overlay_source<'a>(
    overlay: &'a Overlay,
    domain: Domain,
    from: &[u8],
    to: Option<&'a [u8]>,
) -> Source<'a> {
    Box::new(
        overlay
            .entries(domain)
            .range(from.to_vec()..)
            .take_while(move |(key, _)| to.is_none_or(|to| key.as_slice() < to))
            .map(|(key, value)| Ok((Bytes::copy_from_slice(key), value.clone()))),
    )
}

impl StateReader {
    /// The sources a range read merges above the snapshot's tiers, newest
    /// first: at a block older than redb's head (a deep reader), the
    /// values the history files recorded before each key's first change
    /// after it, then the undo back to redb's head; else the handle's
    /// overlay (a block's writes, or the undo to an older block).
    fn newer_sources<'a>(
        &'a self,
        domain: Domain,
        from: &[u8],
        to: Option<&'a [u8]>,
    ) -> Result<Vec<Source<'a>>> {
        let mut sources: Vec<Source<'a>> = Vec::new();
        if self.is_deep()
            && let Some(at) = self.at_block()
        {
            sources.push(
                self.snapshot()
                    .history_changed_after(domain, from, to, at)?,
            );
        }
        sources.extend(self.overlay().map(|o| overlay_source(o, domain, from, to)));
        Ok(sources)
    }

    /// Calls `visit` with every live entry of `domain` in `[from, to)` as
    /// this handle's block has them (its overlay, or at an old block the
    /// history, above the snapshot's tiers), in key order, until `visit`
    /// returns `false`: the walk `verify` derives a root from. Not timed.
    pub fn visit_range(
        &self,
        domain: Domain,
        from: &[u8],
        to: Option<&[u8]>,
        visit: impl FnMut(Bytes, Bytes) -> bool,
    ) -> Result<()> {
        let newer = self.newer_sources(domain, from, to)?;
        self.snapshot()
            .visit_live_range(domain, newer, from, to, visit)
    }

    /// Up to `limit` accounts in address order, starting at `from`
    /// (inclusive), as this handle's block has them: the tiers merged,
    /// deleted accounts left out. Page through the state with the next
    /// address after the last one returned. Not timed as reads (a scan).
    pub fn accounts(&self, from: &Address, limit: usize) -> Result<Vec<(Address, Account)>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let newer = self.newer_sources(Domain::Account, from.as_slice(), None)?;
        let mut failure = None;
        self.snapshot().visit_live_range(
            Domain::Account,
            newer,
            from.as_slice(),
            None,
            |key, raw| {
                let Some(address) = strata_types::keys::address_key(&key) else {
                    return true; // a raw key of another length: not an account
                };
                match decode_account(&key, &raw) {
                    Ok(account) => out.push((address, account)),
                    Err(error) => {
                        failure = Some(error);
                        return false;
                    }
                }
                out.len() < limit
            },
        )?;
        failure.map_or(Ok(out), Err)
    }

    /// Up to `limit` non-zero slots of `address` in slot order, starting
    /// at `from` (inclusive), as this handle's block has them
    /// (`debug_storageRangeAt`, snap sync's storage ranges). Not timed as
    /// reads (a scan).
    pub fn storage_range(
        &self,
        address: &Address,
        from: &B256,
        limit: usize,
    ) -> Result<Vec<(B256, U256)>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let start = storage_key(address, from);
        // The first key past this account's storage: the address plus one
        // (all-0xff addresses run to the end of the domain).
        let end = next_key(address.as_slice());
        let wiped = self.overlay().is_some_and(|o| o.wiped().contains(address));
        let newer = self.newer_sources(Domain::Storage, &start, end.as_deref())?;
        let mut failure = None;
        let mut visit = |key: Bytes, raw: Bytes| {
            let Some(slot) = key
                .get(20..STORAGE_KEY_LEN)
                .filter(|_| key.len() == STORAGE_KEY_LEN)
                .map(B256::from_slice)
            else {
                return true;
            };
            match decode_slot(&key, &raw) {
                Ok(value) => out.push((slot, value)),
                Err(error) => {
                    failure = Some(error);
                    return false;
                }
            }
            out.len() < limit
        };
        if wiped {
            // The block deleted the account's storage: only what it wrote since counts.
            merge_newest(newer, &mut visit)?;
        } else {
            self.snapshot().visit_live_range(
                Domain::Storage,
                newer,
                &start,
                end.as_deref(),
                &mut visit,
            )?;
        }
        failure.map_or(Ok(out), Err)
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
            .map(|&(key, live)| Ok((Bytes::from(vec![key]), live.then(|| Bytes::from(vec![key])))))
            .collect();
        Box::new(entries.into_iter())
    }

    fn merged(tiers: &[&[(u8, bool)]], limit: usize) -> Vec<u8> {
        let mut out = Vec::new();
        merge_newest(tiers.iter().map(|t| source(t)).collect(), |key, _| {
            out.push(key[0]);
            out.len() < limit
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
    fn the_newest_tier_decides_each_key_comes_once_and_the_limit_stops_the_walk() {
        let cases: [&[&[(u8, bool)]]; 4] = [
            &[],
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
            assert_eq!(merged(tiers, usize::MAX), model(tiers), "{tiers:?}");
        }
        assert_eq!(merged(cases[3], 2), vec![2, 3]);
    }

    #[test]
    fn an_error_in_a_tier_ends_the_walk_with_it() {
        let failing: Source<'static> = Box::new(
            [
                Ok((Bytes::from_static(b"a"), Some(Bytes::new()))),
                Err(crate::error::ReadError::InvalidOptions("bad tier".into())),
            ]
            .into_iter(),
        );
        let mut seen = Vec::new();
        let result = merge_newest(vec![failing], |key, _| {
            seen.push(key);
            true
        });
        assert!(
            matches!(result, Err(crate::error::ReadError::InvalidOptions(_))),
            "{result:?}"
        );
    }

    #[test]
    fn next_key_carries_and_ends() {
        assert_eq!(next_key(&[0, 0xff]), Some(vec![1, 0]));
        assert_eq!(next_key(&[0xff, 0xff]), None);
    }
}
