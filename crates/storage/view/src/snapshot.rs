//! A consistent view of the last committed block: the memory tier (blocks
//! not yet flushed), one redb read transaction with its domain tables opened
//! once, and the file set of the same moment.

use std::collections::BTreeMap;
use std::sync::Arc;

use alloy_primitives::{Address, B256};
use bytes::Bytes;
use redb::{
    Database, ReadOnlyTable, ReadTransaction, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, TableHandle,
};

use crate::error::guarded;
use crate::error::{ReadError, Result, db_err};
use crate::fileset::FileSet;
use crate::history::History;
use crate::history_files::versioned;
use crate::memory::MemoryTier;
use strata_db::history::LEGACY_HISTORY_INDEX;
use strata_db::tables::{
    BLOCK_HASH_WINDOW, BLOCK_HASHES, BLOCK_HEADERS, BLOCK_NUMBERS, CODE_BY_HASH, META, ROOTS,
    domain_table,
};
use strata_db::value;
use strata_types::Head;
use strata_types::domain::Domain;
use strata_types::keys::STORAGE_KEY_LEN;

/// Where a value was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// In the memory tier (a committed block not yet flushed).
    Memory,
    /// In the redb tier.
    Db,
    /// In a file at this level (0 = newest).
    File(usize),
    /// Nowhere: the key does not exist.
    Nowhere,
}

/// A value as a tier holds it: borrowed from a redb page, or a shared slice
/// of a file's map (or of the memory tier).
pub enum ValueRef<'a> {
    /// Borrowed from the db tier for the duration of the read.
    Borrowed(&'a [u8]),
    /// Reference-counted: cloning it copies nothing.
    Shared(&'a Bytes),
}

impl ValueRef<'_> {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            ValueRef::Borrowed(bytes) => bytes,
            ValueRef::Shared(bytes) => bytes,
        }
    }

    /// An owned value: a copy of borrowed bytes, a clone of shared ones.
    pub fn to_bytes(&self) -> Bytes {
        match self {
            ValueRef::Borrowed(bytes) => Bytes::copy_from_slice(bytes),
            ValueRef::Shared(bytes) => (*bytes).clone(),
        }
    }
}

/// A db-tier entry as a collation reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbEntry {
    /// The domain key.
    pub key: Vec<u8>,
    /// `None` for a tombstone.
    pub value: Option<Vec<u8>>,
    /// The step the entry is tagged with.
    pub step: u64,
}

/// One committed state: what every read handle of that block shares.
#[derive(Clone)]
pub struct Snapshot {
    /// The newest committed block (in memory or flushed).
    pub head: Option<Head>,
    /// The committed blocks newer than what redb holds.
    pub memory: MemoryTier,
    db: Arc<DbView>,
    /// The files of the same moment.
    pub files: Arc<FileSet>,
    /// The undo data of the last blocks up to `head` (the writer's; empty
    /// in a read-only handle).
    pub history: History,
}

/// One redb read transaction with the tables reads use, opened once.
struct DbView {
    tables: [ReadOnlyTable<&'static [u8], &'static [u8]>; 4],
    code_by_hash: ReadOnlyTable<&'static [u8], &'static [u8]>,
    block_hashes: ReadOnlyTable<u64, &'static [u8]>,
    /// `None` in a datadir no header was written to yet.
    block_headers: Option<ReadOnlyTable<u64, &'static [u8]>>,
    /// Whether redb still holds history in the tables of the first
    /// layout (a writer's open moves it into history files).
    legacy_history: bool,
    /// Block → root, for the blocks redb keeps roots of.
    roots: Option<ReadOnlyTable<u64, &'static [u8]>>,
    /// Block hash → number (a datadir that keeps history).
    numbers: Option<ReadOnlyTable<&'static [u8], u64>>,
    /// The last block this transaction's redb holds (its metadata's head).
    head: Option<Head>,
    /// The datadir's history retention and the oldest block its history
    /// rebuilds, as this transaction's metadata records them.
    history_kept: (strata_types::HistoryRetention, Option<u64>),
    // Keeps the snapshot's pages alive; dropped after the tables.
    txn: ReadTransaction,
}

