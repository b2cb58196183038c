//! What a block's execution read and wrote, recorded as it runs: every
//! account, slot and code the EVM loaded from the store (their values
//! before the block) and every change the block made (from revm's bundle).
//! `strata import-chain --trace-out` writes it as a block trace, so that
//! `strata replay` can replay an executed chain without the EVM.

use std::cell::RefCell;
use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, KECCAK256_EMPTY, U256};
use revm::bytecode::Bytecode;
use revm::database::BundleState;
use revm::database_interface::DatabaseRef;
use revm::state::AccountInfo;
use strata_storage::revm::{ReaderDatabase, bundle_code, plain_changes};
use strata_storage::{Account, StateReader};

/// An account as the block found it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountRead {
    /// Nonce, balance and code hash before the block (`None`: absent).
    pub account: Option<Account>,
    /// Its code, when the EVM loaded it.
    pub code: Option<Bytes>,
    /// The slots the EVM loaded, with their values before the block.
    pub storage: BTreeMap<B256, U256>,
}

/// What a block did to one account: when `deleted`, the account and its
/// storage were removed first (a self-destruct, or an empty account
/// cleared), then the other fields apply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountWrite {
    /// Removed (with its storage) before the fields below applied.
    pub deleted: bool,
    /// Nonce, balance and code hash after the block, unless it ends absent.
    pub account: Option<Account>,
    /// Its new code, when the block changed it.
    pub code: Option<Bytes>,
    /// Slots the block changed, with their values after it (zero: deleted).
    pub storage: BTreeMap<B256, U256>,
}

/// A block's reads (before it) and writes (after it), per account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockAccess {
    /// Every account the EVM loaded, with the slots and code it loaded.
    pub reads: BTreeMap<Address, AccountRead>,
    /// Every account the block changed.
    pub writes: BTreeMap<Address, AccountWrite>,
}

/// revm's read-only database over a store reader that can record the
/// first value of every key it serves. revm's `State` asks the database
/// once per key and block, so what it records are the values before the
/// block.
#[derive(Debug)]
pub(crate) struct RecordingReader {
    reader: ReaderDatabase,
    log: Option<RefCell<ReadLog>>,
}

#[derive(Debug, Default)]
struct ReadLog {
    accounts: BTreeMap<Address, Option<Account>>,
    storage: BTreeMap<(Address, B256), U256>,
    codes: BTreeMap<B256, Bytes>,
}

impl RecordingReader {
    /// Serves `reader`; records when `record` is set.
    pub(crate) fn new(reader: StateReader, record: bool) -> Self {
        Self {
            reader: ReaderDatabase(reader),
            log: record.then(RefCell::default),
        }
    }

    /// The reads recorded (empty when not recording), per account.
    pub(crate) fn into_reads(self) -> BTreeMap<Address, AccountRead> {
        let Some(log) = self.log else {
            return BTreeMap::new();
        };
        let log = log.into_inner();
        let mut reads: BTreeMap<Address, AccountRead> = log
            .accounts
            .into_iter()
            .map(|(address, account)| {
                let code = account
                    .as_ref()
                    .and_then(|account| log.codes.get(&account.code_hash).cloned());
                let read = AccountRead {
                    account,
                    code,
                    storage: BTreeMap::new(),
                };
                (address, read)
            })
            .collect();
        for ((address, slot), value) in log.storage {
            reads
                .entry(address)
                .or_default()
                .storage
                .insert(slot, value);
        }
        reads
    }
}

impl DatabaseRef for RecordingReader {
    type Error = <ReaderDatabase as DatabaseRef>::Error;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        let info = self.reader.basic_ref(address)?;
        if let Some(log) = &self.log {
            let account = info.as_ref().map(|info| Account {
                nonce: info.nonce,
                balance: info.balance,
                code_hash: info.code_hash,
            });
            log.borrow_mut().accounts.entry(address).or_insert(account);
        }
        Ok(info)
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        let code = self.reader.code_by_hash_ref(code_hash)?;
        if let Some(log) = &self.log
            && code_hash != KECCAK256_EMPTY
        {
            log.borrow_mut()
                .codes
                .entry(code_hash)
                .or_insert_with(|| code.original_bytes());
        }
        Ok(code)
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        let value = self.reader.storage_ref(address, index)?;
        if let Some(log) = &self.log {
            log.borrow_mut()
                .storage
                .entry((address, B256::from(index)))
                .or_insert(value);
        }
        Ok(value)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        self.reader.block_hash_ref(number)
    }
}

/// The block's changes per account, as `apply_bundle_state` writes them:
/// an account whose storage the bundle wipes is deleted and written anew
/// with what it holds at the end of the block; an account the bundle ends
/// without is deleted; otherwise its fields, its code when the hash
/// changed, and its changed slots. Code the bundle does not carry is read
/// from `reader` by hash.
pub(crate) fn bundle_writes(
    bundle: &BundleState,
    reader: &StateReader,
) -> Result<BTreeMap<Address, AccountWrite>, String> {
    let (accounts, storage) = plain_changes(bundle);
    let mut writes = BTreeMap::new();
    for change in accounts {
        let mut write = AccountWrite {
            deleted: change.wiped || change.info.is_none(),
            ..AccountWrite::default()
        };
        if let Some(info) = change.info {
            if change.code_changed {
                write.code = Some(code_of(bundle, reader, change.address, &info)?);
            }
            write.account = Some(Account {
                nonce: info.nonce,
                balance: info.balance,
                code_hash: info.code_hash,
            });
        }
        writes.insert(change.address, write);
    }
    for change in &storage {
        let write = writes.entry(change.address).or_default();
        for (slot, value) in &change.storage {
            write.storage.insert(B256::from(*slot), *value);
        }
    }
    Ok(writes)
}

fn code_of(
    bundle: &BundleState,
    reader: &StateReader,
    address: Address,
    info: &AccountInfo,
) -> Result<Bytes, String> {
    if let Some(code) = bundle_code(bundle, info) {
        return Ok(Bytes::from(code));
    }
    reader
        .code_by_hash(&info.code_hash)
        .map_err(|error| error.to_string())?
        .map(|code| Bytes::from(code.to_vec()))
        .ok_or_else(|| format!("{address}: no code for hash {}", info.code_hash))
}
