//! The two narrow traits through which the commitment reads the world.
//!
//! `strata-storage` implements them over its domains; the branch cache sits in
//! front of [`BranchSource`] as a decorator. Tests implement them over maps.

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;

/// An error raised by a source; the commitment wraps it with the path or key it
/// was reading when it happened.
pub type SourceError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The account fields an account leaf is built from (the storage root comes
/// from the trie itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountLeaf {
    /// Transaction count.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// keccak256 of the account's bytecode (`KECCAK_EMPTY` when it has none).
    pub code_hash: B256,
}

/// Reads persisted trie records by nibble path.
///
/// `path` holds one nibble (0..=15) per byte; the empty path is the root.
/// Implementations must be safe to call from many threads at once.
pub trait BranchSource: Send + Sync {
    /// The record stored at `path`, or `None` when there is none.
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError>;
}

/// Reads the current plain values of accounts and storage slots.
pub trait StateSource: Send + Sync {
    /// The account at `address`, or `None` when it does not exist.
    fn account(&self, address: &Address) -> Result<Option<AccountLeaf>, SourceError>;
    /// The value of `slot` in `address`'s storage, or `None` when it is zero.
    fn storage(&self, address: &Address, slot: &B256) -> Result<Option<U256>, SourceError>;
}
