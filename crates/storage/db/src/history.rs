//! The state's history in redb: for every key a flushed block changed, the
//! value it held before that block, stored by block ([`HISTORY_CHANGES`]:
//! a flush appends at the end of the table, and unwind and pruning delete
//! whole blocks), and an index by key of the blocks that changed it
//! ([`HISTORY_INDEX`], small entries without values).
//!
//! A read at block `b` of a key finds the key's first change after `b` in
//! the index, then the value recorded before it in the changes: the value
//! at `b`. With no change after `b`, the value now is. Both tables are
//! written with the flushed head in one transaction, so they always cover
//! exactly the blocks redb holds.
//!
//! ```text
//! history_changes:  block u64 BE | domain u8 | key                   ->  commitment: 0 (absent) | 1 value
//!                                                                        account, storage, code: (empty)
//! history_index:    domain u8 | key_len u16 BE | key | block u64 BE  ->  account, storage, code: 0 | 1 value
//!                                                                        commitment: (empty)
//! ```
//! The value lives beside the index for the plain state's keys (small:
//! one lookup reads it) and in the changes for the commitment's records
//! (about 530 bytes each, 3 MB a block at 1M accounts: appended by block).
//! In the index the key's length comes before it so that the entries of one
//! key are contiguous and never mistaken for those of a longer key it
//! prefixes (commitment keys differ in length). Keyed by block first, the
//! changes a flush writes land in order at the table's end: at 1M accounts a
//! block's records are about 3 MB, and inserting them by key instead
//! rewrote pages all over the tree.

use bytes::Bytes;
use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};
use strata_types::Domain;

use crate::error::{Result, SchemaError, db_err};

/// Each block's changes: a key's value before the block.
pub const HISTORY_CHANGES: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("history_changes");

/// The blocks that changed each key.
pub const HISTORY_INDEX: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("history_index");

/// Whether `domain`'s recorded values live in the index (else in the
/// changes).
fn value_in_index(domain: Domain) -> bool {
    domain != Domain::Commitment
}

/// The [`HISTORY_INDEX`] key of `key`'s change at `block`.
pub fn index_key(domain: Domain, key: &[u8], block: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 11);
    out.push(domain.index() as u8);
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&block.to_be_bytes());
    out
}

/// The [`HISTORY_CHANGES`] key of `key`'s change at `block`.
fn change_key(block: u64, domain: Domain, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 9);
    out.extend_from_slice(&block.to_be_bytes());
    out.push(domain.index() as u8);
    out.extend_from_slice(key);
    out
}

fn encode_previous(previous: Option<&[u8]>) -> Vec<u8> {
    match previous {
        None => vec![0],
        Some(value) => {
            let mut out = Vec::with_capacity(value.len() + 1);
            out.push(1);
            out.extend_from_slice(value);
            out
        }
    }
}

fn corrupt(domain: Domain, key: &[u8], what: &str) -> SchemaError {
    SchemaError::CorruptRecord {
        domain,
        key: alloy_primitives::hex::encode(key),
        what: format!("history entry: {what}"),
    }
}

/// The value `key` held at `block`, when `index` records a change of it
/// after `block` (the value before the first one, from `changes`); `None`
/// when it records none (the value is the one the state holds).
pub fn value_at<I, C>(
    index: &I,
    changes: &C,
    domain: Domain,
    key: &[u8],
    block: u64,
) -> Result<Option<Option<Bytes>>>
where
    I: ReadableTable<&'static [u8], &'static [u8]>,
    C: ReadableTable<&'static [u8], &'static [u8]>,
{
    let Some(after) = block.checked_add(1) else {
        return Ok(None);
    };
    let from = index_key(domain, key, after);
    let prefix = &from[..from.len() - 8];
    let mut range = index
        .range::<&[u8]>(from.as_slice()..)
        .map_err(db_err("read history index"))?;
    let Some(entry) = range.next() else {
        return Ok(None);
    };
    let (found, inline) = entry.map_err(db_err("read history index"))?;
    let found = found.value();
    if found.len() != from.len() || !found.starts_with(prefix) {
        return Ok(None);
    }
    if value_in_index(domain) {
        return decode_previous(domain, key, inline.value()).map(Some);
    }
    let changed = u64::from_be_bytes(found[found.len() - 8..].try_into().expect("8 bytes"));
    let value = changes
        .get(change_key(changed, domain, key).as_slice())
        .map_err(db_err("read history changes"))?
        .ok_or_else(|| {
            corrupt(
                domain,
                key,
                &format!("the index names block {changed}, whose changes lack it"),
            )
        })?;
    decode_previous(domain, key, value.value()).map(Some)
}

