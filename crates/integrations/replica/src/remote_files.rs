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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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
    /// Per file opened from the bucket, what its open readers share: its
    /// bytes once the datadir holds it whole, and whether it left the list.
    opened: Mutex<HashMap<PathBuf, Arc<Opened>>>,
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
            opened: Mutex::new(HashMap::new()),
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
            let partial = partial_path(path);
            bucket.get_to_file(&entry.key, &partial)?;
            if self.take_in(bucket, &partial, path, &entry)? {
                tracing::info!(file = %path.display(), key = %entry.key, "a retired base file is now held whole");
                // Held whatever the budget: the chunks make room.
                self.cache.reserve(entry.size)?;
                held += 1;
            }
        }
        Ok(held)
    }

    /// Downloads whole into the datadir the base's files it reads from the
    /// bucket — the commitment's first (every block's root reads them),
    /// then the accounts, storage, code and history — as long as they fit
    /// in three quarters of `budget` together; the range cache keeps the
    /// rest of the budget. Each file comes in runs of 4 MiB a GET,
    /// `streams` GETs at a time, written beside its place, verified whole
    /// (every block's checksum and the whole-file checksum the base names)
    /// and renamed in; its open readers read it there from then on, and
    /// its chunks leave the range cache. The files held whole already
    /// (by an earlier round or run) count against the room and are not
    /// fetched again. The bytes of the files taken are reserved from the
    /// range cache's budget while they download and given back for those
    /// not held whole at the end (a store error, a damaged object, a file
    /// merged away meanwhile). Stops early once `go_on` says so, and at
    /// the first error, which it returns: a later call resumes with what
    /// is still missing. Returns the bytes downloaded.
    pub(crate) fn fill_cache(
        &self,
        bucket: &Bucket,
        budget: u64,
        streams: usize,
        go_on: &(dyn Fn() -> bool + Sync),
    ) -> Result<u64> {
        let mut entries: Vec<(PathBuf, RemoteEntry)> = self
            .files
            .lock()
            .iter()
            .filter(|(path, _)| !path.exists())
            .map(|(path, entry)| (path.clone(), entry.clone()))
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
        entries.sort_by(|a, b| (rank(&a.1), &a.1.path).cmp(&(rank(&b.1), &b.1.path)));
        let room = budget / 4 * 3;
        let held = self.held_whole().whole_bytes;
        let mut taken = held;
        entries.retain(|(_, entry)| {
            let fits = taken + entry.size <= room;
            if fits {
                taken += entry.size;
            }
            fits
        });
        self.cache.reserve(taken - held)?;
        let mut downloads = Vec::with_capacity(entries.len());
        let mut entries = entries.into_iter();
        for (path, entry) in entries.by_ref() {
            match Download::start(path, entry, RUN_BYTES) {
                Ok(download) => downloads.push(download),
                Err(error) => {
                    let unstarted: u64 = entries.map(|(_, entry)| entry.size).sum();
                    self.cache.release(self.let_go(&downloads) + unstarted);
                    return Err(error);
                }
            }
        }
        // Every run of every file, in the order they are wanted.
        let runs: Vec<(&Download, Range<u64>)> = downloads
            .iter()
            .flat_map(|download| download.runs().map(move |range| (download, range)))
            .collect();
        let next = AtomicUsize::new(0);
        let fetched = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let failed: Mutex<Option<ReplicaError>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..streams.max(1) {
                scope.spawn(|| {
                    while !stop.load(Ordering::Relaxed) && go_on() {
                        let Some((download, range)) =
                            runs.get(next.fetch_add(1, Ordering::Relaxed))
                        else {
                            return;
                        };
                        match download.fetch(bucket, range.clone()) {
                            Ok(last) => {
                                fetched.fetch_add(range.end - range.start, Ordering::Relaxed);
                                // A file that is not what the base names
                                // stays in the bucket, read in ranges
                                // whose blocks are checked as they come.
                                if last && let Err(error) = self.take_whole(bucket, download) {
                                    tracing::warn!(%error, "a base file is not held whole");
                                }
                            }
                            Err(error) => {
                                stop.store(true, Ordering::Relaxed);
                                failed.lock().get_or_insert(error);
                            }
                        }
                    }
                });
            }
        });
        self.cache.release(self.let_go(&downloads));
        match failed.into_inner() {
            Some(error) => Err(error),
            None => Ok(fetched.into_inner()),
        }
    }

    /// Removes what `downloads` left beside the files they did not take
    /// in whole; returns those files' bytes. (A file taken in and merged
    /// away since gave its bytes back when it left the list.)
    fn let_go(&self, downloads: &[Download]) -> u64 {
        let mut bytes = 0;
        for download in downloads {
            if !download.held.load(Ordering::Acquire) {
                let _ = std::fs::remove_file(&download.partial);
                bytes += download.entry.size;
            }
        }
        bytes
    }

    /// A download complete: synced, then taken in.
    fn take_whole(&self, bucket: &Bucket, download: &Download) -> Result<()> {
        let file =
            std::fs::File::open(&download.partial).map_err(io_err(&download.partial, "open"))?;
        file.sync_data()
            .map_err(io_err(&download.partial, "sync"))?;
        if self.take_in(bucket, &download.partial, &download.path, &download.entry)? {
            download.held.store(true, Ordering::Release);
            tracing::debug!(file = %download.path.display(), bytes = download.entry.size, "a base file is held whole");
        }
        Ok(())
    }

    /// The base file `entry` downloaded whole into `partial`: verified
    /// whole (every block's checksum, the whole-file checksum the base
    /// names), renamed into `path`, read from there by the file's open
    /// readers, its chunks let go. Refused as damaged otherwise (`partial`
    /// removed). A file the replica's maintenance merged away meanwhile
    /// (and removed from the list) is not brought back: false.
    fn take_in(
        &self,
        bucket: &Bucket,
        partial: &Path,
        path: &Path,
        entry: &RemoteEntry,
    ) -> Result<bool> {
        let checksum =
            strata_files::SortedFile::open(&self.local, partial).map(|file| file.checksum());
        if checksum.as_ref().ok() != Some(&entry.checksum) {
            let _ = std::fs::remove_file(partial);
            let what = match checksum {
                Ok(found) => format!(
                    "checksum {found:016x}, the replica's base names {:016x}",
                    entry.checksum
                ),
                Err(error) => error.to_string(),
            };
            return Err(ReplicaError::Damaged {
                bucket: bucket.url().to_string(),
                key: bucket.url().key(&entry.key),
                what,
            });
        }
        {
            // Under the list's lock, which the removal of a merged-away
            // file takes too.
            let files = self.files.lock();
            if !files.contains_key(path) {
                drop(files);
                let _ = std::fs::remove_file(partial);
                return Ok(false);
            }
            std::fs::rename(partial, path).map_err(io_err(path, "rename into place"))?;
        }
        self.now_whole(path, entry)?;
        Ok(true)
    }

    /// The datadir holds `path` whole from now on: its open readers map it,
    /// and the range cache lets go of its chunks.
    fn now_whole(&self, path: &Path, entry: &RemoteEntry) -> Result<()> {
        let bytes = self.local.map(path).map_err(io_err(path, "map"))?;
        if let Some(opened) = self.opened.lock().get(path) {
            let _ = opened.whole.set(bytes);
        }
        self.cache.forget(&entry.key, entry.size)
    }

    /// The base's files the datadir may still read, and how many of them
    /// it holds whole.
    pub fn held_whole(&self) -> BaseFiles {
        let files = self.files.lock();
        let whole = files.iter().filter(|(path, _)| path.exists());
        BaseFiles {
            listed: files.len(),
            whole: whole.clone().count(),
            whole_bytes: whole.map(|(_, entry)| entry.size).sum(),
            downloading: false,
            failed_rounds: 0,
        }
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
        // A base file retired by the replica's own maintenance leaves the
        // list (held whole or not).
        let removed = {
            let mut files = self.files.lock();
            let removed = files.remove(path);
            if removed.is_some() {
                let entries: Vec<RemoteEntry> = files.values().cloned().collect();
                write_list(&self.folder, &entries).map_err(io::Error::other)?;
            }
            removed
        };
        if let Some(entry) = removed {
            // Its chunks go with it: a reader still on the old file set
            // fetches what it reads and lets it go.
            if let Some(opened) = self.opened.lock().remove(path) {
                opened.gone.store(true, Ordering::Release);
            }
            self.cache
                .forget(&entry.key, entry.size)
                .map_err(io::Error::other)?;
            if path.exists() {
                // Held whole: its bytes go back to the chunks.
                self.local.remove(path)?;
                self.cache.release(entry.size);
            }
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
                opened: self
                    .opened
                    .lock()
                    .entry(path.to_path_buf())
                    .or_default()
                    .clone(),
            }),
        })
    }
}

