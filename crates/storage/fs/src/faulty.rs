//! A decorator that makes chosen operations of another file system fail.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{CheckMap, FileSystem, WritableFile};

/// An operation to fail. Each armed fault fires on every matching call until
/// [`FaultyFileSystem::clear`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// `create` fails.
    Create,
    /// A write fails once the writer has accepted this many bytes in total.
    WriteAfter(u64),
    /// `WritableFile::sync` fails.
    Sync,
    /// `rename` fails (nothing is renamed).
    Rename,
    /// `sync_dir` fails.
    SyncDir,
    /// `map` and `read` fail.
    Map,
}

/// Wraps a [`FileSystem`] and fails the operations armed with
/// [`FaultyFileSystem::inject`], leaving the inner file system untouched by
/// the failed call.
#[derive(Debug)]
pub struct FaultyFileSystem {
    inner: Arc<dyn FileSystem>,
    faults: Arc<Mutex<Vec<Fault>>>,
}

impl FaultyFileSystem {
    /// Wraps `inner` with no fault armed.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        Self {
            inner,
            faults: Arc::default(),
        }
    }

    /// Arms a fault.
    pub fn inject(&self, fault: Fault) {
        self.faults.lock().push(fault);
    }

    /// Disarms every fault.
    pub fn clear(&self) {
        self.faults.lock().clear();
    }

    fn armed(&self, fault: Fault) -> bool {
        self.faults.lock().contains(&fault)
    }
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected {what} failure"))
}

struct FaultyWritableFile {
    inner: Box<dyn WritableFile>,
    faults: Arc<Mutex<Vec<Fault>>>,
    written: u64,
}

impl WritableFile for FaultyWritableFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let total = self.written + buf.len() as u64;
        let limit = self.faults.lock().iter().find_map(|f| match f {
            Fault::WriteAfter(n) => Some(*n),
            _ => None,
        });
        if let Some(limit) = limit
            && total > limit
        {
            return Err(injected("write"));
        }
        self.inner.write_all(buf)?;
        self.written = total;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        if self.faults.lock().contains(&Fault::Sync) {
            return Err(injected("sync"));
        }
        self.inner.sync()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl FileSystem for FaultyFileSystem {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if self.armed(Fault::Create) {
            return Err(injected("create"));
        }
        Ok(Box::new(FaultyWritableFile {
            inner: self.inner.create(path)?,
            faults: Arc::clone(&self.faults),
            written: 0,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.armed(Fault::Rename) {
            return Err(injected("rename"));
        }
        self.inner.rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.armed(Fault::SyncDir) {
            return Err(injected("directory sync"));
        }
        self.inner.sync_dir(dir)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list_dir(dir)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if self.armed(Fault::Map) {
            return Err(injected("read"));
        }
        self.inner.read(path)
    }

    fn map(&self, path: &Path) -> io::Result<Bytes> {
        if self.armed(Fault::Map) {
            return Err(injected("map"));
        }
        self.inner.map(path)
    }

    fn map_checked(&self, path: &Path, check: &mut CheckMap<'_>) -> io::Result<Bytes> {
        if self.armed(Fault::Map) {
            return Err(injected("map"));
        }
        self.inner.map_checked(path, check)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_len(path)
    }
}
