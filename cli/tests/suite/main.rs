//! Integration tests of strata-cli: one binary, one module per area.

mod commands;
mod common;
mod generator;
mod import_geth;
mod model_vectors;
mod parser;
