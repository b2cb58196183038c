//! What a read of the store's views can fail with. The engine turns each
//! variant into its own `Error` variant of the same name, so a client sees
//! one error type whether a read or a write failed.

use alloy_primitives::B256;

use strata_db::SchemaError;
use strata_files::FileError;
use strata_types::domain::Domain;

/// A failed read of a published view: a damaged or unreadable record,
/// a proof the view cannot give, or a root or access list that does not
/// hold.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// redb failed, or a stored record or metadata entry does not decode.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// An immutable file is unreadable or corrupt.
    #[error(transparent)]
    File(#[from] FileError),
    /// A read was asked of a tier or range that does not exist.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// A proof asked of a reader that cannot serve one.
    #[error("no proof here: {0}")]
    ProofUnavailable(&'static str),
    /// A range read asked of a reader that cannot serve one.
    #[error("no range read here: {0}")]
    RangeUnavailable(&'static str),
    /// A read through the history of a datadir whose history is still in
    /// redb's tables of the first layout, which a writer's open moves
    /// into history files.
    #[error(
        "the datadir's history is in an earlier layout (redb tables); open it once with a writer of this build to move it into history files"
    )]
    LegacyHistory,
    /// The commitment failed.
    #[error("commitment at block {block}: {source}")]
    Commitment {
        /// The block whose commitment was read or computed.
        block: u64,
        /// The commitment's error.
        #[source]
        source: strata_commitment::CommitmentError,
    },
    /// The stored root does not match a recomputation.
    #[error("state root mismatch at block {block}: stored {stored}, computed {computed}")]
    RootMismatch {
        /// The block.
        block: u64,
        /// Root on disk.
        stored: B256,
        /// Root recomputed.
        computed: B256,
    },
    /// A block's writes differ from its access list.
    #[error(
        "block {block}: its writes differ from its access list at {domain} key {key}: the list says {listed}, the block wrote {written}"
    )]
    AccessListMismatch {
        /// The refused block.
        block: u64,
        /// The domain of the first differing key.
        domain: Domain,
        /// The first differing key (hex; an address for a storage wipe).
        key: String,
        /// What the list says about it.
        listed: String,
        /// What the block wrote.
        written: String,
    },
}

/// Result alias of the view's reads.
pub type Result<T, E = ReadError> = std::result::Result<T, E>;

/// A stored record that does not decode, named by domain and key.
pub(crate) fn corrupt_record(domain: Domain, key: &[u8], what: String) -> ReadError {
    ReadError::Schema(SchemaError::CorruptRecord {
        domain,
        key: alloy_primitives::hex::encode(key),
        what,
    })
}

/// Runs `read` (redb calls on `table`), turning a redb panic on a damaged
/// page into a corrupt-table error ([`strata_db::guarded`]).
pub fn guarded<T>(table: &'static str, read: impl FnOnce() -> Result<T>) -> Result<T> {
    strata_db::guarded(table, read)
}

/// Wraps a redb error with the operation that raised it.
pub fn db_err<E: Into<redb::Error>>(op: &'static str) -> impl FnOnce(E) -> ReadError {
    move |e| ReadError::Schema(strata_db::db_err(op)(e))
}
