//! The state the chain runs on: revm's in-memory `CacheDB` (what the EVM
//! reads), with each block's changes applied from revm's bundle, and the
//! state root over it — every changed account's storage root recomputed
//! (in parallel), the account trie rebuilt in hashed order from the
//! subtries the block touched, hashed again, and the others' hashes
//! ([`Subtries`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;

use alloy_genesis::GenesisAccount;
use alloy_primitives::{Address, B256, KECCAK256_EMPTY, U256, keccak256};
use alloy_trie::{EMPTY_ROOT_HASH, TrieAccount};
use rayon::prelude::*;
use revm::bytecode::Bytecode;
use revm::database::{AccountState, BundleState, CacheDB, DbAccount, EmptyDB};
use revm::state::AccountInfo;

use crate::root::{state_root, storage_root};
use crate::subtries::Subtries;

/// The full state in memory and what the root needs of it.
#[derive(Debug)]
pub struct World {
    db: CacheDB<EmptyDB>,
    /// Every live account by hashed address (the account trie's order).
    hashed: BTreeMap<B256, Address>,
    /// The storage root of every live account with storage.
    storage_roots: HashMap<Address, B256>,
    /// Accounts whose storage changed since the last root.
    dirty: HashSet<Address>,
    /// The account trie's subtries, hashed at the last root.
    subtries: Subtries,
    /// The storage tries of the accounts with many slots, kept between
    /// blocks (a popular token's balances: millions of slots at ten
    /// million accounts).
    large: HashMap<Address, LargeStorage>,
    /// Slots from which a storage trie is kept ([`LARGE_STORAGE`]).
    large_from: usize,
}

/// Slots at which an account's storage trie is kept between blocks.
const LARGE_STORAGE: usize = 4096;

/// One account's storage trie kept between blocks: its slots by hashed
/// slot, and its subtries.
#[derive(Debug)]
struct LargeStorage {
    slots: BTreeMap<B256, U256>,
    subtries: Subtries,
}

impl LargeStorage {
    fn new<S: BuildHasher>(storage: &HashMap<U256, U256, S>) -> Self {
        let slots: BTreeMap<B256, U256> = storage
            .iter()
            .filter(|(_, value)| !value.is_zero())
            .map(|(slot, _)| (keccak256(slot.to_be_bytes::<32>()), *slot))
            .collect();
        let subtries = Subtries::new(Subtries::depth_for(slots.len()));
        Self { slots, subtries }
    }

    /// `slot` now holds `value` (zero: removed).
    fn write(&mut self, slot: U256, value: U256) {
        let hashed = keccak256(slot.to_be_bytes::<32>());
        if value.is_zero() {
            self.slots.remove(&hashed);
        } else {
            self.slots.insert(hashed, slot);
        }
        self.subtries.touch(&hashed);
    }

    fn root<S: BuildHasher + Sync>(&mut self, storage: &HashMap<U256, U256, S>) -> B256 {
        let value_of = |slot: &U256| storage.get(slot).copied().filter(|value| !value.is_zero());
        self.subtries.root(&self.slots, &value_of)
    }
}

impl World {
    /// The state of a genesis allocation.
    pub fn from_alloc(alloc: BTreeMap<Address, GenesisAccount>) -> Self {
        let mut db = CacheDB::new(EmptyDB::default());
        let mut hashed = BTreeMap::new();
        let mut dirty = HashSet::new();
        for (address, account) in alloc {
            let code = account
                .code
                .as_ref()
                .filter(|code| !code.is_empty())
                .map(|code| Bytecode::new_raw(code.clone()));
            let info = AccountInfo {
                balance: account.balance,
                nonce: account.nonce.unwrap_or(0),
                code_hash: code.as_ref().map_or(KECCAK256_EMPTY, Bytecode::hash_slow),
                code,
                ..Default::default()
            };
            db.insert_account_info(address, info);
            let storage: HashMap<U256, U256> = account
                .storage_slots()
                .filter(|(_, value)| !value.is_zero())
                .map(|(slot, value)| (slot.into(), value))
                .collect();
            if let Some(entry) = db.cache.accounts.get_mut(&address) {
                entry.storage.extend(storage);
                entry.account_state = AccountState::StorageCleared;
            }
            hashed.insert(keccak256(address), address);
            dirty.insert(address);
        }
        let subtries = Subtries::new(Subtries::depth_for(hashed.len()));
        Self {
            db,
            hashed,
            storage_roots: HashMap::new(),
            dirty,
            subtries,
            large: HashMap::new(),
            large_from: LARGE_STORAGE,
        }
    }

    /// Keeps the storage tries of accounts from `slots` slots (tests: the
    /// small chains' tokens).
    #[cfg(test)]
    pub(crate) fn keep_storage_tries_from(&mut self, slots: usize) {
        self.large_from = slots;
    }

