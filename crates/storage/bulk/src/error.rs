//! What can go wrong in a bulk pipeline: its scratch sorts, its input, the
//! tries it builds and the files it writes. Each failure leaves nothing
//! visible: the engine installs a built state only when no step failed.

use std::path::PathBuf;

use alloy_primitives::{Address, B256};
use strata_commitment::CommitmentError;
use strata_files::FileError;

/// A failure of a bulk pipeline (import, derive). The engine reports each
/// variant as its own error of the same meaning.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BulkError {
    /// A scratch folder or a sort run could not be created, written or read.
    #[error("scratch {path}: {what}: {source}")]
    Scratch {
        /// The folder or run file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A trie could not be built.
    #[error("commitment at block {block}: {source}")]
    Commitment {
        /// The block whose state is being built.
        block: u64,
        /// The commitment's error.
        #[source]
        source: CommitmentError,
    },
    /// The state's root is not the one it was declared to have.
    #[error("the state of block {block} has root {computed}, but {expected} was expected")]
    RootMismatch {
        /// The block being built.
        block: u64,
        /// The root declared.
        expected: B256,
        /// The root of the accounts read.
        computed: B256,
    },
    /// An address appears twice in the state.
    #[error("account {address} appears twice in the state")]
    RepeatedAccount {
        /// The address.
        address: Address,
    },
    /// A slot appears twice in one account's storage.
    #[error("account {address}: storage slot {slot} appears twice")]
    RepeatedSlot {
        /// The account.
        address: Address,
        /// The slot.
        slot: B256,
    },
    /// The accounts could not be read.
    #[error("input: {source}")]
    Input {
        /// Why (a dump's line error, for one).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// What was built does not hold what was read (an internal fault, or
    /// the scratch runs changed underneath).
    #[error("{0}")]
    Incomplete(String),
    /// A file could not be written or read back.
    #[error(transparent)]
    File(#[from] FileError),
}

/// Result alias of strata-bulk.
pub type Result<T, E = BulkError> = std::result::Result<T, E>;
