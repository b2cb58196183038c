//! Integration tests of strata-trace: one binary, one module per area. The
//! commands built on the crate (`gen-trace`, `import-geth`, `check-trace`,
//! `replay`) are tested through the binary in cli/tests/suite.

mod common;
mod model_vectors;
mod parser;
