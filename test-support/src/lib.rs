//! What strata's test suites share (a dev-dependency only): the path of
//! Ethereum's published test vectors, `../shared/vectors` beside the
//! checkout, and the rule for when they are absent — a test says so and
//! skips, except under `CI=true`, where absence is a failure; [`json_files`],
//! the vector files of a folder; and [`tree_contents`], what "changed no
//! byte of the datadir" is checked with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `sub` inside the shared vectors folder (`""` for the folder itself), or
/// `None` after printing why the calling test skips. Panics when the folder
/// is absent and `CI=true`.
pub fn vectors(sub: &str) -> Option<PathBuf> {
    // Every crate of the workspace sits one level below the checkout, as
    // this one does.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/vectors")
        .join(sub);
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "test vectors missing at {} (required when CI=true)",
            dir.display()
        );
    }
    eprintln!("skipping: no test vectors at {}", dir.display());
    None
}

/// Every `.json` file under `dir` and its subfolders, sorted.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
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

/// Every file and folder under `dir` with the bytes of each file (a folder
/// maps to `<folder>`): equal before and after a command when it changed no
/// byte, created nothing and deleted nothing.
pub fn tree_contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let entries =
            std::fs::read_dir(&at).unwrap_or_else(|e| panic!("list {}: {e}", at.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path.clone());
                out.insert(path, b"<folder>".to_vec());
            } else {
                let bytes =
                    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                out.insert(path, bytes);
            }
        }
    }
    out
}
