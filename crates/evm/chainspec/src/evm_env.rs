//! The EVM environment of a block: the one place a block's header and its
//! chain's fork rules become alloy-evm's `EvmEnv` (the spec id by number
//! and timestamp, the chain id, the blob parameters and blob fee, the
//! Osaka transaction gas cap, prevrandao after the merge, Amsterdam's
//! state gas). Blocks executed
//! for import ([`crate::execute_block`]), the in-memory baseline and the
//! calls `strata serve` answers all take their environment from here.

use alloy_consensus::Header;
use alloy_evm::EvmEnv;
use alloy_hardforks::EthereumHardforks;

use crate::amsterdam_gas::amsterdam_gas_params;
use crate::chain_spec::ChainSpec;

/// The environment block `header` executes in on the chain `spec`.
///
/// On a chain that merges by total difficulty and whose merge block `spec`
/// does not fix yet ([`ChainSpec::pending_terminal_total_difficulty`]), a
/// header after block 0 with difficulty zero is taken to be past the merge
/// (every proof-of-work block has a difficulty): a reader that has the
/// header alone, not the chain's total difficulty, gets the same
/// environment the importer had.
pub fn evm_env(spec: &ChainSpec, header: &Header) -> EvmEnv {
    let merged;
    let spec = if spec.pending_terminal_total_difficulty().is_some()
        && header.number > 0
        && header.difficulty.is_zero()
    {
        merged = spec.with_merge_at(header.number);
        &merged
    } else {
        spec
    };
    let mut env = EvmEnv::for_eth_block(
        header,
        spec,
        spec.chain_id,
        spec.blob_params_at(header.timestamp),
    );
    if spec.is_amsterdam_active_at_timestamp(header.timestamp) {
        // EIP-8037 (state gas, and the block's gas as the larger of its
        // regular and state gas), as the bal@v5.7.0 release has it; revm's
        // later EIP-2780 (the intrinsic gas decomposed) is not part of it.
        env.cfg_env
            .set_gas_params(amsterdam_gas_params(header.gas_limit));
        env.cfg_env.enable_amsterdam_eip8037 = true;
        env.cfg_env.enable_amsterdam_eip2780 = false;
        // Nor is EIP-8246 (a destroyed account keeps its balance): what it
        // holds at the end is burned (`AmsterdamHandler`).
        env.cfg_env.amsterdam_eip8246_delayed_clear_disabled = true;
    }
    env
}