/// Where a replica stands with the base's files it reads from the bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaseFiles {
    /// The base's files the datadir may still read (those its own
    /// maintenance merged away have left the list).
    pub listed: usize,
    /// Of those, the ones it holds whole.
    pub whole: usize,
    /// Their bytes.
    pub whole_bytes: u64,
    /// Whether the download in the background is still running (or
    /// waiting to try again after a store error).
    pub downloading: bool,
    /// Rounds of the download that a store error stopped, each tried
    /// again after a pause (the last error is logged).
    pub failed_rounds: u64,
}

/// One of the base's files: its ranges from the datadir's copy once it
/// holds one, else through the cache.
struct BaseObject {
    cache: Arc<RangeCache>,
    key: String,
    size: u64,
    /// What the file's open readers share.
    opened: Arc<Opened>,
}

/// What the open readers of one base file share.
#[derive(Debug, Default)]
struct Opened {
    /// The file's bytes once the datadir holds it whole.
    whole: OnceLock<Bytes>,
    /// Set when the file leaves the list (merged away by the replica's own
    /// maintenance): its chunks are not kept.
    gone: AtomicBool,
}

impl RangeSource for BaseObject {
    fn read_range(&self, range: Range<u64>) -> io::Result<Bytes> {
        match self.opened.whole.get() {
            Some(bytes) if range.start <= range.end && range.end <= bytes.len() as u64 => {
                Ok(bytes.slice(range.start as usize..range.end as usize))
            }
            Some(bytes) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "bytes {}..{} of a file of {} bytes",
                    range.start,
                    range.end,
                    bytes.len()
                ),
            )),
            None => {
                let bytes = self
                    .cache
                    .read(&self.key, self.size, range)
                    .map_err(io::Error::other)?;
                // Held whole or merged away while this read went through
                // the cache: what it kept there is let go as the rest was.
                if self.opened.whole.get().is_some() || self.opened.gone.load(Ordering::Acquire) {
                    self.cache
                        .forget(&self.key, self.size)
                        .map_err(io::Error::other)?;
                }
                Ok(bytes)
            }
        }
    }
}

