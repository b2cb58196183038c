//! Lock-free read-latency telemetry per domain, tier and regime.
