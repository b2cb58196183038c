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
use crate::stop::{Stop, StopOnDrop};
use crate::{debug, eth};

/// A running server: its bound addresses; stops when dropped or stopped.
pub struct RpcServer {
    http: (SocketAddr, ServerHandle),
    ws: Option<(SocketAddr, ServerHandle)>,
}

/// A port the server could not listen on, named.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr}: {source}")]
pub struct ListenError {
    /// The address asked for (`--http` or `--ws`).
    pub addr: SocketAddr,
    /// Why.
    #[source]
    pub source: std::io::Error,
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
    ) -> Result<RpcServer, ListenError> {
        let module = module(Context::new(db, chain, limits.clone(), metrics));
        let config = || {
            ServerConfig::builder()
                .max_request_body_size(limits.max_request_bytes)
                .max_response_body_size(limits.max_response_bytes)
                .max_connections(limits.max_connections)
                .set_batch_request_config(BatchRequestConfig::Limit(limits.max_batch))
        };
        let listen = |addr: SocketAddr| move |source| ListenError { addr, source };
        let server = Server::builder()
            .set_config(config().build())
            .build(http)
            .await
            .map_err(listen(http))?;
        let http_addr = server.local_addr().map_err(listen(http))?;
        let http_handle = server.start(module.clone());
        let ws = match ws {
            Some(addr) => {
                let server = Server::builder()
                    .set_config(config().ws_only().build())
                    .build(addr)
                    .await
                    .map_err(listen(addr))?;
                let bound = server.local_addr().map_err(listen(addr))?;
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
    register_stoppable(&mut module, "eth_call", call::call);
    register_stoppable(&mut module, "eth_estimateGas", call::estimate_gas);
    register_stoppable(
        &mut module,
        "eth_createAccessList",
        call::create_access_list,
    );
    module
}

/// Registers `method`, a bounded read that needs no stopping, as
/// [`register_stoppable`] does.
fn register<T, F>(module: &mut RpcModule<Context>, name: &'static str, method: F)
where
    T: Serialize + Clone + Send + 'static,
    F: Fn(&Context, Params<'_>) -> Result<T, RpcError> + Copy + Send + Sync + 'static,
{
    register_stoppable(module, name, move |context, params, _: &Stop| {
        method(context, params)
    });
}

/// Registers `method` to run on the blocking pool, within the bound on
/// calls in flight and the call time limit, timed and logged. A call past
/// the limit is stopped (its [`Stop`] set; the EVM halts at its next
/// instruction) and answered only once it has stopped; its slot of
/// `--max-in-flight` is held by the running method itself, so it is free
/// only when the method has returned — also when the client went away
/// (which stops the call too).
fn register_stoppable<T, F>(module: &mut RpcModule<Context>, name: &'static str, method: F)
where
    T: Serialize + Clone + Send + 'static,
    F: Fn(&Context, Params<'_>, &Stop) -> Result<T, RpcError> + Copy + Send + Sync + 'static,
{
    let registered = module.register_async_method(name, move |params, context, _| async move {
        let started = Instant::now();
        let Ok(permit) = context.in_flight.clone().acquire_owned().await else {
            // The semaphore is never closed; answered rather than assumed.
            return Err(ErrorObjectOwned::from(RpcError::Internal(
                "the server is stopping".into(),
            )));
        };
        let timeout = context.limits.call_timeout;
        let stop = Stop::new();
        let _stop_if_dropped = StopOnDrop(stop.clone());
        let mut call = {
            let context = context.clone();
            let stop = stop.clone();
            tokio::task::spawn_blocking(move || {
                let _slot = permit;
                let _running = context.metrics.running();
                method(&context, params, &stop)
            })
        };
        let result = match tokio::time::timeout(timeout, &mut call).await {
            Ok(joined) => joined_result(joined),
            Err(_) => {
                stop.set();
                // Answered once the method has returned: it holds the slot.
                let _ = call.await;
                Err(RpcError::Timeout(timeout.as_millis() as u64))
            }
        };
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

/// A method's answer, or -32603 (internal error) when it panicked.
fn joined_result<T>(
    joined: Result<Result<T, RpcError>, tokio::task::JoinError>,
) -> Result<T, RpcError> {
    match joined {
        Ok(result) => result,
        Err(panicked) => Err(RpcError::Internal(format!("the call failed: {panicked}"))),
    }
}
