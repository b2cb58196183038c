//! Shared helpers: the vector directory and its JSON files.

use std::path::{Path, PathBuf};

/// The Ethereum test vectors, or `None` when the test skips.
pub(crate) fn vectors() -> Option<PathBuf> {
    strata_test_support::vectors("")
}

/// Every `.json` file under `dir`, sorted.
pub(crate) fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Read a JSON file.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
