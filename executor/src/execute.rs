//! One block executed over the store: checked, run by alloy-evm's
//! `EthBlockExecutor` over a revm `State` that reads strata's snapshot,
//! checked again against its header, and committed as one strata block with
//! the header's state root expected. A block refused by any check leaves
//! nothing behind.

use std::time::{Duration, Instant};

use alloy_consensus::transaction::{Recovered, SignerRecoverable};
use alloy_consensus::{Header, TxEnvelope, TxReceipt, proofs::calculate_receipt_root};
use alloy_evm::block::{
    BlockExecutionError, BlockExecutor, BlockExecutorFactory, BlockValidationError,
};
use alloy_evm::eth::dao_fork::{DAO_HARDFORK_ACCOUNTS, DAO_HARDFORK_BENEFICIARY};
use alloy_evm::eth::receipt_builder::AlloyReceiptBuilder;
use alloy_evm::eth::{EthBlockExecutionCtx, EthBlockExecutorFactory, EthEvmFactory};
use alloy_evm::{EvmEnv, EvmFactory};
use alloy_hardforks::{EthereumHardfork, EthereumHardforks, ForkCondition};
use alloy_primitives::{B256, Bloom, KECCAK256_EMPTY};
use alloy_trie::EMPTY_ROOT_HASH;
use revm::database::states::bundle_state::BundleRetention;
use revm::database::{BundleState, State};
use strata_storage::revm::{WrapDatabaseRef, apply_bundle_state};
use strata_storage::{Regime, StateDb};

use crate::access::{BlockAccess, RecordingReader, bundle_writes};
use crate::block::DecodedBlock;
use crate::chain_spec::ChainSpec;
use crate::consensus::{
    Ancestor, check_against_parent, check_body_roots, check_header, check_ommers,
};
use crate::error::{ExecError, InvalidBlock};

/// What executing and committing a block took and gave.
#[derive(Clone, Debug)]
pub struct ExecutedBlock {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
    /// The state root after it (the header's, checked).
    pub root: B256,
    /// Gas its transactions used.
    pub gas_used: u64,
    /// How many transactions it holds.
    pub transactions: usize,
    /// Time per phase.
    pub timings: BlockTimings,
    /// What the execution read and wrote, when recorded
    /// ([`ExecuteOptions::record_access`]).
    pub access: Option<BlockAccess>,
}

/// How [`execute_block_with`] runs a block.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecuteOptions {
    /// Record every value the EVM read from the store and every change the
    /// block made ([`ExecutedBlock::access`]); the block then runs the
    /// bundle path, which sees the values before the block.
    pub record_access: bool,
    /// How the EVM reaches the state.
    pub state: StatePath,
}

/// Where a block's time went.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockTimings {
    /// Header and body checks and sender recovery.
    pub checks: Duration,
    /// The EVM: system calls, transactions, rewards, withdrawals.
    pub execution: Duration,
    /// Receipts root, bloom and the state changes written into the block.
    pub apply: Duration,
    /// strata's state root over the block's writes.
    pub root: Duration,
    /// The journal append that makes the block durable.
    pub commit: Duration,
}