impl Snapshot {
    /// Writes this snapshot's redb tier — every table of its one read
    /// transaction, so of one flushed head, with `overrides` in place of
    /// the rows a flush in progress wrote ahead of that head — as a base stream
    /// ([`strata_db::base`]): with the files this snapshot holds, the
    /// datadir at that head, what a replica on another machine starts from.
    pub fn write_base(
        &self,
        overrides: &strata_db::base::BaseOverrides,
        out: &mut dyn std::io::Write,
    ) -> std::result::Result<strata_db::base::BaseSummary, strata_db::base::BaseError> {
        strata_db::base::write_base(&self.db.txn, overrides, out)
    }

    /// The datadir's identity, as this snapshot's metadata records it.
    pub fn datadir_id(&self) -> Result<Option<strata_types::DatadirId>> {
        guarded(META.name(), || {
            let table = self.db.txn.open_table(META).map_err(db_err("open meta"))?;
            Ok(strata_db::meta::load(&table)?.and_then(|(_, meta)| meta.datadir_id))
        })
    }

    /// The last block redb holds in this snapshot (its flushed head).
    pub fn flushed_head(&self) -> Option<Head> {
        self.db.head
    }

    /// Opens a snapshot of what redb holds now, paired with `files` and
    /// the unflushed blocks in `memory`; `head` is the newest block.
    pub fn open(
        db: &Database,
        head: Option<Head>,
        files: Arc<FileSet>,
        memory: MemoryTier,
    ) -> Result<Snapshot> {
        let txn = guarded("(database header)", || {
            db.begin_read().map_err(db_err("begin read"))
        })?;
        Snapshot::from_txn(txn, head, files, memory)
    }

    /// The same redb view and files with another head and memory tier (a
    /// block committed to memory).
    pub fn with_memory(&self, head: Option<Head>, memory: MemoryTier) -> Snapshot {
        Snapshot {
            head,
            memory,
            db: self.db.clone(),
            files: self.files.clone(),
            history: self.history.clone(),
        }
    }

