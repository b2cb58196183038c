//! Read-latency and block-level telemetry ([`strata_telemetry`]), and, with
//! feature `prometheus`, the store's figures as a `prometheus_client`
//! collector.

pub use strata_telemetry::*;

#[cfg(feature = "prometheus")]
pub mod prometheus;