/// A recorded value: `0` absent, `1 ‖ value`.
fn decode_previous(domain: Domain, key: &[u8], raw: &[u8]) -> Result<Option<Bytes>> {
    match raw.split_first() {
        Some((0, [])) => Ok(None),
        Some((1, bytes)) => Ok(Some(Bytes::copy_from_slice(bytes))),
        _ => Err(corrupt(domain, key, "unknown value tag")),
    }
}

/// One change to record: the block, the key's domain, the key, and the
/// value it held before the block (`None`: absent).
pub type Change<'a> = (u64, Domain, &'a [u8], Option<&'a [u8]>);

/// Calls `visit` with the domain, key length and recorded value's length
/// of every entry of the history (a scan of both tables).
pub fn visit_sizes<I, C>(
    index: &I,
    changes: &C,
    mut visit: impl FnMut(Domain, usize, usize),
) -> Result<()>
where
    I: ReadableTable<&'static [u8], &'static [u8]>,
    C: ReadableTable<&'static [u8], &'static [u8]>,
{
    for entry in index.iter().map_err(db_err("read history index"))? {
        let (key, value) = entry.map_err(db_err("read history index"))?;
        let key = key.value();
        let Some(&domain) = key.first().and_then(|d| Domain::ALL.get(*d as usize)) else {
            continue;
        };
        let value_len = if value_in_index(domain) {
            value.value().len().saturating_sub(1)
        } else {
            0
        };
        visit(domain, key.len().saturating_sub(11), value_len);
    }
    for entry in changes.iter().map_err(db_err("read history changes"))? {
        let (key, value) = entry.map_err(db_err("read history changes"))?;
        if key.value().get(8) == Some(&(Domain::Commitment.index() as u8)) {
            // Counted with its key above; its value is here.
            visit(
                Domain::Commitment,
                usize::MAX,
                value.value().len().saturating_sub(1),
            );
        }
    }
    Ok(())
}

/// Checks that the two tables describe the same changes: every change has
/// its index entry, every index entry its change, each value where its
/// domain keeps it and decodable. Returns the changes checked and every
/// problem (at most 20 described, then counted).
pub fn check<I, C>(index: &I, changes: &C) -> Result<(u64, Vec<String>)>
where
    I: ReadableTable<&'static [u8], &'static [u8]>,
    C: ReadableTable<&'static [u8], &'static [u8]>,
{
    let mut problems = Vec::new();
    let mut found = 0u64;
    let mut report = |problem: String| {
        found += 1;
        if found <= 20 {
            problems.push(problem);
        }
    };
    let mut checked = 0u64;
    for entry in changes.iter().map_err(db_err("read history changes"))? {
        let (key, value) = entry.map_err(db_err("read history changes"))?;
        let key = key.value();
        checked += 1;
        let (Some(block), Some(domain)) = (
            key.get(..8)
                .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes"))),
            key.get(8).and_then(|d| Domain::ALL.get(*d as usize)),
        ) else {
            report(format!(
                "history change {}: no block or domain",
                alloy_primitives::hex::encode(key)
            ));
            continue;
        };
        let plain = &key[9..];
        let Some(inline) = index
            .get(index_key(*domain, plain, block).as_slice())
            .map_err(db_err("read history index"))?
        else {
            report(format!(
                "history: block {block}'s change of {domain} key 0x{} has no index entry",
                alloy_primitives::hex::encode(plain)
            ));
            continue;
        };
        let kept = if value_in_index(*domain) {
            inline.value().to_vec()
        } else {
            value.value().to_vec()
        };
        if decode_previous(*domain, plain, &kept).is_err() {
            report(format!(
                "history: block {block}'s change of {domain} key 0x{}: its value does not decode",
                alloy_primitives::hex::encode(plain)
            ));
        }
    }
    let indexed = index.len().map_err(db_err("read history index"))?;
    if indexed != checked {
        report(format!(
            "history: {indexed} index entries for {checked} changes (an index entry without its change)"
        ));
    }
    if found > 20 {
        problems.push(format!("history: {} more problems", found - 20));
    }
    Ok((checked, problems))
}

