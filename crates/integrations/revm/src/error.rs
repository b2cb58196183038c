//! The error revm sees when strata cannot answer a read or take a write.

use alloy_primitives::{Address, B256};
use revm_database_interface::DBErrorMarker;

/// Why a revm read through [`StateReader`](strata_engine::StateReader) or an
/// [`apply_evm_state`](crate::apply_evm_state) call failed.
///
/// Every variant is fatal to the transaction (`is_fatal() == true`): the
/// store could not give the EVM a true answer, so execution must stop rather
/// than go on with a guess.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RevmError {
    /// The store itself failed (I/O, corrupt record, ...).
    #[error("strata storage: {0}")]
    Storage(#[from] strata_engine::Error),
    /// An account names a code hash whose bytecode the store does not hold.
    #[error(
        "bytecode with hash {hash} is not in the store (an account's code hash refers to it, \
         but no committed block wrote that code)"
    )]
    CodeNotFound {
        /// The code hash revm asked for.
        hash: B256,
    },
    /// Stored bytecode that revm refuses to decode (a malformed EIP-7702
    /// delegation, `0xef01...` of the wrong length or version).
    #[error("bytecode with hash {hash} does not decode: {reason}")]
    InvalidCode {
        /// The code hash of the bytecode.
        hash: B256,
        /// revm's decode error.
        reason: String,
    },
    /// BLOCKHASH asked for a block whose hash the store does not keep.
    #[error(
        "no hash stored for block {number}: the store serves the last 256 blocks committed \
         with BlockWriter::set_block_hash (last committed block: {last})"
    )]
    BlockHashNotFound {
        /// The block number asked for.
        number: u64,
        /// The last committed block of the snapshot read, as text ("none" before genesis).
        last: String,
    },
    /// revm's state changes an account's code hash but carries no bytecode
    /// for it, so the code cannot be stored.
    #[error("revm state of {address} sets code hash {code_hash} without the bytecode")]
    MissingCode {
        /// The account.
        address: Address,
        /// The code hash it was given.
        code_hash: B256,
    },
    /// An earlier transaction's state could not be written into the block
    /// (a [`WriterDatabase`](crate::WriterDatabase) commit failed): every
    /// later read refuses, so no transaction runs on a partial state.
    #[error("an earlier transaction's changes were not written into the block: {0}")]
    CommitFailed(String),
}

impl DBErrorMarker for RevmError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn error_is_send_sync_and_fatal() {
        assert_send_sync::<RevmError>();
        let error = RevmError::BlockHashNotFound {
            number: 7,
            last: "3".into(),
        };
        assert!(error.is_fatal());
        let text = error.to_string();
        assert!(
            text.contains("block 7") && text.contains("last committed block: 3"),
            "{text}"
        );
    }
}
