//! A call's overrides: of accounts (balance, nonce, code, the whole
//! storage or some slots) written into the call's `CacheDB`, of the block
//! (number, time, gas limit, coinbase, prevrandao, base fee, blob base
//! fee, block hashes) into its environment, by alloy-evm's functions, as
//! reth applies them.

use alloy_evm::EvmEnv;
use alloy_evm::overrides::{StateOverrideError, apply_block_overrides, apply_state_overrides};
use alloy_rpc_types_eth::BlockOverrides;
use alloy_rpc_types_eth::state::StateOverride;

use crate::call::db::{CallDb, revm_error};
use crate::error::RpcError;

/// Writes the account overrides into `db`. `movePrecompileToAddress` is
/// refused (strata has no precompile to move); so is an account given
/// both `state` and `stateDiff`, or code that does not decode.
pub(crate) fn apply_state(overrides: StateOverride, db: &mut CallDb) -> Result<(), RpcError> {
    if let Some((address, _)) = overrides
        .iter()
        .find(|(_, account)| account.move_precompile_to.is_some())
    {
        return Err(RpcError::InvalidParams(format!(
            "state overrides: {address}: movePrecompileToAddress is not supported"
        )));
    }
    apply_state_overrides(overrides, db).map_err(|error| match error {
        StateOverrideError::Database(error) => revm_error(error),
        other => RpcError::InvalidParams(format!("state overrides: {other}")),
    })
}

/// Writes the block overrides into `env` (and the block hashes into `db`).
/// The fork rules stay those of the block the call names.
pub(crate) fn apply_block(overrides: BlockOverrides, db: &mut CallDb, env: &mut EvmEnv) {
    apply_block_overrides(overrides, db, &mut env.block_env);
}
