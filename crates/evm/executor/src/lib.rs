//! strata-executor: Ethereum blocks executed over strata's store with the
//! crates reth executes with — alloy-evm's `EthBlockExecutor` (system calls,
//! transactions, rewards, withdrawals, the DAO change, requests) over revm
//! 43 — checked against their headers before and after execution, and
//! committed as strata blocks with the header's state root expected.
//!
//! - [`ChainSpec`]: a fork schedule from a geth genesis `config` or a
//!   BlockchainTests `network` name.
//! - [`GenesisBlock`]: block 0 from a geth genesis file, its root computed
//!   by alloy-trie.
//! - [`DecodedBlock`]: a block from its RLP, with its hash.
//! - [`evm_env`]: the EVM environment of a block (its header under the
//!   chain's fork rules), for blocks executed here and calls served elsewhere.
//! - [`execute_block`]: one block on top of the store's head; a block that
//!   fails any check is refused with [`InvalidBlock`] naming the check, and
//!   nothing of it is written.
//! - [`RecoveredSenders`]: a block's senders recovered ahead of its
//!   execution (an importer's, while the block before runs).
//! - [`MemoryChain`]: the same blocks over revm's in-memory database, the
//!   baseline strata's execution is measured against.
//! - [`ef_tests`]: the runner of Ethereum's BlockchainTests (`strata ef-test`).
#![deny(missing_docs)]

mod access;
mod block;
mod chain_spec;
pub mod consensus;
pub mod ef_tests;
mod eip7610;
mod error;
mod evm_env;
mod evm_run;
mod execute;
mod genesis;
mod memory;
mod senders;
mod via_bundle;
mod via_writer;

pub use access::{AccountRead, AccountWrite, BlockAccess};
pub use block::DecodedBlock;
pub use chain_spec::{ChainSpec, MAINNET_CHAIN_ID, recorded_chain_config};
pub use error::{ChainSpecError, ExecError, GenesisError, InvalidBlock};
pub use evm_env::evm_env;
pub use execute::{
    BlockTimings, ExecuteOptions, ExecutedBlock, RootTiming, StatePath, execute_block,
    execute_block_with,
};
pub use genesis::{GenesisBlock, alloc_state_root};
pub use memory::{MemoryBlock, MemoryChain};
pub use senders::RecoveredSenders;
