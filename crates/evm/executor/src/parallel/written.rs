//! The keys a block's steps have changed so far ([`WrittenKeys`]): a value a
//! transaction run ahead read of any other key is the state before the
//! block, which it read too.

use std::collections::HashSet;

use alloy_primitives::{Address, U256};
use revm::state::EvmState;

/// Every account and slot the block's committed steps touched, and the
/// accounts whose storage they may have cleared (created, destroyed, or
/// removed as empty).
#[derive(Debug, Default)]
pub(crate) struct WrittenKeys {
    accounts: HashSet<Address>,
    slots: HashSet<(Address, U256)>,
    storage_cleared: HashSet<Address>,
}

impl WrittenKeys {
    /// Adds what one committed step changed.
    pub(crate) fn record(&mut self, changes: &EvmState) {
        for (address, account) in changes {
            if !account.is_touched() {
                continue;
            }
            self.accounts.insert(*address);
            if account.is_created() || account.is_selfdestructed() || account.is_empty() {
                self.storage_cleared.insert(*address);
            }
            for (slot, _) in account.changed_storage_slots() {
                self.slots.insert((*address, *slot));
            }
        }
    }

    /// Whether `address` may hold another value than before the block.
    pub(crate) fn account(&self, address: &Address) -> bool {
        self.accounts.contains(address)
    }

    /// Whether slot `slot` of `address` may hold another value than before
    /// the block.
    pub(crate) fn slot(&self, address: &Address, slot: &U256) -> bool {
        self.storage_cleared.contains(address) || self.slots.contains(&(*address, *slot))
    }
}
