//! Import of a whole state (a dump of block N) into an empty store, in
//! bounded memory, straight into immutable files.
//!
//! 1. **Ingest**: accounts arrive in any order ([`AccountSource`]). Batches
//!    are processed on rayon: each account's storage trie is built on its
//!    own ([`StorageTrieBuilder`]), and its entries go to external sorters —
//!    the plain domain entries (account, storage, code) by key, the account
//!    leaves (with their storage roots) by hashed address, the commitment
//!    records by record key, the codes by hash. An account too large to
//!    hold (a dump line longer than [`LargeStorage::stream_above_bytes`])
//!    is streamed instead: its slots go, as the source reads them, to a
//!    sort of its own by hashed slot ([`LargeStorage`], a tenth of the
//!    budget), then stream from it into its storage trie's builder and the
//!    plain sort; a slot it lists twice is refused there.
//! 2. **Account trie**: the leaves come back in hashed order into the
//!    streaming [`BulkBuilder`](strata_commitment::BulkBuilder); a repeated address is refused here. The
//!    root is checked against the expected one before anything is written.
//! 3. **Files**: one sorted file per domain for the steps up to block N's,
//!    written from the merged sorters (temp name, fsync, rename).
//! 4. **Commit**: one redb transaction lists the files in the manifest,
//!    marks their steps collated and records the head, block N's root and
//!    hash, the root record and the codes by hash. Then the state is
//!    published.
//!
//! Nothing is visible before step 4, and a failure before it (a refused
//! input, a root mismatch, a full disk) leaves the store empty and usable;
//! a failure in step 4 poisons it. A crash before step 4 leaves
//! files the manifest does not list (removed at the next open) and scratch
//! runs in the import folder (removed by the next import or open).
//!
//! Peak memory: the sorters' budget ([`ImportOptions::sort_memory_bytes`],
//! the streamed account's sort included), one batch of accounts (at most
//! 65,536 slots beyond the first account, and a dump reader's batch of lines: 16 MiB), the
//! merge's read buffers (256 KiB per run) and the largest account held
//! whole — whose dump line is at most half a tenth of the budget (12.8 MiB
//! by default); a larger account is never held. None of it grows with the
//! state or with the largest account: a dump of one contract with 5M slots
//! (a 690 MB line) imports in 280 MiB peak RSS, where holding the line took
//! 2,104 MiB (`/usr/bin/time -v strata init --state`, README "State size").

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256, keccak256};
use bytes::Bytes;
use rayon::prelude::*;
use strata_commitment::{AccountLeaf, StorageTrieBuilder};

use strata_files::{FileMeta, FileSystem, SortedFile, SortedFileWriter};
use strata_genesis::GenesisAccount;
use strata_types::account::{Account, code_hash, encode_slot_value};
use strata_types::keys::storage_key;
use strata_types::{Domain, Head};

use crate::account_trie::{
    BuiltStorage, LeafEntry, RepeatedSlot, SlotSort, SlotSortError, build_account_trie,
    build_storage_trie,
};
use crate::error::{BulkError, Result};
use crate::sort::{ExternalSorter, Pair, RunError, SortedPairs};

mod source;

pub use source::{AccountSource, LargePushError, LargeStorage, SourceAccount};

pub use strata_types::datadir::IMPORT_DIR;

/// Accounts processed together on the rayon pool.
const BATCH_ACCOUNTS: usize = 2048;
/// Storage slots processed together (fewer accounts when they are large).
const BATCH_SLOTS: usize = 1 << 16;

/// How to import a state.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The block the state belongs to: the store's head after the import.
    pub block: u64,
    /// The block's hash, served to BLOCKHASH by the blocks after it.
    pub block_hash: Option<B256>,
    /// The block's header as the client encodes it (RLP for Ethereum),
    /// kept beside the hash: a chain import continues from it.
    pub block_header: Option<bytes::Bytes>,
    /// The state root the accounts must produce; with `Some`, a different
    /// root fails the import before anything is written.
    pub expected_root: Option<B256>,
    /// Memory the external sorters may hold before they spill runs.
    pub sort_memory_bytes: usize,
    /// The folder in which the sorters' runs go, in a folder of their own
    /// (`strata-import-…`, removed afterwards; after a crash, by hand).
    /// Default: `import.tmp` in the datadir, also removed by the next open.
    pub temp_dir: Option<PathBuf>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            block: 0,
            block_hash: None,
            block_header: None,
            expected_root: None,
            sort_memory_bytes: 256 << 20,
            temp_dir: None,
        }
    }
}

