//! EIP-7928's block access list, built from what execution did and checked
//! against the block: every account the block touched, each slot it read,
//! and each change it made with the index of the step that made it (0 for
//! the system calls before the transactions, `i + 1` for transaction `i`,
//! one past the last transaction for the system calls, withdrawals and
//! rewards after them).
//!
//! [`RecordingDb`] sits between alloy-evm's block executor and either state
//! path's database and hands every commit to revm's list builder; the list
//! it builds is then checked by [`check_access_list`].

use alloy_eip7928::constants::ITEM_COST;
use alloy_eip7928::{
    BlockAccessList, compute_block_access_list_hash, first_bal_divergence, total_bal_items,
    validate_block_access_list,
};
use alloy_evm::block::BalIndexedDatabase;
use alloy_primitives::{Address, B256, U256};
use revm::bytecode::Bytecode;
use revm::database_interface::{Database, DatabaseCommit};
use revm::primitives::AddressMap;
use revm::state::bal::{Bal, BlockAccessIndex};
use revm::state::{Account, AccountInfo};

use crate::error::InvalidBlock;

/// A database that builds the block's access list from its commits (when
/// built with one), passing every read and commit to `inner`.
#[derive(Debug)]
pub(crate) struct RecordingDb<DB> {
    inner: DB,
    list: Option<Bal>,
    index: BlockAccessIndex,
}

impl<DB> RecordingDb<DB> {
    /// `inner`, recording the access list when `record` (from Amsterdam).
    pub(crate) fn new(inner: DB, record: bool) -> Self {
        Self {
            inner,
            list: record.then(Bal::new),
            index: BlockAccessIndex::new(0),
        }
    }

    /// The database under the recording.
    pub(crate) fn inner_mut(&mut self) -> &mut DB {
        &mut self.inner
    }

    /// The list built, in the canonical order (by address, then slot and
    /// index); `None` when not recording.
    pub(crate) fn take_list(&mut self) -> Option<BlockAccessList> {
        self.list.take().map(|list| {
            let mut list = list.into_alloy_bal();
            list.sort_by_key(|account| account.address);
            list
        })
    }
}

impl<DB: Database> Database for RecordingDb<DB> {
    type Error = DB::Error;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        self.inner.basic(address)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        self.inner.code_by_hash(code_hash)
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, Self::Error> {
        self.inner.storage(address, index)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, Self::Error> {
        self.inner.block_hash(number)
    }
}

impl<DB: DatabaseCommit> DatabaseCommit for RecordingDb<DB> {
    fn commit(&mut self, changes: AddressMap<Account>) {
        if let Some(list) = &mut self.list {
            for (address, account) in &changes {
                list.update_account(self.index, *address, account);
            }
        }
        self.inner.commit(changes);
    }
}

impl<DB: Database + std::fmt::Debug> BalIndexedDatabase for RecordingDb<DB> {
    fn set_bal_index(&mut self, index: u64) {
        self.index = BlockAccessIndex::new(index);
    }

    fn bump_bal_index(&mut self) {
        self.index = BlockAccessIndex::new(self.index.get() + 1);
    }
}

/// Checks the list execution `built` against the header's
/// `blockAccessListHash` and against the list that came with the block
/// (`given`, for a block of `transactions`), naming the first difference.
pub(crate) fn check_access_list(
    header_hash: Option<B256>,
    built: &BlockAccessList,
    given: Option<&BlockAccessList>,
    transactions: usize,
    gas_limit: u64,
) -> Result<(), InvalidBlock> {
    // EIP-7928: the list's items (each account, each slot it changes or
    // reads) cost ITEM_COST gas each, within the block's gas limit.
    let items = total_bal_items(built);
    let most = gas_limit / ITEM_COST as u64;
    if items > most {
        return Err(InvalidBlock::AccessListTooLarge { items, most });
    }
    if let Some(given) = given {
        validate_block_access_list(given, transactions)
            .map_err(|error| InvalidBlock::AccessListMalformed(error.to_string()))?;
        let divergence = first_bal_divergence(given, built);
        if let Some(first) = divergence.first_diff {
            return Err(InvalidBlock::AccessListDiffers {
                difference: format!("given against executed: {first}"),
            });
        }
    }
    let executed = compute_block_access_list_hash(built);
    match header_hash {
        Some(header) if header == executed => Ok(()),
        header => Err(InvalidBlock::AccessListHash {
            header: header.unwrap_or_default(),
            executed,
        }),
    }
}

/// The store's warmup list from an EIP-7928 list: every account and slot
/// it names, each changed field with its value after the block (the last
/// change), for [`strata_storage::BlockWriter::prefetch`].
pub fn prefetch_list(list: &BlockAccessList) -> strata_storage::BlockAccessList {
    let accounts = list
        .iter()
        .map(|account| strata_storage::AccountAccess {
            address: account.address,
            storage_reads: account
                .storage_reads
                .iter()
                .map(|slot| B256::from(*slot))
                .collect(),
            storage_changes: account
                .storage_changes
                .iter()
                .filter_map(|slot| {
                    let last = slot.changes.last()?;
                    Some((B256::from(slot.slot), last.new_value))
                })
                .collect(),
            balance: account.balance_changes.last().map(|c| c.post_balance),
            nonce: account.nonce_changes.last().map(|c| c.new_nonce),
            code: account.code_changes.last().map(|c| c.new_code.0.clone()),
            destroyed: false,
        })
        .collect();
    strata_storage::BlockAccessList { accounts }
}
