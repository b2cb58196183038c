//! The state one transaction of an Amsterdam block sees when it runs ahead
//! of its turn: the state before the block with the changes its access
//! list (EIP-7928) gives for every earlier step laid over it
//! ([`ListOverlay`]), and what the transaction read from it ([`Reads`]),
//! so that its turn can check those reads against the block as written.

use std::collections::HashMap;

use alloy_eip7928::{AccountChanges, BlockAccessList};
use alloy_primitives::{Address, B256, KECCAK256_EMPTY, U256, keccak256};
use revm::bytecode::Bytecode;
use revm::database_interface::{Database, DatabaseRef};
use revm::state::AccountInfo;
use strata_storage::revm::{ReaderDatabase, RevmError};

/// A block's access list by address, for the lookups of [`ListOverlay`].
pub(crate) struct ListView<'l> {
    accounts: HashMap<Address, &'l AccountChanges>,
    /// Each code the list sets, hashed and analysed once for every
    /// transaction that runs it: by address, with the index of each change,
    /// in their order.
    codes: HashMap<Address, Vec<ListedCodeAt>>,
}

/// A code the list sets at a step's index, or why revm refuses it.
type ListedCodeAt = (u64, Result<ListedCode, String>);

/// A code the list sets: its hash and revm's analysed bytecode.
#[derive(Clone)]
struct ListedCode {
    hash: B256,
    bytecode: Bytecode,
}

impl ListedCode {
    fn analyse(code: &alloy_primitives::Bytes) -> Result<Self, String> {
        if code.is_empty() {
            return Ok(Self {
                hash: KECCAK256_EMPTY,
                bytecode: Bytecode::default(),
            });
        }
        let bytecode = Bytecode::new_raw_checked(code.clone()).map_err(|e| e.to_string())?;
        Ok(Self {
            hash: keccak256(code),
            bytecode,
        })
    }
}

impl<'l> ListView<'l> {
    /// The accounts of `list`. A list that names an address twice keeps
    /// its last entry: such a list is refused by the block's check, and
    /// until then every value a transaction read from it is checked.
    pub(crate) fn new(list: &'l BlockAccessList) -> Self {
        Self {
            accounts: list
                .iter()
                .map(|account| (account.address, account))
                .collect(),
            codes: list
                .iter()
                .filter(|account| !account.code_changes.is_empty())
                .map(|account| {
                    let codes = account
                        .code_changes
                        .iter()
                        .map(|change| {
                            let at = change.block_access_index.get();
                            (at, ListedCode::analyse(&change.new_code))
                        })
                        .collect();
                    (account.address, codes)
                })
                .collect(),
        }
    }

    /// What the list says `address` holds after the steps before `index`
    /// (0: the system calls before the transactions; `i + 1`: transaction
    /// `i`): each field the list changed at a lower index, at its last such
    /// change.
    fn account_before(&self, address: &Address, index: u64) -> ListedAccount<'_> {
        let Some(account) = self.accounts.get(address) else {
            return ListedAccount::default();
        };
        ListedAccount {
            balance: last_before(&account.balance_changes, index, |c| {
                (c.block_access_index.get(), c.post_balance)
            }),
            nonce: last_before(&account.nonce_changes, index, |c| {
                (c.block_access_index.get(), c.new_nonce)
            }),
            code: self
                .codes
                .get(address)
                .and_then(|codes| last_before(codes, index, |(at, code)| (*at, code))),
        }
    }

    /// The value the list gives slot `slot` of `address` after the steps
    /// before `index`, if it changed there.
    fn slot_before(&self, address: &Address, slot: U256, index: u64) -> Option<U256> {
        let account = self.accounts.get(address)?;
        let changes = account
            .storage_changes
            .binary_search_by_key(&slot, |changes| changes.slot)
            .ok()
            .map(|at| &account.storage_changes[at])?;
        last_before(&changes.changes, index, |c| {
            (c.block_access_index.get(), c.new_value)
        })
    }
}

