//! The keys a block touched (hashed, sorted, grouped per account) and how a
//! touched account or slot rebuilds its leaf from the state.

use std::collections::HashMap;

use alloy_primitives::{Address, B256, keccak256};

use crate::error::{CommitmentError, corrupted};
use crate::nibbles::push_key_nibbles;
use crate::node::{EMPTY_ROOT, encode_account, encode_storage_value};
use crate::record::{Cell, Leaf, LeafKind};
use crate::walk::{Sub, Touch, Walker};

/// The keys a block touched. Duplicates are allowed; [`compute_root`] hashes,
/// sorts and de-duplicates them.
///
/// [`compute_root`]: crate::compute_root
#[derive(Clone, Debug, Default)]
pub struct TrieUpdate {
    /// Accounts whose nonce, balance, code hash or existence may have changed.
    pub accounts: Vec<Address>,
    /// Storage slots whose value may have changed.
    pub storage: Vec<(Address, B256)>,
    /// Accounts whose whole storage was deleted in this block (selfdestruct).
    /// Slots the account got again later in the block must also be listed in
    /// `storage`; the state source already shows only those new slots.
    pub wiped: Vec<Address>,
}

/// A touched storage slot of one account.
#[derive(Clone, Debug)]
pub(crate) struct SlotTouch {
    pub(crate) hashed: B256,
    pub(crate) slot: B256,
}

/// A touched account with its touched slots (sorted by hashed slot).
#[derive(Clone, Debug)]
pub(crate) struct AccountTouch {
    pub(crate) hashed: B256,
    pub(crate) address: Address,
    pub(crate) wiped: bool,
    pub(crate) slots: Vec<SlotTouch>,
}

/// Hashes, sorts and de-duplicates the update's keys; returns the accounts
/// sorted by hashed address and the number of keccak calls spent.
pub(crate) fn prepare(update: &TrieUpdate) -> (Vec<AccountTouch>, u64) {
    let mut index: HashMap<Address, usize> = HashMap::new();
    let mut accounts: Vec<AccountTouch> = Vec::new();
    let mut hashes = 0u64;
    let mut entry =
        |address: Address, accounts: &mut Vec<AccountTouch>, hashes: &mut u64| -> usize {
            *index.entry(address).or_insert_with(|| {
                *hashes += 1;
                accounts.push(AccountTouch {
                    hashed: keccak256(address),
                    address,
                    wiped: false,
                    slots: Vec::new(),
                });
                accounts.len() - 1
            })
        };
    for a in &update.accounts {
        entry(*a, &mut accounts, &mut hashes);
    }
    for a in &update.wiped {
        let i = entry(*a, &mut accounts, &mut hashes);
        accounts[i].wiped = true;
    }
    for (a, slot) in &update.storage {
        let i = entry(*a, &mut accounts, &mut hashes);
        hashes += 1;
        accounts[i].slots.push(SlotTouch {
            hashed: keccak256(slot),
            slot: *slot,
        });
    }
    for a in &mut accounts {
        a.slots.sort_unstable_by_key(|x| x.hashed);
        a.slots.dedup_by(|x, y| x.hashed == y.hashed);
    }
    accounts.sort_unstable_by_key(|x| x.hashed);
    (accounts, hashes)
}

impl Touch for SlotTouch {
    fn hashed(&self) -> &B256 {
        &self.hashed
    }

    fn update_leaf(
        &self,
        w: &mut Walker<'_>,
        sub: &Sub,
        _depth: usize,
        _existing: Option<Leaf>,
    ) -> Result<Cell, CommitmentError> {
        let Some(address) = sub.storage_of else {
            return Err(corrupted(&w.path, "storage key walked in the account trie"));
        };
        Ok(match w.read_storage(&address, &self.slot)? {
            Some(v) if !v.is_zero() => {
                let mut value = Vec::with_capacity(33);
                encode_storage_value(&v, &mut value);
                Cell::Leaf(Leaf {
                    hashed: self.hashed,
                    kind: LeafKind::Slot { slot: self.slot },
                    value: Some(value),
                    node_ref: None,
                })
            }
            _ => Cell::Empty,
        })
    }
}

impl Touch for AccountTouch {
    fn hashed(&self) -> &B256 {
        &self.hashed
    }

    fn update_leaf(
        &self,
        w: &mut Walker<'_>,
        _sub: &Sub,
        depth: usize,
        existing: Option<Leaf>,
    ) -> Result<Cell, CommitmentError> {
        let old_root = match existing.map(|l| l.kind) {
            Some(LeafKind::Account { storage_root, .. }) => storage_root,
            Some(LeafKind::Slot { .. }) => {
                return Err(corrupted(&w.path, "storage leaf in the account trie"));
            }
            None => EMPTY_ROOT,
        };
        let acct = w.read_account(&self.address)?;
        let plen = w.path.len();
        push_key_nibbles(&mut w.path, &self.hashed, depth, 64);
        let result = (|| {
            let Some(acct) = acct else {
                if old_root != EMPTY_ROOT {
                    w.delete_records()?;
                }
                return Ok(Cell::Empty);
            };
            let storage_root = if self.wiped || !self.slots.is_empty() {
                if self.wiped && old_root != EMPTY_ROOT {
                    w.delete_records()?;
                }
                let sub = Sub {
                    storage_of: Some(self.address),
                };
                w.update_subtrie(&sub, self.wiped || old_root == EMPTY_ROOT, &self.slots)?
            } else {
                old_root
            };
            let mut value = Vec::with_capacity(112);
            encode_account(
                acct.nonce,
                &acct.balance,
                &storage_root,
                &acct.code_hash,
                &mut value,
            );
            Ok(Cell::Leaf(Leaf {
                hashed: self.hashed,
                kind: LeafKind::Account {
                    address: self.address,
                    storage_root,
                },
                value: Some(value),
                node_ref: None,
            }))
        })();
        w.path.truncate(plen);
        result
    }
}
