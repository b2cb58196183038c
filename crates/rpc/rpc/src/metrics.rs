//! Requests and latency per method, for the Prometheus endpoint:
//! `strata_rpc_requests_total{method, outcome}`,
//! `strata_rpc_request_seconds{method}` and `strata_rpc_calls_running`.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// One method running, counted in [`RpcMetrics::calls_running`] while
/// this lives.
#[derive(Debug)]
pub(crate) struct Running(Gauge);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Method {
    method: &'static str,
}

/// The server's counters, histograms and gauge.
#[derive(Clone, Debug)]
pub struct RpcMetrics {
    requests: Family<Outcome, Counter>,
    latency: Family<Method, Histogram>,
    running: Gauge,
}

impl Default for RpcMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            // 10 µs to about 84 s.
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(1e-5, 2.0, 24))
            }),
            running: Gauge::default(),
        }
    }
}

impl RpcMetrics {
    /// Adds the metrics to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "strata_rpc_requests",
            "JSON-RPC calls per method and outcome (ok, error, timeout)",
            self.requests.clone(),
        );
        registry.register(
            "strata_rpc_request_seconds",
            "JSON-RPC call latency per method",
            self.latency.clone(),
        );
        registry.register(
            "strata_rpc_calls_running",
            "JSON-RPC methods running now (a call past its time limit counts until it has stopped)",
            self.running.clone(),
        );
    }

    /// Methods running now: a call answered as timed out counts until its
    /// run has stopped.
    pub fn calls_running(&self) -> i64 {
        self.running.get()
    }

    /// Counts one method running until the guard is dropped.
    pub(crate) fn running(&self) -> Running {
        self.running.inc();
        Running(self.running.clone())
    }

    /// Records one call.
    pub(crate) fn record(&self, method: &'static str, outcome: &'static str, took: Duration) {
        self.requests
            .get_or_create(&Outcome { method, outcome })
            .inc();
        self.latency
            .get_or_create(&Method { method })
            .observe(took.as_secs_f64());
    }
}
