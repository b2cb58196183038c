//! strata's own temporary names — `.strata-output-XXXXXX` beside an output's
//! target (a trace, report, plot or dump), `.strata-sweep-XXXXXX` beside a sweep's datadir,
//! `strata-verify-XXXXXX` in verify's temp folder, `strata-ef-test-XXXXXX`
//! in the temp folder, `strata-publish-XXXXXX` in publish's scratch folder — created *locked*, so
//! that what a killed command left can be told from what a running one
//! uses, and removed at the next start of a command that uses the folder.
//!
//! The rule, in one place:
//! - a name is strata's when it is one of the prefixes above followed by
//!   exactly [`SUFFIX_LEN`] ASCII letters or digits (the random suffix),
//!   nothing else;
//! - the creator holds an advisory lock (`flock`, exclusive) on the file,
//!   or on the folder, for as long as it uses it; after taking the lock it
//!   checks that the name still leads to what it locked (a sweep may have
//!   removed it in between) and starts over with a new name if not;
//! - a sweep removes a strata name only when it can take that lock itself
//!   (so no process uses it: a lock dies with its process, SIGKILL
//!   included) and the name still leads to what it locked. Anything else —
//!   other names, names it cannot open or lock, a file system without
//!   locks — is left alone.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The prefix of an output's temporary beside its target (see `crate::output_file`).
pub(crate) const OUTPUT_PREFIX: &str = ".strata-output-";
/// The prefix of a sweep run's copy of the datadir beside it.
pub(crate) const SWEEP_PREFIX: &str = ".strata-sweep-";
/// The prefix of verify's scratch folder in the temp folder.
pub(crate) const VERIFY_PREFIX: &str = "strata-verify-";
/// The prefix of ef-test's folder of case stores in the temp folder.
pub(crate) const EF_TEST_PREFIX: &str = "strata-ef-test-";
/// The prefix of publish's folder for a base's stream before its upload.
pub(crate) const PUBLISH_PREFIX: &str = "strata-publish-";

/// Length of the random suffix of every strata temporary name.
pub(crate) const SUFFIX_LEN: usize = 6;

/// How many fresh names a creation tries when a sweep takes them away.
const ATTEMPTS: usize = 8;

/// Whether `name` is `prefix` followed by a random suffix of the shape
/// strata creates.
pub(crate) fn is_temp_name(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|suffix| {
        suffix.len() == SUFFIX_LEN && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// A builder for a temporary name `prefix` + suffix.
fn builder(prefix: &str) -> tempfile::Builder<'_, '_> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix).rand_bytes(SUFFIX_LEN);
    builder
}

/// Whether `path` still leads to the file `held` is open on.
#[cfg(unix)]
fn same_file(path: &Path, held: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (named, open) = (std::fs::symlink_metadata(path)?, held.metadata()?);
    Ok(named.dev() == open.dev() && named.ino() == open.ino())
}

/// Elsewhere the name is trusted once it exists.
#[cfg(not(unix))]
fn same_file(path: &Path, _held: &File) -> io::Result<bool> {
    Ok(std::fs::symlink_metadata(path).is_ok())
}

/// Takes the lock on `file` (open on `path`) and checks that `path` still
/// leads to it; `Ok(false)` when another process holds the lock or the
/// name was removed or replaced.
fn claim(path: &Path, file: &File) -> io::Result<bool> {
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    match same_file(path, file) {
        Ok(same) => Ok(same),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// A new temporary file `prefix`XXXXXX in `folder`, locked for as long as
/// it is open (`mode`: its permission bits on unix).
pub(crate) fn locked_file(
    folder: &Path,
    prefix: &str,
    mode: u32,
) -> io::Result<tempfile::NamedTempFile> {
    for _ in 0..ATTEMPTS {
        let mut builder = builder(prefix);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(mode));
        }
        #[cfg(not(unix))]
        let _ = mode;
        let file = builder.tempfile_in(folder)?;
        if claim(file.path(), file.as_file())? {
            return Ok(file);
        }
    }
    Err(lost(folder, prefix))
}

