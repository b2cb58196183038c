//! The server: the methods registered on a jsonrpsee module, each run on
//! tokio's blocking pool under a time limit and a bound on calls in
//! flight, timed per method; HTTP (and WebSocket) listeners with the
//! request, response, batch and connection limits.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::RpcModule;
use jsonrpsee::server::{BatchRequestConfig, Server, ServerConfig, ServerHandle};
use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde::Serialize;
use strata_storage::ReadOnlyStateDb;

use crate::call;
use crate::chain::Chain;
use crate::context::Context;
use crate::error::RpcError;
use crate::limits::Limits;
use crate::metrics::RpcMetrics;
use crate::{debug, eth};

/// A running server: its bound addresses; stops when dropped or stopped.
pub struct RpcServer {
    http: (SocketAddr, ServerHandle),
    ws: Option<(SocketAddr, ServerHandle)>,
}

impl RpcServer {
    /// Starts serving `db` on `http` (HTTP and WebSocket on one port) and,
    /// when given, `ws` (WebSocket only), on the current tokio runtime.
    /// Port 0 picks a free port ([`RpcServer::http_addr`]).
    pub async fn start(
        db: Arc<ReadOnlyStateDb>,
        chain: Chain,
        limits: Limits,
        metrics: RpcMetrics,
        http: SocketAddr,
        ws: Option<SocketAddr>,
    ) -> std::io::Result<RpcServer> {
        let module = module(Context::new(db, chain, limits.clone(), metrics));
        let config = || {
            ServerConfig::builder()
                .max_request_body_size(limits.max_request_bytes)
                .max_response_body_size(limits.max_response_bytes)
                .max_connections(limits.max_connections)
                .set_batch_request_config(BatchRequestConfig::Limit(limits.max_batch))
        };
        let server = Server::builder()
            .set_config(config().build())
            .build(http)
            .await?;
        let http_addr = server.local_addr()?;
        let http_handle = server.start(module.clone());
        let ws = match ws {
            Some(addr) => {
                let server = Server::builder()
                    .set_config(config().ws_only().build())
                    .build(addr)
                    .await?;
                let bound = server.local_addr()?;
                Some((bound, server.start(module)))
            }
            None => None,
        };
        Ok(RpcServer {
            http: (http_addr, http_handle),
            ws,
        })
    }

    /// Where HTTP (and WebSocket) requests are served.
    pub fn http_addr(&self) -> SocketAddr {
        self.http.0
    }

    /// Where the WebSocket-only listener is, if started.
    pub fn ws_addr(&self) -> Option<SocketAddr> {
        self.ws.as_ref().map(|(addr, _)| *addr)
    }

    /// Stops the listeners and waits until they are stopped.
    pub async fn stop(self) {
        let handles = std::iter::once(self.http.1).chain(self.ws.map(|(_, handle)| handle));
        for handle in handles {
            let _ = handle.stop();
            handle.stopped().await;
        }
    }
}

/// Every method, registered.
fn module(context: Context) -> RpcModule<Context> {
    let mut module = RpcModule::new(context);
    register(&mut module, "eth_chainId", eth::chain_id);
    register(&mut module, "eth_blockNumber", eth::block_number);
    register(&mut module, "eth_getBalance", eth::balance);
    register(
        &mut module,
        "eth_getTransactionCount",
        eth::transaction_count,
    );
    register(&mut module, "eth_getCode", eth::code);
    register(&mut module, "eth_getStorageAt", eth::storage_at);
    register(&mut module, "eth_getProof", eth::proof);
    register(&mut module, "debug_storageRangeAt", debug::storage_range_at);
    register(&mut module, "debug_accountRange", debug::account_range);
    register(&mut module, "eth_call", call::call);
    register(&mut module, "eth_estimateGas", call::estimate_gas);
    register(
        &mut module,
        "eth_createAccessList",
        call::create_access_list,
    );
    module
}

/// Registers `method` to run on the blocking pool, within the call time
/// limit and the bound on calls in flight, timed and logged.
fn register<T, F>(module: &mut RpcModule<Context>, name: &'static str, method: F)
where
    T: Serialize + Clone + Send + 'static,
    F: Fn(&Context, Params<'_>) -> Result<T, RpcError> + Copy + Send + Sync + 'static,
{
    let registered = module.register_async_method(name, move |params, context, _| async move {
        let started = Instant::now();
        let permit = context.in_flight.acquire().await;
        let timeout = context.limits.call_timeout;
        let call = {
            let context = context.clone();
            tokio::task::spawn_blocking(move || method(&context, params))
        };
        let result = match tokio::time::timeout(timeout, call).await {
            Ok(Ok(result)) => result,
            Ok(Err(panicked)) => Err(RpcError::InvalidParams(format!(
                "the call failed: {panicked}"
            ))),
            Err(_) => Err(RpcError::Timeout(timeout.as_millis() as u64)),
        };
        drop(permit);
        let outcome = match &result {
            Ok(_) => "ok",
            Err(RpcError::Timeout(_)) => "timeout",
            Err(_) => "error",
        };
        let took = started.elapsed();
        context.metrics.record(name, outcome, took);
        tracing::debug!(
            method = name,
            outcome,
            micros = took.as_micros() as u64,
            "rpc"
        );
        result.map_err(ErrorObjectOwned::from)
    });
    registered.expect("each method is registered once");
}
