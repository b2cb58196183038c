//! The EVM strata executes with: revm's mainnet EVM, whose transactions of an
//! Amsterdam block run under a handler and instructions of strata's own
//! where revm 43 follows a later devnet than the execution-spec-tests release
//! strata is checked against (`bal@v5.7.0`; its gas table is
//! [`crate::amsterdam_gas_params`]). [`AmsterdamHandler`] keeps the release's
//! EIP-8037 state gas:
//! - intrinsic state gas: a creating transaction pays a new account's bytes,
//!   each authorization (EIP-7702) a new account's and a delegation's; one to
//!   an authority that exists gives the new account's part back to the
//!   reservoir (so to the sender) while the block's state gas keeps the whole
//!   charge (revm 43 moved these into EIP-2780's runtime phase, which the
//!   release does not have);
//! - a failed frame's reservoir goes back to what it started with plus what
//!   its undone charges took from the regular gas, less the charges failed
//!   children gave back to it ([`settle_failed_frame`]);
//!   a restoration refund (a slot set from zero and put back) goes to the
//!   reservoir ([`release_sstore`]);
//! - accounts created and destroyed in one transaction give their state gas
//!   back, and what a destroyed account holds is burned with EIP-7708's
//!   `Burn` log ([`burn_destroyed_balances`], [`release_selfdestruct`]; the
//!   release has no EIP-8246);
//! - EXTCODESIZE and EXTCODECOPY cost one account access ([`with_release_gas`]);
//! - a CREATE or CREATE2 pays its new account's state gas whatever its
//!   destination holds, before it reads it ([`release_create`]).
//!
//! Every fork before Amsterdam, and every system call, runs revm's own
//! handler unchanged.

use alloy_evm::eth::receipt_builder::ReceiptBuilder;
use alloy_evm::eth::{EthBlockExecutor, EthEvmBuilder, EthEvmContext};
use alloy_evm::precompiles::PrecompilesMap;
use alloy_evm::revm::bytecode::opcode;
use alloy_evm::revm::context::{BlockEnv, CfgEnv, Evm as RevmEvm, TxEnv};
use alloy_evm::revm::context_interface::cfg::gas_params::GasId;
use alloy_evm::revm::context_interface::journaled_state::StateLoad;
use alloy_evm::revm::context_interface::journaled_state::account::JournaledAccountTr;
use alloy_evm::revm::context_interface::result::{
    EVMError, HaltReason, InvalidTransaction, ResultAndState, ResultGas,
};
use alloy_evm::revm::context_interface::{Cfg, ContextTr, JournalTr, Transaction};
use alloy_evm::revm::handler::evm::ContextDbError;
use alloy_evm::revm::handler::instructions::EthInstructions;
use alloy_evm::revm::handler::pre_execution::apply_auth_list;
use alloy_evm::revm::handler::{
    EthFrame, EvmTr, EvmTrError, FrameResult, FrameTr, Handler, ItemOrResult,
};
use alloy_evm::revm::inspector::{InspectorEvmTr, InspectorHandler, NoOpInspector};
use alloy_evm::revm::interpreter::instructions::contract::create;
use alloy_evm::revm::interpreter::instructions::host::{selfdestruct, sstore_with_gas_accounting};
use alloy_evm::revm::interpreter::instructions::utility::IntoAddress;
use alloy_evm::revm::interpreter::interpreter::EthInterpreter;
use alloy_evm::revm::interpreter::interpreter_action::{FrameInit, FrameInput};
use alloy_evm::revm::interpreter::interpreter_types::{InputsTr, LoopControl, RuntimeFlag};
use alloy_evm::revm::interpreter::{GasTracker, InitialAndFloorGas};
use alloy_evm::revm::interpreter::{
    Host, Instruction, InstructionContext, InstructionExecResult, InstructionResult,
    InterpreterAction,
};
use alloy_evm::revm::primitives::constants::CALL_STACK_LIMIT;
use alloy_evm::revm::primitives::eip7708::{BURN_LOG_TOPIC, ETH_TRANSFER_LOG_ADDRESS};
use alloy_evm::revm::primitives::hardfork::SpecId;
use alloy_evm::revm::state::EvmState;
use alloy_evm::revm::{Context, ExecuteEvm, InspectEvm, Inspector, SystemCallEvm};
use alloy_evm::{Database, Evm, EvmEnv, EvmFactory};
use alloy_primitives::{Address, B256, Bytes, Log, LogData, U256};
use core::cell::Cell;
use core::marker::PhantomData;

/// revm's handler with Amsterdam's state gas as the release has it (see the
/// module's text); used only where EIP-8037 is on.
#[derive(Debug)]
pub struct AmsterdamHandler<EVM, ERROR, FRAME> {
    /// The state gas this transaction's authorizations gave back to the
    /// reservoir (authorities that existed).
    given_back: Cell<u64>,
    /// The state gas failed frames took from the regular gas for good
    /// ([`settle_failed_frame`]).
    lost: Cell<u64>,
    /// The part of `lost` that is refunds of failed children undone by a
    /// failing parent: the sender pays it, the block counts it nowhere.
    undone: Cell<u64>,
    _types: PhantomData<(EVM, ERROR, FRAME)>,
}

impl<EVM, ERROR, FRAME> Default for AmsterdamHandler<EVM, ERROR, FRAME> {
    fn default() -> Self {
        Self {
            given_back: Cell::new(0),
            lost: Cell::new(0),
            undone: Cell::new(0),
            _types: PhantomData,
        }
    }
}

