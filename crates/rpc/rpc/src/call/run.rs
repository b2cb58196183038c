//! One run of a call's transaction over its state (nothing committed),
//! and what its outcome answers: the output of a success, error 3 with
//! the revert data (and the reason of an `Error(string)`) for a revert,
//! -32000 naming the halt for a halt, -32000 naming the rule for a
//! transaction the EVM refuses to run.

use alloy_evm::eth::EthEvmContext;
use alloy_evm::{Evm, EvmEnv, EvmFactory};
use alloy_primitives::Bytes;
use alloy_sol_types::{Revert, SolError};
use revm::context::TxEnv;
use revm::context::result::{EVMError, ExecutionResult, InvalidTransaction};
use revm::inspector::{Inspector, NoOpInspector};
use strata_chainspec::StrataEvmFactory;
use strata_storage::revm::RevmError;

use crate::call::db::{CallDb, revm_error};
use crate::error::RpcError;
use crate::stop::{Stop, stopped_error};

/// Why a run did not run: the transaction was refused, or the EVM failed
/// (boxed: revm's error is large).
pub(crate) type RunError = Box<EVMError<RevmError>>;

/// Runs `tx` over `db` in `env`, halted once `stop` is set; the changes
/// are dropped.
pub(crate) fn transact(
    env: &EvmEnv,
    db: &mut CallDb,
    tx: TxEnv,
    stop: &Stop,
) -> Result<ExecutionResult, RpcError> {
    try_transact(env, db, tx, stop).map_err(|error| evm_error(*error))
}

/// [`transact`], with a refused transaction left for the caller to judge.
pub(crate) fn try_transact(
    env: &EvmEnv,
    db: &mut CallDb,
    tx: TxEnv,
    stop: &Stop,
) -> Result<ExecutionResult, RunError> {
    traced(env, db, tx, NoOpInspector, stop).map(|(result, _)| result)
}

/// Runs `tx` with `inspector` watching, halted once `stop` is set; returns
/// the outcome and the inspector. A stopped run is an error (its halted
/// outcome says nothing of the transaction).
pub(crate) fn traced<'a, I>(
    env: &EvmEnv,
    db: &'a mut CallDb,
    tx: TxEnv,
    inspector: I,
    stop: &Stop,
) -> Result<(ExecutionResult, I), RunError>
where
    I: Inspector<EthEvmContext<&'a mut CallDb>> + Clone,
{
    let watched = (stop.halter(), inspector);
    let mut evm = StrataEvmFactory.create_evm_with_inspector(db, env.clone(), watched);
    let result = evm.transact(tx).map_err(Box::new)?.result;
    if stop.is_set() {
        return Err(Box::new(EVMError::Custom(stopped_error())));
    }
    Ok((result, evm.inspector().1.clone()))
}

/// What `eth_call` answers for an outcome.
pub(crate) fn output(result: ExecutionResult) -> Result<Bytes, RpcError> {
    match result {
        ExecutionResult::Success { output, .. } => Ok(output.into_data()),
        ExecutionResult::Revert { output, .. } => Err(reverted(output)),
        ExecutionResult::Halt { reason, .. } => Err(RpcError::Halted(reason.to_string())),
    }
}

/// A revert's error: its data, and the reason when the data is an
/// `Error(string)`.
pub(crate) fn reverted(data: Bytes) -> RpcError {
    let reason = Revert::abi_decode(&data).ok().map(|revert| revert.reason);
    RpcError::Reverted { data, reason }
}

/// Whether `error` says the gas is below what the transaction needs before
/// it runs (intrinsic gas, or EIP-7623's calldata floor): a gas limit
/// too low, not a transaction that cannot run.
pub(crate) fn is_too_little_gas(error: &RunError) -> bool {
    matches!(
        error.as_ref(),
        EVMError::Transaction(
            InvalidTransaction::CallGasCostMoreThanGasLimit { .. }
                | InvalidTransaction::GasFloorMoreThanGasLimit { .. }
        )
    )
}

/// A run's failure as the call's error.
pub(crate) fn evm_error(error: EVMError<RevmError>) -> RpcError {
    match error {
        EVMError::Transaction(error) => RpcError::Transaction(error.to_string()),
        EVMError::Header(error) => RpcError::Transaction(error.to_string()),
        EVMError::Database(error) => revm_error(error),
        other => RpcError::Evm(other.to_string()),
    }
}
