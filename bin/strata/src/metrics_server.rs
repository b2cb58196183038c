//! `--metrics ADDR`: Prometheus text exposition of a `prometheus_client`
//! registry over HTTP (`GET /metrics`), served by one thread with
//! `tiny_http`. The registry is encoded when scraped; nothing is recorded
//! for it elsewhere.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::registry::Registry;

use crate::CliError;

/// The metrics HTTP server; stops (and joins its thread) when dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port) and serves `registry` at
    /// `/metrics`; any other path gets 404.
    pub fn start(addr: SocketAddr, registry: Registry) -> Result<Self, CliError> {
        let bind_error = |message: String| CliError::Metrics { addr, message };
        let server =
            Arc::new(tiny_http::Server::http(addr).map_err(|error| bind_error(error.to_string()))?);
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| bind_error("the server is not bound to an IP address".into()))?;
        let serving = server.clone();
        let thread = std::thread::Builder::new()
            .name("strata-metrics".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    respond(request, &registry);
                }
            })
            .map_err(|error| bind_error(format!("cannot start the server thread: {error}")))?;
        Ok(Self {
            server,
            thread: Some(thread),
            addr: bound,
        })
    }

    /// The address the server is bound to (the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn respond(request: tiny_http::Request, registry: &Registry) {
    let path = request.url().split('?').next().unwrap_or_default();
    let response = if *request.method() != tiny_http::Method::Get {
        text_response(405, "only GET is served\n".into(), "text/plain")
    } else if path == "/metrics" {
        let mut body = String::new();
        match prometheus_text::encode(&mut body, registry) {
            Ok(()) => text_response(200, body, prometheus_text::CONTENT_TYPE),
            Err(_) => text_response(500, "encoding the metrics failed\n".into(), "text/plain"),
        }
    } else {
        text_response(
            404,
            "not found; metrics are at /metrics\n".into(),
            "text/plain",
        )
    };
    if let Err(error) = request.respond(response) {
        tracing::debug!(%error, "metrics: the scraper went away");
    }
}

fn text_response(
    status: u16,
    body: String,
    content_type: &str,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let response = tiny_http::Response::from_string(body).with_status_code(status);
    match tiny_http::Header::from_bytes("Content-Type", content_type) {
        Ok(header) => response.with_header(header),
        Err(()) => response,
    }
}
