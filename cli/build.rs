//! Records the git commit the binary is built from, for `strata --version`
//! and the replay report. A build outside a git checkout (a source tarball)
//! says "unknown" rather than failing.

use std::process::Command;

/// Runs `git` with `args` and returns its trimmed stdout, or `None` when git
/// is missing or fails (no checkout).
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=STRATA_GIT_COMMIT={commit}");

    // Rebuild when HEAD moves: HEAD itself and the branch it points at
    // (paths from git, so worktrees work too).
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(file) = git(&["rev-parse", "--git-path", &reference])
    {
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
