//! strata-rpc: Ethereum JSON-RPC over a strata datadir, read-only beside
//! its writer. A [`RpcServer`] serves, through a `ReadOnlyStateDb` that
//! follows the writer's head, the state methods at any block of the
//! retained window — `eth_chainId`, `eth_blockNumber`, `eth_getBalance`,
//! `eth_getTransactionCount`, `eth_getCode`, `eth_getStorageAt`,
//! `eth_getProof` — the range methods `debug_storageRangeAt` and
//! `debug_accountRange`, and the EVM's methods `eth_call`,
//! `eth_estimateGas` and `eth_createAccessList` (revm over the block's
//! state, in the block's environment under the chain's fork rules,
//! [`Chain`]), over HTTP and WebSocket (jsonrpsee), with bounded requests,
//! responses, batches, connections, call time and call gas ([`Limits`]),
//! and requests and latency per method ([`RpcMetrics`]).
//!
//! Block parameters: a number, a hash (of the last 256 blocks), `latest`
//! and `pending` (the head: strata builds no pending block), `earliest`
//! (block 0, when retained); `safe` and `finalized` are refused, as no
//! consensus client tells strata. A block outside the window gets -32000
//! with a message naming the block and the window.
#![deny(missing_docs)]

mod block;
mod call;
mod chain;
mod context;
mod debug;
mod error;
mod eth;
mod limits;
mod metrics;
mod params;
mod server;
mod stop;

pub use block::{Resolved, resolve};
pub use chain::Chain;
pub use context::Context;
pub use error::{REVERTED_CODE, RpcError, SERVER_ERROR_CODE};
pub use limits::{DEFAULT_GAS_CAP, Limits};
pub use metrics::RpcMetrics;
pub use server::{ListenError, RpcServer};