/// Both history tables, opened for writing in one transaction.
pub struct HistoryTables<'txn> {
    index: Table<'txn, &'static [u8], &'static [u8]>,
    changes: Table<'txn, &'static [u8], &'static [u8]>,
}

impl<'txn> HistoryTables<'txn> {
    /// Opens (creating when missing) the history tables in `txn`.
    pub fn open(txn: &'txn WriteTransaction) -> Result<HistoryTables<'txn>> {
        Ok(HistoryTables {
            index: txn
                .open_table(HISTORY_INDEX)
                .map_err(db_err("open history index"))?,
            changes: txn
                .open_table(HISTORY_CHANGES)
                .map_err(db_err("open history changes"))?,
        })
    }

    /// Records every change of `changes` (block, domain, key, the value
    /// before: `None` absent), each table's entries inserted in its key
    /// order, so that each page of either tree is rewritten once.
    pub fn put_all(&mut self, changes: &[Change<'_>]) -> Result<()> {
        let mut by_block: Vec<(Vec<u8>, usize)> = changes
            .iter()
            .enumerate()
            .map(|(i, (block, domain, key, _))| (change_key(*block, *domain, key), i))
            .collect();
        by_block.sort_unstable();
        for (key, i) in &by_block {
            let (_, domain, _, previous) = changes[*i];
            let value = if value_in_index(domain) {
                Vec::new()
            } else {
                encode_previous(previous)
            };
            self.changes
                .insert(key.as_slice(), value.as_slice())
                .map_err(db_err("write history changes"))?;
        }
        drop(by_block);
        let mut by_key: Vec<(Vec<u8>, usize)> = changes
            .iter()
            .enumerate()
            .map(|(i, (block, domain, key, _))| (index_key(*domain, key, *block), i))
            .collect();
        by_key.sort_unstable();
        for (key, i) in &by_key {
            let (_, domain, _, previous) = changes[*i];
            let value = if value_in_index(domain) {
                encode_previous(previous)
            } else {
                Vec::new()
            };
            self.index
                .insert(key.as_slice(), value.as_slice())
                .map_err(db_err("write history index"))?;
        }
        Ok(())
    }

    /// Records that `block` changed `key`, which held `previous` before it
    /// (`None`: absent).
    pub fn put(
        &mut self,
        block: u64,
        domain: Domain,
        key: &[u8],
        previous: Option<&[u8]>,
    ) -> Result<()> {
        self.put_all(&[(block, domain, key, previous)])
    }

    /// Deletes the history of the blocks from `first` on (an unwind to the
    /// block before it), returning how many entries went.
    pub fn drop_from(&mut self, first: u64) -> Result<u64> {
        let from = first.to_be_bytes();
        let doomed = self.changes_in(from.as_slice().., usize::MAX)?;
        self.drop_changes(&doomed)
    }

    /// Deletes the history of the blocks up to `last` (pruning: no read at
    /// a kept block needs it), at most `limit` entries a call; returns how
    /// many went.
    pub fn drop_through(&mut self, last: u64, limit: usize) -> Result<u64> {
        let Some(end) = last.checked_add(1) else {
            return Ok(0);
        };
        let end = end.to_be_bytes();
        let doomed = self.changes_in(..end.as_slice(), limit)?;
        self.drop_changes(&doomed)
    }

    fn changes_in<'a>(
        &self,
        range: impl std::ops::RangeBounds<&'a [u8]> + 'a,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let mut found = Vec::new();
        for entry in self
            .changes
            .range::<&[u8]>(range)
            .map_err(db_err("read history changes"))?
            .take(limit)
        {
            let (key, _) = entry.map_err(db_err("read history changes"))?;
            found.push(key.value().to_vec());
        }
        Ok(found)
    }

    fn drop_changes(&mut self, doomed: &[Vec<u8>]) -> Result<u64> {
        for change in doomed {
            let (block, rest) = change.split_at(8);
            let block = u64::from_be_bytes(block.try_into().expect("8 bytes"));
            let (&domain, key) = rest
                .split_first()
                .ok_or_else(|| corrupt(Domain::Account, change, "a change without a domain"))?;
            let domain = *Domain::ALL
                .get(domain as usize)
                .ok_or_else(|| corrupt(Domain::Account, change, "unknown domain"))?;
            self.index
                .remove(index_key(domain, key, block).as_slice())
                .map_err(db_err("delete history index"))?;
            self.changes
                .remove(change.as_slice())
                .map_err(db_err("delete history changes"))?;
        }
        Ok(doomed.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::ReadableDatabase;

    #[test]
    fn a_read_finds_the_first_change_after_the_block_and_never_a_longer_key() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("h.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut tables = HistoryTables::open(&txn).unwrap();
            // [0x10]: "a" before 3, absent before 7; [0x10, 0x00] changed at 2.
            tables
                .put(3, Domain::Commitment, &[0x10], Some(b"a"))
                .unwrap();
            tables.put(7, Domain::Commitment, &[0x10], None).unwrap();
            tables
                .put(2, Domain::Commitment, &[0x10, 0x00], Some(b"z"))
                .unwrap();
        }
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let index = read.open_table(HISTORY_INDEX).unwrap();
        let changes = read.open_table(HISTORY_CHANGES).unwrap();
        let value =
            |domain, key: &[u8], block| value_at(&index, &changes, domain, key, block).unwrap();
        let at = |key: &[u8], block| value(Domain::Commitment, key, block);
        assert_eq!(at(&[0x10], 0), Some(Some(Bytes::from_static(b"a"))));
        assert_eq!(at(&[0x10], 2), Some(Some(Bytes::from_static(b"a"))));
        assert_eq!(at(&[0x10], 3), Some(None));
        assert_eq!(at(&[0x10], 6), Some(None));
        assert_eq!(at(&[0x10], 7), None, "no change after 7: the value now");
        assert_eq!(at(&[0x10, 0x00], 1), Some(Some(Bytes::from_static(b"z"))));
        assert_eq!(at(&[0x10, 0x00], 2), None);
        assert_eq!(at(&[0x11], 0), None);
        assert_eq!(value(Domain::Account, &[0x10], 0), None);
        drop((index, changes));
        drop(read);

        let txn = db.begin_write().unwrap();
        assert_eq!(
            HistoryTables::open(&txn)
                .unwrap()
                .drop_through(1, 10)
                .unwrap(),
            0
        );
        assert_eq!(HistoryTables::open(&txn).unwrap().drop_from(3).unwrap(), 2);
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let index = read.open_table(HISTORY_INDEX).unwrap();
        let changes = read.open_table(HISTORY_CHANGES).unwrap();
        let value = |key: &[u8]| value_at(&index, &changes, Domain::Commitment, key, 0).unwrap();
        assert_eq!(value(&[0x10]), None);
        assert_eq!(value(&[0x10, 0x00]), Some(Some(Bytes::from_static(b"z"))));
        drop((index, changes));
        drop(read);
        let txn = db.begin_write().unwrap();
        assert_eq!(
            HistoryTables::open(&txn)
                .unwrap()
                .drop_through(2, 10)
                .unwrap(),
            1
        );
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let index = read.open_table(HISTORY_INDEX).unwrap();
        let changes = read.open_table(HISTORY_CHANGES).unwrap();
        assert_eq!(
            value_at(&index, &changes, Domain::Commitment, &[0x10, 0x00], 0).unwrap(),
            None
        );
    }
}
