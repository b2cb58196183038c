//! An in-memory world state that applies trace blocks exactly as
//! `book/src/reference/formats/trace.md` says and computes the Ethereum state root with
//! `alloy_trie::HashBuilder` — independently of strata's own commitment, so
//! it can serve as the outside oracle for generated and replayed traces.

mod check;
mod root;
mod shards;
mod storage;
mod verify;

use std::collections::{BTreeMap, HashMap, btree_map};

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_trie::KECCAK_EMPTY;
use rayon::prelude::*;
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};

use crate::{AccountRead, AccountWrite, TraceBlock};
use shards::ShardCache;
use storage::Storage;

pub use check::ReadMismatch;
pub use storage::StorageIter;
pub use verify::{VerifyError, VerifyReport, verify_trace};

/// One account of the model, kept small (56 bytes, plus its storage for a
/// contract): the code is an index into the state's code pool, and neither
/// the hashed address nor the leaf encoding is stored (both are recomputed
/// when the account's sub-trie is).
#[derive(Debug, Clone, Default)]
struct Account {
    balance: U256,
    nonce: u64,
    /// Index in [`Codes`]; 0 is the empty code.
    code: u32,
    /// `None` for an account that never had a slot.
    storage: Option<Box<Storage>>,
}

/// The distinct bytecodes of the state, each kept once (contracts share a
/// few codes); index 0 is the empty code. Codes are never dropped.
#[derive(Debug, Clone)]
struct Codes {
    codes: Vec<(B256, Bytes)>,
    index: HashMap<B256, u32>,
}

impl Default for Codes {
    fn default() -> Self {
        Self {
            codes: vec![(KECCAK_EMPTY, Bytes::new())],
            index: HashMap::from([(KECCAK_EMPTY, 0)]),
        }
    }
}

impl Codes {
    /// The index of `code`, added if new.
    fn intern(&mut self, code: &Bytes) -> u32 {
        if code.is_empty() {
            return 0;
        }
        let hash = keccak256(code);
        *self.index.entry(hash).or_insert_with(|| {
            self.codes.push((hash, code.clone()));
            u32::try_from(self.codes.len() - 1).expect("fewer than 2^32 distinct codes")
        })
    }

    fn get(&self, index: u32) -> &(B256, Bytes) {
        &self.codes[index as usize]
    }
}

/// An account of a [`WorldState`], as read.
#[derive(Debug, Clone, Copy)]
pub struct AccountRef<'a> {
    account: &'a Account,
    codes: &'a Codes,
}

impl<'a> AccountRef<'a> {
    /// The nonce.
    pub fn nonce(&self) -> u64 {
        self.account.nonce
    }

    /// The balance.
    pub fn balance(&self) -> U256 {
        self.account.balance
    }

    /// The bytecode (empty for an EOA).
    pub fn code(&self) -> &'a Bytes {
        &self.codes.get(self.account.code).1
    }

    /// keccak256 of the code (`KECCAK_EMPTY` for an EOA).
    pub fn code_hash(&self) -> B256 {
        self.codes.get(self.account.code).0
    }

    /// The non-zero storage slots in slot order.
    pub fn storage(&self) -> StorageIter<'a> {
        self.account
            .storage
            .as_deref()
            .map_or_else(StorageIter::empty, Storage::iter)
    }

    /// The `index`-th slot, in slot order, of the storage the account was
    /// created with ([`WorldState::from_accounts`] or [`WorldState::from_alloc`]).
    /// The list never changes while the account lives, even when a block
    /// clears or adds slots; an account created by a block has none.
    pub fn initial_slot(&self, index: usize) -> Option<B256> {
        self.account.storage.as_deref()?.base_slot(index)
    }
}

/// An account to build a [`WorldState`] from ([`WorldState::from_accounts`]).
#[derive(Debug, Clone, Default)]
pub struct NewAccount {
    /// The address.
    pub address: Address,
    /// The nonce.
    pub nonce: u64,
    /// The balance.
    pub balance: U256,
    /// The bytecode (empty for an EOA).
    pub code: Bytes,
    /// Slots in any order; for a slot listed twice the later value counts,
    /// and zero values are left out.
    pub storage: Vec<(B256, U256)>,
}

