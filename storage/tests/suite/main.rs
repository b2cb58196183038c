//! strata-storage integration tests: one binary, one module per concern.

mod model;
mod oracle;
