//! strata-cli: the library behind the `strata` binary — the block-trace
//! format, an independent in-memory state model (the root oracle), the
//! synthetic trace generator, the geth prestateTracer importer and the
//! command implementations.
#![deny(missing_docs)]

pub mod cold;
pub mod commands;
pub mod error;
pub mod generator;
pub mod geth;
pub mod logging;
pub mod metrics_server;
pub mod model;
pub mod observer;
pub mod output;
mod scratch;
pub mod trace;

pub use error::{CliError, ReplayReadMismatch, ReplayRootMismatch, ResumeMismatch};