/// The whole state: address → account (compact: see [`Account`] and
/// [`Storage`]), the accounts' trie order, the code pool, and the cached
/// sub-trie hashes of the account trie.
#[derive(Debug, Clone, Default)]
pub struct WorldState {
    accounts: BTreeMap<Address, Account>,
    /// keccak256(address) → address: the account trie's leaf order.
    by_hash: BTreeMap<B256, Address>,
    codes: Codes,
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
        Self::from_accounts(
            alloc
                .iter()
                .map(|(address, genesis)| NewAccount {
                    address: *address,
                    nonce: genesis.nonce,
                    balance: genesis.balance,
                    code: genesis.code.clone(),
                    storage: genesis.storage.iter().map(|(k, v)| (*k, *v)).collect(),
                })
                .collect(),
        )
    }

    /// The state of `accounts` in any order; for an address listed twice
    /// the later entry counts (as inserting into a [`GenesisAlloc`] does).
    /// Built in bulk: the maps are filled from sorted runs (full nodes),
    /// each storage becomes one sorted array.
    pub fn from_accounts(accounts: Vec<NewAccount>) -> Self {
        let mut codes = Codes::default();
        let code_ids: Vec<u32> = accounts.iter().map(|a| codes.intern(&a.code)).collect();
        let built: Vec<(Address, Account)> = accounts
            .into_par_iter()
            .zip(code_ids)
            .map(|(new, code)| {
                let storage = (!new.storage.is_empty())
                    .then(|| Box::new(Storage::from_sorted(sorted_slots(new.storage))));
                let account = Account {
                    balance: new.balance,
                    nonce: new.nonce,
                    code,
                    storage,
                };
                (new.address, account)
            })
            .collect();
        // `from_iter` sorts stably and keeps the last of equal keys.
        let accounts: BTreeMap<Address, Account> = built.into_iter().collect();
        let by_hash = accounts
            .keys()
            .map(|address| (keccak256(address), *address))
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        Self {
            accounts,
            by_hash,
            codes,
            shards: ShardCache::default(),
        }
    }

    /// The state as a genesis allocation.
    pub fn to_alloc(&self) -> GenesisAlloc {
        self.accounts()
            .map(|(address, a)| {
                let genesis = GenesisAccount {
                    nonce: a.nonce(),
                    balance: a.balance(),
                    code: a.code().clone(),
                    storage: a.storage().collect(),
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
        self.accounts
            .values()
            .filter_map(|a| a.storage.as_deref())
            .map(Storage::len)
            .sum()
    }

    /// One account, if it exists.
    pub fn account(&self, address: &Address) -> Option<AccountRef<'_>> {
        self.accounts.get(address).map(|account| AccountRef {
            account,
            codes: &self.codes,
        })
    }

    /// All accounts in address order.
    pub fn accounts(&self) -> impl Iterator<Item = (&Address, AccountRef<'_>)> {
        self.accounts.iter().map(|(address, account)| {
            let codes = &self.codes;
            (address, AccountRef { account, codes })
        })
    }

    /// A slot's value (zero when the account or the slot does not exist).
    pub fn slot(&self, address: &Address, slot: &B256) -> U256 {
        self.accounts
            .get(address)
            .and_then(|a| a.storage.as_deref())
            .map_or(U256::ZERO, |storage| storage.get(slot))
    }

    /// What a block reading `address` (and `slots`) would find, in the trace's
    /// read shape; `code` is included when `with_code` and the account has code.
    pub fn read(
        &self,
        address: &Address,
        slots: impl IntoIterator<Item = B256>,
        with_code: bool,
    ) -> AccountRead {
        let account = self.account(address);
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
                let has_code = !a.code().is_empty();
                AccountRead {
                    balance: a.balance(),
                    nonce: a.nonce(),
                    code_hash: has_code.then_some(a.code_hash()),
                    code: (has_code && with_code).then(|| a.code().clone()),
                    storage,
                }
            }
        }
    }

    /// Apply one account's write entry: `deleted` first, then the fields.
    pub fn apply_write(&mut self, address: &Address, write: &AccountWrite) {
        let hashed = keccak256(address);
        if write.deleted {
            if self.accounts.remove(address).is_some() {
                self.by_hash.remove(&hashed);
                self.shards.invalidate(&hashed);
            }
            if !write.has_fields() {
                return;
            }
        }
        self.shards.invalidate(&hashed);
        let account = match self.accounts.entry(*address) {
            btree_map::Entry::Occupied(entry) => entry.into_mut(),
            btree_map::Entry::Vacant(entry) => {
                self.by_hash.insert(hashed, *address);
                entry.insert(Account::default())
            }
        };
        if let Some(nonce) = write.nonce {
            account.nonce = nonce;
        }
        if let Some(balance) = write.balance {
            account.balance = balance;
        }
        if let Some(code) = &write.code {
            account.code = self.codes.intern(code);
        }
        if !write.storage.is_empty() {
            let storage = account.storage.get_or_insert_with(Box::default);
            for (slot, value) in &write.storage {
                storage.set(*slot, *value);
            }
        }
    }

    /// Apply a block's writes (its reads are not checked; see [`Self::check_reads`]).
    pub fn apply_block(&mut self, block: &TraceBlock) {
        for (address, write) in &block.writes {
            self.apply_write(address, write);
        }
    }
}

/// `slots` sorted by slot, the later of a repeated slot kept, zeros left out.
fn sorted_slots(mut slots: Vec<(B256, U256)>) -> Vec<(B256, U256)> {
    slots.sort_by_key(|(slot, _)| *slot);
    slots.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            earlier.1 = later.1;
        }
        same
    });
    slots.retain(|(_, value)| !value.is_zero());
    slots.shrink_to_fit();
    slots
}
