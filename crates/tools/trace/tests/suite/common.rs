//! Shared helpers: the vector directory and its JSON files.

use std::path::{Path, PathBuf};

/// The Ethereum test vectors, or `None` when the test skips.
pub(crate) fn vectors() -> Option<PathBuf> {
    strata_test_support::vectors("")
}

/// Read a JSON file.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