/// What an import did.
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    /// The state root.
    pub root: B256,
    /// The block the store now stands at.
    pub block: u64,
    /// Accounts imported.
    pub accounts: u64,
    /// Non-zero storage slots imported.
    pub slots: u64,
    /// Accounts with code.
    pub contracts: u64,
    /// Commitment records built.
    pub records: u64,
    /// Bytes of the keys and values of the four domains, as written to the files.
    pub raw_bytes: u64,
    /// Bytes of the files written.
    pub file_bytes: u64,
    /// Runs the external sorters spilled to disk.
    pub runs: usize,
    /// Accounts whose storage was streamed through a sort of its own (too
    /// large to hold; see [`AccountSource`]).
    pub streamed: u64,
    /// Reading the accounts, building the storage tries, sorting.
    pub ingest: Duration,
    /// Building the account trie from the sorted leaves.
    pub account_trie: Duration,
    /// Writing the files and committing.
    pub write: Duration,
}

/// Where a build writes its files: the datadir's file system and files
/// folder, and the steps the files cover (`[0, to_step)`).
#[derive(Clone, Debug)]
pub struct FileTarget {
    /// The file system of the datadir.
    pub fs: Arc<dyn FileSystem>,
    /// The datadir's folder of immutable files.
    pub files_dir: PathBuf,
    /// The first step after the files' range: the step of the state's
    /// block, plus one.
    pub to_step: u64,
}

/// A whole state built into files, not yet listed anywhere: what the engine
/// installs in one redb transaction.
pub struct BuiltState {
    /// The state's block and root.
    pub head: Head,
    /// One file per domain that has entries, durable under its final name.
    pub files: Vec<BuiltFile>,
    /// Code hash → code, in hash order (repeats of one code adjacent), for
    /// redb's code-by-hash table. Its runs live in the scratch folder.
    pub codes: SortedPairs,
    /// The figures so far (`write` covers the files; the engine adds its
    /// transaction).
    pub report: ImportReport,
}

/// A file a build wrote, with the raw bytes of its entries.
pub struct BuiltFile {
    /// The file, opened (and so verified).
    pub file: Arc<SortedFile>,
    /// Bytes of its keys and values.
    pub raw_bytes: u64,
}

/// Builds the state `accounts` hold into files (see the module docs, steps
/// 1 to 3), sorting in `scratch`. Nothing is listed or published: a
/// failure removes the files written so far.
pub fn build(
    accounts: impl AccountSource,
    options: &ImportOptions,
    scratch: &Path,
    target: &FileTarget,
) -> Result<BuiltState> {
    let started = Instant::now();
    let mut report = ImportReport {
        block: options.block,
        ..ImportReport::default()
    };
    let mut sorters = Sorters::new(scratch, options.sort_memory_bytes);
    ingest(options.block, accounts, &mut sorters, &mut report)?;
    report.ingest = started.elapsed();

    let started = Instant::now();
    let Sorters {
        plain,
        leaves,
        mut records,
        codes,
        large_runs,
        ..
    } = sorters;
    let leaf_runs = leaves.runs();
    let root = build_account_trie(options.block, leaves.finish()?, &mut records)?;
    report.account_trie = started.elapsed();
    if let Some(expected) = options.expected_root
        && expected != root
    {
        return Err(BulkError::RootMismatch {
            block: options.block,
            expected,
            computed: root,
        });
    }
    report.root = root;
    report.records = records.pairs();
    report.runs = plain.runs() + leaf_runs + records.runs() + codes.runs() + large_runs;

    let started = Instant::now();
    let head = Head {
        block: options.block,
        root,
    };
    let mut files = Vec::new();
    let counts = [report.accounts, report.slots, report.contracts];
    let mut codes = Some(codes);
    let wrote = write_plain_files(target, plain, counts, &mut files).and_then(|()| {
        let count = records.pairs();
        let records = records.finish()?;
        files.extend(write_file(target, Domain::Commitment, count, records)?);
        let codes = codes.take().expect("taken once");
        Ok(codes.finish()?)
    });
    let codes = match wrote {
        Ok(codes) => codes,
        Err(e) => {
            // Files nothing lists would wait for the next open.
            for written in &files {
                let _ = target.fs.remove(written.file.path());
            }
            return Err(e);
        }
    };
    report.raw_bytes = files.iter().map(|f| f.raw_bytes).sum();
    report.file_bytes = files.iter().map(|f| f.file.size_bytes()).sum();
    report.write = started.elapsed();
    Ok(BuiltState {
        head,
        files,
        codes,
        report,
    })
}

