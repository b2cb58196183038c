//! Genesis: the whole initial state written as block 0, its root computed by
//! the commitment's bulk builder (sorted, sub-tries in parallel; not one insert per key).

use std::sync::Arc;

use alloy_primitives::{B256, keccak256};
use bytes::Bytes;
use strata_commitment::{AccountLeaf, SortedAccount, build_from_sorted};

use crate::error::{Error, Result, db_err};
use crate::inner::Inner;
use crate::ledger::Change;
use strata_db::value;
use strata_db::{DomainTables, HeadTables};
use strata_genesis::GenesisAlloc;
use strata_types::Head;
use strata_types::account::{Account, code_hash, encode_slot_value};
use strata_types::domain::Domain;
use strata_types::keys::ROOT_RECORD_KEY;
use strata_types::keys::storage_key;

/// States at least this large are bulk-built on rayon, 16 sub-tries at once.
const PARALLEL_GENESIS: usize = 4096;

/// Genesis states of at least this many accounts are written as immutable
/// files by the bulk import (`init --state`'s path) rather than into redb:
/// measured at 1M accounts, blocks imported over files ran 396-423 Mgas/s
/// against 240-286 over redb, their reads and commits both faster. Smaller
/// ones (test chains, consensus-test fixtures) stay in redb, where a few
/// thousand keys cost less than building files.
const FILES_GENESIS_ACCOUNTS: usize = 100_000;

/// How a genesis names its block 0 beside its state
/// ([`crate::StateDb::init_genesis`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GenesisName {
    /// Neither a hash nor a header is stored for block 0.
    Unnamed,
    /// Block 0's hash, served to `BLOCKHASH(0)` by the blocks after it.
    Hash(B256),
    /// Block 0's hash and its header as the client encodes it (RLP for
    /// Ethereum; a chain import continues from it).
    HashAndHeader(B256, Bytes),
}

/// Block 0's hash and, when the client has one, its header (as the client
/// encodes it).
pub(crate) struct BlockZero {
    pub(crate) hash: B256,
    pub(crate) header: Option<Bytes>,
}

/// Writes `alloc` as block 0 of an empty store; `block_of` gives block 0's
/// hash and header from its state root (`None`: neither stored) before
/// anything is written. Returns the root and that hash.
pub(crate) fn init_genesis(
    inner: &Arc<Inner>,
    alloc: &GenesisAlloc,
    block_of: impl FnOnce(B256) -> Result<Option<BlockZero>>,
) -> Result<(B256, Option<B256>)> {
    if let Some(last) = inner.current.load().block() {
        return Err(Error::GenesisExists { last });
    }
    if alloc.len() >= FILES_GENESIS_ACCOUNTS {
        return into_files(inner, alloc, block_of);
    }
    // The trie wants accounts in hashed order, and each account's slots too.
    let mut accounts: Vec<SortedAccount> = alloc
        .iter()
        .map(|(address, genesis)| {
            let mut storage: Vec<_> = genesis
                .storage
                .iter()
                .filter(|(_, v)| !v.is_zero())
                .map(|(slot, value)| (keccak256(slot), *slot, *value))
                .collect();
            storage.sort_unstable_by_key(|(hashed, _, _)| *hashed);
            SortedAccount {
                hashed_address: keccak256(address),
                address: *address,
                leaf: AccountLeaf {
                    nonce: genesis.nonce,
                    balance: genesis.balance,
                    code_hash: code_hash(&genesis.code),
                },
                storage,
            }
        })
        .collect();
    accounts.sort_unstable_by_key(|a| a.hashed_address);
    let mut records: Vec<(Vec<u8>, Bytes)> = Vec::new();
    let parallel = accounts.len() >= PARALLEL_GENESIS;
    let root = build_from_sorted(&accounts, parallel, |path, record| {
        records.push((path, record))
    })
    .map_err(|source| Error::Commitment { block: 0, source })?;
    let block_zero = block_of(root)?;

    let head = Head { block: 0, root };
    let commit = inner.lock_commit();
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    {
        let mut tables = DomainTables::open(&txn)?;
        let mut heads = HeadTables::open(&txn)?;
        let mut put = |domain: Domain, key: &[u8], value: &[u8]| -> Result<()> {
            tables
                .of(domain)
                .insert(key, value::encode(0, Some(value)).as_slice())
                .map_err(db_err("write genesis"))?;
            Ok(())
        };
        for sorted in &accounts {
            let (address, leaf) = (&sorted.address, &sorted.leaf);
            let account = Account {
                nonce: leaf.nonce,
                balance: leaf.balance,
                code_hash: leaf.code_hash,
            };
            put(Domain::Account, address.as_slice(), &account.encode())?;
            let code = &alloc[address].code;
            if !code.is_empty() {
                put(Domain::Code, address.as_slice(), code)?;
                heads.put_code(leaf.code_hash.as_slice(), code)?;
            }
            for (_, slot, value) in &sorted.storage {
                put(
                    Domain::Storage,
                    &storage_key(address, slot),
                    &encode_slot_value(*value),
                )?;
            }
        }
        for (path, record) in &records {
            put(
                Domain::Commitment,
                &strata_commitment::record_key(path),
                record,
            )?;
        }
        put(Domain::Commitment, ROOT_RECORD_KEY, &head.encode())?;
        heads.put_block(0, root, block_zero.as_ref().map(|block| block.hash))?;
        if let Some(header) = block_zero.as_ref().and_then(|block| block.header.as_ref()) {
            heads.put_header(0, header)?;
        }
        heads.set_head(head)?;
    }
    txn.commit().map_err(db_err("commit genesis"))?;
    for (path, record) in records {
        inner.cache.insert(&path, record);
    }
    inner.values.reset(Some(head));
    inner
        .ledger
        .publish(inner, &commit, Change::Reset(head, None))?;
    inner.maintenance.request();
    Ok((root, block_zero.map(|block| block.hash)))
}

/// A large genesis written as block 0 in immutable files
/// ([`FILES_GENESIS_ACCOUNTS`]), through the bulk import.
fn into_files(
    inner: &Arc<Inner>,
    alloc: &GenesisAlloc,
    block_of: impl FnOnce(B256) -> Result<Option<BlockZero>>,
) -> Result<(B256, Option<B256>)> {
    let accounts = alloc
        .iter()
        .map(|(address, account)| Ok::<_, std::convert::Infallible>((*address, account.clone())));
    let mut hash = None;
    let report = crate::imported::import_as(
        inner,
        accounts,
        &strata_bulk::import::ImportOptions::default(),
        |root| {
            let block = block_of(root)?;
            hash = block.as_ref().map(|block| block.hash);
            Ok(crate::imported::OwnedBlockId {
                hash,
                header: block.and_then(|block| block.header),
            })
        },
    )?;
    Ok((report.root, hash))
}
