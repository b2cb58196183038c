//! The crate's error type.

use crate::source::SourceError;

/// Everything that can go wrong while computing or building a commitment.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitmentError {
    /// The branch source failed while reading the record at `path`.
    #[error("reading the commitment record at nibble path {path}: {source}")]
    Branch {
        /// Nibble path of the record, as hex digits.
        path: String,
        /// The source's error.
        #[source]
        source: SourceError,
    },
    /// The state source failed while reading a leaf value.
    #[error("reading {key} from the state: {source}")]
    State {
        /// Which key was read (account address or address/slot).
        key: String,
        /// The source's error.
        #[source]
        source: SourceError,
    },
    /// A persisted record (or the state behind a persisted leaf) is not what the
    /// trie expects.
    #[error("corrupted commitment record at nibble path {path}: {what}")]
    Corrupted {
        /// Nibble path of the record, as hex digits.
        path: String,
        /// What was wrong, with expected vs found where it applies.
        what: String,
    },
    /// A commitment-domain key does not decode to a nibble path.
    #[error("malformed commitment key 0x{key}: {what}")]
    MalformedKey {
        /// The key bytes, hex.
        key: String,
        /// What was wrong.
        what: String,
    },
    /// A storage slot holds a value under an address with no account: no
    /// Ethereum state has one (an account's storage goes with it), and the
    /// trie has no leaf to hang it from.
    #[error("storage slot {slot} of {address} holds a value, but {address} has no account")]
    StorageWithoutAccount {
        /// The address.
        address: alloy_primitives::Address,
        /// The slot (unhashed).
        slot: alloy_primitives::B256,
    },
    /// The bulk builder was fed keys out of order.
    #[error("bulk build input out of order: {what}")]
    Unsorted {
        /// Which key followed which.
        what: String,
    },
}

/// Renders a nibble path as hex digits ("" for the root).
pub(crate) fn path_hex(path: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let s: String = path
        .iter()
        .map(|&n| DIGITS[(n & 0x0f) as usize] as char)
        .collect();
    if s.is_empty() {
        "<root>".to_string()
    } else {
        s
    }
}

/// Builds a [`CommitmentError::Corrupted`] for `path`.
pub(crate) fn corrupted(path: &[u8], what: impl Into<String>) -> CommitmentError {
    CommitmentError::Corrupted {
        path: path_hex(path),
        what: what.into(),
    }
}
