//! strata-commitment: an incremental hex Merkle-Patricia trie over keccak-hashed
//! keys whose root is the Ethereum state root.
//!
//! The crate knows nothing of redb, files or caches: it reads persisted branch
//! nodes through [`BranchSource`] and leaf values through [`StateSource`], and
//! returns the branches a block changed so the caller can persist them.
#![deny(missing_docs)]

pub mod source;

pub use source::{AccountLeaf, BranchSource, SourceError, StateSource};
