//! The state's history in redb: for every key a flushed block changed, the
//! value it held before that block, found by key and block
//! ([`HISTORY`]), and the keys each block changed, found by block
//! ([`HISTORY_CHANGES`], what an unwind and pruning delete by).
//!
//! A read at block `b` of a key looks for the key's first change after
//! `b`: the value recorded before it is the value at `b`; with no change
//! after `b` the value now is. Both tables are written with the flushed
//! head in one transaction, so they always cover exactly the blocks redb
//! holds.
//!
//! ```text
//! history:          domain u8 | key_len u16 BE | key | block u64 BE  ->  0 (absent) | 1 value
//! history_changes:  block u64 BE | domain u8 | key                   ->  (empty)
//! ```
//! The key's length comes before it so that the entries of one key are
//! contiguous and never mistaken for those of a longer key it prefixes
//! (commitment keys differ in length).

use bytes::Bytes;
use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};
use strata_types::Domain;

use crate::error::{Result, SchemaError, db_err};

/// A key's value before each block that changed it.
pub const HISTORY: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("history");

/// The keys each block changed.
pub const HISTORY_CHANGES: TableDefinition<'static, &'static [u8], &'static [u8]> =
    TableDefinition::new("history_changes");

/// The [`HISTORY`] key of `key`'s change at `block`.
pub fn history_key(domain: Domain, key: &[u8], block: u64) -> Vec<u8> {
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

/// The value `key` held at `block`, when a change after `block` is
/// recorded in `table` (the first one: the value before it); `None` when
/// no change after `block` is (the value is the one the state holds).
pub fn value_at<T: ReadableTable<&'static [u8], &'static [u8]>>(
    table: &T,
    domain: Domain,
    key: &[u8],
    block: u64,
) -> Result<Option<Option<Bytes>>> {
    let Some(after) = block.checked_add(1) else {
        return Ok(None);
    };
    let from = history_key(domain, key, after);
    let prefix = &from[..from.len() - 8];
    let mut range = table
        .range::<&[u8]>(from.as_slice()..)
        .map_err(db_err("read history"))?;
    let Some(entry) = range.next() else {
        return Ok(None);
    };
    let (found, value) = entry.map_err(db_err("read history"))?;
    let found = found.value();
    if found.len() != from.len() || !found.starts_with(prefix) {
        return Ok(None);
    }
    let value = value.value();
    match value.split_first() {
        Some((0, [])) => Ok(Some(None)),
        Some((1, bytes)) => Ok(Some(Some(Bytes::copy_from_slice(bytes)))),
        _ => Err(corrupt(domain, key, "unknown value tag")),
    }
}

/// Both history tables, opened for writing in one transaction.
pub struct HistoryTables<'txn> {
    history: Table<'txn, &'static [u8], &'static [u8]>,
    changes: Table<'txn, &'static [u8], &'static [u8]>,
}

impl<'txn> HistoryTables<'txn> {
    /// Opens (creating when missing) the history tables in `txn`.
    pub fn open(txn: &'txn WriteTransaction) -> Result<HistoryTables<'txn>> {
        Ok(HistoryTables {
            history: txn.open_table(HISTORY).map_err(db_err("open history"))?,
            changes: txn
                .open_table(HISTORY_CHANGES)
                .map_err(db_err("open history changes"))?,
        })
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
        self.history
            .insert(
                history_key(domain, key, block).as_slice(),
                encode_previous(previous).as_slice(),
            )
            .map_err(db_err("write history"))?;
        self.changes
            .insert(change_key(block, domain, key).as_slice(), [].as_slice())
            .map_err(db_err("write history changes"))?;
        Ok(())
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
            self.history
                .remove(history_key(domain, key, block).as_slice())
                .map_err(db_err("delete history"))?;
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
        let table = read.open_table(HISTORY).unwrap();
        let at = |key: &[u8], block| value_at(&table, Domain::Commitment, key, block).unwrap();
        assert_eq!(at(&[0x10], 0), Some(Some(Bytes::from_static(b"a"))));
        assert_eq!(at(&[0x10], 2), Some(Some(Bytes::from_static(b"a"))));
        assert_eq!(at(&[0x10], 3), Some(None));
        assert_eq!(at(&[0x10], 6), Some(None));
        assert_eq!(at(&[0x10], 7), None, "no change after 7: the value now");
        assert_eq!(at(&[0x10, 0x00], 1), Some(Some(Bytes::from_static(b"z"))));
        assert_eq!(at(&[0x10, 0x00], 2), None);
        assert_eq!(at(&[0x11], 0), None);
        assert_eq!(value_at(&table, Domain::Account, &[0x10], 0).unwrap(), None);
        drop(table);
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
        let table = read.open_table(HISTORY).unwrap();
        assert_eq!(
            value_at(&table, Domain::Commitment, &[0x10], 0).unwrap(),
            None
        );
        assert_eq!(
            value_at(&table, Domain::Commitment, &[0x10, 0x00], 0).unwrap(),
            Some(Some(Bytes::from_static(b"z")))
        );
        drop(table);
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
        let table = read.open_table(HISTORY).unwrap();
        assert_eq!(
            value_at(&table, Domain::Commitment, &[0x10, 0x00], 0).unwrap(),
            None
        );
    }
}
