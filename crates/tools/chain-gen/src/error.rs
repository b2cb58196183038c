//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong while generating a chain.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenError {
    /// A generator setting is out of its range.
    #[error("{what} is {value}, must be {range}")]
    Config {
        /// The setting (as the command line names it).
        what: &'static str,
        /// The value given.
        value: u64,
        /// The allowed range, in words.
        range: &'static str,
    },
    /// The EVM refused a block the generator built: a bug in the generator
    /// (a transaction it should not have made), never a property of the seed.
    #[error("block {number}: the execution refused it: {message}")]
    Execution {
        /// The block being built.
        number: u64,
        /// alloy-evm's error.
        message: String,
    },
    /// A transaction could not be signed.
    #[error("block {number}: signing transaction {index}: {message}")]
    Signing {
        /// The block being built.
        number: u64,
        /// The transaction's position in the block.
        index: usize,
        /// k256's error.
        message: String,
    },
    /// A contract's assembly is malformed (a jump to an undefined label, a
    /// label defined twice): a bug in the generator's contracts.
    #[error("assembling {contract}: {message}")]
    Assembly {
        /// The contract.
        contract: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Writing an output file failed.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The genesis block could not be built, or its root differs from the
    /// generator's.
    #[error("genesis: {message}")]
    Genesis {
        /// What went wrong.
        message: String,
    },
    /// The genesis could not be serialised.
    #[error("encoding the genesis as JSON: {0}")]
    GenesisJson(#[source] serde_json::Error),
}
