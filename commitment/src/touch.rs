//! The keys a block touched, hashed, sorted and grouped per account.

use std::collections::HashMap;

use alloy_primitives::{Address, B256, keccak256};

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
