//! A trace block as a block access list: its `reads` are what the block
//! reads, its `writes` the post-state — exactly what an EIP-7928 list
//! carries, so `strata replay --prefetch` can use one per block.

use std::collections::BTreeSet;

use alloy_primitives::{Address, B256};
use strata_storage::{AccountAccess, BlockAccessList};

use crate::TraceBlock;

impl TraceBlock {
    /// The block's access list: every account it reads or writes, in
    /// address order, with the slots it only reads, the slots it writes
    /// (with their values after the block), and its balance, nonce and
    /// code after the block where the block changes them.
    pub fn access_list(&self) -> BlockAccessList {
        let addresses: BTreeSet<&Address> = self.reads.keys().chain(self.writes.keys()).collect();
        let accounts = addresses
            .into_iter()
            .map(|address| {
                let read = self.reads.get(address);
                let write = self.writes.get(address);
                let written: BTreeSet<&B256> = write
                    .map(|w| w.storage.keys().collect())
                    .unwrap_or_default();
                AccountAccess {
                    address: *address,
                    storage_reads: read
                        .map(|r| {
                            r.storage
                                .keys()
                                .filter(|slot| !written.contains(slot))
                                .copied()
                                .collect()
                        })
                        .unwrap_or_default(),
                    storage_changes: write
                        .map(|w| w.storage.iter().map(|(s, v)| (*s, *v)).collect())
                        .unwrap_or_default(),
                    balance: write.and_then(|w| w.balance),
                    nonce: write.and_then(|w| w.nonce),
                    code: write.and_then(|w| w.code.clone()).map(|code| code.0),
                    destroyed: write.is_some_and(|w| w.deleted),
                }
            })
            .collect();
        BlockAccessList { accounts }
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Bytes, U256};

    use super::*;
    use crate::{AccountRead, AccountWrite};

    #[test]
    fn reads_and_writes_become_one_entry_per_account() {
        let (a, b) = (Address::with_last_byte(1), Address::with_last_byte(2));
        let mut block = TraceBlock {
            number: 3,
            ..TraceBlock::default()
        };
        block.reads.insert(
            a,
            AccountRead {
                storage: [
                    (B256::with_last_byte(1), U256::from(1)),
                    (B256::with_last_byte(2), U256::ZERO),
                ]
                .into(),
                ..AccountRead::default()
            },
        );
        block.writes.insert(
            a,
            AccountWrite {
                balance: Some(U256::from(9)),
                storage: [(B256::with_last_byte(2), U256::from(5))].into(),
                ..AccountWrite::default()
            },
        );
        block.writes.insert(
            b,
            AccountWrite {
                deleted: true,
                code: Some(Bytes::from_static(&[1])),
                ..AccountWrite::default()
            },
        );
        let list = block.access_list();
        assert_eq!(list.accounts.len(), 2);
        let first = &list.accounts[0];
        assert_eq!(first.address, a);
        assert_eq!(first.storage_reads, vec![B256::with_last_byte(1)]);
        assert_eq!(
            first.storage_changes,
            vec![(B256::with_last_byte(2), U256::from(5))]
        );
        assert_eq!(first.balance, Some(U256::from(9)));
        let second = &list.accounts[1];
        assert!(second.destroyed);
        assert_eq!(second.code.as_deref(), Some(&[1u8][..]));
    }
}
