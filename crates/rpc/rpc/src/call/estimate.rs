//! `eth_estimateGas`: geth's search for the least gas a transaction
//! succeeds with (go-ethereum's `eth/gasestimator`), without its 1.5 %
//! tolerance: the answer is exact, the transaction succeeds with it and
//! fails with one gas less.
//!
//! The upper bound is the gas the request names (when at least 21,000),
//! else the block's gas limit; with a gas price, at most what the
//! sender's balance pays for after the value; at most the server's gas
//! cap. A plain transfer to an account without code is tried at 21,000
//! first. If the transaction fails at the upper bound, a revert answers
//! the revert error (code 3), running out of gas "gas required exceeds
//! allowance", another halt names the halt. Otherwise the search runs
//! between the gas the unbounded run used, less one, and the bound,
//! trying geth's optimistic guess first and halving towards the low side.

use alloy_primitives::TxKind;
use revm::Database;
use revm::context::result::{ExecutionResult, HaltReason};

use crate::call::db::revm_error;
use crate::call::env::{Setup, allowance};
use crate::call::run::{evm_error, is_too_little_gas, reverted, try_transact};
use crate::error::RpcError;
use crate::stop::Stop;

/// The gas of a plain ether transfer.
const TRANSFER_GAS: u64 = 21_000;
/// The stipend a value-bearing CALL gives its callee (geth adds it to its
/// optimistic guess).
const CALL_STIPEND: u64 = 2_300;

/// A run at a gas limit: succeeded, or failed (with its outcome when it
/// ran, without when the gas did not cover its intrinsic cost).
enum Trial {
    Succeeded(ExecutionResult),
    Failed(Option<ExecutionResult>),
}

/// The least gas `setup`'s transaction succeeds with.
pub(crate) fn estimate(setup: &mut Setup, stop: &Stop) -> Result<u64, RpcError> {
    let mut hi = match setup.named_gas {
        Some(gas) if gas >= TRANSFER_GAS => gas,
        _ => setup.env.block_env.gas_limit,
    };
    if setup.tx.gas_price > 0 {
        hi = hi.min(allowance(&mut setup.db, &setup.tx)?);
    }
    hi = hi.min(setup.gas_cap);

    if is_plain_transfer(setup)? && matches!(trial(setup, TRANSFER_GAS, stop)?, Trial::Succeeded(_))
    {
        return Ok(TRANSFER_GAS);
    }
    let first = match trial(setup, hi, stop)? {
        Trial::Succeeded(result) => result,
        Trial::Failed(Some(ExecutionResult::Revert { output, .. })) => {
            return Err(reverted(output));
        }
        Trial::Failed(Some(ExecutionResult::Halt { reason, .. }))
            if !matches!(reason, HaltReason::OutOfGas(_)) =>
        {
            return Err(RpcError::Halted(reason.to_string()));
        }
        Trial::Failed(_) => {
            return Err(RpcError::Transaction(format!(
                "gas required exceeds allowance ({hi})"
            )));
        }
    };
    let used = first.tx_gas_used();
    let mut lo = used.saturating_sub(1);
    let optimistic = used
        .saturating_add(first.gas().inner_refunded())
        .saturating_add(CALL_STIPEND)
        .saturating_mul(64)
        / 63;
    if optimistic < hi {
        match trial(setup, optimistic, stop)? {
            Trial::Succeeded(_) => hi = optimistic,
            Trial::Failed(_) => lo = optimistic,
        }
    }
    while lo + 1 < hi {
        let mid = ((lo + hi) / 2).min(lo.saturating_mul(2).max(lo + 1));
        match trial(setup, mid, stop)? {
            Trial::Succeeded(_) => hi = mid,
            Trial::Failed(_) => lo = mid,
        }
    }
    Ok(hi)
}

/// Whether the transaction sends no data to an account without code.
fn is_plain_transfer(setup: &mut Setup) -> Result<bool, RpcError> {
    let TxKind::Call(to) = setup.tx.kind else {
        return Ok(false);
    };
    if !setup.tx.data.is_empty() {
        return Ok(false);
    }
    let account = setup.db.basic(to).map_err(revm_error)?;
    Ok(account.is_none_or(|account| account.is_empty_code_hash()))
}

/// The transaction run at `gas`.
fn trial(setup: &mut Setup, gas: u64, stop: &Stop) -> Result<Trial, RpcError> {
    let mut tx = setup.tx.clone();
    tx.gas_limit = gas;
    match try_transact(&setup.env, &mut setup.db, tx, stop) {
        Ok(result) if result.is_success() => Ok(Trial::Succeeded(result)),
        Ok(result) => Ok(Trial::Failed(Some(result))),
        Err(error) if is_too_little_gas(&error) => Ok(Trial::Failed(None)),
        Err(error) => Err(evm_error(*error)),
    }
}
