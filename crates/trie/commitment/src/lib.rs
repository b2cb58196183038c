//! strata-commitment: an incremental hex Merkle-Patricia trie over keccak-hashed
//! keys whose root is the Ethereum state root.
//!
//! The crate knows nothing of redb, files or caches: it reads persisted branch
//! nodes through [`BranchSource`] and leaf values through [`StateSource`], and
//! returns the branches a block changed so the caller can persist them.
//!
//! - [`compute_root`]: per-block incremental root over the touched keys.
//! - [`BulkBuilder`] / [`build_from_sorted`]: build the records of a large
//!   initial state from sorted input, without one insert per key.
//! - [`warm_path`]: read the records a key's path needs (for cache warmers).
//! - [`RawTrie`]: a plain in-memory trie over arbitrary byte keys.
//! - [`reencode_record`]: decode a stored record and encode it again (the
//!   record decoder, for checkers and fuzzers).
//! - [`MemoryBranchStore`], [`MemoryState`]: in-memory sources.
//!
//! Record and key encodings are described in `FORMAT.md`.
//!
//! ```
//! use alloy_primitives::{Address, KECCAK256_EMPTY, U256};
//! use strata_commitment::{
//!     compute_root, AccountLeaf, ComputeOptions, MemoryBranchStore, MemoryState, TrieUpdate, EMPTY_ROOT,
//! };
//!
//! let mut state = MemoryState::default();
//! let mut store = MemoryBranchStore::default();
//! let alice = Address::repeat_byte(0xa1);
//! state.set_account(alice, AccountLeaf { nonce: 1, balance: U256::from(10), code_hash: KECCAK256_EMPTY });
//! let update = TrieUpdate { accounts: vec![alice], storage: vec![], wiped: vec![] };
//! let out = compute_root(&update, &store, &state, &ComputeOptions::default()).unwrap();
//! store.apply(&out.writes);
//! assert_ne!(out.root, EMPTY_ROOT);
//!
//! state.remove_account(&alice);
//! let out = compute_root(&update, &store, &state, &ComputeOptions::default()).unwrap();
//! assert_eq!(out.root, EMPTY_ROOT);
//! ```
#![deny(missing_docs)]

#[cfg(feature = "test-utils")]
pub mod bench_support;
mod bulk;
mod children;
mod compute;
mod error;
mod keccak_x4;
mod memory;
mod nibbles;
mod node;
mod proof;
mod raw;
mod record;
pub mod source;
mod stats;
mod touch;
mod walk;
mod warm;

pub use bulk::{BulkBuilder, SortedAccount, StorageTrieBuilder, build_from_sorted};
pub use compute::{CommitOutput, ComputeOptions, RecordWrite, compute_root};
pub use error::CommitmentError;
pub use memory::{MemoryBranchStore, MemoryState};
pub use nibbles::{MAX_PATH_NIBBLES, record_key, record_path, unpack_nibbles};
pub use node::EMPTY_ROOT;
pub use proof::{AccountProof, SlotProof, prove};
pub use raw::RawTrie;
pub use record::reencode_record;
pub use source::{AccountLeaf, BranchSource, SourceError, StateSource};
pub use stats::CommitStats;
pub use touch::TrieUpdate;
pub use warm::{TopLevels, warm_path, warm_top_levels};
