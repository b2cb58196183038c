//! The keys a block touched (hashed, sorted, grouped per account) and how a
//! touched account or slot rebuilds its leaf from the state.

use alloy_primitives::map::AddressHashMap;
use alloy_primitives::{Address, B256};
use rayon::prelude::*;

use crate::error::{CommitmentError, corrupted};
use crate::keccak_x4::hash_each;
use crate::nibbles::push_key_nibbles;
use crate::node::{EMPTY_ROOT, encode_storage_value};
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

/// Touched accounts (and their touched slots) above which the keys are
/// hashed on the current rayon pool.
const PARALLEL_HASH_MIN: usize = 64;

/// De-duplicates the update's keys, hashes each distinct key once and sorts
/// them; returns the accounts sorted by hashed address and the number of
/// keccak calls spent. Keys are hashed on the current rayon pool.
pub(crate) fn prepare(update: &TrieUpdate) -> (Vec<AccountTouch>, u64) {
    let mut index: AddressHashMap<usize> =
        AddressHashMap::with_capacity_and_hasher(update.accounts.len(), Default::default());
    let mut accounts: Vec<AccountTouch> = Vec::with_capacity(update.accounts.len());
    let mut entry = |address: Address, accounts: &mut Vec<AccountTouch>| -> usize {
        *index.entry(address).or_insert_with(|| {
            accounts.push(AccountTouch {
                hashed: B256::ZERO,
                address,
                wiped: false,
                slots: Vec::new(),
            });
            accounts.len() - 1
        })
    };
    for a in &update.accounts {
        entry(*a, &mut accounts);
    }
    for a in &update.wiped {
        let i = entry(*a, &mut accounts);
        accounts[i].wiped = true;
    }
    for (a, slot) in &update.storage {
        let i = entry(*a, &mut accounts);
        accounts[i].slots.push(SlotTouch {
            hashed: B256::ZERO,
            slot: *slot,
        });
    }
    // Duplicates go before hashing: a slot written twice is hashed once.
    for a in &mut accounts {
        a.slots.sort_unstable_by_key(|x| x.slot);
        a.slots.dedup_by(|x, y| x.slot == y.slot);
    }
    let keys: usize = accounts.iter().map(|a| 1 + a.slots.len()).sum();
    // Four keys per keccak call (`hash_each`), chunks of them on the pool.
    let hash_slots = |slots: &mut [SlotTouch]| {
        hash_each(slots, |s| s.slot.as_slice(), |s, h| s.hashed = h);
    };
    let hash_accounts = |accounts: &mut [AccountTouch]| {
        hash_each(accounts, |a| a.address.as_slice(), |a, h| a.hashed = h);
        for a in accounts {
            if a.slots.len() > PARALLEL_HASH_MIN {
                a.slots.par_chunks_mut(32).for_each(hash_slots);
                a.slots.par_sort_unstable_by_key(|x| x.hashed);
            } else {
                hash_slots(&mut a.slots);
                a.slots.sort_unstable_by_key(|x| x.hashed);
            }
        }
    };
    if keys > PARALLEL_HASH_MIN {
        accounts.par_chunks_mut(8).for_each(hash_accounts);
    } else {
        hash_accounts(&mut accounts);
    }
    accounts.sort_unstable_by_key(|x| x.hashed);
    (accounts, keys as u64)
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
                let value = w.leaf_value_with(|out| encode_storage_value(&v, out));
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

    fn weight(&self) -> usize {
        1 + self.slots.len()
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
                // Slots written to zero may stay (a wiped account's); a
                // value under no account is refused, not dropped.
                for touched in &self.slots {
                    if w.read_storage(&self.address, &touched.slot)?
                        .is_some_and(|value| !value.is_zero())
                    {
                        return Err(CommitmentError::StorageWithoutAccount {
                            address: self.address,
                            slot: touched.slot,
                        });
                    }
                }
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
            let value = w.account_leaf_value(&acct, &storage_root);
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
