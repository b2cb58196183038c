//! The state's history as the first history build kept it in redb, read
//! once to be moved into history files (a writer's open does it; the
//! history lives in files since). Two tables:
//!
//! ```text
//! history_changes:  block u64 BE | domain u8 | key                   ->  commitment: 0 (absent) | 1 value
//!                                                                        account, storage, code: (empty)
//! history_index:    domain u8 | key_len u16 BE | key | block u64 BE  ->  account, storage, code: 0 | 1 value
//!                                                                        commitment: (empty)
//! ```
//! The index is in the order of the history files' entries (by domain,
//! then key length and key, then block), so a walk of it feeds one file
//! writer per domain.

use bytes::Bytes;
use redb::{ReadableTable, ReadableTableMetadata, WriteTransaction};
use strata_types::Domain;

use crate::error::{Result, SchemaError, db_err};

/// The first layout's changes by block: a key's value before the block.
pub const LEGACY_HISTORY_CHANGES: redb::TableDefinition<'static, &'static [u8], &'static [u8]> =
    redb::TableDefinition::new("history_changes");

/// The first layout's index by key of the blocks that changed it.
pub const LEGACY_HISTORY_INDEX: redb::TableDefinition<'static, &'static [u8], &'static [u8]> =
    redb::TableDefinition::new("history_index");

/// One change read from the first layout: domain, key, block, and the
/// value the key held before the block (`None`: absent).
pub type LegacyChange = (Domain, Bytes, u64, Option<Bytes>);

fn corrupt(key: &[u8], what: &str) -> SchemaError {
    SchemaError::CorruptRecord {
        domain: Domain::Commitment,
        key: alloy_primitives::hex::encode(key),
        what: format!("history entry of the first layout: {what}"),
    }
}

/// A recorded value: `0` absent, `1 ‖ value`.
fn decode_previous(key: &[u8], raw: &[u8]) -> Result<Option<Bytes>> {
    match raw.split_first() {
        Some((0, [])) => Ok(None),
        Some((1, bytes)) => Ok(Some(Bytes::copy_from_slice(bytes))),
        _ => Err(corrupt(key, "unknown value tag")),
    }
}

/// Whether `txn`'s redb holds history in the first layout.
pub fn has_legacy(txn: &WriteTransaction) -> Result<bool> {
    holds_legacy(txn.open_table(LEGACY_HISTORY_INDEX))
}

/// Whether [`LEGACY_HISTORY_INDEX`], as a transaction (read or write)
/// opened it, holds history: absent or empty, it does not.
pub fn holds_legacy<T: ReadableTableMetadata>(
    opened: std::result::Result<T, redb::TableError>,
) -> Result<bool> {
    match opened {
        Ok(table) => Ok(!table.is_empty().map_err(db_err("read history index"))?),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(false),
        Err(error) => Err(db_err("open history index")(error)),
    }
}

/// Calls `visit` with every change the first layout holds, in the
/// index's order (domain, key length, key, block); a failure of `visit`
/// ends the walk with its error.
pub fn walk_legacy<E: From<SchemaError>>(
    txn: &WriteTransaction,
    mut visit: impl FnMut(LegacyChange) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let index = match txn.open_table(LEGACY_HISTORY_INDEX) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(error) => return Err(db_err("open history index")(error).into()),
    };
    let changes = txn
        .open_table(LEGACY_HISTORY_CHANGES)
        .map_err(db_err("open history changes"))?;
    for entry in index.iter().map_err(db_err("read history index"))? {
        let (raw, inline) = entry.map_err(db_err("read history index"))?;
        let raw = raw.value();
        let (Some(&domain), Some(len)) = (
            raw.first().and_then(|d| Domain::ALL.get(usize::from(*d))),
            raw.get(1..3)
                .map(|l| usize::from(u16::from_be_bytes([l[0], l[1]]))),
        ) else {
            return Err(corrupt(raw, "no domain or key length").into());
        };
        if raw.len() != 3 + len + 8 {
            return Err(corrupt(raw, "key length and entry length disagree").into());
        }
        let key = &raw[3..3 + len];
        let block = u64::from_be_bytes(raw[3 + len..].try_into().expect("8 bytes"));
        let previous = if domain == Domain::Commitment {
            let mut change_key = Vec::with_capacity(9 + len);
            change_key.extend_from_slice(&block.to_be_bytes());
            change_key.push(domain.index() as u8);
            change_key.extend_from_slice(key);
            let value = changes
                .get(change_key.as_slice())
                .map_err(db_err("read history changes"))?
                .ok_or_else(|| corrupt(key, &format!("block {block}'s change is missing")))?;
            decode_previous(key, value.value())?
        } else {
            decode_previous(key, inline.value())?
        };
        visit((domain, Bytes::copy_from_slice(key), block, previous))?;
    }
    Ok(())
}

/// Deletes the first layout's tables (in `txn`, with the manifest that
/// lists the files their changes moved into).
pub fn drop_legacy(txn: &WriteTransaction) -> Result<()> {
    for table in [LEGACY_HISTORY_INDEX, LEGACY_HISTORY_CHANGES] {
        txn.delete_table(table)
            .map_err(db_err("delete a history table"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_layout_is_walked_in_file_order_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("h.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut index = txn.open_table(LEGACY_HISTORY_INDEX).unwrap();
            let mut changes = txn.open_table(LEGACY_HISTORY_CHANGES).unwrap();
            // Account 0xaa was absent before block 3; commitment [0x10]
            // held "a" before 5.
            index
                .insert(
                    [0u8, 0, 1, 0xaa, 0, 0, 0, 0, 0, 0, 0, 3].as_slice(),
                    [0u8].as_slice(),
                )
                .unwrap();
            index
                .insert(
                    [3u8, 0, 1, 0x10, 0, 0, 0, 0, 0, 0, 0, 5].as_slice(),
                    [].as_slice(),
                )
                .unwrap();
            changes
                .insert(
                    [0u8, 0, 0, 0, 0, 0, 0, 5, 3, 0x10].as_slice(),
                    [1u8, b'a'].as_slice(),
                )
                .unwrap();
        }
        assert!(has_legacy(&txn).unwrap());
        let mut seen = Vec::new();
        walk_legacy::<SchemaError>(&txn, |change| {
            seen.push(change);
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![
                (Domain::Account, Bytes::from_static(&[0xaa]), 3, None),
                (
                    Domain::Commitment,
                    Bytes::from_static(&[0x10]),
                    5,
                    Some(Bytes::from_static(b"a"))
                ),
            ]
        );
        drop_legacy(&txn).unwrap();
        assert!(!has_legacy(&txn).unwrap());
        txn.commit().unwrap();
    }
}
