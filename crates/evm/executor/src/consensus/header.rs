//! Header checks: alone (fields each fork requires or forbids, sizes) and
//! against the parent (number, time, gas limit, base fee, blob gas,
//! difficulty).

use alloy_consensus::{EMPTY_OMMER_ROOT_HASH, Header};
use alloy_eips::eip1559::{BaseFeeParams, GAS_LIMIT_BOUND_DIVISOR, INITIAL_BASE_FEE};
use alloy_eips::eip4844::DATA_GAS_PER_BLOB;
use alloy_hardforks::{EthereumHardfork, EthereumHardforks};
use alloy_primitives::U256;

use super::difficulty::ethash_difficulty;
use crate::ChainSpec;
use crate::error::InvalidBlock;

/// The most extra data a header may carry.
const MAX_EXTRA_DATA: usize = 32;
/// The smallest gas limit a block may have.
const MIN_GAS_LIMIT: u64 = 5000;
/// The largest gas limit a block may have (geth's and reth's bound).
const MAX_GAS_LIMIT: u64 = (1 << 63) - 1;
/// The extra data of the DAO fork's first blocks.
const DAO_EXTRA_DATA: &[u8] = b"dao-hard-fork";
/// How many blocks from the DAO fork's must carry [`DAO_EXTRA_DATA`].
const DAO_EXTRA_DATA_BLOCKS: u64 = 10;

/// Checks what a header must satisfy on its own under `spec`.
pub fn check_header(spec: &ChainSpec, header: &Header) -> Result<(), InvalidBlock> {
    if header.extra_data.len() > MAX_EXTRA_DATA {
        return Err(InvalidBlock::ExtraDataTooLong(header.extra_data.len()));
    }
    if header.gas_used > header.gas_limit {
        return Err(InvalidBlock::GasUsedAboveLimit {
            used: header.gas_used,
            limit: header.gas_limit,
        });
    }
    check_dao_extra_data(spec, header)?;
    let number = header.number;
    let timestamp = header.timestamp;
    field_by_fork(
        "baseFeePerGas",
        header.base_fee_per_gas.is_some(),
        spec.is_london_active_at_block(number),
    )?;
    field_by_fork(
        "withdrawalsRoot",
        header.withdrawals_root.is_some(),
        spec.is_shanghai_active_at_timestamp(timestamp),
    )?;
    let cancun = spec.is_cancun_active_at_timestamp(timestamp);
    field_by_fork("blobGasUsed", header.blob_gas_used.is_some(), cancun)?;
    field_by_fork("excessBlobGas", header.excess_blob_gas.is_some(), cancun)?;
    field_by_fork(
        "parentBeaconBlockRoot",
        header.parent_beacon_block_root.is_some(),
        cancun,
    )?;
    field_by_fork(
        "requestsHash",
        header.requests_hash.is_some(),
        spec.is_prague_active_at_timestamp(timestamp),
    )?;
    let amsterdam = spec.is_amsterdam_active_at_timestamp(timestamp);
    field_by_fork(
        "blockAccessListHash",
        header.block_access_list_hash.is_some(),
        amsterdam,
    )?;
    field_by_fork("slotNumber", header.slot_number.is_some(), amsterdam)?;
    if let (Some(used), Some(params)) = (header.blob_gas_used, spec.blob_params_at(timestamp)) {
        let max = params.max_blob_gas_per_block();
        if used % DATA_GAS_PER_BLOB != 0 || used > max {
            return Err(InvalidBlock::BlobGasUsed {
                expected: max.min(used - used % DATA_GAS_PER_BLOB),
                got: used,
            });
        }
    }
    if spec.is_paris_active_at_block(number) {
        if !header.difficulty.is_zero() {
            return Err(InvalidBlock::Difficulty {
                expected: U256::ZERO,
                got: header.difficulty,
            });
        }
        let nonce = u64::from_be_bytes(header.nonce.0);
        if nonce != 0 {
            return Err(InvalidBlock::Nonce(nonce));
        }
        if header.ommers_hash != EMPTY_OMMER_ROOT_HASH {
            return Err(InvalidBlock::BodyRoot {
                what: "ommers hash",
                header: header.ommers_hash,
                computed: EMPTY_OMMER_ROOT_HASH,
            });
        }
    }
    Ok(())
}

