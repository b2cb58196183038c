//! An Amsterdam block's transactions run ahead of their turn on threads of
//! their own, from the block's access list (EIP-7928), and committed in
//! order.
//!
//! The list gives every value each step of the block wrote, at the step's
//! index, so the state transaction `i` starts from is known before the
//! transactions before it have run: the state before the block with the
//! list's changes of the steps before `i + 1` laid over it
//! ([`ListOverlay`]). Workers take the transactions in order and run each
//! over that state, recording what it read. The block's thread then
//! commits them in their turn through alloy-evm's executor, as the serial
//! path does, after checking that every value a transaction read is the
//! value the block as written so far holds — each read the list gave, and
//! each read of a key an earlier step changed ([`WrittenKeys`]); any other
//! read is the state before the block, which the transaction read too. A
//! transaction whose reads no longer hold, whose run failed, or that does
//! not fit the block's gas is executed again in its turn over the block as
//! written. The block's result is therefore the serial one whatever the
//! list says; a wrong list costs only the transactions executed again, and
//! is refused by the list check that follows, as on the serial path.

mod overlay;
mod written;

pub(crate) use written::WrittenKeys;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use strata_chainspec::UncountedStateGas;

use alloy_consensus::transaction::Recovered;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eip7928::BlockAccessList;
use alloy_evm::block::{BalIndexedDatabase, BlockExecutor, BlockExecutorFactory};
use alloy_evm::eth::EthTxResult;
use alloy_evm::{Evm, EvmEnv, EvmFactory, FromRecoveredTx};
use revm::context::result::HaltReason;
use revm::context::{Block, TxEnv};
use revm::context_interface::Cfg;
use revm::database_interface::Database;
use revm::state::AccountInfo;
use strata_storage::revm::ReaderDatabase;
use strata_storage::{Regime, StateDb};

use crate::ChainSpec;
use crate::block::DecodedBlock;
use crate::block_access_list::RecordingDb;
use crate::evm_run::TransactionsAhead;
use crate::evm_run::{
    Outcome, RunError, after_transactions, block_error, execution_ctx, executor_factory, finish,
};
use crate::via_writer::CheckedWriter;
use overlay::{ListOverlay, ListView, Reads};

/// One transaction's run ahead: alloy-evm's result and what it read.
struct Ahead {
    output: EthTxResult<HaltReason, alloy_consensus::TxType>,
    reads: Reads,
    /// Its state gas the block counts nowhere (see `UncountedStateGas`).
    uncounted: u64,
}

/// A transaction's index and its run ahead (`None`: the run failed).
type Arrival = (usize, Option<Ahead>);

/// Runs `block`'s steps into `writer`'s database with `workers` threads
/// running its transactions ahead from `list` over the store's head (the
/// block's parent), and commits them in order (see the module's doc).
pub(crate) fn run(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    transactions: &[Recovered<TxEnvelope>],
    list: &BlockAccessList,
    workers: usize,
    writer: &mut CheckedWriter<'_>,
) -> Result<(Outcome, TransactionsAhead), RunError> {
    let env = crate::evm_env(spec, block.header());
    let view = ListView::new(list);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (send, receive) = channel();
    std::thread::scope(|scope| {
        let mut started = 0;
        for _ in 0..workers.min(transactions.len()) {
            let worker = Worker {
                env: env.clone(),
                base: ReaderDatabase(db.reader(Regime::Exec)),
                view: &view,
                transactions,
                next: &next,
                stop: &stop,
                send: send.clone(),
            };
            // A thread that cannot start leaves its share to the others
            // (with none, every transaction runs in its turn).
            if std::thread::Builder::new()
                .name("strata-tx-ahead".into())
                .spawn_scoped(scope, move || worker.run())
                .is_ok()
            {
                started += 1;
            }
        }
        drop(send);
        let result = commit_in_turn(spec, block, env, transactions, writer, &receive);
        stop.store(true, Ordering::Relaxed);
        result.map(|(outcome, mut counts)| {
            counts.workers = started;
            (outcome, counts)
        })
    })
}

/// A thread running transactions ahead: each takes the next transaction
/// not yet taken, until none is left or the block's thread stops.
struct Worker<'a> {
    env: EvmEnv,
    base: ReaderDatabase,
    view: &'a ListView<'a>,
    transactions: &'a [Recovered<TxEnvelope>],
    next: &'a AtomicUsize,
    stop: &'a AtomicBool,
    send: Sender<Arrival>,
}

impl Worker<'_> {
    fn run(self) {
        let overlay = ListOverlay::new(self.base, self.view);
        let mut evm = strata_chainspec::StrataEvmFactory.create_evm(overlay, self.env);
        while !self.stop.load(Ordering::Relaxed) {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(tx) = self.transactions.get(index) else {
                break;
            };
            evm.db_mut().start(index as u64 + 1);
            let result = evm.transact(TxEnv::from_recovered_tx(tx.inner(), tx.signer()));
            let reads = evm.db_mut().take_reads();
            let uncounted = evm.uncounted_state_gas();
            let ahead = result.ok().map(|result| Ahead {
                output: EthTxResult {
                    result,
                    blob_gas_used: tx.blob_gas_used().unwrap_or_default(),
                    tx_type: tx.tx_type(),
                },
                reads,
                uncounted,
            });
            if self.send.send((index, ahead)).is_err() {
                break;
            }
        }
    }
}

