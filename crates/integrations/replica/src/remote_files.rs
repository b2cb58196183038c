//! The replica's datadir reads the base's immutable files from the bucket
//! ([`RemoteFiles`]): a file the base lists and the cache folder does not
//! hold is opened where it lives (`FileSystem::remote`), its blocks read
//! through the [`RangeCache`] as lookups need them; every other file — the
//! ones the replica's own flushes and merges write — is a local file.
//!
//! The list of the base's files (`remote-files.json` in the cache folder)
//! is written once, beside its place and renamed into it, when the
//! datadir is built from a base.

use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use strata_files::fs::{CheckMap, RangeSource, RemoteObject, WritableFile};
use strata_files::{FileSystem, OsFileSystem};

use crate::error::{ReplicaError, Result, io_err};
use crate::ranges::RangeCache;

/// The list of the base's files in the cache folder.
pub(crate) const REMOTE_FILES: &str = "remote-files.json";

/// One file of the base, read from the bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RemoteEntry {
    /// Its path in the datadir (`files/<name>` or `history/<name>`).
    pub(crate) path: String,
    /// The object.
    pub(crate) key: String,
    /// Its length.
    pub(crate) size: u64,
    /// The whole-file checksum its footer names.
    pub(crate) checksum: u64,
}

/// Reads the list in `cache` (`None`: the replica holds its files whole).
pub(crate) fn read_list(cache: &Path) -> Result<Option<Vec<RemoteEntry>>> {
    let path = cache.join(REMOTE_FILES);
    match std::fs::read(&path) {
        Ok(data) => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|e| ReplicaError::Config(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(&path, "read")(e)),
    }
}

/// Writes the list into `cache`, beside its place first.
pub(crate) fn write_list(cache: &Path, entries: &[RemoteEntry]) -> Result<()> {
    let path = cache.join(REMOTE_FILES);
    let partial = cache.join(format!("{REMOTE_FILES}.part"));
    let data = serde_json::to_vec_pretty(entries).expect("a list serializes");
    std::fs::write(&partial, data).map_err(io_err(&partial, "write"))?;
    std::fs::rename(&partial, &path).map_err(io_err(&path, "rename into place"))
}

/// The replica datadir's file system: local files, and the base's files
/// read from the bucket while the datadir does not hold them.
#[derive(Debug)]
pub struct RemoteFiles {
    local: OsFileSystem,
    /// Path in the datadir → the object.
    files: HashMap<PathBuf, RemoteEntry>,
    cache: Arc<RangeCache>,
}

impl std::fmt::Debug for RangeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeCache")
            .field("stats", &self.stats())
            .finish()
    }
}

impl RemoteFiles {
    /// The base's files of `entries` under `datadir`, read through `cache`.
    pub(crate) fn new(datadir: &Path, entries: Vec<RemoteEntry>, cache: Arc<RangeCache>) -> Self {
        let files = entries
            .into_iter()
            .map(|entry| (datadir.join(&entry.path), entry))
            .collect();
        RemoteFiles {
            local: OsFileSystem,
            files,
            cache,
        }
    }

    /// The cache the base's files are read through.
    pub fn cache(&self) -> &Arc<RangeCache> {
        &self.cache
    }

    /// The object behind `path`, while the datadir does not hold the file.
    fn entry(&self, path: &Path) -> Option<&RemoteEntry> {
        self.files.get(path).filter(|_| !path.exists())
    }
}

impl FileSystem for RemoteFiles {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.local.create(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.local.rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.local.sync_dir(dir)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        // A base file retired by the replica's own maintenance: nothing
        // of it is held here.
        if self.entry(path).is_some() {
            return Ok(());
        }
        self.local.remove(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.local.create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.local.list_dir(dir)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.local.read(path)
    }

    fn map(&self, path: &Path) -> io::Result<Bytes> {
        self.local.map(path)
    }

    fn map_checked(&self, path: &Path, check: &mut CheckMap<'_>) -> io::Result<Bytes> {
        self.local.map_checked(path, check)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        match self.entry(path) {
            Some(entry) => Ok(entry.size),
            None => self.local.file_len(path),
        }
    }

    fn remote(&self, path: &Path) -> Option<RemoteObject> {
        let entry = self.entry(path)?;
        Some(RemoteObject {
            size: entry.size,
            checksum: Some(entry.checksum),
            source: Arc::new(BaseObject {
                cache: self.cache.clone(),
                key: entry.key.clone(),
                size: entry.size,
                local: path.to_path_buf(),
            }),
        })
    }
}

/// One of the base's files: its ranges from the local copy once the
/// datadir holds one, else through the cache.
struct BaseObject {
    cache: Arc<RangeCache>,
    key: String,
    size: u64,
    local: PathBuf,
}

impl RangeSource for BaseObject {
    fn read_range(&self, range: Range<u64>) -> io::Result<Bytes> {
        match std::fs::File::open(&self.local) {
            Ok(file) => {
                let mut out = vec![0u8; (range.end - range.start) as usize];
                file.read_exact_at(&mut out, range.start)?;
                Ok(Bytes::from(out))
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => self
                .cache
                .read(&self.key, self.size, range)
                .map_err(io::Error::other),
            Err(error) => Err(error),
        }
    }
}