/// Checks `header` against its `parent` under `spec`: the parent must be
/// the one it names (the caller looks it up by hash).
pub fn check_against_parent(
    spec: &ChainSpec,
    header: &Header,
    parent: &Header,
) -> Result<(), InvalidBlock> {
    let expected_number = parent.number.saturating_add(1);
    if header.number != expected_number {
        return Err(InvalidBlock::Number {
            expected: expected_number,
            got: header.number,
        });
    }
    if header.timestamp <= parent.timestamp {
        return Err(InvalidBlock::Timestamp {
            parent: parent.timestamp,
            got: header.timestamp,
        });
    }
    check_gas_limit(spec, header, parent)?;
    check_base_fee(spec, header, parent)?;
    check_excess_blob_gas(spec, header, parent)?;
    if !spec.is_paris_active_at_block(header.number) {
        let expected = ethash_difficulty(spec, header, parent);
        if header.difficulty != expected {
            return Err(InvalidBlock::Difficulty {
                expected,
                got: header.difficulty,
            });
        }
    }
    Ok(())
}

/// A field that its fork requires, or that must be absent before it.
fn field_by_fork(field: &'static str, present: bool, active: bool) -> Result<(), InvalidBlock> {
    match (present, active) {
        (false, true) => Err(InvalidBlock::HeaderField {
            field,
            problem: "is missing",
        }),
        (true, false) => Err(InvalidBlock::HeaderField {
            field,
            problem: "is not allowed before its fork",
        }),
        _ => Ok(()),
    }
}

/// The DAO fork's first ten blocks carry "dao-hard-fork" as extra data
/// (on a chain that supports the fork).
fn check_dao_extra_data(spec: &ChainSpec, header: &Header) -> Result<(), InvalidBlock> {
    if !spec.dao_fork_support {
        return Ok(());
    }
    let Some(fork_block) = spec
        .ethereum_fork_activation(EthereumHardfork::Dao)
        .block_number()
    else {
        return Ok(());
    };
    let within = header.number >= fork_block && header.number - fork_block < DAO_EXTRA_DATA_BLOCKS;
    if within && header.extra_data.as_ref() != DAO_EXTRA_DATA {
        return Err(InvalidBlock::DaoExtraData);
    }
    Ok(())
}

/// The gas limit stays within 1/1024 of the parent's (the parent's doubled
/// at the London block, EIP-1559's elasticity) and within bounds.
fn check_gas_limit(spec: &ChainSpec, header: &Header, parent: &Header) -> Result<(), InvalidBlock> {
    let parent_limit = if spec
        .ethereum_fork_activation(EthereumHardfork::London)
        .transitions_at_block(header.number)
    {
        parent
            .gas_limit
            .saturating_mul(BaseFeeParams::ethereum().elasticity_multiplier as u64)
    } else {
        parent.gas_limit
    };
    let bound = parent_limit / GAS_LIMIT_BOUND_DIVISOR;
    // Strictly within the bound, as geth and reth check it.
    let min = (parent_limit - bound.min(parent_limit))
        .saturating_add(1)
        .max(MIN_GAS_LIMIT);
    let max = parent_limit
        .saturating_add(bound)
        .saturating_sub(1)
        .min(MAX_GAS_LIMIT);
    if header.gas_limit < min || header.gas_limit > max {
        return Err(InvalidBlock::GasLimit {
            parent: parent_limit,
            min,
            max,
            got: header.gas_limit,
        });
    }
    Ok(())
}

/// EIP-1559: the base fee the parent implies (1 gwei at the London block).
fn check_base_fee(spec: &ChainSpec, header: &Header, parent: &Header) -> Result<(), InvalidBlock> {
    let Some(got) = header.base_fee_per_gas else {
        return Ok(());
    };
    let expected = if spec
        .ethereum_fork_activation(EthereumHardfork::London)
        .transitions_at_block(header.number)
    {
        INITIAL_BASE_FEE
    } else {
        parent
            .next_block_base_fee(BaseFeeParams::ethereum())
            .ok_or(InvalidBlock::HeaderField {
                field: "baseFeePerGas (of the parent)",
                problem: "is missing",
            })?
    };
    if got != expected {
        return Err(InvalidBlock::BaseFee { expected, got });
    }
    Ok(())
}

/// EIP-4844: the excess blob gas the parent implies (zero at the Cancun
/// block, whose parent has no blob fields).
fn check_excess_blob_gas(
    spec: &ChainSpec,
    header: &Header,
    parent: &Header,
) -> Result<(), InvalidBlock> {
    let (Some(got), Some(params)) = (
        header.excess_blob_gas,
        spec.blob_params_at(header.timestamp),
    ) else {
        return Ok(());
    };
    let expected = if spec.is_cancun_active_at_timestamp(parent.timestamp) {
        parent.next_block_excess_blob_gas(params).unwrap_or(0)
    } else {
        0
    };
    if got != expected {
        return Err(InvalidBlock::ExcessBlobGas { expected, got });
    }
    Ok(())
}
