//! What both state paths share: alloy-evm's Ethereum block executor run
//! over a revm database ([`run_evm`]), the DAO block's irregular change,
//! the outcome checked against the header, and what a path hands back to
//! [`crate::execute`] ([`PathRun`]).

use alloy_consensus::Transaction as _;
use alloy_consensus::transaction::Recovered;
use alloy_consensus::{Header, TxEnvelope, TxReceipt, proofs::calculate_receipt_root};
use alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS;
use alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS;
use alloy_evm::block::{
    BalIndexedDatabase, BlockExecutionError, BlockExecutor, BlockExecutorFactory,
    BlockValidationError,
};
use alloy_evm::eth::dao_fork::{DAO_HARDFORK_ACCOUNTS, DAO_HARDFORK_BENEFICIARY};
use alloy_evm::eth::receipt_builder::AlloyReceiptBuilder;
use alloy_evm::eth::{EthBlockExecutionCtx, EthBlockExecutor, EthBlockExecutorFactory};
use alloy_evm::{Evm, EvmFactory};
use alloy_hardforks::{EthereumHardfork, EthereumHardforks, ForkCondition};
use alloy_primitives::{B256, Bloom, KECCAK256_EMPTY};
use revm::context::TxEnv;
use revm::context_interface::{Block as _, Cfg as _};
use revm::database::State;
use revm::primitives::hardfork::SpecId;
use strata_chainspec::StrataEvmFactory;
use strata_chainspec::{UncountedStateGas, uncount_state_gas};

use crate::ChainSpec;
use crate::access::BlockAccess;
use crate::block::DecodedBlock;
use crate::block_access_list::{RecordingDb, check_access_list};
use crate::eip7610::StorageCollisions;
use crate::error::{ExecError, InvalidBlock};

/// What either state path leaves: the block staged in its writer, the
/// How a block's transactions ran ahead of their turn
/// ([`ExecuteOptions::transaction_workers`](crate::ExecuteOptions)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransactionsAhead {
    /// Threads that ran transactions ahead.
    pub workers: usize,
    /// Transactions whose run ahead was committed: every value it read
    /// held in its turn.
    pub committed: usize,
    /// Transactions executed again in their turn: a value read ahead no
    /// longer held, the run ahead failed, or the block's gas left was
    /// checked on the serial path.
    pub executed_again: usize,
}

/// EVM's outcome (checked against the header) and the times.
pub(crate) struct PathRun {
    pub(crate) writer: strata_storage::BlockWriter,
    pub(crate) outcome: Outcome,
    pub(crate) execution: std::time::Duration,
    pub(crate) apply: std::time::Duration,
    pub(crate) access: Option<BlockAccess>,
    /// How the transactions ran ahead of their turn, when they did.
    pub(crate) ahead: Option<TransactionsAhead>,
}

