//! The errors of a chain's description: a fork schedule that cannot be
//! built ([`ChainSpecError`]) and a genesis file a chain cannot start from
//! ([`GenesisError`]).

/// A chain description no fork schedule can be built from.
#[derive(Debug, thiserror::Error)]
pub enum ChainSpecError {
    /// A BlockchainTests `network` name that names no fork or transition.
    #[error(
        "unknown network {0:?} (expected a fork such as Cancun, or a transition such as BerlinToLondonAt5)"
    )]
    UnknownNetwork(String),
    /// A datadir's recorded chain configuration that is not a geth genesis
    /// `config` object.
    #[error("the datadir's recorded chain configuration is not a geth genesis config: {0}")]
    Recorded(String),
    /// A `blobSchedule` that does not give a fork's blob parameters.
    #[error("blob schedule: {0}")]
    BlobSchedule(String),
    /// A network whose rules the EVM cannot run.
    #[error("network {network}: {reason}")]
    Unsupported {
        /// The network's name.
        network: String,
        /// What the EVM lacks.
        reason: &'static str,
    },
}

/// A genesis file a chain cannot start from.
#[derive(Debug, thiserror::Error)]
pub enum GenesisError {
    /// The file could not be read.
    #[error("genesis {path}: {source}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a genesis (JSON, field or value).
    #[error("genesis {path}: {message}")]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, and where.
        message: String,
    },
    /// Its header cannot be built (a fork strata does not build headers for).
    #[error("{0}")]
    Header(String),
}