/// A temporary folder that exists, locked, for as long as this lives;
/// removed (with what it holds) when dropped.
#[derive(Debug)]
pub(crate) struct LockedDir {
    /// Removed first when dropped, while `lock` still holds the lock.
    dir: tempfile::TempDir,
    /// The folder opened, holding the lock.
    _lock: File,
}

impl LockedDir {
    /// A new folder `prefix`XXXXXX in `parent`, locked.
    pub(crate) fn new_in(parent: &Path, prefix: &str) -> io::Result<LockedDir> {
        for _ in 0..ATTEMPTS {
            let dir = builder(prefix).tempdir_in(parent)?;
            let lock = File::open(dir.path())?;
            if claim(dir.path(), &lock)? {
                return Ok(LockedDir { dir, _lock: lock });
            }
            // Removed or taken by a sweep: leave that name to it.
            let _ = dir.keep();
        }
        Err(lost(parent, prefix))
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The error of a creation whose every name a sweep took away.
fn lost(folder: &Path, prefix: &str) -> io::Error {
    io::Error::other(format!(
        "could not keep a temporary {prefix}XXXXXX in {}: another strata process removed each one",
        folder.display()
    ))
}

/// Removes the strata temporaries `prefix`XXXXXX in `folder` that no
/// process holds (see the module docs); returns what was removed. A
/// folder that cannot be listed, or a name that cannot be checked or
/// removed, is left alone with a warning: a sweep never fails a command.
pub(crate) fn remove_stale(folder: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return removed,
        Err(error) => {
            tracing::warn!(folder = %folder.display(), %error, "cannot list the folder for stale {prefix}XXXXXX");
            return removed;
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(|name| is_temp_name(name, prefix)) {
            continue;
        }
        let path = entry.path();
        match remove_if_unused(&path) {
            Ok(true) => {
                tracing::info!(path = %path.display(), "removed a temporary a killed strata command left");
                removed.push(path);
            }
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "left a strata temporary that could not be checked or removed");
            }
        }
    }
    removed
}

/// Removes `path` (a file, or a folder with what it holds) when no
/// process holds its lock; `Ok(false)` when one does, or when it is
/// neither a plain file nor a folder.
fn remove_if_unused(path: &Path) -> io::Result<bool> {
    let kind = std::fs::symlink_metadata(path)?.file_type();
    if !kind.is_file() && !kind.is_dir() {
        return Ok(false);
    }
    let file = File::open(path)?;
    if !claim(path, &file)? {
        return Ok(false);
    }
    if kind.is_dir() {
        std::fs::remove_dir_all(path)?;
    } else {
        std::fs::remove_file(path)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_prefix_and_a_six_character_suffix_are_strata_names() {
        assert!(is_temp_name(".strata-output-a1B2c3", OUTPUT_PREFIX));
        for other in [
            ".strata-output-a1B2c",
            ".strata-output-a1B2c3d",
            ".strata-output-a1B2c!",
            ".strata-output-a1B2c3.bak",
            "strata-output-a1B2c3",
            ".strata-sweep-a1B2c3",
        ] {
            assert!(!is_temp_name(other, OUTPUT_PREFIX), "{other}");
        }
    }

    #[test]
    fn a_held_name_stays_and_a_released_one_goes() {
        let dir = tempfile::tempdir().unwrap();
        let held = locked_file(dir.path(), OUTPUT_PREFIX, 0o600).unwrap();
        let held_dir = LockedDir::new_in(dir.path(), VERIFY_PREFIX).unwrap();
        let released = locked_file(dir.path(), OUTPUT_PREFIX, 0o600).unwrap();
        let (released, _) = released.keep().unwrap();
        drop(released);
        let removed = remove_stale(dir.path(), OUTPUT_PREFIX);
        assert_eq!(removed.len(), 1);
        assert!(held.path().exists());
        assert!(remove_stale(dir.path(), VERIFY_PREFIX).is_empty());
        assert!(held_dir.path().exists());
    }
}
