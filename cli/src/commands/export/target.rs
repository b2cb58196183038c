//! Where `export --out PATH` writes, decided from what PATH is:
//! - nothing, or a regular file: the dump is written to a temporary file
//!   beside it (locked, see [`crate::scratch`]), fsynced and renamed over
//!   it once whole, so a failed or killed export leaves no truncated dump;
//! - a symlink (a chain of them): the same at the path the links lead to —
//!   the temporary beside the resolved target, renamed over it — so the
//!   link stays a link;
//! - a device, FIFO or socket: written to directly, streamed (a rename
//!   would replace the node with a regular file);
//! - a folder: refused.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::CliError;
use crate::scratch::{EXPORT_PREFIX, locked_file, remove_stale};

/// Most symlinks followed from `--out` (Linux's own limit, `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// What `--out` is, and so how it is written.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// Written beside `path` (no symlink) and renamed over it.
    Replace(PathBuf),
    /// Opened for writing and written in place (`path` is not a regular
    /// file: a device, FIFO or socket).
    Stream(PathBuf),
}

impl Target {
    /// Classifies `out` as the module docs say.
    pub(super) fn of(out: &Path) -> Result<Target, CliError> {
        let path = follow_links(out).map_err(CliError::file(out))?;
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Replace(path)),
            Err(e) => Err(CliError::file(&path)(e)),
            Ok(meta) if meta.is_file() => Ok(Target::Replace(path)),
            Ok(meta) if meta.is_dir() => Err(CliError::Usage(format!(
                "--out {}: is a folder; give the dump's file name",
                out.display()
            ))),
            Ok(_) => Ok(Target::Stream(path)),
        }
    }
}

/// The path the symlinks starting at `path` lead to (`path` itself when it
/// is no symlink); the last one may be missing.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_owned();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&path)?;
                // A relative link is relative to the folder holding it.
                path = match path.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow"
    )))
}

/// The folder a file at `path` is in (`.` for a bare name).
pub(super) fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
}

/// A temporary dump beside `path`, after removing the ones killed exports
/// left there. Created 0666 less the umask, like a file written with `>`.
pub(super) fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile, CliError> {
    let folder = folder_of(path);
    remove_stale(folder, EXPORT_PREFIX);
    locked_file(folder, EXPORT_PREFIX, 0o666).map_err(CliError::file(folder))
}

/// Opens the device, FIFO or socket at `path` for writing (a FIFO's open
/// waits for its reader, as a shell's `>` does).
pub(super) fn open_stream(path: &Path) -> Result<File, CliError> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(CliError::file(path))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_to_their_target_and_folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.dump");
        let link = dir.path().join("link.dump");
        std::os::unix::fs::symlink("real.dump", &link).unwrap();
        // A dangling link leads to the file it names.
        assert_eq!(Target::of(&link).unwrap(), Target::Replace(real.clone()));
        std::fs::write(&real, b"x").unwrap();
        assert_eq!(Target::of(&link).unwrap(), Target::Replace(real));
        assert_eq!(
            Target::of(Path::new("/dev/null")).unwrap(),
            Target::Stream("/dev/null".into())
        );
        let refused = Target::of(dir.path()).unwrap_err().to_string();
        assert!(refused.contains("is a folder"), "{refused}");
        let looped = dir.path().join("loop");
        std::os::unix::fs::symlink("loop", &looped).unwrap();
        assert!(Target::of(&looped).is_err());
    }
}
