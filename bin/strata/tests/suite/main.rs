//! Integration tests of strata-cli: one binary, one module per area.

mod args;
mod commands;
mod common;
mod dashboard;
mod export;
mod export_out;
mod full_stdout;
mod gen_chain;
mod generator;
mod hygiene;
mod import_chain;
mod import_geth;
mod json;
mod kill;
mod metrics;
mod observe;
mod outputs;
mod prefetch;
mod read_only;
mod reference;
mod refusals;
mod replay;
mod resume;
mod serve;
mod temp_names;
mod verify;
