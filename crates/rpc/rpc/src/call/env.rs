//! What a call runs in: the state after the block it names (a revm
//! `CacheDB` over that block's reader, with the call's overrides), the
//! block's environment from its header under the chain's fork rules
//! (`strata_chainspec::evm_env`), with the rules relaxed as reth and geth
//! relax them for calls, and the call's transaction with its gas.

use alloy_consensus::Header;
use alloy_eips::BlockId;
use alloy_evm::EvmEnv;
use alloy_evm::call::{CallError, caller_gas_allowance};
use alloy_evm::rpc::TryIntoTxEnv;
use alloy_rlp::Decodable;
use alloy_rpc_types_eth::state::StateOverride;
use alloy_rpc_types_eth::{BlockOverrides, TransactionRequest};
use revm::context::TxEnv;
use revm::database::CacheDB;
use strata_storage::StateReader;
use strata_storage::revm::ReaderDatabase;

use crate::block::{reader_at, resolve};
use crate::call::db::{CallDb, revm_error};
use crate::call::overrides;
use crate::context::Context;
use crate::error::RpcError;

/// A call ready to run.
pub(crate) struct Setup {
    /// The block's environment, relaxed for calls.
    pub(crate) env: EvmEnv,
    /// The state after the block, with the overrides.
    pub(crate) db: CallDb,
    /// The transaction, with the gas it runs with.
    pub(crate) tx: TxEnv,
    /// The gas the request named, if any.
    pub(crate) named_gas: Option<u64>,
    /// The most gas a call may run with (`--rpc-gas-cap`).
    pub(crate) gas_cap: u64,
}

impl Setup {
    /// `request` at `block` with the overrides, for `method`: refused when
    /// the server knows no fork rules, the block is not served or its
    /// header is not kept, an override or the transaction's fees are
    /// malformed, or (with a gas price and no gas) the sender cannot pay
    /// for the value.
    pub(crate) fn new(
        ctx: &Context,
        method: &'static str,
        request: TransactionRequest,
        block: Option<BlockId>,
        state: Option<StateOverride>,
        block_overrides: Option<BlockOverrides>,
    ) -> Result<Self, RpcError> {
        let spec = ctx.chain.spec(&ctx.db, method)?;
        let reader = reader_at(&ctx.db, resolve(&ctx.db, block)?)?;
        let header = header_of(&reader)?;
        let mut env = strata_chainspec::evm_env(&spec, &header);
        relax_for_calls(&mut env, &request);
        let mut db = CacheDB::new(ReaderDatabase(reader));
        if let Some(block_overrides) = block_overrides {
            overrides::apply_block(block_overrides, &mut db, &mut env);
        }
        if let Some(state) = state {
            overrides::apply_state(state, &mut db)?;
        }
        let named_gas = request.gas;
        let mut tx: TxEnv = request
            .try_into_tx_env(&env)
            .map_err(|error| RpcError::Transaction(error.to_string()))?;
        let gas_cap = ctx.limits.gas_cap;
        tx.gas_limit = match named_gas {
            Some(gas) => gas.min(gas_cap),
            None if tx.gas_price > 0 => allowance(&mut db, &tx)?.min(gas_cap),
            None => gas_cap,
        };
        Ok(Self {
            env,
            db,
            tx,
            named_gas,
            gas_cap,
        })
    }
}

/// The header of the block `reader` shows, decoded.
fn header_of(reader: &StateReader) -> Result<Header, RpcError> {
    let number = reader.block().ok_or(RpcError::Empty)?;
    let bytes = reader
        .block_header(number)?
        .ok_or(RpcError::NoHeader(number))?;
    Header::decode(&mut bytes.as_ref())
        .map_err(|error| RpcError::Evm(format!("block {number}'s stored header: {error}")))
}

/// What reth and geth relax for a call: no nonce check (the sender's
/// nonce is whatever it is), a sender with code allowed (EIP-3607 off),
/// no block gas limit and no transaction gas cap (the server's gas cap
/// bounds a call instead), and, when the call names no gas price, no
/// base-fee check (it runs at price zero and so needs no balance for gas,
/// as geth's `NoBaseFee`).
fn relax_for_calls(env: &mut EvmEnv, request: &TransactionRequest) {
    let cfg = &mut env.cfg_env;
    cfg.disable_nonce_check = true;
    cfg.disable_eip3607 = true;
    cfg.disable_block_gas_limit = true;
    cfg.tx_gas_limit_cap = Some(u64::MAX);
    cfg.disable_base_fee = !names_a_price(request);
}

/// Whether the request names a non-zero gas price or fee.
pub(crate) fn names_a_price(request: &TransactionRequest) -> bool {
    [
        request.gas_price,
        request.max_fee_per_gas,
        request.max_priority_fee_per_gas,
    ]
    .iter()
    .any(|fee| fee.is_some_and(|fee| fee > 0))
}

/// The gas the sender can pay for at the transaction's price after its
/// value; refused when it cannot pay the value.
pub(crate) fn allowance(db: &mut CallDb, tx: &TxEnv) -> Result<u64, RpcError> {
    caller_gas_allowance(db, tx).map_err(|error| match error {
        CallError::Database(error) => revm_error(error),
        CallError::InsufficientFunds(error) => RpcError::Transaction(error.to_string()),
    })
}
