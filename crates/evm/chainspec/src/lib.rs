//! strata-chainspec: the chain a block is executed for, apart from the
//! executor, so that what only needs the rules (the JSON-RPC server's
//! calls, the chain generator) does not depend on the whole executor.
//!
//! - [`ChainSpec`]: a fork schedule and blob schedule from a geth genesis
//!   `config` or a BlockchainTests `network` name.
//! - [`evm_env`]: the EVM environment of a block (its header under the
//!   chain's fork rules), for blocks executed and calls served.
//! - [`StrataEvmFactory`]: the EVM blocks and calls run on, alloy-evm's
//!   with Amsterdam's intrinsic state gas as the release strata follows has it.
//! - [`GenesisBlock`]: block 0 from a geth genesis file, its root computed
//!   by alloy-trie.
#![deny(missing_docs)]

mod amsterdam_evm;
mod amsterdam_gas;
mod chain_spec;
mod error;
mod evm_env;
mod genesis;

pub use amsterdam_evm::{
    AmsterdamHandler, StrataEvm, StrataEvmFactory, UncountedStateGas, uncount_state_gas,
};
pub use amsterdam_gas::{amsterdam_gas_params, cost_per_state_byte};
pub use chain_spec::{ChainSpec, MAINNET_CHAIN_ID, recorded_chain_config};
pub use error::{ChainSpecError, GenesisError};
pub use evm_env::evm_env;
pub use genesis::{GenesisBlock, alloc_state_root};
