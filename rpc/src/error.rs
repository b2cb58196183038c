//! What a call can fail with, and the JSON-RPC error each becomes: the
//! codes clients expect (-32602 for bad parameters, -32000 for a state
//! the server does not serve, with a message naming the block and the
//! window; -32603 for a failure of the store).

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::types::error::{INTERNAL_ERROR_CODE, INVALID_PARAMS_CODE};

/// The server-defined error code clients treat as "cannot serve this".
pub const SERVER_ERROR_CODE: i32 = -32000;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The parameters do not parse (or are out of range).
    #[error("invalid params: {0}")]
    InvalidParams(String),
    /// A block outside the retained window.
    #[error("block {block} is not retained: the state is served for blocks {oldest} to {last}")]
    NotRetained {
        /// The block asked for.
        block: u64,
        /// The oldest block served.
        oldest: u64,
        /// The newest.
        last: u64,
    },
    /// A block after the head.
    #[error("block {block} is after the head, block {head}")]
    AfterHead {
        /// The block asked for.
        block: u64,
        /// The newest block.
        head: u64,
    },
    /// A block hash that is none of the blocks the datadir knows.
    #[error("block hash {hash} is not one of the last {window} blocks up to {head}")]
    UnknownHash {
        /// The hash asked for.
        hash: alloy_primitives::B256,
        /// Blocks searched.
        window: u64,
        /// The newest block.
        head: u64,
    },
    /// A block tag strata cannot answer (`safe`, `finalized`: no consensus
    /// client tells it).
    #[error("block tag {0:?} is not known to strata (it follows no consensus client)")]
    UnknownTag(&'static str),
    /// The datadir holds no block yet.
    #[error("the datadir holds no block yet")]
    Empty,
    /// The call took longer than the limit.
    #[error("the call took longer than {0} ms")]
    Timeout(u64),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] strata_storage::Error),
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(error: RpcError) -> Self {
        let code = match &error {
            RpcError::InvalidParams(_) => INVALID_PARAMS_CODE,
            RpcError::Store(_) => INTERNAL_ERROR_CODE,
            _ => SERVER_ERROR_CODE,
        };
        ErrorObjectOwned::owned(code, error.to_string(), None::<()>)
    }
}
