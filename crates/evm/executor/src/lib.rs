//! strata-executor: Ethereum blocks executed over strata's store with the
//! crates reth executes with — alloy-evm's `EthBlockExecutor` (system calls,
//! transactions, rewards, withdrawals, the DAO change, requests) over revm
//! 43 — checked against their headers before and after execution, and
//! committed as strata blocks with the header's state root expected.
//!
//! - [`ChainSpec`], [`GenesisBlock`], [`evm_env`]: the chain's rules
//!   (re-exported from strata-chainspec).
//! - [`DecodedBlock`]: a block from its RLP, with its hash.
//! - [`execute_block`]: one block on top of the store's head; a block that
//!   fails any check is refused with [`InvalidBlock`] naming the check, and
//!   nothing of it is written.
//! - [`RecoveredSenders`]: a block's senders recovered ahead of its
//!   execution (an importer's, while the block before runs).
//! - [`ChainImporter`]: a chain's blocks executed and committed in order,
//!   from its genesis or any block the store holds, resuming after the
//!   store's last block; [`SendersAhead`] recovers the next blocks' senders
//!   on a thread of their own.
//! - [`MemoryChain`]: the same blocks over revm's in-memory database, the
//!   baseline strata's execution is measured against.
//! - [`ef_tests`]: the runner of Ethereum's BlockchainTests (`strata ef-test`).
#![deny(missing_docs)]

/// The book's page on importing a chain from a client's code, compiled as
/// this crate's doc-test so that it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../../book/src/guide/library/importing-a-chain.md")]
struct BookImportingAChain;

mod access;
mod block;
mod block_access_list;
pub mod consensus;
pub mod ef_tests;
mod eip7610;
mod error;
mod evm_run;
mod execute;
mod import;
mod memory;
mod parallel;
mod senders;
mod via_bundle;
mod via_writer;

pub use access::{AccountRead, AccountWrite, BlockAccess};
pub use block::DecodedBlock;
pub use block_access_list::prefetch_list;
pub use error::{ExecError, InvalidBlock};
pub use evm_run::TransactionsAhead;
pub use execute::{
    AccessListUse, BlockTimings, ExecuteOptions, ExecutedBlock, MAX_TRANSACTION_WORKERS,
    RootTiming, StatePath, execute_block, execute_block_with,
};
pub use import::{
    AheadError, ChainAnchor, ChainImporter, GenesisStart, ImportError, Imported, SendersAhead,
};
pub use memory::{MemoryBlock, MemoryChain};
pub use senders::RecoveredSenders;
/// The chain's rules, from strata-chainspec, at the paths they have had.
pub use strata_chainspec::{
    ChainSpec, ChainSpecError, GenesisBlock, GenesisError, MAINNET_CHAIN_ID, alloc_state_root,
    evm_env, recorded_chain_config,
};