    /// A snapshot over an open read transaction, paired with `files` (which
    /// must be the files the transaction's manifest lists) and `memory`
    /// (the blocks after the one the transaction holds).
    pub fn from_txn(
        txn: ReadTransaction,
        head: Option<Head>,
        files: Arc<FileSet>,
        memory: MemoryTier,
    ) -> Result<Snapshot> {
        let open = |domain: Domain| {
            guarded(domain.name(), || {
                txn.open_table(domain_table(domain))
                    .map_err(db_err("open table"))
            })
        };
        let tables = [
            open(Domain::Account)?,
            open(Domain::Storage)?,
            open(Domain::Code)?,
            open(Domain::Commitment)?,
        ];
        let code_by_hash = guarded(CODE_BY_HASH.name(), || {
            txn.open_table(CODE_BY_HASH).map_err(db_err("open table"))
        })?;
        let block_hashes = guarded(BLOCK_HASHES.name(), || {
            txn.open_table(BLOCK_HASHES).map_err(db_err("open table"))
        })?;
        let block_headers = guarded(BLOCK_HEADERS.name(), || {
            match txn.open_table(BLOCK_HEADERS) {
                Ok(table) => Ok(Some(table)),
                Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
                Err(error) => Err(db_err("open table")(error)),
            }
        })?;
        let legacy_history = guarded(LEGACY_HISTORY_INDEX.name(), || {
            Ok(strata_db::history::holds_legacy(
                txn.open_table(LEGACY_HISTORY_INDEX),
            )?)
        })?;
        let roots = guarded(ROOTS.name(), || match txn.open_table(ROOTS) {
            Ok(table) => Ok(Some(table)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(error) => Err(db_err("open table")(error)),
        })?;
        let numbers = guarded(BLOCK_NUMBERS.name(), || {
            match txn.open_table(BLOCK_NUMBERS) {
                Ok(table) => Ok(Some(table)),
                Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
                Err(error) => Err(db_err("open table")(error)),
            }
        })?;
        let meta = guarded(META.name(), || {
            let meta = txn.open_table(META).map_err(db_err("open table"))?;
            Ok(strata_db::meta::load(&meta)?.map(|(_, meta)| meta))
        })?;
        let db_head = meta.as_ref().and_then(|meta| meta.head);
        let history_kept = meta.map_or((Default::default(), None), |meta| {
            (meta.history, meta.history_from)
        });
        Ok(Snapshot {
            head,
            memory,
            db: Arc::new(DbView {
                tables,
                code_by_hash,
                block_hashes,
                block_headers,
                legacy_history,
                roots,
                numbers,
                head: db_head,
                history_kept,
                txn,
            }),
            files,
            history: History::default(),
        })
    }

    /// The block this snapshot shows, if any was committed.
    pub fn block(&self) -> Option<u64> {
        self.head.map(|h| h.block)
    }

    /// The state root of this snapshot.
    pub fn root(&self) -> B256 {
        self.head
            .map(|h| h.root)
            .unwrap_or(strata_commitment::EMPTY_ROOT)
    }

    /// The value of `key` through memory, db then files, and where it was found.
    pub fn get(&self, domain: Domain, key: &[u8]) -> Result<(Option<Bytes>, Found)> {
        self.get_with(domain, key, |value| value.map(|v| v.to_bytes()))
    }

    /// Hands the value of `key` (memory, db, then files) to `read` without
    /// copying it, and says where it was found.
    pub fn get_with<T>(
        &self,
        domain: Domain,
        key: &[u8],
        read: impl FnOnce(Option<ValueRef<'_>>) -> T,
    ) -> Result<(T, Found)> {
        if let Some(value) = self.memory.get(domain, key) {
            return Ok((read(value.map(ValueRef::Shared)), Found::Memory));
        }
        self.get_below_memory_with(domain, key, read)
    }

    /// [`Snapshot::get_with`] without the memory tier: redb, then the
    /// files (the value at [`Snapshot::db_head`]).
    pub fn get_below_memory_with<T>(
        &self,
        domain: Domain,
        key: &[u8],
        read: impl FnOnce(Option<ValueRef<'_>>) -> T,
    ) -> Result<(T, Found)> {
        let table = &self.db.tables[domain.index()];
        // `read` runs only once the guarded redb part is over.
        let mut read = Some(read);
        let in_db = guarded(domain.name(), || {
            let Some(guard) = table.get(key).map_err(db_err("get"))? else {
                return Ok(None);
            };
            let (_, value) = value::decode(domain, key, guard.value())?;
            let read = read.take().expect("read runs once");
            Ok(Some(read(value.map(ValueRef::Borrowed))))
        })?;
        if let Some(found) = in_db {
            return Ok((found, Found::Db));
        }
        let read = read.take().expect("read runs once");
        match self.files.get(domain, key)? {
            Some((level, value)) => Ok((
                read(value.as_ref().map(ValueRef::Shared)),
                Found::File(level),
            )),
            None => Ok((read(None), Found::Nowhere)),
        }
    }

    /// The last block redb holds in this snapshot (the memory tier holds
    /// the blocks after it).
    pub fn db_head(&self) -> Option<Head> {
        self.db.head
    }

    /// Whether the datadir keeps history (as this snapshot's redb
    /// records its retention).
    pub fn has_history(&self) -> bool {
        self.db.history_kept.0.is_on()
    }

    /// The datadir's history retention and the oldest block its history
    /// rebuilds (`None` before the first flush that wrote history), as
    /// this snapshot's redb records them.
    pub fn history_kept(&self) -> (strata_types::HistoryRetention, Option<u64>) {
        self.db.history_kept
    }

    /// The value `key` held at `block`, when the history files record a
    /// change of it after `block` (the value before its first such
    /// change); `None` when they record none (up to [`Snapshot::db_head`]).
    pub fn history_value_at(
        &self,
        domain: Domain,
        key: &[u8],
        block: u64,
    ) -> Result<Option<Option<Bytes>>> {
        if self.db.legacy_history {
            return Err(ReadError::LegacyHistory);
        }
        Ok(crate::history_files::value_at(
            self.files.history(domain),
            versioned(domain),
            key,
            block,
        )?)
    }

    /// The value at `block` of every key (of the domain's one length) in
    /// `[from, to)` that the history files record a change of after `block`, in
    /// key order, as a range read's source above the state at redb's head
    /// ([`crate::history_files::changed_after`]; the plain domains only,
    /// whose values the files hold whole).
    pub fn history_changed_after<'a>(
        &'a self,
        domain: Domain,
        from: &[u8],
        to: Option<&'a [u8]>,
        block: u64,
    ) -> Result<crate::range::Source<'a>> {
        if self.db.legacy_history {
            return Err(ReadError::LegacyHistory);
        }
        if versioned(domain) {
            return Err(ReadError::RangeUnavailable(
                "the commitment's history holds versions as differences: no range read through it",
            ));
        }
        let key_len = match domain {
            Domain::Storage => strata_types::keys::STORAGE_KEY_LEN,
            // Accounts and codes are keyed by address.
            _ => 20,
        };
        Ok(Box::new(
            crate::history_files::changed_after(
                self.files.history(domain),
                key_len,
                from,
                to,
                block,
            )
            .map(|entry| entry.map_err(ReadError::from)),
        ))
    }

    /// The number of the block with `hash`, when this snapshot's memory
    /// tier holds it or redb keeps hashes by number (a datadir with
    /// history keeps every kept block's).
    pub fn block_number_of(&self, hash: &B256) -> Result<Option<u64>> {
        if let Some((first, last)) = self.memory.blocks() {
            for number in (first..=last).rev() {
                if self.memory.block(number).and_then(|b| b.hash) == Some(*hash) {
                    return Ok(Some(number));
                }
            }
        }
        let Some(numbers) = &self.db.numbers else {
            return Ok(None);
        };
        guarded(BLOCK_NUMBERS.name(), || {
            let found = numbers
                .get(hash.as_slice())
                .map_err(db_err("get block number"))?;
            Ok(found.map(|guard| guard.value()))
        })
    }

    /// The root redb keeps for `block` (the unwind window's, or every kept
    /// block's in a datadir with history).
    pub fn stored_root_of(&self, block: u64) -> Result<Option<B256>> {
        let Some(roots) = &self.db.roots else {
            return Ok(None);
        };
        guarded(ROOTS.name(), || {
            let found = roots.get(block).map_err(db_err("get root"))?;
            Ok(found.map(|guard| B256::from_slice(guard.value())))
        })
    }

    /// Checks the history files: every entry's key is a key and a block
    /// of the file's range, and every value held as a difference applies
    /// to the one before it (the files' checksums were checked when they
    /// were opened, their order by their reader). Returns the entries
    /// checked and every problem (at most 20 described, then counted).
    pub fn check_history(&self) -> Result<(u64, Vec<String>)> {
        let mut problems = Vec::new();
        let mut found = 0u64;
        let mut checked = 0u64;
        for domain in Domain::ALL {
            for file in self.files.history(domain) {
                let meta = file.meta();
                let name = file.path().display();
                // A versioned domain's differences apply in the file's order.
                let mut wholes = crate::history_files::WholeVersions::default();
                for entry in file.iter() {
                    let (raw, stored) = entry?;
                    checked += 1;
                    let parsed = crate::history_files::parse_entry_key(&raw);
                    let undecodable = match parsed {
                        Some((key, _)) if versioned(domain) => wholes.decode(key, &stored).err(),
                        _ => None,
                    };
                    let problem = match parsed {
                        None => format!(
                            "history file {name}: entry 0x{} is not a key and a block",
                            alloy_primitives::hex::encode(&raw)
                        ),
                        Some((key, block)) if undecodable.is_some() => format!(
                            "history file {name}: key 0x{}'s change at block {block}: {}",
                            alloy_primitives::hex::encode(key),
                            undecodable.unwrap_or_default()
                        ),
                        Some((key, block)) if block < meta.from_step || block >= meta.to_step => {
                            format!(
                                "history file {name}: key 0x{} changed at block {block}, outside its blocks [{}, {})",
                                alloy_primitives::hex::encode(key),
                                meta.from_step,
                                meta.to_step
                            )
                        }
                        Some(_) => continue,
                    };
                    found += 1;
                    if found <= 20 {
                        problems.push(problem);
                    }
                }
            }
        }
        if found > 20 {
            problems.push(format!("history: {} more problems", found - 20));
        }
        Ok((checked, problems))
    }

    /// The value of `key` at [`Snapshot::db_head`]: redb, then the files,
    /// never the memory tier.
    pub fn get_below_memory(&self, domain: Domain, key: &[u8]) -> Result<(Option<Bytes>, Found)> {
        self.get_below_memory_with(domain, key, |value| value.map(|v| v.to_bytes()))
    }

    /// The storage keys of `address` that hold a value, across the tiers.
    pub fn live_storage_keys(&self, address: &Address) -> Result<Vec<[u8; STORAGE_KEY_LEN]>> {
        // Newest tier first: the first version of a key seen decides.
        let mut seen: BTreeMap<[u8; STORAGE_KEY_LEN], bool> = BTreeMap::new();
        for (key, found) in self.memory.storage_of(address) {
            if let Ok(key) = <[u8; STORAGE_KEY_LEN]>::try_from(key.as_ref()) {
                seen.insert(key, found.value.is_some());
            }
        }
        let mut lo = [0u8; STORAGE_KEY_LEN];
        lo[..20].copy_from_slice(address.as_slice());
        let mut hi = [0xffu8; STORAGE_KEY_LEN];
        hi[..20].copy_from_slice(address.as_slice());
        let table = &self.db.tables[Domain::Storage.index()];
        guarded(Domain::Storage.name(), || {
            for entry in table
                .range(lo.as_slice()..=hi.as_slice())
                .map_err(db_err("range"))?
            {
                let (k, v) = entry.map_err(db_err("range"))?;
                let key = k.value();
                let (_, value) = value::decode(Domain::Storage, key, v.value())?;
                if let Ok(key) = <[u8; STORAGE_KEY_LEN]>::try_from(key) {
                    seen.entry(key).or_insert(value.is_some());
                }
            }
            Ok(())
        })?;
        for file in self.files.files(Domain::Storage) {
            for entry in file.iter_prefix(address.as_slice()) {
                let (key, value) = entry?;
                if let Ok(key) = <[u8; STORAGE_KEY_LEN]>::try_from(key.as_ref()) {
                    seen.entry(key).or_insert(value.value().is_some());
                }
            }
        }
        Ok(seen
            .into_iter()
            .filter_map(|(k, live)| live.then_some(k))
            .collect())
    }

    /// Every db-tier entry of `domain` tagged with a step below `to`, in
    /// key order, with its step. Entries below the domain's `collated_to`
    /// are rare but real: a value flushed while a collation of its step was
    /// running, which that collation left in the db (it was newer than what
    /// it collated) for the next one to take.
    pub fn db_entries_before(&self, domain: Domain, to: u64) -> Result<Vec<DbEntry>> {
        let table = &self.db.tables[domain.index()];
        guarded(domain.name(), || {
            let mut out = Vec::new();
            for entry in table.iter().map_err(db_err("iterate"))? {
                let (k, v) = entry.map_err(db_err("iterate"))?;
                let (step, value) = value::decode(domain, k.value(), v.value())?;
                if step < to {
                    out.push(DbEntry {
                        key: k.value().to_vec(),
                        value: value.map(<[u8]>::to_vec),
                        step,
                    });
                }
            }
            Ok(out)
        })
    }

    /// Bytecode by its keccak256 hash.
    pub fn code_by_hash(&self, hash: &B256) -> Result<Option<Bytes>> {
        if let Some(code) = self.memory.code_by_hash(hash) {
            return Ok(Some(code.clone()));
        }
        guarded(CODE_BY_HASH.name(), || {
            let found = self
                .db
                .code_by_hash
                .get(hash.as_slice())
                .map_err(db_err("get code by hash"))?;
            Ok(found.map(|guard| Bytes::copy_from_slice(guard.value())))
        })
    }

    /// The hash of block `number`, if it is among the last 256 committed.
    pub fn block_hash(&self, number: u64) -> Result<Option<B256>> {
        if self
            .block()
            .is_some_and(|head| number.saturating_add(BLOCK_HASH_WINDOW) <= head)
        {
            return Ok(None);
        }
        self.stored_block_hash(number)
    }

    /// The hash of block `number` if the store still holds it (the window
    /// of the last 256, or every retained block of a datadir that keeps
    /// history).
    pub fn stored_block_hash(&self, number: u64) -> Result<Option<B256>> {
        if let Some(block) = self.memory.block(number) {
            return Ok(block.hash);
        }
        guarded(BLOCK_HASHES.name(), || {
            let found = self
                .db
                .block_hashes
                .get(number)
                .map_err(db_err("get block hash"))?;
            Ok(found.map(|guard| B256::from_slice(guard.value())))
        })
    }

    /// The header of block `number` as its writer gave it, if it is among
    /// the last 256 committed and was given one.
    pub fn block_header(&self, number: u64) -> Result<Option<Bytes>> {
        if self
            .block()
            .is_some_and(|head| number.saturating_add(BLOCK_HASH_WINDOW) <= head)
        {
            return Ok(None);
        }
        self.stored_block_header(number)
    }

    /// The header of block `number` if the store still holds it (as
    /// [`Snapshot::stored_block_hash`]).
    pub fn stored_block_header(&self, number: u64) -> Result<Option<Bytes>> {
        if let Some(block) = self.memory.block(number) {
            return Ok(block.header.clone());
        }
        let Some(headers) = &self.db.block_headers else {
            return Ok(None);
        };
        guarded(BLOCK_HEADERS.name(), || {
            let found = headers.get(number).map_err(db_err("get block header"))?;
            Ok(found.map(|guard| Bytes::copy_from_slice(guard.value())))
        })
    }

    /// Calls `visit` with every db-tier key of `domain` and the step that
    /// wrote it, in key order; stops at its first error.
    pub fn visit_db_keys_and_steps(
        &self,
        domain: Domain,
        mut visit: impl FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        let table = &self.db.tables[domain.index()];
        guarded(domain.name(), || {
            for entry in table.iter().map_err(db_err("iterate"))? {
                let (k, v) = entry.map_err(db_err("iterate"))?;
                let (step, _) = value::decode(domain, k.value(), v.value())?;
                visit(k.value(), step)?;
            }
            Ok(())
        })
    }

    /// The db tier's table of `domain`, for whole-domain walks elsewhere
    /// in the crate (key sampling); reads through it belong in [`guarded`].
    pub fn db_table(&self, domain: Domain) -> &ReadOnlyTable<&'static [u8], &'static [u8]> {
        &self.db.tables[domain.index()]
    }

    /// Number of entries the db tier holds for `domain`.
    pub fn db_len(&self, domain: Domain) -> Result<u64> {
        guarded(domain.name(), || {
            self.db.tables[domain.index()]
                .len()
                .map_err(db_err("count"))
        })
    }
}