impl<EVM, ERROR, FRAME> Handler for AmsterdamHandler<EVM, ERROR, FRAME>
where
    EVM: EvmTr<Context: ContextTr<Journal: JournalTr<State = EvmState>>, Frame = FRAME>,
    ERROR: EvmTrError<EVM>,
    FRAME: FrameTr<FrameResult = FrameResult, FrameInit = FrameInit>,
{
    type Evm = EVM;
    type Error = ERROR;
    type HaltReason = HaltReason;

    /// revm's intrinsic gas plus the release's intrinsic state gas: a new
    /// account's for a creating transaction, a new account's and a
    /// delegation's for each authorization. A transaction whose gas limit
    /// does not cover it is invalid.
    fn validate_initial_tx_gas(
        &self,
        evm: &mut Self::Evm,
    ) -> Result<InitialAndFloorGas, Self::Error> {
        let mut gas = MainnetRules::<EVM, ERROR, FRAME>::default().validate_initial_tx_gas(evm)?;
        let ctx = evm.ctx_ref();
        let params = ctx.cfg().gas_params();
        let tx = ctx.tx();
        let mut state_gas = 0u64;
        if tx.kind().is_create() {
            state_gas += params.create_state_gas();
        }
        let authorizations = tx.authorization_list_len() as u64;
        state_gas += authorizations.saturating_mul(
            params.new_account_state_gas() + params.tx_eip7702_state_gas_bytecode(),
        );
        gas.set_initial_state_gas(gas.initial_state_gas + state_gas);
        if gas.initial_total_gas() > tx.gas_limit() {
            return Err(InvalidTransaction::CallGasCostMoreThanGasLimit {
                gas_limit: tx.gas_limit(),
                initial_gas: gas.initial_total_gas(),
            }
            .into());
        }
        Ok(gas)
    }

    /// Applies the authorizations as revm does; each one to an authority
    /// that exists gives its new account's state gas back to the reservoir.
    fn apply_eip7702_auth_list(
        &self,
        evm: &mut Self::Evm,
        gas: &mut GasTracker,
    ) -> Result<Option<u64>, Self::Error> {
        let ctx = evm.ctx();
        if ctx.tx().authorization_list_len() == 0 {
            return Ok(Some(0));
        }
        let chain_id = ctx.cfg().chain_id();
        let new_account = ctx.cfg().gas_params().new_account_state_gas();
        let (tx, journal) = ctx.tx_journal_mut();
        let existing = apply_auth_list::<_, ERROR>(chain_id, tx.authorization_list(), journal)?;
        let given_back = existing.saturating_mul(new_account);
        gas.refill_reservoir(given_back);
        self.given_back.set(given_back);
        Ok(Some(0))
    }

    /// revm's loop of frames, each failed frame's state gas settled as the
    /// release does before its parent takes it ([`settle_failed_frame`]).
    fn run_exec_loop(
        &mut self,
        evm: &mut Self::Evm,
        first_frame_input: FrameInit,
    ) -> Result<FrameResult, Self::Error> {
        Ok(run_frames(
            evm,
            first_frame_input,
            (&self.lost, &self.undone),
            |evm, init| Ok(evm.frame_init(init)?.map_item(|_| ())),
            |evm| evm.frame_run(),
        )?)
    }

    /// revm's settlement of the transaction's frame, then the state gas of
    /// the accounts it both created and destroyed given back.
    fn last_frame_result(
        &mut self,
        evm: &mut Self::Evm,
        frame_result: &mut FrameResult,
        parent_gas: &mut GasTracker,
    ) -> Result<(), Self::Error> {
        MainnetRules::<EVM, ERROR, FRAME>::default().last_frame_result(
            evm,
            frame_result,
            parent_gas,
        )?;
        burn_destroyed_balances(evm.ctx());
        let destroyed = destroyed_creations_state_gas(evm.ctx_ref());
        if destroyed > 0 {
            parent_gas.refill_reservoir(destroyed);
            *frame_result.gas_mut().tracker_mut() = *parent_gas;
        }
        Ok(())
    }

    /// revm's settlement, then the block's state gas made whole again for
    /// what the authorizations gave back: the block counts each
    /// authorization's whole charge (its regular gas, spent less state,
    /// stays as it was), while the sender pays only what was kept.
    fn post_execution(
        &self,
        evm: &mut Self::Evm,
        exec_result: &mut FrameResult,
        init_and_floor_gas: InitialAndFloorGas,
        eip7702_gas_refund: i64,
    ) -> Result<ResultGas, Self::Error> {
        let gas = MainnetRules::<EVM, ERROR, FRAME>::default().post_execution(
            evm,
            exec_result,
            init_and_floor_gas,
            eip7702_gas_refund,
        )?;
        let given_back = self.given_back.get();
        Ok(gas
            .with_total_gas_spent(gas.total_gas_spent() + given_back)
            .with_refunded(gas.inner_refunded() + given_back)
            .with_state_gas_spent(gas.state_gas_spent_final() + given_back + self.lost.get()))
    }
}

/// EIP-7708 as the release has it (without EIP-8246): what an account this
/// transaction destroyed still holds at its end is burned, with one `Burn`
/// log per account, in the order of their addresses.
fn burn_destroyed_balances<CTX>(ctx: &mut CTX)
where
    CTX: ContextTr<Journal: JournalTr<State = EvmState>>,
{
    let mut burned: Vec<(Address, U256)> = ctx
        .journal_mut()
        .evm_state_mut()
        .iter_mut()
        .filter(|(_, account)| account.is_selfdestructed() && !account.info.balance.is_zero())
        .map(|(address, account)| {
            let balance = core::mem::take(&mut account.info.balance);
            (*address, balance)
        })
        .collect();
    burned.sort_unstable_by_key(|(address, _)| *address);
    for (address, balance) in burned {
        ctx.journal_mut().log(burn_log(address, balance));
    }
}

