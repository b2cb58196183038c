//! The in-memory baseline: the same blocks executed by the same EVM over
//! revm's `CacheDB`, preloaded with the chain's state, whose reads cost a
//! hash-map lookup — what execution costs with a state layer that is free.
//! No state root is computed; gas used, receipts and bloom are checked
//! against each header, so the baseline runs the blocks strata runs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use alloy_primitives::{B256, U256};
use revm::bytecode::Bytecode;
use revm::database::in_memory_db::DbAccount;
use revm::database::states::bundle_state::BundleRetention;
use revm::database::{BundleState, CacheDB, EmptyDB, OriginalValuesKnown, State};
use revm::state::AccountInfo;
use strata_storage::genesis::GenesisAlloc;

use crate::ChainSpec;
use crate::GenesisBlock;
use crate::block::DecodedBlock;
use crate::error::{ExecError, InvalidBlock};
use crate::evm_run::{apply_dao_change, check_outcome, run_error, run_evm};
use crate::senders::recover_now;

/// A chain's state held in revm's in-memory database.
#[derive(Debug)]
pub struct MemoryChain {
    db: CacheDB<EmptyDB>,
    spec: ChainSpec,
    /// Total difficulty up to the last block (for a merge by difficulty).
    total_difficulty: U256,
}

/// What one block took over the in-memory database.
#[derive(Clone, Copy, Debug)]
pub struct MemoryBlock {
    /// Gas its transactions used.
    pub gas_used: u64,
    /// The EVM over the in-memory database (as `BlockTimings::execution`).
    pub execution: Duration,
    /// Writing its changes into the in-memory database.
    pub apply: Duration,
}

impl MemoryChain {
    /// The genesis state in memory, with the genesis hash for BLOCKHASH.
    pub fn new(genesis: &GenesisBlock) -> Self {
        let hashes = BTreeMap::from([(genesis.header.number, genesis.hash)]);
        Self::with_state(
            &genesis.alloc,
            genesis.spec.clone(),
            &hashes,
            genesis.header.difficulty,
        )
    }

    /// The state after some block of a chain with `spec`'s rules (e.g. a
    /// state dump of it), in memory: `block_hashes` (number → hash) are the
    /// hashes BLOCKHASH serves for the blocks up to it, `total_difficulty`
    /// the chain's up to it (for a merge by difficulty). The next block
    /// executed must be the child of that block.
    pub fn with_state(
        alloc: &GenesisAlloc,
        spec: ChainSpec,
        block_hashes: &BTreeMap<u64, B256>,
        total_difficulty: U256,
    ) -> Self {
        let mut db = CacheDB::new(EmptyDB::default());
        for (address, account) in alloc {
            let code = Bytecode::new_raw(account.code.clone());
            let info = AccountInfo::new(account.balance, account.nonce, code.hash_slow(), code);
            db.insert_account_info(*address, info);
            let stored = db.cache.accounts.get_mut(address).expect("just inserted");
            for (slot, value) in &account.storage {
                stored.storage.insert((*slot).into(), *value);
            }
        }
        for (number, hash) in block_hashes {
            db.cache.block_hashes.insert(U256::from(*number), *hash);
        }
        Self {
            db,
            spec,
            total_difficulty,
        }
    }

    /// Executes `block` on top of the state, checks gas, receipts and bloom
    /// against its header, and keeps its changes. The blocks must come in
    /// order (each the child of the last).
    pub fn execute(&mut self, block: &DecodedBlock) -> Result<MemoryBlock, ExecError> {
        let number = block.number();
        let invalid = |reason: InvalidBlock| ExecError::Invalid {
            number,
            hash: block.hash,
            reason: Box::new(reason),
        };
        if let Some(ttd) = self.spec.pending_terminal_total_difficulty()
            && self.total_difficulty >= ttd
        {
            self.spec = self.spec.with_merge_at(number);
        }
        let transactions = recover_now(&self.spec, block).map_err(invalid)?;
        let started = Instant::now();
        let mut state = State::builder()
            .with_database(&mut self.db)
            .with_bundle_update()
            .build();
        if self.spec.is_dao_block(number) {
            apply_dao_change(&mut state).map_err(|error| run_error(number, block.hash, error))?;
        }
        let outcome = run_evm(&self.spec, block, &transactions, &mut state, None)
            .map_err(|error| run_error(number, block.hash, error))?;
        state.merge_transitions(BundleRetention::PlainState);
        let bundle = state.take_bundle();
        let execution = started.elapsed();
        check_outcome(&self.spec, block, &outcome).map_err(invalid)?;
        let started = Instant::now();
        apply_to_memory(&mut self.db, &bundle);
        self.db
            .cache
            .block_hashes
            .insert(U256::from(number), block.hash);
        self.total_difficulty += block.header().difficulty;
        Ok(MemoryBlock {
            gas_used: outcome.gas_used,
            execution,
            apply: started.elapsed(),
        })
    }

    /// The hash `BLOCKHASH` serves for `number`, if the chain has it.
    pub fn block_hash(&self, number: u64) -> Option<B256> {
        self.db.cache.block_hashes.get(&U256::from(number)).copied()
    }
}

/// Writes a block's bundle into the in-memory database: wiped storage
/// cleared, removed accounts marked absent, the rest updated slot by slot.
fn apply_to_memory(db: &mut CacheDB<EmptyDB>, bundle: &BundleState) {
    let changes = bundle.to_plain_state(OriginalValuesKnown::Yes);
    for (hash, code) in changes.contracts {
        db.cache.contracts.insert(hash, code);
    }
    for (address, info) in changes.accounts {
        match info {
            Some(info) => db.insert_account_info(address, info),
            None => {
                db.cache
                    .accounts
                    .insert(address, DbAccount::new_not_existing());
            }
        }
    }
    for change in changes.storage {
        let account = db.cache.accounts.entry(change.address).or_default();
        if change.wipe_storage {
            account.storage.clear();
        }
        for (slot, value) in change.storage {
            account.storage.insert(slot, value);
        }
    }
}