/// The four sorts of an import, and the share of a large account's own.
struct Sorters {
    /// Domain byte ‖ key → value, for the account, storage and code files.
    plain: ExternalSorter,
    /// keccak(address) → a [`LeafEntry`], for the account trie.
    leaves: ExternalSorter,
    /// Record key → record, for the commitment file.
    records: ExternalSorter,
    /// Code hash → code (repeats of one code allowed), for redb's code table.
    codes: ExternalSorter,
    /// The slots of the streamed account being read.
    large: LargeStorage,
    /// Runs the streamed accounts' sorts spilled.
    large_runs: usize,
}

impl Sorters {
    fn new(dir: &Path, budget: usize) -> Self {
        Self {
            plain: ExternalSorter::new(dir, "plain", budget / 100 * 40),
            leaves: ExternalSorter::new(dir, "leaves", budget / 100 * 15),
            records: ExternalSorter::new(dir, "records", budget / 100 * 30),
            codes: ExternalSorter::new(dir, "codes", budget / 100 * 5),
            large: LargeStorage::new(dir, budget / 100 * 10),
            large_runs: 0,
        }
    }
}

/// One account, processed: everything the sorters take from it.
struct Ingested {
    hashed: B256,
    leaf: [u8; LeafEntry::LEN],
    address: Address,
    account: Vec<u8>,
    code_hash: B256,
    code: Bytes,
    /// `(keccak(slot), slot, value)` of the non-zero slots, in hashed order.
    slots: Vec<(B256, B256, U256)>,
    records: Vec<(Vec<u8>, Bytes)>,
}

fn process(
    block: u64,
    tries: &mut StorageTrieBuilder,
    address: Address,
    mut account: GenesisAccount,
) -> Result<Ingested> {
    let storage = std::mem::take(&mut account.storage);
    let BuiltStorage {
        slots,
        root: storage_root,
        records,
    } = build_storage_trie(tries, block, address, storage)?;
    Ok(ingested(address, account, storage_root, slots, records))
}

/// What the sorters take from `account` (its storage aside), whose storage
/// trie has `storage_root`, `slots` and `records`.
fn ingested(
    address: Address,
    account: GenesisAccount,
    storage_root: B256,
    slots: Vec<(B256, B256, U256)>,
    records: Vec<(Vec<u8>, Bytes)>,
) -> Ingested {
    let code_hash = code_hash(&account.code);
    let leaf = LeafEntry {
        address,
        leaf: AccountLeaf {
            nonce: account.nonce,
            balance: account.balance,
            code_hash,
        },
        storage_root,
    }
    .encode();
    let encoded = Account {
        nonce: account.nonce,
        balance: account.balance,
        code_hash,
    }
    .encode();
    Ingested {
        hashed: keccak256(address),
        leaf,
        address,
        account: encoded,
        code_hash,
        code: account.code.0,
        slots,
        records,
    }
}

fn plain_key(domain: Domain, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + key.len());
    out.push(domain.index() as u8);
    out.extend_from_slice(key);
    out
}