/// Executes `block` on top of the store's head, which must be `ancestors[0]`
/// (the block's parent; the later entries are its ancestors, newest first,
/// for the ommer rules), and commits it. Refused blocks write nothing.
pub fn execute_block(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    ancestors: &[Ancestor<'_>],
) -> Result<ExecutedBlock, ExecError> {
    execute_block_with(db, spec, block, ancestors, ExecuteOptions::default())
}

/// [`execute_block`] with options (recording what the block read and wrote).
pub fn execute_block_with(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    ancestors: &[Ancestor<'_>],
    options: ExecuteOptions,
) -> Result<ExecutedBlock, ExecError> {
    let header = block.header();
    let number = header.number;
    let invalid = |reason: InvalidBlock| ExecError::Invalid {
        number,
        hash: block.hash,
        reason: Box::new(reason),
    };
    let parent = ancestors
        .first()
        .filter(|parent| parent.hash == header.parent_hash)
        .ok_or_else(|| invalid(InvalidBlock::UnknownParent(header.parent_hash)))?;
    check_store_at(db, parent, number)?;

    let started = Instant::now();
    check_header(spec, header).map_err(invalid)?;
    check_against_parent(spec, header, parent.header).map_err(invalid)?;
    check_body_roots(&block.block).map_err(invalid)?;
    check_ommers(spec, &block.block, ancestors).map_err(invalid)?;
    let transactions = recover_senders(spec, block).map_err(invalid)?;
    let checks = started.elapsed();

    let run = match options.state {
        StatePath::Bundle => via_bundle(db, spec, block, &transactions, options.record_access)?,
        StatePath::Writer if options.record_access => {
            via_bundle(db, spec, block, &transactions, true)?
        }
        StatePath::Writer => crate::via_writer::execute(db, spec, block, &transactions)?,
    };
    let PathRun {
        mut writer,
        outcome,
        execution,
        apply,
        access,
    } = run;
    let started = Instant::now();
    let computed = writer.state_root().map_err(|source| ExecError::Store {
        number,
        source: Box::new(source),
    })?;
    let root = started.elapsed();
    if computed != header.state_root {
        return Err(invalid(InvalidBlock::StateRoot {
            header: header.state_root,
            computed,
        }));
    }
    writer.expect_root(header.state_root);
    let started = Instant::now();
    writer.commit().map_err(|source| ExecError::Store {
        number,
        source: Box::new(source),
    })?;
    let commit = started.elapsed();

    Ok(ExecutedBlock {
        number,
        hash: block.hash,
        root: computed,
        gas_used: outcome.gas_used,
        transactions: transactions.len(),
        timings: BlockTimings {
            checks,
            execution,
            apply,
            root,
            commit,
        },
        access,
    })
}

/// How the EVM reaches strata's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatePath {
    /// The block writer as revm's database: every transaction reads the
    /// block being written and commits its changes into it
    /// (`writer_database`). The default: faster than the bundle path over
    /// the generated mainnet-shaped chain (README, "Importing a chain").
    #[default]
    Writer,
    /// revm's `State` (its cache shared by the block's transactions) over a
    /// reader of the last block; its bundle is written into the block
    /// afterwards with `apply_bundle_state`, as reth does. The path that
    /// records the access (values before the block).
    Bundle,
}

/// What either state path leaves: the block staged in its writer, the
/// EVM's outcome (checked against the header) and the times.
pub(crate) struct PathRun {
    pub(crate) writer: strata_storage::BlockWriter,
    pub(crate) outcome: Outcome,
    pub(crate) execution: std::time::Duration,
    pub(crate) apply: std::time::Duration,
    pub(crate) access: Option<BlockAccess>,
}

/// The block over a revm `State` reading strata, then its bundle applied.
fn via_bundle(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    transactions: &[Recovered<TxEnvelope>],
    record_access: bool,
) -> Result<PathRun, ExecError> {
    let (number, header) = (block.number(), block.header());
    let invalid = |reason: InvalidBlock| ExecError::Invalid {
        number,
        hash: block.hash,
        reason: Box::new(reason),
    };
    let started = Instant::now();
    let mut state = State::builder()
        .with_database(WrapDatabaseRef(RecordingReader::new(
            db.reader(Regime::Exec),
            record_access,
        )))
        .with_bundle_update()
        .build();
    if spec.is_dao_block(number) {
        apply_dao_change(&mut state).map_err(|error| run_error(number, block.hash, error))?;
    }
    let outcome = run_evm(spec, block, transactions, &mut state)
        .map_err(|error| run_error(number, block.hash, error))?;
    state.merge_transitions(BundleRetention::PlainState);
    let bundle = state.take_bundle();
    let execution = started.elapsed();
    let reads = state.database.0.into_reads();
    check_no_storage_collision(db, &bundle)
        .map_err(|reason| ExecError::Unsupported { number, reason })?;
    let access = if record_access {
        let writes = bundle_writes(&bundle, &db.reader(Regime::Exec))
            .map_err(|message| ExecError::Database { number, message })?;
        Some(BlockAccess { reads, writes })
    } else {
        None
    };

    let started = Instant::now();
    check_outcome(spec, header, &outcome).map_err(invalid)?;
    let mut writer = db.begin_block(number).map_err(|source| ExecError::Store {
        number,
        source: Box::new(source),
    })?;
    apply_bundle_state(&mut writer, &bundle).map_err(|error| ExecError::Database {
        number,
        message: error.to_string(),
    })?;
    writer.set_block_hash(block.hash);
    Ok(PathRun {
        writer,
        outcome,
        execution,
        apply: started.elapsed(),
        access,
    })
}

/// A failure of [`run_evm`] as the executor's error for block `number`.
pub(crate) fn run_error(number: u64, hash: B256, error: RunError) -> ExecError {
    match error {
        RunError::Invalid(reason) => ExecError::Invalid {
            number,
            hash,
            reason: Box::new(reason),
        },
        RunError::Database(message) => ExecError::Database { number, message },
    }
}

/// The store must stand at the parent: its last block is the parent's
/// number and its root the parent's state root.
fn check_store_at(db: &StateDb, parent: &Ancestor<'_>, number: u64) -> Result<(), ExecError> {
    let head = db.last_block();
    if head != Some(parent.header.number) || db.root() != parent.header.state_root {
        return Err(ExecError::Database {
            number,
            message: format!(
                "the store is at block {} with root {}, not at the parent {} with root {}",
                head.map_or_else(|| "none".to_string(), |b| b.to_string()),
                db.root(),
                parent.header.number,
                parent.header.state_root
            ),
        });
    }
    Ok(())
}

/// Every transaction with its sender, recovered in parallel on rayon's
/// pool; the first transaction whose signature fails is named. From
/// Homestead on a signature's `s` must be in the lower half (EIP-2);
/// Frontier accepted either.
pub(crate) fn recover_senders(
    spec: &ChainSpec,
    block: &DecodedBlock,
) -> Result<Vec<Recovered<TxEnvelope>>, InvalidBlock> {
    use rayon::prelude::*;
    let homestead = spec.is_homestead_active_at_block(block.number());
    let recovered: Vec<Result<Recovered<TxEnvelope>, InvalidBlock>> = block
        .block
        .body
        .transactions
        .par_iter()
        .enumerate()
        .map(|(index, tx)| {
            let signer = if homestead {
                tx.recover_signer()
            } else {
                tx.recover_signer_unchecked()
            };
            signer
                .map(|signer| Recovered::new_unchecked(tx.clone(), signer))
                .map_err(|_| InvalidBlock::Signature { index })
        })
        .collect();
    recovered.into_iter().collect()
}

/// EIP-7610: no contract may be created where an account already has
/// storage. revm 43 looks at the address's nonce and code only, so over an
/// account with storage and neither (a state mainnet does not hold; a few
/// consensus tests do) it creates the contract as if the address were
/// empty. Such a block is refused as one the EVM cannot execute, never
/// committed on a wrong state: every account without nonce and code that
/// the block gives a nonce or code is checked for storage before the block.
fn check_no_storage_collision(db: &StateDb, bundle: &BundleState) -> Result<(), String> {
    let reader = db.reader(Regime::Exec);
    for (address, account) in &bundle.state {
        let blank =
            |info: &revm::state::AccountInfo| info.nonce == 0 && info.code_hash == KECCAK256_EMPTY;
        let (Some(before), Some(after)) = (&account.original_info, &account.info) else {
            continue;
        };
        if !blank(before) || blank(after) {
            continue;
        }
        let proof = reader.proof(address, &[]).map_err(|e| e.to_string())?;
        if proof.storage_root != EMPTY_ROOT_HASH {
            return Err(format!(
                "{address} has storage but no code and nonce 0, and the block creates a contract \
                 there: EIP-7610 makes that a collision, which revm 43 does not detect"
            ));
        }
    }
    Ok(())
}

/// What the EVM gave for a block, before it is written.
pub(crate) struct Outcome {
    pub(crate) gas_used: u64,
    blob_gas_used: u64,
    receipts: Vec<alloy_consensus::ReceiptEnvelope>,
    requests_hash: B256,
}

pub(crate) enum RunError {
    Invalid(InvalidBlock),
    Database(String),
}

/// Runs the block's system calls, transactions, rewards and withdrawals
/// through alloy-evm's Ethereum block executor over `db`. At the DAO
/// block, the caller has made the irregular change already
/// ([`apply_dao_change`]): alloy-evm would make it after the transactions.
pub(crate) fn run_evm<DB>(
    spec: &ChainSpec,
    block: &DecodedBlock,
    transactions: &[Recovered<TxEnvelope>],
    db: DB,
) -> Result<Outcome, RunError>
where
    DB: alloy_evm::block::StateDB + std::fmt::Debug,
{
    let header = block.header();
    let env = EvmEnv::for_eth_block(
        header,
        spec,
        spec.chain_id,
        spec.blob_params_at(header.timestamp),
    );
    let executor_spec = if spec.is_dao_block(header.number) {
        spec.with_fork(EthereumHardfork::Dao, ForkCondition::Never)
    } else {
        spec.clone()
    };
    let factory = EthBlockExecutorFactory::new(
        AlloyReceiptBuilder::default(),
        executor_spec,
        EthEvmFactory::default(),
    );
    let evm = factory.evm_factory().create_evm(db, env);
    let ctx = EthBlockExecutionCtx {
        parent_hash: header.parent_hash,
        parent_beacon_block_root: header.parent_beacon_block_root,
        ommers: &block.block.body.ommers,
        withdrawals: block
            .block
            .body
            .withdrawals
            .as_ref()
            .map(|w| std::borrow::Cow::Borrowed(w.as_slice())),
        extra_data: header.extra_data.clone(),
        tx_count_hint: Some(transactions.len()),
        slot_number: None,
    };
    let mut executor = factory.create_executor(evm, ctx);
    executor
        .apply_pre_execution_changes()
        .map_err(|error| block_error(None, error))?;
    for (index, tx) in transactions.iter().enumerate() {
        executor
            .execute_transaction(tx)
            .map_err(|error| block_error(Some(index), error))?;
    }
    let (_, result) = executor
        .finish()
        .map_err(|error| block_error(None, error))?;
    Ok(Outcome {
        gas_used: result.gas_used,
        blob_gas_used: result.blob_gas_used,
        receipts: result.receipts,
        requests_hash: result.requests.requests_hash(),
    })
}

/// Moves the balances of the DAO's accounts to its refund contract, before
/// the block's transactions (as geth and the consensus tests have it). The
/// drained accounts stay in the state, empty (before Spurious Dragon an
/// empty account is not removed), so the change goes through revm's cache
/// accounts rather than a commit, which would clear them as EIP-161 does.
pub(crate) fn apply_dao_change<DB>(state: &mut State<DB>) -> Result<(), RunError>
where
    DB: revm::Database,
{
    let failed = |_| RunError::Database("the DAO change could not read its accounts".to_string());
    let mut drained: u128 = 0;
    let mut transitions = Vec::with_capacity(DAO_HARDFORK_ACCOUNTS.len() + 1);
    for address in DAO_HARDFORK_ACCOUNTS {
        let (balance, transition) = state
            .load_cache_account(address)
            .map_err(failed)?
            .drain_balance();
        drained = drained.saturating_add(balance);
        transitions.push((address, transition.map_storage(|_| None)));
    }
    if let Some(transition) = state
        .load_cache_account(DAO_HARDFORK_BENEFICIARY)
        .map_err(failed)?
        .increment_balance(drained)
    {
        transitions.push((DAO_HARDFORK_BENEFICIARY, transition.map_storage(|_| None)));
    }
    state.apply_transition(transitions);
    Ok(())
}

/// Sorts alloy-evm's error into a refused block (a transaction or a
/// block-level rule) or a failure of the database under the EVM.
fn block_error(index: Option<usize>, error: BlockExecutionError) -> RunError {
    match (&error, index) {
        (
            BlockExecutionError::Validation(BlockValidationError::InvalidTx { error, .. }),
            Some(index),
        ) => RunError::Invalid(InvalidBlock::Transaction {
            index,
            reason: error.to_string(),
        }),
        (
            BlockExecutionError::Validation(
                BlockValidationError::TransactionGasLimitMoreThanAvailableBlockGas { .. },
            ),
            Some(index),
        ) => RunError::Invalid(InvalidBlock::Transaction {
            index,
            reason: error.to_string(),
        }),
        (BlockExecutionError::Validation(BlockValidationError::EVM { .. }), _)
        | (BlockExecutionError::Internal(_), _) => RunError::Database(error.to_string()),
        (BlockExecutionError::Validation(_), _) => {
            RunError::Invalid(InvalidBlock::Execution(error.to_string()))
        }
    }
}

/// Gas used, blob gas used, receipts root (from Byzantium, whose receipts
/// carry a status instead of an intermediate state root), logs bloom and
/// requests hash against the header.
pub(crate) fn check_outcome(
    spec: &ChainSpec,
    header: &Header,
    outcome: &Outcome,
) -> Result<(), InvalidBlock> {
    if outcome.gas_used != header.gas_used {
        return Err(InvalidBlock::GasUsed {
            header: header.gas_used,
            executed: outcome.gas_used,
        });
    }
    if let Some(used) = header.blob_gas_used
        && used != outcome.blob_gas_used
    {
        return Err(InvalidBlock::BlobGasUsed {
            expected: outcome.blob_gas_used,
            got: used,
        });
    }
    if spec.is_byzantium_active_at_block(header.number) {
        let executed = calculate_receipt_root(&outcome.receipts);
        if executed != header.receipts_root {
            return Err(InvalidBlock::ReceiptsRoot {
                header: header.receipts_root,
                executed,
            });
        }
    }
    let bloom = outcome
        .receipts
        .iter()
        .fold(Bloom::ZERO, |bloom, receipt| bloom | receipt.bloom());
    if bloom != header.logs_bloom {
        return Err(InvalidBlock::LogsBloom {
            header: Box::new(header.logs_bloom),
            executed: Box::new(bloom),
        });
    }
    if spec.is_prague_active_at_timestamp(header.timestamp)
        && header.requests_hash != Some(outcome.requests_hash)
    {
        return Err(InvalidBlock::RequestsHash {
            header: header.requests_hash,
            executed: outcome.requests_hash,
        });
    }
    Ok(())
}
