//! strata-storage integration tests: one binary, one module per concern.

mod concurrency;
mod model;
mod oracle;
mod vectors;