/// The block's thread: the system calls before the transactions, each
/// transaction in its turn (its run ahead committed when its reads hold,
/// else executed again), then what follows the transactions, all through
/// alloy-evm's executor over `writer`, in the block's `env`.
fn commit_in_turn(
    spec: &ChainSpec,
    block: &DecodedBlock,
    env: EvmEnv,
    transactions: &[Recovered<TxEnvelope>],
    writer: &mut CheckedWriter<'_>,
    receive: &Receiver<Arrival>,
) -> Result<(Outcome, TransactionsAhead), RunError> {
    let header = block.header();
    let factory = executor_factory(spec, header);
    let evm = factory
        .evm_factory()
        .create_evm(RecordingDb::new(writer, true), env);
    let mut executor = factory.create_executor(evm, execution_ctx(block, transactions.len()));
    // Amsterdam's state-gas capacity is checked as the release has it.
    executor.skip_state_gas_capacity_check = true;
    executor
        .apply_pre_execution_changes()
        .map_err(|error| block_error(None, error))?;
    let mut arrived: Vec<Option<Ahead>> = Vec::new();
    arrived.resize_with(transactions.len(), || None);
    let mut counts = TransactionsAhead::default();
    for (index, tx) in transactions.iter().enumerate() {
        let ahead = wait_for(index, &mut arrived, receive);
        let usable = match ahead {
            Some(ahead) if fits_block(&executor, tx) => {
                let writer = &mut **executor.evm_mut().db_mut().inner_mut();
                reads_hold(&ahead.reads, writer)?.then_some(ahead)
            }
            _ => None,
        };
        match usable {
            Some(ahead) => {
                executor.evm_mut().db_mut().set_bal_index(index as u64 + 1);
                executor.commit_transaction(ahead.output);
                strata_chainspec::uncount_state_gas(&mut executor, ahead.uncounted);
                counts.committed += 1;
            }
            None => {
                crate::evm_run::state_gas_capacity(&executor, tx)
                    .map_err(|error| block_error(Some(index), error))?;
                executor
                    .execute_transaction_with_index(tx, index)
                    .map_err(|error| block_error(Some(index), error))?;
                let uncounted = executor.evm().uncounted_state_gas();
                strata_chainspec::uncount_state_gas(&mut executor, uncounted);
                counts.executed_again += 1;
            }
        }
    }
    after_transactions(
        spec,
        header,
        transactions.len(),
        executor.evm_mut().db_mut(),
    )?;
    Ok((finish(executor)?, counts))
}

/// Transaction `index`'s run ahead, waiting for it; `None` when its run
/// failed or no worker will send it.
fn wait_for(
    index: usize,
    arrived: &mut [Option<Ahead>],
    receive: &Receiver<Arrival>,
) -> Option<Ahead> {
    loop {
        if let Some(ahead) = arrived[index].take() {
            return Some(ahead);
        }
        match receive.recv() {
            Ok((at, ahead)) if at == index => return ahead,
            Ok((at, ahead)) => arrived[at] = ahead,
            Err(_) => return None,
        }
    }
}

/// Whether `tx` fits the gas the block has left, as alloy-evm checks it
/// before executing a transaction (a transaction that does not is executed
/// in its turn, which refuses it with alloy-evm's own error).
fn fits_block<E>(
    executor: &alloy_evm::eth::EthBlockExecutor<
        '_,
        E,
        &ChainSpec,
        &alloy_evm::eth::receipt_builder::AlloyReceiptBuilder,
    >,
    tx: &Recovered<TxEnvelope>,
) -> bool
where
    E: Evm<Spec = revm::primitives::hardfork::SpecId>,
{
    let cfg = executor.evm.cfg_env();
    let gas_limit = executor.evm.block().gas_limit();
    let state_gas = cfg.enable_amsterdam_eip8037;
    let used = if state_gas {
        executor.block_regular_gas_used
    } else {
        executor.cumulative_tx_gas_used
    };
    let regular_fits = tx.gas_limit().min(cfg.tx_gas_limit_cap()) <= gas_limit.saturating_sub(used);
    regular_fits && crate::evm_run::state_gas_capacity(executor, tx).is_ok()
}

/// Whether every value in `reads` that may have changed since the state
/// before the block (given by the list, or of a key an earlier step
/// changed) is the value `writer`'s block holds now. A writer that does
/// not track its changed keys has every read checked.
fn reads_hold(reads: &Reads, writer: &mut CheckedWriter<'_>) -> Result<bool, RunError> {
    let failed = |error: strata_storage::revm::RevmError| RunError::Database(error.to_string());
    let CheckedWriter { inner, written, .. } = writer;
    for read in &reads.accounts {
        if read.from_list || written.as_ref().is_none_or(|w| w.account(&read.key)) {
            let now = inner.basic(read.key).map_err(failed)?;
            if !same_account(read.value.as_ref(), now.as_ref()) {
                return Ok(false);
            }
        }
    }
    for read in &reads.slots {
        let (address, slot) = &read.key;
        let may_differ = read.from_list || written.as_ref().is_none_or(|w| w.slot(address, slot));
        if may_differ && inner.storage(*address, *slot).map_err(failed)? != read.value {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Two reads of an account agree: both absent, or the same balance, nonce
/// and code hash.
fn same_account(ahead: Option<&AccountInfo>, now: Option<&AccountInfo>) -> bool {
    match (ahead, now) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.balance == b.balance && a.nonce == b.nonce && a.code_hash == b.code_hash
        }
        _ => false,
    }
}
