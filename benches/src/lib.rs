//! Shared helpers for strata's criterion benchmarks.