/// The fields of an account the list changed before some index.
#[derive(Default)]
struct ListedAccount<'l> {
    balance: Option<U256>,
    nonce: Option<u64>,
    code: Option<&'l Result<ListedCode, String>>,
}

impl ListedAccount<'_> {
    fn changes_anything(&self) -> bool {
        self.balance.is_some() || self.nonce.is_some() || self.code.is_some()
    }
}

/// The value of the last of `changes` (in index order) whose index is below
/// `index`.
fn last_before<'c, C, V>(
    changes: &'c [C],
    index: u64,
    value: impl Fn(&'c C) -> (u64, V),
) -> Option<V> {
    changes
        .iter()
        .map(value)
        .take_while(|(at, _)| *at < index)
        .last()
        .map(|(_, v)| v)
}

/// One value a transaction read, and whether the list gave it (rather than
/// the state before the block).
pub(crate) struct Read<K, V> {
    pub(crate) key: K,
    pub(crate) value: V,
    pub(crate) from_list: bool,
}

/// Every account and slot value a transaction read through a
/// [`ListOverlay`].
#[derive(Default)]
pub(crate) struct Reads {
    pub(crate) accounts: Vec<Read<Address, Option<AccountInfo>>>,
    pub(crate) slots: Vec<Read<(Address, U256), U256>>,
}

/// revm's database for one transaction run ahead: the state before the
/// block (a reader of the store's head, the block's parent) with every
/// change the list gives for the steps before the transaction's own laid
/// over it. Every account and slot read is recorded ([`Reads`]).
pub(crate) struct ListOverlay<'l> {
    base: ReaderDatabase,
    list: &'l ListView<'l>,
    index: u64,
    reads: Reads,
}

impl std::fmt::Debug for ListOverlay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListOverlay")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl<'l> ListOverlay<'l> {
    /// `base` (the state before the block) under `list`.
    pub(crate) fn new(base: ReaderDatabase, list: &'l ListView<'l>) -> Self {
        Self {
            base,
            list,
            index: 0,
            reads: Reads::default(),
        }
    }

    /// Sets up for the step at list index `index` (transaction `i` is
    /// `i + 1`), with no reads recorded.
    pub(crate) fn start(&mut self, index: u64) {
        self.index = index;
        self.reads = Reads::default();
    }

    /// What the step read.
    pub(crate) fn take_reads(&mut self) -> Reads {
        std::mem::take(&mut self.reads)
    }
}

impl Database for ListOverlay<'_> {
    type Error = RevmError;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, RevmError> {
        let before = self.base.basic_ref(address)?;
        let listed = self.list.account_before(&address, self.index);
        let from_list = listed.changes_anything();
        let info = if from_list {
            let mut info = before.unwrap_or_default();
            if let Some(balance) = listed.balance {
                info.balance = balance;
            }
            if let Some(nonce) = listed.nonce {
                info.nonce = nonce;
            }
            if let Some(code) = listed.code {
                let code = code.as_ref().map_err(|reason| RevmError::InvalidCode {
                    hash: B256::ZERO,
                    reason: format!("code the access list sets at {address}: {reason}"),
                })?;
                info.code_hash = code.hash;
                info.code = Some(code.bytecode.clone());
            }
            Some(info)
        } else {
            before
        };
        self.reads.accounts.push(Read {
            key: address,
            value: info.clone(),
            from_list,
        });
        Ok(info)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, RevmError> {
        self.base.code_by_hash_ref(code_hash)
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, RevmError> {
        let listed = self.list.slot_before(&address, index, self.index);
        let value = match listed {
            Some(value) => value,
            None => self.base.storage_ref(address, index)?,
        };
        self.reads.slots.push(Read {
            key: (address, index),
            value,
            from_list: listed.is_some(),
        });
        Ok(value)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, RevmError> {
        self.base.block_hash_ref(number)
    }
}