/// The state gas of the accounts this transaction both created and
/// destroyed (EIP-6780): each leaves no state behind, so its account, its
/// code's bytes and the slots it still holds are given back.
fn destroyed_creations_state_gas<CTX>(ctx: &CTX) -> u64
where
    CTX: ContextTr<Journal: JournalTr<State = EvmState>>,
{
    let params = ctx.cfg().gas_params();
    let slot = params.get(GasId::sstore_set_state_gas());
    ctx.journal_ref()
        .evm_state()
        .values()
        .filter(|account| account.is_created() && account.is_selfdestructed())
        .map(|account| {
            let code_len = account.info.code.as_ref().map_or(0, |code| code.len());
            let slots = account
                .storage
                .values()
                .filter(|value| !value.present_value.is_zero())
                .count() as u64;
            params.create_state_gas() + params.code_deposit_state_gas(code_len) + slot * slots
        })
        .sum()
}

impl<EVM, ERROR> InspectorHandler for AmsterdamHandler<EVM, ERROR, EthFrame<EthInterpreter>>
where
    EVM: InspectorEvmTr<
            Context: ContextTr<Journal: JournalTr<State = EvmState>>,
            Frame = EthFrame<EthInterpreter>,
            Inspector: Inspector<<EVM as EvmTr>::Context, EthInterpreter>,
        >,
    ERROR: EvmTrError<EVM>,
{
    type IT = EthInterpreter;

    /// [`Handler::run_exec_loop`]'s loop, with the inspector's hooks.
    fn inspect_run_exec_loop(
        &mut self,
        evm: &mut Self::Evm,
        first_frame_input: FrameInit,
    ) -> Result<FrameResult, Self::Error> {
        Ok(run_frames(
            evm,
            first_frame_input,
            (&self.lost, &self.undone),
            |evm, init| Ok(evm.inspect_frame_init(init)?.map_item(|_| ())),
            |evm| evm.inspect_frame_run(),
        )?)
    }
}

/// revm's loop of frames (`run_exec_loop`), with each failed frame settled
/// as the release does ([`settle_failed_frame`]) before its parent takes
/// it, and what that costs the sender added to `lost`. The charges failed
/// children give back to a frame (revm refills its reservoir with them in
/// `frame_return_result`) are counted per frame on the stack, and passed
/// up when the frame succeeds: its own failure undoes them. `init` starts a frame
/// (`Item` when one was pushed), `run` runs the top one: the plain or the
/// inspected calls.
fn run_frames<EVM, FRAME>(
    evm: &mut EVM,
    first: FrameInit,
    (lost, undone): (&Cell<u64>, &Cell<u64>),
    mut init: impl FnMut(
        &mut EVM,
        FrameInit,
    ) -> Result<ItemOrResult<(), FrameResult>, ContextDbError<EVM::Context>>,
    mut run: impl FnMut(
        &mut EVM,
    )
        -> Result<ItemOrResult<FrameInit, FrameResult>, ContextDbError<EVM::Context>>,
) -> Result<FrameResult, ContextDbError<EVM::Context>>
where
    EVM: EvmTr<Frame = FRAME>,
    FRAME: FrameTr<FrameResult = FrameResult, FrameInit = FrameInit>,
{
    let settle = |result: &mut FrameResult, entry: u64, received: u64| {
        let (taken, refunds) = settle_failed_frame(result, entry, received);
        lost.set(lost.get() + taken);
        undone.set(undone.get() + refunds);
    };
    // The reservoir each frame on the stack started with, and the state
    // gas failed children's charges gave back to it (or to its successful
    // descendants): refunds its own failure undoes.
    let mut entries: Vec<(u64, u64)> = Vec::new();
    let entry = entry_reservoir(&first);
    match init(evm, first)? {
        ItemOrResult::Item(()) => entries.push((entry, 0)),
        ItemOrResult::Result(mut result) => {
            settle(&mut result, entry, 0);
            return Ok(result);
        }
    }
    loop {
        let result = match run(evm)? {
            ItemOrResult::Item(frame) => {
                let entry = entry_reservoir(&frame);
                match init(evm, frame)? {
                    ItemOrResult::Item(()) => {
                        entries.push((entry, 0));
                        continue;
                    }
                    ItemOrResult::Result(mut result) => {
                        settle(&mut result, entry, 0);
                        result
                    }
                }
            }
            ItemOrResult::Result(mut result) => {
                let (entry, received) = entries.pop().unwrap_or_default();
                settle(&mut result, entry, received);
                if result.instruction_result().is_ok()
                    && let Some((_, parent)) = entries.last_mut()
                {
                    *parent += received;
                }
                result
            }
        };
        // A failed child's charge the parent gets back (revm refills the
        // parent's reservoir with it in `frame_return_result`).
        let refund = result
            .refundable_state_gas(evm.ctx().cfg().gas_params())
            .unwrap_or_default();
        if let Some((_, parent)) = entries.last_mut() {
            *parent += refund;
        }
        if let Some(result) = evm.frame_return_result(result)? {
            return Ok(result);
        }
    }
}

/// The state-gas reservoir a frame starts with.
fn entry_reservoir(init: &FrameInit) -> u64 {
    match &init.frame_input {
        FrameInput::Call(inputs) => inputs.reservoir,
        FrameInput::Create(inputs) => inputs.reservoir(),
        FrameInput::Empty => 0,
    }
}

