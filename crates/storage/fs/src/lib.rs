//! strata-fs, the I/O seam: every byte an immutable file writes or reads goes through
//! [`FileSystem`], so tests can inject failures, rebuild the image a power
//! cut leaves behind, and patch bytes.
//!
//! Implementations: [`OsFileSystem`] (real files, memory-mapped reads),
//! [`MemFileSystem`] (in memory, with a power-cut model) and
//! [`FaultyFileSystem`] (a decorator that fails chosen operations; feature
//! `test-utils`). The memory map of [`OsFileSystem`] is the crate's one
//! `unsafe` (`mmap.rs`).
#![deny(missing_docs)]

#[cfg(any(test, feature = "test-utils"))]
mod faulty;
mod mem;
mod mmap;
mod os;

use std::fmt::Debug;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use bytes::Bytes;

#[cfg(any(test, feature = "test-utils"))]
pub use faulty::{Fault, FaultyFileSystem};
pub use mem::MemFileSystem;
pub use os::OsFileSystem;

/// A file being written: appended to, then made durable with [`WritableFile::sync`].
pub trait WritableFile: Send {
    /// Appends all of `buf` (possibly buffered until [`WritableFile::sync`]).
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Flushes buffers and makes the content durable (fsync).
    fn sync(&mut self) -> io::Result<()>;
    /// Hands buffered bytes to the operating system without making them
    /// durable: they then survive a crash of this process, not a power cut.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The operations the immutable-file layer needs from a file system.
///
/// Durable replacement is built from them: write a temp file in the target
/// directory, [`WritableFile::sync`] it, [`FileSystem::rename`] it into place,
/// then [`FileSystem::sync_dir`] the directory.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates `path` for writing, truncating an existing file.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Atomically renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Creates a directory and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The files directly inside `dir`, sorted by path.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Reads the whole file into memory.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Maps the whole file for reading. The returned bytes stay valid (and
    /// unchanged) for as long as any clone or slice of them lives.
    fn map(&self, path: &Path) -> io::Result<Bytes>;
    /// Maps the whole file like [`FileSystem::map`] and runs `check` over the
    /// map (a check that reads every page). `check` is also given a
    /// *release* callback: the byte ranges it passes there, as it finishes
    /// with them, may leave this process's resident set — their pages stay
    /// in the page cache and come back on the next read — so that opening a
    /// file of any size keeps only a bounded part of it resident. When
    /// `check` returns `true` the whole map is released likewise. The
    /// default only maps and checks (nothing to release in memory).
    fn map_checked(&self, path: &Path, check: &mut CheckMap<'_>) -> io::Result<Bytes> {
        let map = self.map(path)?;
        check(&map, &mut |_| {});
        Ok(map)
    }
    /// The file's length in bytes.
    fn file_len(&self, path: &Path) -> io::Result<u64>;
    /// When the file at `path` is read where it lives — an object in a
    /// bucket, through ranged reads — rather than held here: its object.
    /// The default holds every file here.
    fn remote(&self, path: &Path) -> Option<RemoteObject> {
        let _ = path;
        None
    }
}

/// Where a remote file's bytes come from: ranged reads of one object
/// (an object store's ranged GET, a cache in front of one).
pub trait RangeSource: Send + Sync {
    /// The bytes at file offsets `range`: exactly that many, or an error.
    fn read_range(&self, range: Range<u64>) -> io::Result<Bytes>;
}

/// A file read where it lives ([`FileSystem::remote`]).
#[derive(Clone)]
pub struct RemoteObject {
    /// Its length in bytes.
    pub size: u64,
    /// The whole-file checksum its footer must name, when known (a
    /// manifest's): another is refused as another file.
    pub checksum: Option<u64>,
    /// Its bytes.
    pub source: std::sync::Arc<dyn RangeSource>,
}

impl Debug for RemoteObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteObject")
            .field("size", &self.size)
            .field("checksum", &self.checksum)
            .finish()
    }
}

/// A check over a whole map, given the map and a callback that releases
/// the pages of a byte range the check is done with (see
/// [`FileSystem::map_checked`]); returns whether the file is valid.
pub type CheckMap<'a> = dyn FnMut(&Bytes, &mut dyn FnMut(Range<usize>)) -> bool + 'a;

/// The final path component as text, for error messages and name parsing.
pub fn file_name_of(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}
