//! strata-chain-gen: mainnet-shaped chains of real signed transactions,
//! for executing blocks over strata and over revm's in-memory database.
//!
//! The generator is its own oracle, independent of strata's store: every
//! block is executed by alloy-evm's `EthBlockExecutor` over a revm `State`
//! over an in-memory `CacheDB`, and its header carries what that execution
//! gave — gas used, receipts root, logs bloom — and the state root that
//! alloy-trie's `HashBuilder` computes from the whole in-memory state.
//!
//! - [`GenConfig`]: sizes, gas per block, seed.
//! - [`Generator`]: the genesis, then one block at a time.
//! - [`write_chain`]: `genesis.json` and `chain.rlp` in a folder
//!   (`strata gen-chain`).
//! - [`contracts`]: the token, router and store contracts, in EVM assembly.
//! - [`mix`]: what the transactions of a block do.
#![deny(missing_docs)]

mod asm;
mod config;
pub mod contracts;
mod error;
mod generator;
mod keys;
mod mix;
mod output;
mod population;
mod root;
mod subtries;
mod world;

pub use config::{
    CHAIN_ID, DEFAULT_GAS_PER_BLOCK, Fork, GenConfig, MAX_ACCOUNTS, MAX_BLOCKS, MAX_CONTRACTS,
    MAX_GAS_PER_BLOCK, MIN_GAS_PER_BLOCK,
};
pub use error::GenError;
pub use generator::{GeneratedBlock, Generator, chain_config, coinbase};
pub use keys::{AccountKey, Unsigned};
pub use mix::TxShape;
pub use output::{
    ACCESS_LISTS_FILE, CHAIN_CONFIG_FILE, CHAIN_FILE, ChainSummary, GENESIS_FILE, STATE_FILE,
    write_chain,
};
pub use root::{state_root, storage_root};
pub use world::World;
