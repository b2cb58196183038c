//! The EVM's methods: `eth_call`, `eth_estimateGas` and
//! `eth_createAccessList`, run by revm over the state after the block the
//! call names, in that block's environment under the chain's fork rules,
//! as reth and geth run them. Nothing a call writes is kept: revm runs
//! over a `CacheDB` over the block's reader, which also carries the
//! call's state overrides.
//!
//! - [`env`]: the block's header, environment and state; the call's
//!   transaction and its gas.
//! - [`overrides`]: state and block overrides.
//! - [`run`]: one run, and what its outcome answers (output, revert,
//!   halt).
//! - [`estimate`]: geth's binary search for the least gas.
//! - [`access_list`]: geth's access-list loop.

mod access_list;
mod db;
mod env;
mod estimate;
mod overrides;
mod run;

use alloy_eips::BlockId;
use alloy_eips::eip2930::AccessListResult;
use alloy_primitives::{Bytes, U64};
use alloy_rpc_types_eth::state::StateOverride;
use alloy_rpc_types_eth::{BlockOverrides, TransactionRequest};
use jsonrpsee::types::Params;

use crate::context::Context;
use crate::error::RpcError;
use crate::params::Positional;
use crate::stop::Stop;

/// `eth_call(transaction, block?, stateOverrides?, blockOverrides?)`: the
/// call's return data. A revert is error 3 with the revert data, a halt
/// -32000 naming it.
pub(crate) fn call(ctx: &Context, params: Params<'_>, stop: &Stop) -> Result<Bytes, RpcError> {
    let mut params = Positional::new(&params)?;
    let request: TransactionRequest = params.next("transaction")?;
    let block: Option<BlockId> = params.optional("block")?;
    let state: Option<StateOverride> = params.optional("state overrides")?;
    let block_overrides: Option<BlockOverrides> = params.optional("block overrides")?;
    params.end()?;
    let mut setup = env::Setup::new(ctx, "eth_call", request, block, state, block_overrides)?;
    let tx = setup.tx.clone();
    let result = run::transact(&setup.env, &mut setup.db, tx, stop)?;
    run::output(result)
}

/// `eth_estimateGas(transaction, block?, stateOverrides?)`: the least gas
/// the transaction succeeds with ([`estimate::estimate`]).
pub(crate) fn estimate_gas(
    ctx: &Context,
    params: Params<'_>,
    stop: &Stop,
) -> Result<U64, RpcError> {
    let mut params = Positional::new(&params)?;
    let request: TransactionRequest = params.next("transaction")?;
    let block: Option<BlockId> = params.optional("block")?;
    let state: Option<StateOverride> = params.optional("state overrides")?;
    params.end()?;
    let mut setup = env::Setup::new(ctx, "eth_estimateGas", request, block, state, None)?;
    Ok(U64::from(estimate::estimate(&mut setup, stop)?))
}

/// `eth_createAccessList(transaction, block?)`: the accounts and slots
/// the transaction touches and the gas it uses with them
/// ([`access_list::create`]).
pub(crate) fn create_access_list(
    ctx: &Context,
    params: Params<'_>,
    stop: &Stop,
) -> Result<AccessListResult, RpcError> {
    let mut params = Positional::new(&params)?;
    let request: TransactionRequest = params.next("transaction")?;
    let block: Option<BlockId> = params.optional("block")?;
    params.end()?;
    let mut setup = env::Setup::new(ctx, "eth_createAccessList", request, block, None, None)?;
    access_list::create(&mut setup, stop)
}
