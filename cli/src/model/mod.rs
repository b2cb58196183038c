//! An in-memory world state that applies trace blocks exactly as
//! `TRACE_FORMAT.md` says and computes the Ethereum state root with
//! `alloy_trie::HashBuilder` — independently of strata's own commitment, so
//! it can serve as the outside oracle for generated and replayed traces.

mod check;
mod root;
mod shards;
mod verify;

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_trie::KECCAK_EMPTY;
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};

use crate::trace::{AccountRead, AccountWrite, TraceBlock};
use shards::ShardCache;

pub use check::ReadMismatch;
pub use verify::{VerifyError, VerifyReport, verify_trace};

/// One account of the model.
#[derive(Debug, Clone)]
pub struct Account {
    nonce: u64,
    balance: U256,
    code: Bytes,
    code_hash: B256,
    storage: BTreeMap<B256, U256>,
    /// The same slots keyed by keccak256(slot): the storage trie's leaf order.
    hashed_storage: BTreeMap<B256, U256>,
    /// keccak256 of the address (the account's trie key), computed once.
    hashed_address: B256,
    /// Cached storage root; `None` after a storage change.
    storage_root: Option<B256>,
    /// Cached RLP of the account leaf; `None` after any change.
    leaf: Option<Vec<u8>>,
    /// Cached sub-trie hashes of a large storage trie.
    shards: ShardCache,
}

impl Account {
    fn empty(address: &Address) -> Self {
        Self {
            nonce: 0,
            balance: U256::ZERO,
            code: Bytes::new(),
            code_hash: KECCAK_EMPTY,
            storage: BTreeMap::new(),
            hashed_storage: BTreeMap::new(),
            hashed_address: keccak256(address),
            storage_root: None,
            leaf: None,
            shards: ShardCache::default(),
        }
    }

    /// The nonce.
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    /// The balance.
    pub fn balance(&self) -> U256 {
        self.balance
    }

    /// The bytecode (empty for an EOA).
    pub fn code(&self) -> &Bytes {
        &self.code
    }

    /// keccak256 of the code (`KECCAK_EMPTY` for an EOA).
    pub fn code_hash(&self) -> B256 {
        self.code_hash
    }

    /// The non-zero storage slots.
    pub fn storage(&self) -> &BTreeMap<B256, U256> {
        &self.storage
    }

    fn set_code(&mut self, code: Bytes) {
        self.code_hash = if code.is_empty() {
            KECCAK_EMPTY
        } else {
            keccak256(&code)
        };
        self.code = code;
    }

    fn set_slot(&mut self, slot: B256, value: U256) {
        let hashed = keccak256(slot);
        if value.is_zero() {
            self.storage.remove(&slot);
            self.hashed_storage.remove(&hashed);
        } else {
            self.storage.insert(slot, value);
            self.hashed_storage.insert(hashed, value);
        }
        self.shards.invalidate(&hashed);
        self.storage_root = None;
    }
}

/// The whole state: address → account, with cached per-account storage
/// roots and leaf encodings, and the accounts' trie order.
#[derive(Debug, Clone, Default)]
pub struct WorldState {
    accounts: BTreeMap<Address, Account>,
    /// keccak256(address) → address: the account trie's leaf order.
    by_hash: BTreeMap<B256, Address>,
    /// Cached sub-trie hashes of the account trie.
    shards: ShardCache,
}

impl WorldState {
    /// An empty state (root = the empty trie root).
    pub fn new() -> Self {
        Self::default()
    }

    /// The state of a genesis allocation.
    pub fn from_alloc(alloc: &GenesisAlloc) -> Self {
        let mut state = Self::new();
        for (address, genesis) in alloc {
            let mut account = Account::empty(address);
            account.nonce = genesis.nonce;
            account.balance = genesis.balance;
            account.set_code(genesis.code.clone());
            for (slot, value) in &genesis.storage {
                if !value.is_zero() {
                    account.set_slot(*slot, *value);
                }
            }
            state.by_hash.insert(account.hashed_address, *address);
            state.accounts.insert(*address, account);
        }
        state
    }

    /// The state as a genesis allocation.
    pub fn to_alloc(&self) -> GenesisAlloc {
        self.accounts
            .iter()
            .map(|(address, a)| {
                let genesis = GenesisAccount {
                    nonce: a.nonce,
                    balance: a.balance,
                    code: a.code.clone(),
                    storage: a.storage.clone(),
                };
                (*address, genesis)
            })
            .collect()
    }

    /// Number of accounts.
    pub fn len(&self) -> usize {
        self.accounts.len()
    }

    /// True when there are no accounts.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }

    /// Total number of non-zero storage slots.
    pub fn slot_count(&self) -> usize {
        self.accounts.values().map(|a| a.storage.len()).sum()
    }

    /// One account, if it exists.
    pub fn account(&self, address: &Address) -> Option<&Account> {
        self.accounts.get(address)
    }

    /// All accounts in address order.
    pub fn accounts(&self) -> impl Iterator<Item = (&Address, &Account)> {
        self.accounts.iter()
    }

    /// A slot's value (zero when the account or the slot does not exist).
    pub fn slot(&self, address: &Address, slot: &B256) -> U256 {
        self.accounts
            .get(address)
            .and_then(|a| a.storage.get(slot).copied())
            .unwrap_or(U256::ZERO)
    }

    /// What a block reading `address` (and `slots`) would find, in the trace's
    /// read shape; `code` is included when `with_code` and the account has code.
    pub fn read(
        &self,
        address: &Address,
        slots: impl IntoIterator<Item = B256>,
        with_code: bool,
    ) -> AccountRead {
        let account = self.accounts.get(address);
        let storage = slots
            .into_iter()
            .map(|slot| (slot, self.slot(address, &slot)))
            .collect();
        match account {
            None => AccountRead {
                storage,
                ..AccountRead::default()
            },
            Some(a) => {
                let has_code = !a.code.is_empty();
                AccountRead {
                    balance: a.balance,
                    nonce: a.nonce,
                    code_hash: has_code.then_some(a.code_hash),
                    code: (has_code && with_code).then(|| a.code.clone()),
                    storage,
                }
            }
        }
    }

    /// Apply one account's write entry: `deleted` first, then the fields.
    pub fn apply_write(&mut self, address: &Address, write: &AccountWrite) {
        if write.deleted {
            if let Some(gone) = self.accounts.remove(address) {
                self.by_hash.remove(&gone.hashed_address);
                self.shards.invalidate(&gone.hashed_address);
            }
            if !write.has_fields() {
                return;
            }
        }
        let by_hash = &mut self.by_hash;
        let account = self.accounts.entry(*address).or_insert_with(|| {
            let account = Account::empty(address);
            by_hash.insert(account.hashed_address, *address);
            account
        });
        account.leaf = None;
        self.shards.invalidate(&account.hashed_address);
        if let Some(nonce) = write.nonce {
            account.nonce = nonce;
        }
        if let Some(balance) = write.balance {
            account.balance = balance;
        }
        if let Some(code) = &write.code {
            account.set_code(code.clone());
        }
        for (slot, value) in &write.storage {
            account.set_slot(*slot, *value);
        }
    }

    /// Apply a block's writes (its reads are not checked; see [`Self::check_reads`]).
    pub fn apply_block(&mut self, block: &TraceBlock) {
        for (address, write) in &block.writes {
            self.apply_write(address, write);
        }
    }
}