/// A failed frame (revert or halt) as the release settles it: the
/// reservoir goes back to what the frame started with plus the state gas
/// its charges still owe the regular gas (those charges are undone, and
/// what they took comes back through the reservoir), less what failed
/// children's charges gave back to the frame or to its successful
/// descendants (`received`: a refund inside a failed frame is undone, the
/// charge it refunded stands), and its regular gas is returned (revert)
/// or consumed (halt) as it stands. revm's own settlement, which runs
/// next, credits that state gas to the regular gas instead; the tracker is
/// set so that it arrives at the release's figures.
///
/// Returns the state gas the reset takes beyond that — what the frame's
/// undone charges had taken from the regular gas and its refunds had
/// already moved to the reservoir, and the refunds undone — which the
/// sender pays and the transaction's result counts as state gas rather
/// than regular (see [`Handler::post_execution`]); and, of it, the refunds
/// undone, which the release's block counts as neither
/// ([`UncountedStateGas`]).
fn settle_failed_frame(result: &mut FrameResult, entry: u64, received: u64) -> (u64, u64) {
    if result.instruction_result().is_ok() {
        return (0, 0);
    }
    let tracker = result.gas_mut().tracker_mut();
    let owed = tracker.state_gas_spilled();
    let reservoir = i128::from(tracker.reservoir());
    let spent = i128::from(tracker.state_gas_spent());
    let undone_from = i128::from(entry) + i128::from(owed);
    let target = (undone_from - i128::from(received)).max(0);
    let lost = (reservoir + spent - target).max(0);
    let undone = (undone_from - target).min(lost);
    tracker.set_state_gas_spilled(0);
    tracker.set_state_gas_spent(i64::try_from(target - reservoir).unwrap_or_default());
    (
        u64::try_from(lost).unwrap_or_default(),
        u64::try_from(undone).unwrap_or_default(),
    )
}

/// SELFDESTRUCT as the release has it (EIP-7708 without EIP-8246): an
/// account this transaction created that destroys itself naming itself as
/// the beneficiary burns its balance there and then, with a `Burn` log;
/// what it receives afterwards is burned at the transaction's end
/// ([`burn_destroyed_balances`]).
fn release_selfdestruct<DB: Database>(
    context: InstructionContext<'_, EthEvmContext<DB>, EthInterpreter>,
) -> InstructionExecResult {
    let InstructionContext { interpreter, host } = context;
    let address = interpreter.input.target_address();
    let to_itself = interpreter
        .stack
        .peek(0)
        .is_ok_and(|target| target.into_address() == address);
    let result = selfdestruct(InstructionContext {
        interpreter: &mut *interpreter,
        host: &mut *host,
    });
    if !to_itself || result != Err(InstructionResult::SelfDestruct) {
        return result;
    }
    let journal = host.journal_mut();
    let Ok(StateLoad {
        data: mut account, ..
    }) = journal.load_account_mut(address)
    else {
        return Err(InstructionResult::FatalExternalError);
    };
    if !account.account().is_selfdestructed() {
        return result;
    }
    let balance = *account.balance();
    if balance.is_zero() {
        return result;
    }
    account.decr_balance(balance);
    journal.log(burn_log(address, balance));
    result
}

/// CREATE and CREATE2 as the release has them: the new account's state
/// gas is charged whatever the destination holds, before the destination
/// is read and before the child's gas is split off, so a create that cannot
/// pay it fails without touching the destination (which stays out of the
/// block's access list and the warm set), and one onto an account that is
/// alive (a collision) pays it too and gets it back when the create fails.
/// revm 43 reads the destination first, to charge only a destination that
/// is not alive (a later devnet's rule). revm's instruction runs as it is,
/// its child's gas split again after the charge where it charged nothing.
fn release_create<const IS_CREATE2: bool, H: Host + ?Sized>(
    mut context: InstructionContext<'_, H, EthInterpreter>,
) -> InstructionExecResult {
    if create_state_gas_short::<IS_CREATE2, H>(&mut context) == Some(true) {
        return Err(InstructionResult::OutOfGas);
    }
    let result = create::<IS_CREATE2, _, _>(InstructionContext {
        interpreter: &mut *context.interpreter,
        host: &mut *context.host,
    });
    if result != Err(InstructionResult::Suspend) {
        return result;
    }
    let params = context.host.gas_params();
    let charge = params.create_state_gas();
    let interpreter = &mut *context.interpreter;
    let Some(InterpreterAction::NewFrame(FrameInput::Create(inputs))) =
        interpreter.bytecode.action()
    else {
        return result;
    };
    if inputs.charged_create_state_gas() {
        return result;
    }
    // The destination is alive (revm charged nothing): the release charges
    // the new account's state gas all the same, before the child's gas is
    // split off, and the frame gives it back if the create fails (a
    // collision does).
    let gas = &mut interpreter.gas;
    gas.erase_cost(inputs.gas_limit());
    if !gas.record_state_cost(charge) {
        return Err(InstructionResult::OutOfGas);
    }
    let limit = params.call_stipend_reduction(gas.remaining());
    if !gas.record_regular_cost(limit) {
        return Err(InstructionResult::OutOfGas);
    }
    inputs.set_gas_limit(limit);
    inputs.set_reservoir(gas.reservoir());
    inputs.set_charged_create_state_gas(true);
    result
}

