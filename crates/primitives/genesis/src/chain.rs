//! A genesis as execution clients hold it, `alloy_genesis::Genesis`: its
//! allocation in strata's form, and its block header — the header whose
//! hash BLOCKHASH(0) serves in block 1.
//!
//! The header is block 0 as the chain's configuration shapes it at the
//! genesis block and timestamp: a base fee from London on (the genesis's,
//! else EIP-1559's initial one), the empty withdrawals root from Shanghai,
//! blob gas fields and a zero parent beacon root from Cancun, the empty
//! requests hash from Prague; empty transactions, receipts and ommers.

use alloy_consensus::Header;
use alloy_consensus::constants::{EMPTY_OMMER_ROOT_HASH, EMPTY_ROOT_HASH};
use alloy_eips::eip1559::INITIAL_BASE_FEE;
use alloy_eips::eip7685::EMPTY_REQUESTS_HASH;
use alloy_genesis::Genesis;
use alloy_primitives::{B256, U256, keccak256};
use alloy_rlp::EMPTY_LIST_CODE;

use super::{GenesisAccount, GenesisAlloc};
pub use fork_order::{Activation, ForkOrderError, check_fork_order};

mod fork_order;

/// The allocation of `genesis`, zero storage values dropped.
pub fn alloc_of(genesis: &Genesis) -> GenesisAlloc {
    genesis
        .alloc
        .iter()
        .map(|(address, account)| {
            let storage = account
                .storage
                .iter()
                .flatten()
                .map(|(slot, value)| (*slot, U256::from_be_bytes(value.0)))
                .filter(|(_, value)| !value.is_zero())
                .collect();
            let account = GenesisAccount {
                nonce: account.nonce.unwrap_or(0),
                balance: account.balance,
                code: account.code.clone().unwrap_or_default(),
                storage,
            };
            (*address, account)
        })
        .collect()
}

/// A genesis whose header strata cannot build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The configuration's forks are out of order.
    #[error("genesis config: {0}")]
    ForkOrder(#[from] ForkOrderError),
}

/// Block 0's header for `genesis` whose allocation has `state_root`.
/// Refuses a configuration whose forks are out of order
/// ([`check_fork_order`]). With Amsterdam active at genesis, block 0 has
/// the empty block's access list (its hash is that of an empty RLP list)
/// and the genesis's slot number (0 when it gives none), as the
/// execution-spec-tests fixtures have it.
pub fn genesis_header(genesis: &Genesis, state_root: B256) -> Result<Header, HeaderError> {
    check_fork_order(genesis)?;
    let config = &genesis.config;
    let number = genesis.number.unwrap_or(0);
    let timestamp = genesis.timestamp;
    let at = |fork: Option<u64>| fork.is_some_and(|time| timestamp >= time);
    let amsterdam = at(config.amsterdam_time);
    let london = config.is_london_active_at_block(number);
    let shanghai = at(config.shanghai_time);
    let cancun = at(config.cancun_time);
    let prague = at(config.prague_time);
    Ok(Header {
        parent_hash: genesis.parent_hash.unwrap_or_default(),
        ommers_hash: EMPTY_OMMER_ROOT_HASH,
        beneficiary: genesis.coinbase,
        state_root,
        transactions_root: EMPTY_ROOT_HASH,
        receipts_root: EMPTY_ROOT_HASH,
        logs_bloom: Default::default(),
        difficulty: genesis.difficulty,
        number,
        gas_limit: genesis.gas_limit,
        gas_used: 0,
        timestamp,
        extra_data: genesis.extra_data.clone(),
        mix_hash: genesis.mix_hash,
        nonce: genesis.nonce.into(),
        base_fee_per_gas: london.then(|| {
            genesis
                .base_fee_per_gas
                .map_or(INITIAL_BASE_FEE, |fee| fee as u64)
        }),
        withdrawals_root: shanghai.then_some(EMPTY_ROOT_HASH),
        blob_gas_used: cancun.then(|| genesis.blob_gas_used.unwrap_or(0)),
        excess_blob_gas: cancun.then(|| genesis.excess_blob_gas.unwrap_or(0)),
        parent_beacon_block_root: cancun.then_some(B256::ZERO),
        requests_hash: prague.then_some(EMPTY_REQUESTS_HASH),
        block_access_list_hash: amsterdam.then(|| keccak256([EMPTY_LIST_CODE])),
        slot_number: amsterdam.then(|| genesis.slot_number.unwrap_or(0)),
    })
}