/// Where a base file at `path` is written until it is taken in: named as
/// the files' writers name a file being written, so that an open after a
/// crash removes it.
fn partial_path(path: &Path) -> PathBuf {
    let mut partial = path.to_path_buf().into_os_string();
    partial.push(strata_files::TEMP_SUFFIX);
    PathBuf::from(partial)
}

/// The bytes of a run a GET fetches while filling.
const RUN_BYTES: u64 = 4 << 20;

/// One of the base's files being downloaded whole, beside its place.
struct Download {
    path: PathBuf,
    entry: RemoteEntry,
    /// Where it is written until it is whole and verified.
    partial: PathBuf,
    file: std::fs::File,
    run_bytes: u64,
    /// Runs not yet written.
    left: AtomicUsize,
    /// Set once the file is verified and renamed into place.
    held: AtomicBool,
}

impl Download {
    fn start(path: PathBuf, entry: RemoteEntry, run_bytes: u64) -> Result<Download> {
        let partial = partial_path(&path);
        let file = std::fs::File::create(&partial).map_err(io_err(&partial, "create"))?;
        file.set_len(entry.size).map_err(io_err(&partial, "size"))?;
        let left = AtomicUsize::new(entry.size.div_ceil(run_bytes) as usize);
        Ok(Download {
            path,
            entry,
            partial,
            file,
            run_bytes,
            left,
            held: AtomicBool::new(false),
        })
    }

    fn runs(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        (0..self.entry.size)
            .step_by(self.run_bytes as usize)
            .map(|start| start..(start + self.run_bytes).min(self.entry.size))
    }

    /// Fetches and writes `range`; true when it was the file's last run.
    fn fetch(&self, bucket: &Bucket, range: Range<u64>) -> Result<bool> {
        let start = range.start;
        let data = bucket.get_range_of(&self.entry.key, self.entry.size, range)?;
        self.file
            .write_all_at(&data, start)
            .map_err(io_err(&self.partial, "write"))?;
        Ok(self.left.fetch_sub(1, Ordering::AcqRel) == 1)
    }
}