/// Whether a CREATE (or CREATE2) that passes every check before its state
/// gas charge lacks the gas for that charge; `None` when a check before it
/// fails (revm's instruction then fails it the same way).
fn create_state_gas_short<const IS_CREATE2: bool, H: Host + ?Sized>(
    context: &mut InstructionContext<'_, H, EthInterpreter>,
) -> Option<bool> {
    let (interpreter, host) = (&*context.interpreter, &*context.host);
    if interpreter.runtime_flag.is_static() {
        return None;
    }
    let value = interpreter.stack.peek(0).ok()?;
    let offset = interpreter.stack.peek(1).ok()?;
    let len = usize::try_from(interpreter.stack.peek(2).ok()?).ok()?;
    if IS_CREATE2 {
        interpreter.stack.peek(3).ok()?;
    }
    let params = host.gas_params();
    let mut static_gas = if IS_CREATE2 {
        params.create2_cost(len)
    } else {
        params.create_cost()
    };
    if len != 0 {
        if len > host.max_initcode_size() {
            return None;
        }
        let offset = usize::try_from(offset).ok()?;
        static_gas = static_gas.checked_add(params.initcode_cost(len))?;
        let words = offset.checked_add(len)?.div_ceil(32);
        let memory = interpreter.gas.memory();
        if words > memory.words_num {
            let expansion = params
                .memory_cost(words)
                .checked_sub(memory.expansion_cost)?;
            static_gas = static_gas.checked_add(expansion)?;
        }
    }
    let regular_left = interpreter.gas.remaining().checked_sub(static_gas)?;
    let available = interpreter.gas.reservoir().saturating_add(regular_left);
    let charge = params.create_state_gas();
    let too_deep = interpreter.input.depth() + 1 > CALL_STACK_LIMIT as usize;
    // The checks before the destination is read, on the caller revm reads
    // too (the executing account, loaded already).
    let caller = interpreter.input.target_address();
    let info = context
        .host
        .load_account_info_skip_cold_load(caller, false, false)
        .ok()?;
    if info.account.balance < value || info.account.nonce == u64::MAX || too_deep {
        return None;
    }
    Some(available < charge)
}

/// EIP-7708's `Burn` log of `amount` wei at `address`.
fn burn_log(address: Address, amount: U256) -> Log {
    Log {
        address: ETH_TRANSFER_LOG_ADDRESS,
        data: LogData::new_unchecked(
            vec![BURN_LOG_TOPIC, B256::left_padding_from(address.as_slice())],
            Bytes::copy_from_slice(&amount.to_be_bytes::<32>()),
        ),
    }
}

/// SSTORE with the release's routing of EIP-8037's restoration refund
/// (a slot set from zero and put back to zero in one transaction): the
/// state gas goes to the reservoir, settling first what the charge owed the
/// regular gas, where revm 43 credits the regular gas first.
fn release_sstore<H: Host + ?Sized>(
    context: InstructionContext<'_, H, EthInterpreter>,
) -> InstructionExecResult {
    sstore_with_gas_accounting(context, |context, _target, load| {
        let params = context.host.gas_params();
        let dynamic = params.sstore_dynamic_gas(true, &load.data, load.is_cold);
        let state = params.sstore_state_gas(&load.data);
        let refill = params.sstore_state_gas_refill(&load.data);
        let refund = params.sstore_refund(true, &load.data);
        let gas = &mut context.interpreter.gas;
        if !gas.record_regular_cost(dynamic) || !gas.record_state_cost(state) {
            return Err(InstructionResult::OutOfGas);
        }
        if refill > 0 {
            let tracker = gas.tracker_mut();
            let settled = refill.min(tracker.state_gas_spilled());
            tracker.set_state_gas_spilled(tracker.state_gas_spilled() - settled);
            tracker.set_reservoir(tracker.reservoir() + refill);
            tracker.set_state_gas_spent(
                tracker
                    .state_gas_spent()
                    .saturating_sub(i64::try_from(refill).unwrap_or(i64::MAX)),
            );
        }
        gas.record_refund(refund);
        Ok(())
    })
}

/// revm's own handler, whose defaults [`AmsterdamHandler`] builds on.
type MainnetRules<EVM, ERROR, FRAME> = alloy_evm::revm::handler::MainnetHandler<EVM, ERROR, FRAME>;

/// The revm EVM inside a [`StrataEvm`].
type InnerEvm<DB, I> = RevmEvm<
    EthEvmContext<DB>,
    I,
    EthInstructions<EthInterpreter, EthEvmContext<DB>>,
    PrecompilesMap,
    EthFrame,
>;

/// alloy-evm's Ethereum EVM, with Amsterdam's transactions run by
/// [`AmsterdamHandler`].
#[allow(missing_debug_implementations)]
pub struct StrataEvm<DB: Database, I> {
    inner: InnerEvm<DB, I>,
    inspect: bool,
    /// The last transaction's [`UncountedStateGas`].
    uncounted: u64,
}

/// An EVM that tells how much of its last transaction's state gas the
/// block counts nowhere ([`StrataEvm`]'s implementation says what that is).
pub trait UncountedStateGas {
    /// The last transaction's state gas its sender paid that its block
    /// counts neither as regular nor as state gas.
    fn uncounted_state_gas(&self) -> u64;
}

impl<DB: Database, I> UncountedStateGas for StrataEvm<DB, I> {
    /// State gas the last transaction's sender paid that its block counts
    /// neither as regular nor as state gas (bal@v5.7.0): refunds of failed
    /// children (a CREATE's or a value CALL's new account) undone by a
    /// parent that failed too. revm's `ResultGas` derives the block's
    /// regular gas as spent less state gas, so the result counts it as
    /// state gas; a block executor takes it off the block's state gas.
    fn uncounted_state_gas(&self) -> u64 {
        self.uncounted
    }
}

/// Takes `uncounted` — a transaction's state gas that the release's block
/// counts nowhere ([`UncountedStateGas`]) — off the block's state gas that
/// alloy-evm's executor sums.
pub fn uncount_state_gas<E, Spec, R>(
    executor: &mut EthBlockExecutor<'_, E, Spec, R>,
    uncounted: u64,
) where
    R: ReceiptBuilder,
{
    executor.block_state_gas_used = executor.block_state_gas_used.saturating_sub(uncounted);
}