/// Gives `writer` what the store keeps beside the block's state: its hash
/// (BLOCKHASH and EIP-2935 read it back) and its header (what a call at
/// this block runs with).
pub(crate) fn label_block(writer: &mut strata_storage::BlockWriter, block: &DecodedBlock) {
    writer.set_block_hash(block.hash);
    writer.set_block_header(block.header_rlp());
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

/// What the EVM gave for a block, before it is written.
pub(crate) struct Outcome {
    pub(crate) gas_used: u64,
    blob_gas_used: u64,
    receipts: Vec<alloy_consensus::ReceiptEnvelope>,
    requests_hash: B256,
    /// From Amsterdam, the access list execution built (EIP-7928).
    pub(crate) access_list: Option<alloy_eip7928::BlockAccessList>,
}

pub(crate) enum RunError {
    Invalid(InvalidBlock),
    Database(String),
}

/// Runs the block's system calls, transactions, rewards and withdrawals
/// through alloy-evm's Ethereum block executor over `db`. At the DAO
/// block, the caller has made the irregular change already
/// ([`apply_dao_change`]): alloy-evm would make it after the transactions.
/// With `collisions`, every create is watched for EIP-7610's storage rule
/// ([`StorageCollisions`]); without, revm's uninspected loop runs. From
/// Amsterdam, the block's access list is built from every commit
/// ([`RecordingDb`]).
pub(crate) fn run_evm<DB>(
    spec: &ChainSpec,
    block: &DecodedBlock,
    transactions: &[Recovered<TxEnvelope>],
    db: DB,
    collisions: Option<StorageCollisions>,
) -> Result<Outcome, RunError>
where
    DB: alloy_evm::block::StateDB + std::fmt::Debug,
{
    let header = block.header();
    let env = crate::evm_env(spec, header);
    let db = RecordingDb::new(db, spec.is_amsterdam_active_at_timestamp(header.timestamp));
    let factory = executor_factory(spec, header);
    let ctx = || execution_ctx(block, transactions.len());
    match collisions {
        None => {
            let evm = factory.evm_factory().create_evm(db, env);
            let mut executor = factory.create_executor(evm, ctx());
            drive_steps(spec, header, transactions, &mut executor)?;
            finish(executor)
        }
        Some(watcher) => {
            let evm = factory
                .evm_factory()
                .create_evm_with_inspector(db, env, watcher);
            let mut executor = factory.create_executor(evm, ctx());
            drive_steps(spec, header, transactions, &mut executor)?;
            if let Some(failed) = executor.evm().inspector().failed() {
                return Err(RunError::Database(failed.to_owned()));
            }
            finish(executor)
        }
    }
}

/// The block executor factory alloy-evm runs `header`'s block with: the
/// chain's rules, without the DAO fork at the DAO block (the caller makes
/// that change, see [`apply_dao_change`]) and, from Amsterdam, without
/// alloy-evm 0.39's one use of Amsterdam in the executor's spec: the
/// EIP-8282 builder request calls after the transactions, of a later
/// devnet than the bal@v5.7.0 release strata follows (the EVM's rules come
/// from the environment, which keeps Amsterdam).
pub(crate) fn executor_factory(
    spec: &ChainSpec,
    header: &Header,
) -> EthBlockExecutorFactory<AlloyReceiptBuilder, ChainSpec, StrataEvmFactory> {
    let mut executor_spec = if spec.is_dao_block(header.number) {
        spec.with_fork(EthereumHardfork::Dao, ForkCondition::Never)
    } else {
        spec.clone()
    };
    if spec.is_amsterdam_active_at_timestamp(header.timestamp) {
        executor_spec = executor_spec.with_fork(EthereumHardfork::Amsterdam, ForkCondition::Never);
    }
    EthBlockExecutorFactory::new(
        AlloyReceiptBuilder::default(),
        executor_spec,
        StrataEvmFactory,
    )
}

/// What alloy-evm's executor needs of `block` beyond its header's
/// environment, for a block of `transactions` transactions.
pub(crate) fn execution_ctx(block: &DecodedBlock, transactions: usize) -> EthBlockExecutionCtx<'_> {
    let header = block.header();
    EthBlockExecutionCtx {
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
        tx_count_hint: Some(transactions),
        slot_number: header.slot_number,
    }
}

/// The pre-execution changes, the transactions, and (from Prague) the
/// request contracts' check, through `executor`; each step's commits go
/// into the access list at its index (EIP-7928), the changes after the
/// transactions at one past the last.
fn drive_steps<E, DB>(
    spec: &ChainSpec,
    header: &Header,
    transactions: &[Recovered<TxEnvelope>],
    executor: &mut EthBlockExecutor<'_, E, &ChainSpec, &AlloyReceiptBuilder>,
) -> Result<(), RunError>
where
    E: Evm<DB = RecordingDb<DB>, Spec = SpecId, Tx = TxEnv> + UncountedStateGas,
    DB: alloy_evm::block::StateDB,
{
    // Amsterdam's state-gas capacity is checked below, as the release has it.
    executor.skip_state_gas_capacity_check = true;
    executor
        .apply_pre_execution_changes()
        .map_err(|error| block_error(None, error))?;
    for (index, tx) in transactions.iter().enumerate() {
        state_gas_capacity(executor, tx).map_err(|error| block_error(Some(index), error))?;
        executor
            .execute_transaction_with_index(tx, index)
            .map_err(|error| block_error(Some(index), error))?;
        let uncounted = executor.evm().uncounted_state_gas();
        uncount_state_gas(executor, uncounted);
    }
    after_transactions(
        spec,
        header,
        transactions.len(),
        executor.evm_mut().db_mut(),
    )
}

