//! Shared helpers: the vector directory, the testdata directory, the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Ethereum test vectors, or `None` (test skips) when absent outside CI.
pub(crate) fn vectors() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/vectors");
    if dir.is_dir() {
        Some(dir)
    } else if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "test vectors missing at {} (required when CI=true)",
            dir.display()
        );
    } else {
        eprintln!("skipping: no test vectors at {}", dir.display());
        None
    }
}

/// The repository's testdata directory.
pub(crate) fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
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

/// Run the `strata` binary.
pub(crate) fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run strata")
}

/// Read a JSON file.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
