//! What strata's test suites share (a dev-dependency only): the path of
//! Ethereum's published test vectors, `../shared/vectors` beside the
//! checkout, and the rule for when they are absent — a test says so and
//! skips, except under `CI=true`, where absence is a failure.

use std::path::PathBuf;

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
