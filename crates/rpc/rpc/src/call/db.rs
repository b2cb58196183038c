//! The state a call runs over, and what a failure of the store under the
//! EVM answers: below the environment, the overrides and the runs, which
//! all use them.

use revm::database::CacheDB;
use strata_storage::revm::{ReaderDatabase, RevmError};

use crate::error::RpcError;

/// The state a call runs over: the block's reader behind revm's cache,
/// which holds the overrides and whatever the runs loaded. The runs never
/// commit into it.
pub(crate) type CallDb = CacheDB<ReaderDatabase>;

/// A failure of the store under the EVM.
pub(crate) fn revm_error(error: RevmError) -> RpcError {
    match error {
        RevmError::Storage(error) => RpcError::Store(error),
        other => RpcError::Evm(other.to_string()),
    }
}
