//! What bounds the server and each call (defaults sized like reth's).

use std::time::Duration;

/// The gas a call runs with when it names none, and the most it may name
/// (reth's `--rpc.gascap` default).
pub const DEFAULT_GAS_CAP: u64 = 50_000_000;

/// What bounds the server (defaults sized like reth's).
#[derive(Clone, Debug)]
pub struct Limits {
    /// Calls in one batch request.
    pub max_batch: u32,
    /// Bytes of a request body.
    pub max_request_bytes: u32,
    /// Bytes of a response body.
    pub max_response_bytes: u32,
    /// Open connections.
    pub max_connections: u32,
    /// Calls running at once; later ones wait their turn.
    pub max_in_flight: usize,
    /// Time one call may take before it is answered with an error.
    pub call_timeout: Duration,
    /// Entries one range call returns at most.
    pub max_page: usize,
    /// Slots `debug_storageRangeAt` sorts by hashed key at most.
    pub max_storage_scan: usize,
    /// Gas of an `eth_call`, `eth_estimateGas` or `eth_createAccessList`
    /// that names none, and the most one may name (`--rpc-gas-cap`).
    pub gas_cap: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_batch: 100,
            max_request_bytes: 15 << 20,
            max_response_bytes: 160 << 20,
            max_connections: 500,
            max_in_flight: 256,
            call_timeout: Duration::from_secs(30),
            max_page: 1024,
            max_storage_scan: 1_000_000,
            gas_cap: DEFAULT_GAS_CAP,
        }
    }
}
