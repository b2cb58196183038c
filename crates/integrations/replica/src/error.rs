//! What publishing and following a bucket fail with: every error names the
//! bucket and the object (or the local path) it concerns.

use std::path::PathBuf;

/// An error of the publisher or a replica.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicaError {
    /// A bucket address that is not `s3://bucket/prefix`.
    #[error("bucket address {url}: {what}")]
    Url {
        /// The address as given.
        url: String,
        /// What is wrong.
        what: String,
    },
    /// The object store's settings are missing or wrong.
    #[error("object store settings: {0}")]
    Config(String),
    /// The object store refused or could not be reached.
    #[error("{bucket}: {op} {key}: {source}")]
    Store {
        /// The bucket and prefix.
        bucket: String,
        /// The object.
        key: String,
        /// What was being done.
        op: &'static str,
        /// The object store's error.
        #[source]
        source: Box<object_store::Error>,
    },
    /// An object the manifest names is not in the bucket.
    #[error("{bucket}: {key} is missing")]
    Missing {
        /// The bucket and prefix.
        bucket: String,
        /// The object.
        key: String,
    },
    /// An object whose bytes are not what they must be: refused, never served.
    #[error("{bucket}: {key} is damaged: {what}")]
    Damaged {
        /// The bucket and prefix.
        bucket: String,
        /// The object.
        key: String,
        /// What is wrong.
        what: String,
    },
    /// An object (or the prefix's manifest) of another datadir.
    #[error("{bucket}: {key} belongs to datadir {found}, not {expected}")]
    Foreign {
        /// The bucket and prefix.
        bucket: String,
        /// The object.
        key: String,
        /// The datadir expected.
        expected: String,
        /// The datadir the object names.
        found: String,
    },
    /// The bucket no longer holds the blocks after the replica's head (it
    /// fell behind by more than the publisher's grace period, or the
    /// writer unwound below it).
    #[error(
        "{bucket}: the replica is at block {head} but the bucket's chain starts at block {base} \
         (base) or continues differently; start the replica on a fresh cache"
    )]
    Diverged {
        /// The bucket and prefix.
        bucket: String,
        /// The replica's head.
        head: u64,
        /// The bucket's base block.
        base: u64,
    },
    /// The bucket's next block does not follow the replica's head (the
    /// writer unwound: a reorg); the replica rejoins the bucket's chain at
    /// its base when it can, else the round fails with this.
    #[error(
        "{bucket}: {key}: block {block} does not follow the replica's head (the writer unwound)"
    )]
    Forked {
        /// The bucket and prefix.
        bucket: String,
        /// The batch.
        key: String,
        /// The block that does not follow.
        block: u64,
    },
    /// A local file or folder could not be used.
    #[error("{path}: {op}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The store (the datadir published, or the replica's copy) failed.
    #[error(transparent)]
    Engine(#[from] strata_engine::Error),
    /// The published datadir's journal could not be read.
    #[error(transparent)]
    Journal(#[from] strata_journal::JournalError),
}

/// Result alias of strata-replica.
pub type Result<T, E = ReplicaError> = std::result::Result<T, E>;

/// An I/O error on `path` while doing `op`.
pub(crate) fn io_err(
    path: &std::path::Path,
    op: &'static str,
) -> impl FnOnce(std::io::Error) -> ReplicaError {
    let path = path.to_path_buf();
    move |source| ReplicaError::Io { path, op, source }
}
