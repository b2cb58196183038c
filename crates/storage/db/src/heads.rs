//! The tables a change of the store's head writes together, in one write
//! transaction: code by hash, the roots of the unwind window, the block
//! hashes and headers of the BLOCKHASH window and the metadata's head. A flush, a
//! genesis, an import and an unwind each move the head; they all go through
//! [`HeadTables`], and every domain table of a write through
//! [`DomainTables`].

use alloy_primitives::B256;
use redb::{ReadableTable, Table, TableHandle, WriteTransaction};
use strata_types::{Domain, Head};

use crate::error::{Result, db_err};
use crate::meta::{self, MetaTable};
use crate::tables::{
    BLOCK_HASH_WINDOW, BLOCK_HASHES, BLOCK_HEADERS, BLOCK_NUMBERS, CODE_BY_HASH, META, ROOTS,
    domain_table,
};

/// Whether `txn` holds a table named `name`.
fn has_table(txn: &WriteTransaction, name: &str) -> Result<bool> {
    Ok(txn
        .list_tables()
        .map_err(db_err("list tables"))?
        .any(|table| table.name() == name))
}

/// The four domain tables, opened for writing in one transaction.
pub struct DomainTables<'txn> {
    tables: Vec<Table<'txn, &'static [u8], &'static [u8]>>,
}

impl<'txn> DomainTables<'txn> {
    /// Opens (creating when missing) every domain table in `txn`.
    pub fn open(txn: &'txn WriteTransaction) -> Result<DomainTables<'txn>> {
        let tables = Domain::ALL
            .iter()
            .map(|domain| {
                txn.open_table(domain_table(*domain))
                    .map_err(db_err("open table"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DomainTables { tables })
    }

    /// The table of `domain`.
    pub fn of(&mut self, domain: Domain) -> &mut Table<'txn, &'static [u8], &'static [u8]> {
        &mut self.tables[domain.index()]
    }
}

/// Code by hash, roots, block hashes and headers and the metadata, opened
/// for writing in one transaction.
pub struct HeadTables<'txn> {
    code_by_hash: Table<'txn, &'static [u8], &'static [u8]>,
    roots: Table<'txn, u64, &'static [u8]>,
    hashes: Table<'txn, u64, &'static [u8]>,
    headers: Table<'txn, u64, &'static [u8]>,
    /// Hash → number, when the datadir keeps history.
    numbers: Option<Table<'txn, &'static [u8], u64>>,
    meta: MetaTable<'txn>,
}

impl<'txn> HeadTables<'txn> {
    /// Opens the head's tables in `txn`.
    pub fn open(txn: &'txn WriteTransaction) -> Result<HeadTables<'txn>> {
        Ok(HeadTables {
            code_by_hash: txn
                .open_table(CODE_BY_HASH)
                .map_err(db_err("open code by hash"))?,
            roots: txn.open_table(ROOTS).map_err(db_err("open roots"))?,
            hashes: txn
                .open_table(BLOCK_HASHES)
                .map_err(db_err("open block hashes"))?,
            headers: txn
                .open_table(BLOCK_HEADERS)
                .map_err(db_err("open block headers"))?,
            numbers: if has_table(txn, BLOCK_NUMBERS.name())? {
                Some(
                    txn.open_table(BLOCK_NUMBERS)
                        .map_err(db_err("open block numbers"))?,
                )
            } else {
                None
            },
            meta: txn.open_table(META).map_err(db_err("open meta"))?,
        })
    }

    /// Creates the hash → number table (a datadir made with history).
    pub fn create_block_numbers(txn: &WriteTransaction) -> Result<()> {
        txn.open_table(BLOCK_NUMBERS)
            .map_err(db_err("create block numbers"))?;
        Ok(())
    }

    /// Forgets the hash → number entries of the blocks `range` holds.
    fn forget_numbers(&mut self, range: impl std::ops::RangeBounds<u64>) -> Result<()> {
        let Some(numbers) = &mut self.numbers else {
            return Ok(());
        };
        let mut hashes = Vec::new();
        for entry in self
            .hashes
            .range(range)
            .map_err(db_err("read block hashes"))?
        {
            let (_, hash) = entry.map_err(db_err("read block hashes"))?;
            hashes.push(hash.value().to_vec());
        }
        for hash in hashes {
            numbers
                .remove(hash.as_slice())
                .map_err(db_err("drop block numbers"))?;
        }
        Ok(())
    }

    /// Stores `code` under its hash (content-addressed: writing it again is
    /// harmless).
    pub fn put_code(&mut self, hash: &[u8], code: &[u8]) -> Result<()> {
        self.code_by_hash
            .insert(hash, code)
            .map_err(db_err("write code by hash"))?;
        Ok(())
    }

    /// Records `block`'s root and, when known, its hash.
    pub fn put_block(&mut self, block: u64, root: B256, hash: Option<B256>) -> Result<()> {
        self.roots
            .insert(block, root.as_slice())
            .map_err(db_err("write root"))?;
        if let Some(hash) = hash {
            self.hashes
                .insert(block, hash.as_slice())
                .map_err(db_err("write block hash"))?;
            if let Some(numbers) = &mut self.numbers {
                numbers
                    .insert(hash.as_slice(), block)
                    .map_err(db_err("write block number"))?;
            }
        }
        Ok(())
    }

    /// Records `block`'s header (as the client encoded it).
    pub fn put_header(&mut self, block: u64, header: &[u8]) -> Result<()> {
        self.headers
            .insert(block, header)
            .map_err(db_err("write block header"))?;
        Ok(())
    }

    /// Drops the roots older than the unwind window of `head` (`unwind_depth`
    /// blocks below it) and the block hashes and headers outside the
    /// BLOCKHASH window of the oldest block an unwind can return to (so
    /// that after an unwind of `unwind_depth` blocks, the next block still
    /// finds the 256 hashes before it).
    pub fn trim_windows(&mut self, head: u64, unwind_depth: u64) -> Result<()> {
        if let Some(oldest) = head.checked_sub(unwind_depth) {
            self.roots
                .retain_in(..oldest, |_, _| false)
                .map_err(db_err("drop old roots"))?;
        }
        if let Some(oldest) = head.checked_sub(BLOCK_HASH_WINDOW.saturating_add(unwind_depth)) {
            self.forget_numbers(..=oldest)?;
            self.hashes
                .retain_in(..=oldest, |_, _| false)
                .map_err(db_err("drop old block hashes"))?;
            self.headers
                .retain_in(..=oldest, |_, _| false)
                .map_err(db_err("drop old block headers"))?;
        }
        Ok(())
    }

    /// Drops the roots, hashes and headers of the blocks after `block` (an
    /// unwind).
    pub fn drop_after(&mut self, block: u64) -> Result<()> {
        self.forget_numbers(block + 1..)?;
        self.roots
            .retain_in(block + 1.., |_, _| false)
            .map_err(db_err("drop unwound roots"))?;
        self.hashes
            .retain_in(block + 1.., |_, _| false)
            .map_err(db_err("drop unwound block hashes"))?;
        self.headers
            .retain_in(block + 1.., |_, _| false)
            .map_err(db_err("drop unwound block headers"))?;
        Ok(())
    }

    /// Records `head` as the metadata's head.
    pub fn set_head(&mut self, head: Head) -> Result<()> {
        meta::write_head(&mut self.meta, head)
    }

    /// The metadata table (manifest, unwind count, marks), for what else a
    /// change of head records.
    pub fn meta(&mut self) -> &mut MetaTable<'txn> {
        &mut self.meta
    }
}