    /// The storage tries kept between blocks.
    #[cfg(test)]
    pub(crate) fn kept_storage_tries(&self) -> usize {
        self.large.len()
    }

    /// The database the EVM reads.
    pub fn db(&self) -> &CacheDB<EmptyDB> {
        &self.db
    }

    /// Records block `number`'s hash for BLOCKHASH.
    pub fn set_block_hash(&mut self, number: u64, hash: B256) {
        self.db.cache.block_hashes.insert(U256::from(number), hash);
    }

    /// Applies a block's changes: accounts created, changed or destroyed,
    /// slots written (zero: removed), storage wiped by a self-destruct,
    /// new code.
    pub fn apply(&mut self, bundle: BundleState) {
        for (hash, code) in bundle.contracts {
            self.db.cache.contracts.insert(hash, code);
        }
        for (address, account) in bundle.state {
            self.subtries.touch(&keccak256(address));
            let Some(mut info) = account.info else {
                self.large.remove(&address);
                self.db.cache.accounts.remove(&address);
                self.hashed.remove(&keccak256(address));
                self.storage_roots.remove(&address);
                self.dirty.remove(&address);
                continue;
            };
            if info.code.is_none() && info.code_hash != KECCAK256_EMPTY {
                info.code = self.db.cache.contracts.get(&info.code_hash).cloned();
            }
            self.db.insert_contract(&mut info);
            let entry = self
                .db
                .cache
                .accounts
                .entry(address)
                .or_insert_with(DbAccount::new_not_existing);
            if account.status.was_destroyed() {
                entry.storage.clear();
                self.large.remove(&address);
                self.dirty.insert(address);
            }
            let mut large = self.large.get_mut(&address);
            entry.info = info;
            entry.account_state = AccountState::StorageCleared;
            for (slot, value) in account.storage {
                if let Some(large) = large.as_mut() {
                    large.write(slot, value.present_value);
                }
                if value.present_value.is_zero() {
                    entry.storage.remove(&slot);
                } else {
                    entry.storage.insert(slot, value.present_value);
                }
                self.dirty.insert(address);
            }
            self.hashed.entry(keccak256(address)).or_insert(address);
        }
    }

    /// The state root: the changed accounts' storage roots recomputed, then
    /// the account trie over every account (its untouched subtries by their
    /// hashes).
    pub fn state_root(&mut self) -> B256 {
        let accounts = &self.db.cache.accounts;
        let mut updated: Vec<(Address, B256)> = Vec::with_capacity(self.dirty.len());
        // Storage tries of many slots: kept, their touched subtries hashed
        // again (in parallel within each).
        for address in &self.dirty {
            let Some(account) = accounts.get(address) else {
                continue;
            };
            if account.storage.len() < self.large_from && !self.large.contains_key(address) {
                continue;
            }
            let large = self
                .large
                .entry(*address)
                .or_insert_with(|| LargeStorage::new(&account.storage));
            updated.push((*address, large.root(&account.storage)));
        }
        let large = &self.large;
        updated.par_extend(self.dirty.par_iter().filter_map(|address| {
            let account = accounts.get(address)?;
            (!large.contains_key(address)).then(|| (*address, storage_root(&account.storage)))
        }));
        self.dirty.clear();
        for (address, root) in updated {
            if root == EMPTY_ROOT_HASH {
                self.storage_roots.remove(&address);
            } else {
                self.storage_roots.insert(address, root);
            }
        }
        let storage_roots = &self.storage_roots;
        let leaf = |address: &Address| {
            let info = &accounts.get(address)?.info;
            Some(TrieAccount {
                nonce: info.nonce,
                balance: info.balance,
                storage_root: storage_roots
                    .get(address)
                    .copied()
                    .unwrap_or(EMPTY_ROOT_HASH),
                code_hash: info.code_hash,
            })
        };
        self.subtries.root(&self.hashed, &leaf)
    }

    /// The state root recomputed from nothing: every storage root, no
    /// cache (what tests compare the incremental root with).
    pub fn full_state_root(&self) -> B256 {
        let mut accounts: Vec<(B256, TrieAccount)> = self
            .db
            .cache
            .accounts
            .iter()
            .filter(|(_, account)| account.info().is_some())
            .map(|(address, account)| {
                (
                    keccak256(address),
                    TrieAccount {
                        nonce: account.info.nonce,
                        balance: account.info.balance,
                        storage_root: storage_root(&account.storage),
                        code_hash: account.info.code_hash,
                    },
                )
            })
            .collect();
        accounts.sort_unstable_by_key(|(hashed, _)| *hashed);
        state_root(accounts)
    }

    /// How many accounts the state holds.
    pub fn accounts(&self) -> usize {
        self.hashed.len()
    }
}
