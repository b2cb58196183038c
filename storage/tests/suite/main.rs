//! strata-storage integration tests: one binary, one module per concern.

mod api;
mod concurrency;
mod crash;
mod model;
mod oracle;
mod vectors;
mod verify;