fn ingest<S: AccountSource>(
    block: u64,
    mut accounts: S,
    sorters: &mut Sorters,
    report: &mut ImportReport,
) -> Result<()> {
    loop {
        let mut batch = Vec::with_capacity(BATCH_ACCOUNTS);
        let mut slots = 0;
        while batch.len() < BATCH_ACCOUNTS && slots < BATCH_SLOTS {
            let next = accounts.next_account(&mut sorters.large);
            // A failed spill is the import's own failure, whatever the
            // source made of it.
            let large = sorters.large.take()?;
            match next {
                Some(Ok(SourceAccount::Whole(address, account))) => {
                    if large.is_some() {
                        return Err(BulkError::Incomplete(format!(
                            "the source streamed slots for account {address} but returned it whole"
                        )));
                    }
                    slots += account.storage.len();
                    batch.push((address, account));
                }
                Some(Ok(SourceAccount::Streamed(address, account))) => {
                    let sort = large.unwrap_or_else(|| sorters.large.empty_sort());
                    ingest_streamed(block, address, account, sort, sorters, report).map_err(
                        |e| match e {
                            BulkError::RepeatedSlot { address, slot } => {
                                match accounts.repeated_slot(address, slot) {
                                    Some(source) => BulkError::Input {
                                        source: Box::new(source),
                                    },
                                    None => BulkError::RepeatedSlot { address, slot },
                                }
                            }
                            other => other,
                        },
                    )?;
                }
                Some(Err(source)) => {
                    return Err(BulkError::Input {
                        source: Box::new(source),
                    });
                }
                None => break,
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        let processed: Vec<Result<Ingested>> = batch
            .into_par_iter()
            .map_init(StorageTrieBuilder::new, |tries, (address, account)| {
                process(block, tries, address, account)
            })
            .collect();
        for account in processed {
            push(sorters, account?, report)?;
        }
    }
}

/// Ingests an account whose slots are in `slots` (and in
/// `account.storage`): they stream, in hashed order, into its storage trie
/// (records to the record sort) and into the plain sort.
fn ingest_streamed(
    block: u64,
    address: Address,
    account: GenesisAccount,
    mut slots: SlotSort,
    sorters: &mut Sorters,
    report: &mut ImportReport,
) -> Result<()> {
    for (slot, value) in &account.storage {
        slots.push(*slot, *value)?;
    }
    sorters.large_runs += slots.runs();
    let mut count = 0u64;
    let plain = &mut sorters.plain;
    let storage_root = slots
        .build(block, address, &mut sorters.records, |slot, value| {
            count += 1;
            plain.push(
                &plain_key(Domain::Storage, &storage_key(&address, &slot)),
                &encode_slot_value(value),
            )?;
            Ok(())
        })
        .map_err(|e| match e {
            SlotSortError::Failed(e) => e,
            SlotSortError::Repeated(RepeatedSlot(slot)) => {
                BulkError::RepeatedSlot { address, slot }
            }
        })?;
    let ingested = ingested(address, account, storage_root, Vec::new(), Vec::new());
    push(sorters, ingested, report)?;
    report.slots += count;
    report.streamed += 1;
    Ok(())
}

fn push(sorters: &mut Sorters, account: Ingested, report: &mut ImportReport) -> Result<()> {
    let address = account.address.as_slice();
    sorters
        .leaves
        .push(account.hashed.as_slice(), &account.leaf)?;
    sorters
        .plain
        .push(&plain_key(Domain::Account, address), &account.account)?;
    if !account.code.is_empty() {
        sorters
            .plain
            .push(&plain_key(Domain::Code, address), &account.code)?;
        sorters
            .codes
            .push(account.code_hash.as_slice(), &account.code)?;
        report.contracts += 1;
    }
    for (_, slot, value) in &account.slots {
        sorters.plain.push(
            &plain_key(Domain::Storage, &storage_key(&account.address, slot)),
            &encode_slot_value(*value),
        )?;
    }
    for (key, record) in &account.records {
        sorters.records.push(key, record)?;
    }
    report.accounts += 1;
    report.slots += account.slots.len() as u64;
    Ok(())
}

/// Writes the account, storage and code files from the merged plain
/// entries (grouped by their domain byte; `counts` of each) into `written`.
fn write_plain_files(
    target: &FileTarget,
    plain: ExternalSorter,
    counts: [u64; 3],
    written: &mut Vec<BuiltFile>,
) -> Result<()> {
    let mut pairs = plain.finish()?;
    let domains = [Domain::Account, Domain::Storage, Domain::Code];
    for (domain, count) in domains.into_iter().zip(counts) {
        let tag = domain.index() as u8;
        let mut of_domain = std::iter::from_fn(|| {
            if pairs.peek_key()?.first() != Some(&tag) {
                return None;
            }
            pairs.next().map(|pair| {
                pair.map(|(mut key, value)| {
                    key.remove(0);
                    (key, value)
                })
            })
        })
        .peekable();
        if of_domain.peek().is_some() {
            written.extend(write_file(target, domain, count, of_domain)?);
        }
    }
    if let Some(key) = pairs.peek_key() {
        return Err(BulkError::Incomplete(format!(
            "an entry of no domain (key 0x{}) is left after the account, storage and code entries",
            alloy_primitives::hex::encode(key)
        )));
    }
    Ok(())
}

/// Writes one domain's file of `count` entries for steps `[0, to_step)`;
/// `None` when `pairs` is empty.
fn write_file(
    target: &FileTarget,
    domain: Domain,
    count: u64,
    pairs: impl Iterator<Item = std::result::Result<Pair, RunError>>,
) -> Result<Option<BuiltFile>> {
    let mut pairs = pairs.peekable();
    if pairs.peek().is_none() {
        return Ok(None);
    }
    let meta = FileMeta {
        domain,
        from_step: 0,
        to_step: target.to_step,
    };
    let mut writer = SortedFileWriter::new(target.fs.clone(), &target.files_dir, meta)?
        .with_expected_keys(count);
    let mut raw_bytes = 0;
    for pair in pairs {
        let (key, value) = pair?;
        raw_bytes += (key.len() + value.len()) as u64;
        writer.push(&key, Some(&value))?;
    }
    let info = writer.finish()?;
    let file = Arc::new(SortedFile::open(target.fs.as_ref(), &info.path)?);
    if file.entries() != count {
        let _ = target.fs.remove(&info.path);
        return Err(BulkError::Incomplete(format!(
            "the {domain} file holds {} entries where the import counted {count}",
            file.entries()
        )));
    }
    Ok(Some(BuiltFile { file, raw_bytes }))
}
