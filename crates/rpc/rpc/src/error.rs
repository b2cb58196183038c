//! What a call can fail with, and the JSON-RPC error each becomes: the
//! codes clients expect (-32602 for bad parameters, -32000 for a state
//! the server does not serve, with a message naming the block and the
//! window, and for a call the EVM refuses or halts; 3 for a call that
//! reverted, its revert data in `data`, as geth answers; -32603 for a
//! failure of the store).

use alloy_primitives::Bytes;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::types::error::{INTERNAL_ERROR_CODE, INVALID_PARAMS_CODE};

/// The server-defined error code clients treat as "cannot serve this".
pub const SERVER_ERROR_CODE: i32 = -32000;

/// The code of a call that reverted (geth's and reth's), with the revert
/// data in the error's `data`.
pub const REVERTED_CODE: i32 = 3;

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
    /// The call took longer than the limit and was stopped (answered once
    /// it had stopped).
    #[error("the call took longer than {0} ms and was stopped")]
    Timeout(u64),
    /// The server failed on a call (a method panicked): -32603.
    #[error("internal error: {0}")]
    Internal(String),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] strata_storage::Error),
    /// A call needs the chain's fork rules, and neither the datadir nor
    /// the server was given them.
    #[error(
        "{method} needs the chain's fork rules: the datadir records no chain configuration \
         (`strata import-chain` records it) and the server was started without --genesis"
    )]
    NoChainConfig {
        /// The method refused.
        method: &'static str,
    },
    /// The chain configuration the datadir records does not parse.
    #[error("the datadir's recorded chain configuration: {0}")]
    BadChainConfig(String),
    /// The block's header is not in the datadir (strata keeps the last
    /// 256 headers, of blocks committed with one).
    #[error(
        "block {0}'s header is not in the datadir (strata keeps the headers of the last 256 blocks an executor committed)"
    )]
    NoHeader(u64),
    /// The transaction of a call is one the EVM refuses before running it
    /// (fees, intrinsic gas, funds, conflicting fields, overrides).
    #[error("{0}")]
    Transaction(String),
    /// The call ran into `REVERT`.
    #[error("execution reverted{}", reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    Reverted {
        /// The revert data.
        data: Bytes,
        /// The reason, when the data is an `Error(string)`.
        reason: Option<String>,
    },
    /// The call halted (out of gas, an invalid opcode, ...).
    #[error("{0}")]
    Halted(String),
    /// The EVM failed for a reason of its own (not the call's).
    #[error("evm: {0}")]
    Evm(String),
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(error: RpcError) -> Self {
        let code = match &error {
            RpcError::InvalidParams(_) => INVALID_PARAMS_CODE,
            RpcError::Store(_) | RpcError::Evm(_) | RpcError::Internal(_) => INTERNAL_ERROR_CODE,
            RpcError::Reverted { .. } => REVERTED_CODE,
            _ => SERVER_ERROR_CODE,
        };
        let data = match &error {
            RpcError::Reverted { data, .. } => Some(data.clone()),
            _ => None,
        };
        ErrorObjectOwned::owned(code, error.to_string(), data)
    }
}
