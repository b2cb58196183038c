//! Amsterdam's gas table as the execution-spec-tests release `bal@v5.7.0`
//! defines it (EIP-8037 with its cost per state byte set by the block's gas
//! limit, EIP-7976 and EIP-7981), over Osaka's.
//!
//! revm 43 builds Amsterdam's table for a later devnet (EIP-8038's access
//! costs, EIP-2780's split intrinsic gas, a fixed cost per state byte of
//! 1,530); the fixtures strata is tested against, and the chains it
//! generates, use the release above.

use alloy_evm::revm::context_interface::cfg::gas_params::{GasId, GasParams};
use alloy_evm::revm::primitives::hardfork::SpecId;

/// EIP-8037: the state bytes a new storage slot stands for.
const SLOT_BYTES: u64 = 32;
/// EIP-8037: the state bytes a new account stands for.
const ACCOUNT_BYTES: u64 = 112;
/// EIP-8037: the state bytes an EIP-7702 delegation stands for.
const DELEGATION_BYTES: u64 = 23;
/// EIP-8037: the regular gas of CREATE, CREATE2 and a creating transaction
/// (as a value-bearing call's).
const CREATE_REGULAR: u64 = 9_000;
/// EIP-8037: the regular gas of an authorization (EIP-7702), its
/// delegation's bytes now paid as state gas.
const AUTHORIZATION_REGULAR: u64 = 7_500;
/// EIP-8037: SSTORE of a new slot costs in regular gas what an update does
/// (`GAS_STORAGE_UPDATE - GAS_COLD_SLOAD`), less the warm access revm
/// charges apart.
const SLOT_SET_REGULAR: u64 = 2_900 - 100;
/// EIP-7976 and EIP-7981: the floor's gas per token, every byte of calldata
/// and of the access list counting four tokens (64 gas a byte).
const FLOOR_PER_TOKEN: u64 = 16;
/// EIP-7981: the access list's data, charged at the floor's 64 gas a byte.
const ACCESS_LIST_BYTE: u64 = 64;

/// EIP-8037's cost per state byte at a block gas limit: the growth target
/// (100 GiB a year at half the gas limit) quantised to five significant
/// bits around an offset, at least 1.
pub fn cost_per_state_byte(gas_limit: u64) -> u64 {
    const TARGET_GROWTH_PER_YEAR: u128 = 100 * (1 << 30);
    const BLOCKS_PER_YEAR: u128 = 2_628_000;
    const SIGNIFICANT_BITS: u32 = 5;
    const OFFSET: u128 = 9_578;
    let raw = (u128::from(gas_limit) * BLOCKS_PER_YEAR).div_ceil(2 * TARGET_GROWTH_PER_YEAR);
    let shifted = raw + OFFSET;
    let bits = u128::BITS - shifted.leading_zeros();
    let shift = bits.saturating_sub(SIGNIFICANT_BITS);
    let quantised = ((shifted >> shift) << shift).saturating_sub(OFFSET);
    u64::try_from(quantised).unwrap_or(u64::MAX).max(1)
}

/// The gas table of an Amsterdam block with gas limit `gas_limit`.
pub fn amsterdam_gas_params(gas_limit: u64) -> GasParams {
    let cpsb = cost_per_state_byte(gas_limit);
    let mut params = GasParams::new_spec(SpecId::OSAKA);
    params.override_gas([
        // EIP-8037: state creation as state gas.
        (GasId::sstore_set_state_gas(), SLOT_BYTES * cpsb),
        (GasId::new_account_state_gas(), ACCOUNT_BYTES * cpsb),
        (GasId::create_state_gas(), ACCOUNT_BYTES * cpsb),
        (GasId::code_deposit_state_gas(), cpsb),
        (
            GasId::tx_eip7702_state_gas_bytecode(),
            DELEGATION_BYTES * cpsb,
        ),
        // EIP-8037: what stays regular gas.
        (GasId::code_deposit_cost(), 0),
        (GasId::sstore_set_without_load_cost(), SLOT_SET_REGULAR),
        (GasId::sstore_set_refund(), SLOT_SET_REGULAR),
        (GasId::create(), CREATE_REGULAR),
        (GasId::tx_create_cost(), CREATE_REGULAR),
        (GasId::new_account_cost(), 0),
        (GasId::new_account_cost_for_selfdestruct(), 0),
        (GasId::tx_eip7702_regular_gas(), AUTHORIZATION_REGULAR),
        (GasId::tx_eip7702_regular_refund(), 0),
        // EIP-7976: the calldata floor at 64 gas a byte.
        (GasId::tx_floor_cost_per_token(), FLOOR_PER_TOKEN),
        (
            GasId::tx_floor_token_zero_byte_multiplier(),
            params.get(GasId::tx_token_non_zero_byte_multiplier()),
        ),
        // EIP-7981: the access list's data at the floor's rate, and in the floor.
        (GasId::tx_access_list_floor_byte_multiplier(), 4),
        (
            GasId::tx_access_list_address_cost(),
            params.get(GasId::tx_access_list_address_cost()) + 20 * ACCESS_LIST_BYTE,
        ),
        (
            GasId::tx_access_list_storage_key_cost(),
            params.get(GasId::tx_access_list_storage_key_cost()) + 32 * ACCESS_LIST_BYTE,
        ),
    ]);
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_per_state_byte_follows_the_gas_limit_in_steps() {
        // The gas limit of the release's fixtures, 120M: 32 bytes of a
        // new slot cost 37,568 state gas there.
        assert_eq!(cost_per_state_byte(120_000_000), 1_174);
        assert_eq!(cost_per_state_byte(0), 1);
        assert!(cost_per_state_byte(60_000_000) < cost_per_state_byte(120_000_000));
        assert!(cost_per_state_byte(240_000_000) > cost_per_state_byte(120_000_000));
    }
}