impl<DB: Database, I> StrataEvm<DB, I> {
    /// The EVM's context (block, transaction, configuration, journal).
    pub fn ctx(&self) -> &EthEvmContext<DB> {
        &self.inner.ctx
    }

    /// The EVM's context, to change.
    pub fn ctx_mut(&mut self) -> &mut EthEvmContext<DB> {
        &mut self.inner.ctx
    }
}

impl<DB, I> Evm for StrataEvm<DB, I>
where
    DB: Database,
    I: Inspector<EthEvmContext<DB>>,
{
    type DB = DB;
    type Tx = TxEnv;
    type Error = EVMError<DB::Error>;
    type HaltReason = HaltReason;
    type Spec = SpecId;
    type BlockEnv = BlockEnv;
    type Precompiles = PrecompilesMap;
    type Inspector = I;

    fn block(&self) -> &BlockEnv {
        &self.inner.ctx.block
    }

    fn cfg_env(&self) -> &CfgEnv<Self::Spec> {
        &self.inner.ctx.cfg
    }

    fn chain_id(&self) -> u64 {
        self.inner.ctx.cfg.chain_id
    }

    fn transact_raw(
        &mut self,
        tx: Self::Tx,
    ) -> Result<ResultAndState<Self::HaltReason>, Self::Error> {
        self.uncounted = 0;
        if !self.inner.ctx.cfg.is_amsterdam_eip8037_enabled() {
            return if self.inspect {
                self.inner.inspect_tx(tx)
            } else {
                self.inner.transact(tx)
            };
        }
        self.inner.ctx.tx = tx;
        let mut handler = AmsterdamHandler::<_, EVMError<DB::Error>, EthFrame>::default();
        let result = if self.inspect {
            handler.inspect_run(&mut self.inner)
        } else {
            handler.run(&mut self.inner)
        };
        self.uncounted = handler.undone.get();
        // The journal is cleared whatever the outcome, as revm's `transact`.
        let state = self.inner.ctx.journal_mut().finalize();
        Ok(ResultAndState::new(result?, state))
    }

    fn transact_system_call(
        &mut self,
        caller: Address,
        contract: Address,
        data: Bytes,
    ) -> Result<ResultAndState<Self::HaltReason>, Self::Error> {
        self.inner.system_call_with_caller(caller, contract, data)
    }

    fn finish(self) -> (Self::DB, EvmEnv<Self::Spec>) {
        let Context {
            block: block_env,
            cfg: cfg_env,
            journaled_state,
            ..
        } = self.inner.ctx;
        (journaled_state.database, EvmEnv { block_env, cfg_env })
    }

    fn set_inspector_enabled(&mut self, enabled: bool) {
        self.inspect = enabled;
    }

    fn components(&self) -> (&Self::DB, &Self::Inspector, &Self::Precompiles) {
        (
            &self.inner.ctx.journaled_state.database,
            &self.inner.inspector,
            &self.inner.precompiles,
        )
    }

    fn components_mut(&mut self) -> (&mut Self::DB, &mut Self::Inspector, &mut Self::Precompiles) {
        (
            &mut self.inner.ctx.journaled_state.database,
            &mut self.inner.inspector,
            &mut self.inner.precompiles,
        )
    }
}

/// Amsterdam's opcode gas as the release has it: EXTCODESIZE and
/// EXTCODECOPY cost a warm access like every other account access (revm 43
/// charges a second one, EIP-8038's, of a later devnet).
fn with_release_gas<DB: Database, I>(mut evm: InnerEvm<DB, I>) -> InnerEvm<DB, I> {
    if evm.ctx.cfg.is_amsterdam_eip8037_enabled() {
        let warm = evm.ctx.cfg.gas_params().warm_storage_read_cost();
        let warm = u16::try_from(warm).unwrap_or(u16::MAX);
        evm.instruction.insert_gas(opcode::EXTCODESIZE, warm);
        evm.instruction.insert_gas(opcode::EXTCODECOPY, warm);
        let selfdestruct_gas = evm.instruction.gas_table()[usize::from(opcode::SELFDESTRUCT)];
        evm.instruction.insert_instruction(
            opcode::SELFDESTRUCT,
            Instruction::new(release_selfdestruct::<DB>),
            selfdestruct_gas,
        );
        for (op, instruction) in [
            (
                opcode::CREATE,
                Instruction::new(release_create::<false, EthEvmContext<DB>>),
            ),
            (
                opcode::CREATE2,
                Instruction::new(release_create::<true, EthEvmContext<DB>>),
            ),
        ] {
            let gas = evm.instruction.gas_table()[usize::from(op)];
            evm.instruction.insert_instruction(op, instruction, gas);
        }
        let sstore_gas = evm.instruction.gas_table()[usize::from(opcode::SSTORE)];
        evm.instruction.insert_instruction(
            opcode::SSTORE,
            Instruction::new(release_sstore),
            sstore_gas,
        );
    }
    evm
}

/// Makes [`StrataEvm`]s: alloy-evm's `EthEvmFactory` with Amsterdam's
/// transactions run by [`AmsterdamHandler`].
#[derive(Debug, Default, Clone, Copy)]
pub struct StrataEvmFactory;

impl EvmFactory for StrataEvmFactory {
    type Evm<DB: Database, I: Inspector<EthEvmContext<DB>>> = StrataEvm<DB, I>;
    type Context<DB: Database> = EthEvmContext<DB>;
    type Tx = TxEnv;
    type Error<DBError: alloy_evm::revm::context::DBErrorMarker> = EVMError<DBError>;
    type HaltReason = HaltReason;
    type Spec = SpecId;
    type BlockEnv = BlockEnv;
    type Precompiles = PrecompilesMap;

