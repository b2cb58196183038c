//! Errors of the geth importer.

use strata_storage::genesis::ValueError;

/// Why tracer output could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GethError {
    /// The document does not have a shape the importer knows.
    #[error("{input}: {what}")]
    Shape {
        /// Which input and where ("diff, tx 2").
        input: String,
        /// What is wrong.
        what: String,
    },
    /// The tracer reported an error for a transaction instead of a result.
    #[error("{input}: tx {index} ({hash}): the tracer failed: {message}")]
    TxFailed {
        /// Which input.
        input: String,
        /// 0-based transaction index.
        index: usize,
        /// The transaction hash, if given.
        hash: String,
        /// The tracer's error message.
        message: String,
    },
    /// An account key is not a 20-byte address.
    #[error("{input}: invalid address {text:?}: {source}")]
    Address {
        /// Which input and where.
        input: String,
        /// The key as written.
        text: String,
        /// What is wrong.
        #[source]
        source: ValueError,
    },
    /// An account field has a bad value.
    #[error("{input}: account {address}: field {field:?}: {source}")]
    Field {
        /// Which input and where.
        input: String,
        /// The account's address.
        address: String,
        /// The field.
        field: String,
        /// What is wrong.
        #[source]
        source: ValueError,
    },
    /// A diff sets new code but prints only its hash (`disableCode`): the
    /// trace cannot carry the account's code.
    #[error(
        "diff, tx {index}: account {address}: post has codeHash {code_hash} but no code (was the tracer run with disableCode?); the trace needs the code"
    )]
    MissingCode {
        /// 0-based transaction index.
        index: usize,
        /// The account.
        address: alloy_primitives::Address,
        /// The code hash printed.
        code_hash: alloy_primitives::B256,
    },
    /// The prestate and diff inputs cover different transactions.
    #[error("the prestate has {prestate} transactions but the diff has {diff}")]
    TxCount {
        /// Transactions in the default-mode input.
        prestate: usize,
        /// Transactions in the diffMode input.
        diff: usize,
    },
    /// Transaction `index` has different hashes in the two inputs.
    #[error("tx {index}: prestate is for {prestate} but diff is for {diff}")]
    TxHash {
        /// 0-based transaction index.
        index: usize,
        /// Hash in the default-mode input.
        prestate: String,
        /// Hash in the diffMode input.
        diff: String,
    },
}
