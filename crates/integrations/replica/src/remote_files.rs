//! The replica's datadir reads the base's immutable files from the bucket
//! ([`RemoteFiles`]): a file the base lists and the cache folder does not
//! hold is opened where it lives (`FileSystem::remote`), its blocks read
//! through the [`RangeCache`] as lookups need them; every other file — the
//! ones the replica's own flushes and merges write — is a local file.
//!
//! The list of the base's files (`remote-files.json` in the cache folder)
//! is written once, beside its place and renamed into it, when the
//! datadir is built from a base.

use std::collections::{HashMap, HashSet};
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use strata_files::fs::{CheckMap, RangeSource, RemoteObject, WritableFile};
use strata_files::{FileSystem, OsFileSystem};

use crate::bucket::Bucket;
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
    /// Only the files the datadir may still read: one the replica's own
    /// maintenance retires (merged into files of its own) leaves the list,
    /// on disk too.
    files: Mutex<HashMap<PathBuf, RemoteEntry>>,
    cache: Arc<RangeCache>,
    /// The cache folder the list is kept in.
    folder: PathBuf,
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
    /// The list kept in `folder` (the cache folder).
    pub(crate) fn new(
        folder: &Path,
        datadir: &Path,
        entries: Vec<RemoteEntry>,
        cache: Arc<RangeCache>,
    ) -> Self {
        let files = entries
            .into_iter()
            .map(|entry| (datadir.join(&entry.path), entry))
            .collect();
        RemoteFiles {
            local: OsFileSystem,
            files: Mutex::new(files),
            cache,
            folder: folder.to_path_buf(),
        }
    }

    /// The cache the base's files are read through.
    pub fn cache(&self) -> &Arc<RangeCache> {
        &self.cache
    }

    /// Downloads whole into the datadir every base file still in use whose
    /// object `named` (a newer manifest's base) no longer lists: the
    /// publisher deletes a retired object once its grace period passes,
    /// and the replica must then hold the file itself. Each download is
    /// written beside its place, its footer checked against the list, and
    /// renamed in; the file's open readers read it from there on. Returns
    /// the files downloaded.
    pub(crate) fn hold_retired(&self, bucket: &Bucket, named: &HashSet<&str>) -> Result<usize> {
        let mut held = 0;
        let retired: Vec<(PathBuf, RemoteEntry)> = self
            .files
            .lock()
            .iter()
            .filter(|(path, entry)| !named.contains(entry.key.as_str()) && !path.exists())
            .map(|(path, entry)| (path.clone(), entry.clone()))
            .collect();
        for (path, entry) in retired {
            let path = &path;
            // Named as the files' writers name a file being written: an
            // open after a crash removes it.
            let mut partial = path.clone().into_os_string();
            partial.push(strata_files::TEMP_SUFFIX);
            let partial = PathBuf::from(partial);
            bucket.get_to_file(&entry.key, &partial)?;
            let footer = strata_files::SortedFile::open(&self.local, &partial)
                .map(|file| file.checksum())
                .ok();
            if footer != Some(entry.checksum) {
                let _ = std::fs::remove_file(&partial);
                return Err(ReplicaError::Damaged {
                    bucket: bucket.url().to_string(),
                    key: bucket.url().key(&entry.key),
                    what: format!(
                        "its footer checksum is not the {:016x} the replica's base names",
                        entry.checksum
                    ),
                });
            }
            std::fs::rename(&partial, path).map_err(io_err(path, "rename into place"))?;
            tracing::info!(file = %path.display(), key = %entry.key, "a retired base file is now held whole");
            held += 1;
        }
        Ok(held)
    }

    /// Fills the range cache with the base's files the datadir reads from
    /// the bucket — the commitment's first (every block's root reads
    /// them), then the accounts, storage, code and history — in runs of
    /// 4 MiB a GET, up to three quarters of the cache's budget, while
    /// `go_on` says so. Returns the bytes fetched.
    pub(crate) fn fill_cache(&self, budget: u64, go_on: &dyn Fn() -> bool) -> Result<u64> {
        let mut entries: Vec<RemoteEntry> = self
            .files
            .lock()
            .iter()
            .filter(|(path, _)| !path.exists())
            .map(|(_, entry)| entry.clone())
            .collect();
        let rank = |entry: &RemoteEntry| {
            let name = entry.path.as_str();
            [
                "files/commitment",
                "files/account",
                "files/storage",
                "files/code",
            ]
            .iter()
            .position(|prefix| name.starts_with(prefix))
            .unwrap_or(4)
        };
        entries.sort_by_key(|entry| (rank(entry), entry.path.clone()));
        let run = (4 << 20) / self.cache.chunk_bytes().max(1);
        let mut fetched = 0;
        for entry in entries {
            fetched +=
                self.cache
                    .fill(&entry.key, entry.size, run.max(1), budget / 4 * 3, go_on)?;
        }
        Ok(fetched)
    }

    /// The object behind `path`, while the datadir does not hold the file.
    fn entry(&self, path: &Path) -> Option<RemoteEntry> {
        self.files
            .lock()
            .get(path)
            .filter(|_| !path.exists())
            .cloned()
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
        let mut files = self.files.lock();
        if files.remove(path).is_some() {
            let entries: Vec<RemoteEntry> = files.values().cloned().collect();
            write_list(&self.folder, &entries).map_err(io::Error::other)?;
            if !path.exists() {
                return Ok(());
            }
        }
        drop(files);
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
