//! Why `strata serve` could not start.

use std::path::PathBuf;

use super::CliError;

/// Why `strata serve` could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The replica could not start (the bucket, the cache, the base).
    #[error("--replica: {0}")]
    Replica(#[source] Box<strata_storage::replica::ReplicaError>),
    /// Neither a datadir nor a replica's bucket was given.
    #[error("serve needs --datadir DIR or --replica s3://bucket/prefix with --cache DIR")]
    NothingToServe,
    /// An address could not be listened on.
    #[error(transparent)]
    Listen(#[from] strata_rpc::ListenError),
    /// `--genesis` names another chain: the datadir's block 0 differs.
    #[error(
        "--genesis {genesis}: {datadir} holds another chain: its block {number} is {stored}, the genesis file's is {given}"
    )]
    OtherGenesis {
        /// The genesis file.
        genesis: PathBuf,
        /// The datadir.
        datadir: PathBuf,
        /// The genesis block's number.
        number: u64,
        /// The datadir's hash of that block.
        stored: alloy_primitives::B256,
        /// The genesis file's.
        given: alloy_primitives::B256,
    },
    /// `--genesis` names another chain: the recorded chain id differs.
    #[error(
        "--genesis {genesis}: {datadir} holds another chain: it records chain id {recorded}, the genesis file names {given}"
    )]
    OtherChainId {
        /// The genesis file.
        genesis: PathBuf,
        /// The datadir.
        datadir: PathBuf,
        /// The chain id the datadir records.
        recorded: u64,
        /// The genesis file's.
        given: u64,
    },
}

impl ServeError {
    /// As the command line's error.
    pub(crate) fn into_cli(self) -> CliError {
        CliError::Serve(Box::new(self))
    }
}