/// EIP-8037's per-transaction check of the block's state gas, as the
/// bal@v5.7.0 release has it: what the transaction could add to the
/// block's state gas — its gas limit less its intrinsic regular gas — must
/// fit in what the block has left (alloy-evm 0.39 checks the whole gas
/// limit, a later devnet's rule). Nothing before Amsterdam.
pub(crate) fn state_gas_capacity<E>(
    executor: &EthBlockExecutor<'_, E, &ChainSpec, &AlloyReceiptBuilder>,
    tx: &Recovered<TxEnvelope>,
) -> Result<(), BlockExecutionError>
where
    E: Evm<Spec = SpecId>,
{
    let cfg = executor.evm.cfg_env();
    if !cfg.enable_amsterdam_eip8037 {
        return Ok(());
    }
    let (accounts, slots) = tx.access_list().map_or((0, 0), |list| {
        let slots: usize = list.iter().map(|item| item.storage_keys.len()).sum();
        (list.len() as u64, slots as u64)
    });
    let authorizations = tx.authorization_list().map_or(0, |list| list.len() as u64);
    let intrinsic_regular = cfg
        .gas_params()
        .initial_tx_gas(
            tx.input(),
            tx.kind().is_create(),
            accounts,
            slots,
            authorizations,
            None,
        )
        .initial_regular_gas();
    let available = executor
        .evm
        .block()
        .gas_limit()
        .saturating_sub(executor.block_state_gas_used);
    if tx.gas_limit().saturating_sub(intrinsic_regular) > available {
        return Err(
            BlockValidationError::TransactionGasLimitMoreThanAvailableBlockGas {
                transaction_gas_limit: tx.gas_limit(),
                block_available_gas: available,
            }
            .into(),
        );
    }
    Ok(())
}

/// What follows a block's `transactions` transactions before alloy-evm's
/// `finish`: the list's index moves one past the last transaction, and
/// from Prague the request contracts must have code.
pub(crate) fn after_transactions<DB>(
    spec: &ChainSpec,
    header: &Header,
    transactions: usize,
    db: &mut RecordingDb<DB>,
) -> Result<(), RunError>
where
    DB: alloy_evm::block::StateDB + std::fmt::Debug,
{
    db.set_bal_index(transactions as u64 + 1);
    if spec.is_prague_active_at_timestamp(header.timestamp) {
        check_request_contracts(db)?;
    }
    Ok(())
}

/// The post-execution changes (system calls, rewards, withdrawals) and
/// what the block gave.
pub(crate) fn finish<E, DB>(executor: E) -> Result<Outcome, RunError>
where
    E: BlockExecutor<
            Transaction = TxEnvelope,
            Receipt = alloy_consensus::ReceiptEnvelope,
            Evm: Evm<DB = RecordingDb<DB>>,
        >,
    DB: alloy_evm::block::StateDB,
{
    let (mut evm, result) = executor
        .finish()
        .map_err(|error| block_error(None, error))?;
    Ok(Outcome {
        gas_used: result.gas_used,
        blob_gas_used: result.blob_gas_used,
        receipts: result.receipts,
        requests_hash: result.requests.requests_hash(),
        access_list: evm.db_mut().take_list(),
    })
}

/// EIP-7002 and EIP-7251: from Prague on, a block whose withdrawal-request
/// or consolidation-request contract has no code when its system call runs
/// (after the transactions) is invalid.
pub(crate) fn check_request_contracts<DB>(db: &mut DB) -> Result<(), RunError>
where
    DB: revm::Database,
{
    for address in [
        WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS,
        CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS,
    ] {
        let account = db.basic(address).map_err(|_| {
            RunError::Database(format!("the system contract {address} could not be read"))
        })?;
        let has_code = account.is_some_and(|info| info.code_hash != KECCAK256_EMPTY);
        if !has_code {
            return Err(RunError::Invalid(InvalidBlock::SystemContractEmpty {
                address,
            }));
        }
    }
    Ok(())
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
pub(crate) fn block_error(index: Option<usize>, error: BlockExecutionError) -> RunError {
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
/// carry a status instead of an intermediate state root), logs bloom,
/// requests hash and (from Amsterdam) access list against the block.
pub(crate) fn check_outcome(
    spec: &ChainSpec,
    block: &DecodedBlock,
    outcome: &Outcome,
) -> Result<(), InvalidBlock> {
    let header = block.header();
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
    if let Some(built) = &outcome.access_list {
        check_access_list(
            header.block_access_list_hash,
            built,
            block.access_list.as_deref(),
            block.block.body.transactions.len(),
            header.gas_limit,
        )?;
    }
    Ok(())
}
