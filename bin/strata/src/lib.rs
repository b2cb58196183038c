//! strata-cli: the library behind the `strata` binary — the command
//! implementations, their errors and output, logs and the `--metrics`
//! endpoint.
//!
//! The block-trace format, the in-memory state model (the root oracle), the
//! synthetic trace generator and the geth prestateTracer importer live in
//! strata-trace (`strata_trace`, `strata_trace::{model, generator, geth}`);
//! the observer's reads and figures in strata-observer (`strata_observer`).
//! The observer's second process (`strata observe --samples`, started by
//! `strata replay --observer-process`) is `commands::observe`.
#![deny(missing_docs)]

mod arg_values;
pub mod cold;
pub mod commands;
pub mod error;
mod host;
pub mod logging;
pub mod metrics_server;
pub mod output;
mod output_file;
mod replica_metrics;
mod scratch;
mod thread_cpu;

pub use error::{
    CliError, FlagError, InputProblem, ReplayReadMismatch, ReplayRootMismatch, ResumeMismatch,
};
pub use output_file::OutputRefusal;