    fn create_evm<DB: Database>(&self, db: DB, input: EvmEnv) -> Self::Evm<DB, NoOpInspector> {
        StrataEvm {
            inner: with_release_gas(EthEvmBuilder::new(db, input).build().into_inner()),
            inspect: false,
            uncounted: 0,
        }
    }

    fn create_evm_with_inspector<DB: Database, I: Inspector<Self::Context<DB>>>(
        &self,
        db: DB,
        input: EvmEnv,
        inspector: I,
    ) -> Self::Evm<DB, I> {
        StrataEvm {
            inner: with_release_gas(
                EthEvmBuilder::new(db, input)
                    .activate_inspector(inspector)
                    .build()
                    .into_inner(),
            ),
            inspect: true,
            uncounted: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChainSpec, cost_per_state_byte, evm_env};
    use alloy_consensus::Header;
    use alloy_evm::revm::database::{CacheDB, EmptyDB};
    use alloy_evm::revm::primitives::TxKind;
    use alloy_evm::revm::state::{AccountInfo, Bytecode};
    use alloy_primitives::{U256, address};

    const GAS_LIMIT: u64 = 120_000_000;
    const SENDER: Address = address!("0x1000000000000000000000000000000000000001");
    const CONTRACT: Address = address!("0x2000000000000000000000000000000000000002");
    const TARGET: Address = address!("0x3000000000000000000000000000000000000003");

    /// An Amsterdam block's EVM over `accounts`, the sender funded.
    fn amsterdam_evm(accounts: &[(Address, Bytes)]) -> StrataEvm<CacheDB<EmptyDB>, NoOpInspector> {
        let spec = ChainSpec::from_test_network("Amsterdam").expect("a known network");
        let header = Header {
            gas_limit: GAS_LIMIT,
            base_fee_per_gas: Some(7),
            excess_blob_gas: Some(0),
            blob_gas_used: Some(0),
            timestamp: 1,
            ..Header::default()
        };
        let mut db = CacheDB::new(EmptyDB::default());
        let funded = AccountInfo {
            balance: U256::from(10u64).pow(U256::from(20)),
            ..AccountInfo::default()
        };
        db.insert_account_info(SENDER, funded);
        for (address, code) in accounts {
            let code = Bytecode::new_raw(code.clone());
            db.insert_account_info(*address, AccountInfo::default().with_code(code));
        }
        StrataEvmFactory.create_evm(db, evm_env(&spec, &header))
    }

    fn tx(kind: TxKind, input: Bytes, gas_limit: u64) -> TxEnv {
        TxEnv::builder()
            .caller(SENDER)
            .kind(kind)
            .data(input)
            .gas_limit(gas_limit)
            .gas_price(10)
            .chain_id(Some(1))
            .build()
            .expect("a valid transaction")
    }

    #[test]
    fn a_creating_transaction_pays_a_new_accounts_state_gas() {
        let cpsb = cost_per_state_byte(GAS_LIMIT);
        let mut evm = amsterdam_evm(&[]);
        // Init code that deploys nothing: all that grows the state is the account.
        let result = evm
            .transact_raw(tx(TxKind::Create, Bytes::from_static(&[0x00]), 1_000_000))
            .expect("the transaction runs");
        assert!(result.result.is_success());
        assert_eq!(result.result.gas().block_state_gas_used(), 112 * cpsb);
    }

    /// A CREATE that cannot pay its new account's state gas fails without
    /// reading the destination (which stays out of the block's access
    /// list); one that can reads it.
    #[test]
    fn a_create_short_of_its_state_gas_does_not_touch_the_destination() {
        let cpsb = cost_per_state_byte(GAS_LIMIT);
        // PUSH1 0 (length), PUSH1 0 (offset), PUSH1 0 (value), CREATE, STOP.
        let code = Bytes::from_static(&[0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0xf0, 0x00]);
        let destination = CONTRACT.create(0);
        for (gas_limit, pays) in [
            (21_000 + 40_000, false),
            (21_000 + 40_000 + 200 * cpsb, true),
        ] {
            let mut evm = amsterdam_evm(&[(CONTRACT, code.clone())]);
            let result = evm
                .transact_raw(tx(TxKind::Call(CONTRACT), Bytes::new(), gas_limit))
                .expect("the transaction runs");
            assert_eq!(result.result.is_success(), pays, "{:?}", result.result);
            assert_eq!(
                result.state.contains_key(&destination),
                pays,
                "gas limit {gas_limit}: the destination read only when the charge is paid"
            );
        }
    }

    /// A CREATE2 onto an account that is alive (here a collision: it has
    /// code) pays its new account's state gas all the same, before the
    /// child's gas is split off, and gets it back when the create fails:
    /// the child's 63/64 are of what the charge left.
    #[test]
    fn a_colliding_create2_pays_its_state_gas_before_the_split_and_gets_it_back() {
        let charge = 112 * cost_per_state_byte(GAS_LIMIT);
        // PUSH1 0 (salt), PUSH1 0 (length), PUSH1 0 (offset), PUSH1 0 (value), CREATE2, STOP.
        let code = Bytes::from_static(&[0x60, 0, 0x60, 0, 0x60, 0, 0x60, 0, 0xf5, 0x00]);
        let destination = CONTRACT.create2(B256::ZERO, alloy_primitives::keccak256([]));
        let stop = Bytes::from_static(&[0x00]);
        let mut evm = amsterdam_evm(&[
            (CONTRACT, code),
            (destination, stop.clone()),
            (TARGET, stop),
        ]);
        let gas_limit = 1_000_000;
        let intrinsic = evm
            .transact_raw(tx(TxKind::Call(TARGET), Bytes::new(), gas_limit))
            .expect("the transaction runs")
            .result
            .tx_gas_used();
        let result = evm
            .transact_raw(tx(TxKind::Call(CONTRACT), Bytes::new(), gas_limit))
            .expect("the transaction runs");
        assert!(result.result.is_success(), "{:?}", result.result);
        let static_gas = 4 * 3 + evm.inner.ctx.cfg.gas_params().create2_cost(0);
        let left = gas_limit - intrinsic - static_gas - charge;
        let child = left - left / 64;
        assert_eq!(
            result.result.tx_gas_used(),
            intrinsic + static_gas + child,
            "the child's gas burned by the collision, the charge given back"
        );
        assert_eq!(result.result.gas().block_state_gas_used(), 0);
    }

    /// A factory whose CREATE fails gets the create's state gas back; when
    /// the factory then reverts, that refund is undone with it: the sender
    /// pays the charge and the block counts it nowhere (what it returns
    /// keeps the refund).
    #[test]
    fn a_reverting_factory_undoes_its_failed_creates_refund() {
        let charge = 112 * cost_per_state_byte(GAS_LIMIT);
        const FACTORY: Address = address!("0x4000000000000000000000000000000000000004");
        // The caller: CALL(500,000 gas, FACTORY, no value, no data), STOP.
        let mut caller = vec![0x60, 0, 0x60, 0, 0x60, 0, 0x60, 0, 0x60, 0, 0x73];
        caller.extend_from_slice(FACTORY.as_slice());
        caller.extend_from_slice(&[0x62, 0x07, 0xa1, 0x20, 0xf1, 0x50, 0x00]);
        let factory = |last: u8| {
            // MSTORE the init code PUSH1 0 PUSH1 0 REVERT; CREATE from it
            // (a child that reverts); POP; then REVERT or RETURN, empty.
            Bytes::from(vec![
                0x64, 0x60, 0x00, 0x60, 0x00, 0xfd, 0x60, 0, 0x52, 0x60, 5, 0x60, 27, 0x60, 0,
                0xf0, 0x50, 0x60, 0, 0x60, 0, last,
            ])
        };
        // The reservoir holds exactly one create's charge.
        let gas_limit = (1 << 24) + charge;
        let used = |last: u8| {
            let mut evm = amsterdam_evm(&[
                (CONTRACT, Bytes::from(caller.clone())),
                (FACTORY, factory(last)),
            ]);
            let result = evm
                .transact_raw(tx(TxKind::Call(CONTRACT), Bytes::new(), gas_limit))
                .expect("the transaction runs");
            assert!(result.result.is_success(), "{:?}", result.result);
            (result.result.tx_gas_used(), evm.uncounted_state_gas())
        };
        let (reverts, returns) = (used(0xfd), used(0xf3));
        assert_eq!(
            reverts.0,
            returns.0 + charge,
            "the sender pays the undone refund"
        );
        assert_eq!(
            (reverts.1, returns.1),
            (charge, 0),
            "which the block counts nowhere"
        );
    }

    #[test]
    fn a_gas_limit_short_of_the_intrinsic_state_gas_is_refused() {
        let mut evm = amsterdam_evm(&[]);
        // Enough for the regular intrinsic gas (21,000 + 9,000 + calldata),
        // not for the new account's 131,488 of state gas.
        let refused = evm.transact_raw(tx(TxKind::Create, Bytes::from_static(&[0x00]), 100_000));
        assert!(
            matches!(
                refused,
                Err(EVMError::Transaction(
                    InvalidTransaction::CallGasCostMoreThanGasLimit { .. }
                ))
            ),
            "{refused:?}"
        );
    }

    #[test]
    fn extcodesize_costs_one_access() {
        // PUSH20 TARGET, EXTCODESIZE, STOP.
        let mut code = vec![0x73];
        code.extend_from_slice(TARGET.as_slice());
        code.extend_from_slice(&[0x3b, 0x00]);
        let mut evm = amsterdam_evm(&[
            (CONTRACT, code.into()),
            (TARGET, Bytes::from_static(&[0x00])),
        ]);
        let result = evm
            .transact_raw(tx(TxKind::Call(CONTRACT), Bytes::new(), 100_000))
            .expect("the transaction runs");
        // The transaction, the push, and a cold account access.
        assert_eq!(result.result.tx_gas_used(), 21_000 + 3 + 2_600);
    }

    #[test]
    fn a_slot_set_and_cleared_in_a_reverted_frame_is_paid_for() {
        // The callee: SSTORE(0, 1), SSTORE(0, 0), REVERT(0, 0).
        let callee = Bytes::from_static(&[
            0x60, 0x01, 0x60, 0x00, 0x55, 0x60, 0x00, 0x60, 0x00, 0x55, 0x60, 0x00, 0x80, 0xfd,
        ]);
        // The caller: CALL(gas, TARGET, 0, 0, 0, 0, 0), STOP.
        let mut caller = vec![0x60, 0x00, 0x80, 0x80, 0x80, 0x80, 0x73];
        caller.extend_from_slice(TARGET.as_slice());
        caller.extend_from_slice(&[0x5a, 0xf1, 0x00]);
        let slot_state_gas = 32 * cost_per_state_byte(GAS_LIMIT);
        let mut evm = amsterdam_evm(&[(CONTRACT, caller.into()), (TARGET, callee)]);
        let result = evm
            .transact_raw(tx(TxKind::Call(CONTRACT), Bytes::new(), 1_000_000))
            .expect("the transaction runs");
        let gas = result.result.gas();
        // The refund went to the callee's reservoir and left with it: the
        // sender pays the slot's state gas, which the block counts as state.
        assert_eq!(
            gas.tx_gas_used(),
            gas.block_regular_gas_used() + slot_state_gas
        );
        assert_eq!(gas.block_state_gas_used(), slot_state_gas);
    }
}
