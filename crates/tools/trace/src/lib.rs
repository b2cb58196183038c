//! strata-trace: the block-trace format replayed by `strata replay` and
//! what is built on it, none of it touching a datadir.
//!
//! The format is JSON Lines: an optional genesis line followed by one line
//! per block with the values the block read (before it ran) and the values
//! it wrote (after it ran). `book/src/reference/formats/trace.md` is the specification; the
//! crate root is its typed form ([`TraceLine`], [`TraceBlock`]), a streaming
//! [`TraceReader`] and a [`TraceWriter`], and a block's EIP-7928-style
//! access list ([`TraceBlock::access_list`]).
//!
//! - [`model`]: an independent in-memory world state that applies trace
//!   blocks and computes the state root with `alloy_trie::HashBuilder` — the
//!   root oracle for generated and replayed traces;
//! - [`generator`]: the deterministic, mainnet-shaped synthetic trace
//!   generator (`strata gen-trace`);
//! - [`geth`]: the importer of geth `prestateTracer` output (`strata
//!   import-geth`).
//!
//! The `strata` binary (strata-cli) adds the commands, their files and their
//! errors on top.
#![deny(missing_docs)]

pub mod generator;
pub mod geth;
pub mod model;

mod access_list;
mod error;
mod parse;
mod reader;
mod writer;

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256};
use strata_storage::genesis::GenesisAlloc;

pub use error::TraceError;
pub use parse::parse_line;
pub use reader::TraceReader;
pub use writer::{TraceWriter, line_to_string};

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceLine {
    /// The state the trace starts from (only allowed as the first line).
    Genesis {
        /// Every account of the initial state.
        alloc: GenesisAlloc,
        /// The expected state root of `alloc`, if the trace states it.
        state_root: Option<B256>,
    },
    /// One block's reads and writes.
    Block(TraceBlock),
}

/// What one block read and wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceBlock {
    /// Block number; each block line is the previous one plus one.
    pub number: u64,
    /// Gas the block used, if known.
    pub gas_used: Option<u64>,
    /// The expected state root after the block, if known.
    pub state_root: Option<B256>,
    /// Accounts (and slots) the block read, with their values before the block.
    pub reads: BTreeMap<Address, AccountRead>,
    /// Accounts (and slots) the block changed, with their values after the block.
    pub writes: BTreeMap<Address, AccountWrite>,
    /// From Amsterdam, the block's access list (EIP-7928) as its execution
    /// built it, when the trace carries it.
    pub access_list: Option<alloy_eip7928::BlockAccessList>,
}

/// An account as the block found it (prestateTracer default-mode shape).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountRead {
    /// Balance before the block.
    pub balance: U256,
    /// Nonce before the block.
    pub nonce: u64,
    /// keccak256 of the code before the block, when the trace gives it.
    pub code_hash: Option<B256>,
    /// The code before the block, when the trace gives it (a code read).
    pub code: Option<Bytes>,
    /// Slots read, with their values before the block (zero values kept).
    pub storage: BTreeMap<B256, U256>,
}

/// The changes a block made to one account. Apply `deleted` first, then the
/// fields; fields that are `None` (or slots not listed) are unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountWrite {
    /// The account and all its storage were removed (selfdestruct) before
    /// the other fields of this entry applied (re-creation).
    pub deleted: bool,
    /// New balance.
    pub balance: Option<U256>,
    /// New nonce.
    pub nonce: Option<u64>,
    /// New code (`Some(empty)` removes the code).
    pub code: Option<Bytes>,
    /// New slot values; a zero value deletes the slot.
    pub storage: BTreeMap<B256, U256>,
}

impl AccountWrite {
    /// True when the entry changes a field or a slot (besides `deleted`).
    pub fn has_fields(&self) -> bool {
        self.balance.is_some()
            || self.nonce.is_some()
            || self.code.is_some()
            || !self.storage.is_empty()
    }
}
