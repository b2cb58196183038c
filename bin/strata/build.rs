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
    // (paths from git, so worktrees work too). Only files that exist are
    // watched: cargo reruns the script on every build for a missing one
    // (a checkout whose refs are all loose has no packed-refs).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in watched {
        if let Some(file) = git(&["rev-parse", "--git-path", &path])
            && std::path::Path::new(&file).exists()
        {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
