//! Why [`super::ChainImporter`] did not take a block or a genesis.

use alloy_primitives::B256;

use crate::error::ExecError;

/// A block or genesis an import refused, or the store failing under it.
/// Nothing of a refused block was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A block that does not follow the last one taken.
    #[error("block {number} given, but block {expected} was expected")]
    OutOfOrder {
        /// The block given.
        number: u64,
        /// The block that must come next.
        expected: u64,
    },
    /// The store holds another block at this height: it is on another chain.
    #[error("the store holds a block {number} other than {hash}: it is on another chain")]
    OtherBlock {
        /// The block's number.
        number: u64,
        /// The hash of the block given.
        hash: B256,
    },
    /// The block failed its checks or its execution.
    #[error(transparent)]
    Refused(Box<ExecError>),
    /// The genesis state's root, computed by strata, is not the one the
    /// genesis header has (computed by alloy-trie); the store is left empty
    /// of blocks.
    #[error("genesis state root mismatch: strata computed {strata}, alloy-trie {alloy_trie}")]
    GenesisRoot {
        /// strata's root.
        strata: B256,
        /// The header's root.
        alloy_trie: B256,
    },
    /// The store's last block is before the genesis block.
    #[error("the store is at block {last}, before the genesis block {genesis}")]
    BeforeGenesis {
        /// The store's last block.
        last: u64,
        /// The genesis block's number.
        genesis: u64,
    },
    /// The store holds another chain.
    #[error(
        "the store holds another chain: its genesis is not the one given (hash {hash}, root {root})"
    )]
    OtherGenesis {
        /// The given genesis's hash.
        hash: B256,
        /// The given genesis's state root.
        root: B256,
    },
    /// The store failed.
    #[error(transparent)]
    Store(strata_storage::Error),
}
