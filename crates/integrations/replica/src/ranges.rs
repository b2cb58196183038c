//! Ranges of the bucket's objects read on demand and kept on local disk
//! within a byte budget, the least recently used going first
//! ([`RangeCache`]): what a reader of a base's immutable files fetches
//! instead of the files whole ([`strata_files::SortedFile::open_remote`] over
//! [`RangeCache::object`]).
//!
//! An object is read in aligned chunks (`chunk_bytes`, the last one
//! shorter); a read fetches the chunks it lacks with one ranged GET per
//! run of neighbours, and each chunk is written beside its place and
//! renamed into it. A chunk's file names its object and carries
//! a checksum: one that does not hold what it names (a damaged disk, a cut
//! write) is fetched again, never served. Objects never change once
//! written, so a chunk cached stays right for as long as its object is
//! named.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_64;

use crate::bucket::Bucket;
use crate::error::{ReplicaError, Result, io_err};

/// The first bytes of every chunk file.
const MAGIC: &[u8; 4] = b"SRC1";
/// A chunk file's extension.
const CHUNK_EXTENSION: &str = "chunk";
/// A chunk file being written.
const PARTIAL_EXTENSION: &str = "part";

/// How a [`RangeCache`] keeps its chunks.
#[derive(Clone, Debug)]
pub struct RangeCacheOptions {
    /// The folder the chunks live in (created when absent).
    pub dir: PathBuf,
    /// The most bytes of chunk files kept; the least recently used go
    /// first once a new chunk passes it.
    pub budget_bytes: u64,
    /// The size of a chunk: what one GET fetches.
    pub chunk_bytes: u64,
}

impl RangeCacheOptions {
    /// Chunks of 64 KiB in `dir`, at most `budget_bytes` of them.
    pub fn new(dir: impl Into<PathBuf>, budget_bytes: u64) -> RangeCacheOptions {
        RangeCacheOptions {
            dir: dir.into(),
            budget_bytes,
            chunk_bytes: 64 << 10,
        }
    }
}

/// What a [`RangeCache`] did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeCacheStats {
    /// Chunks read from the local disk.
    pub hits: u64,
    /// Chunks fetched from the bucket (a GET fetches one, or a run of
    /// neighbours one read needs).
    pub misses: u64,
    /// Chunk files removed to stay within the budget.
    pub evicted: u64,
    /// Chunk files found damaged (fetched again).
    pub damaged: u64,
    /// Bytes of chunk files on disk now.
    pub bytes: u64,
    /// The most bytes of chunks kept now: the options' budget less what
    /// the owner holds elsewhere ([`RangeCache::reserve`]).
    pub budget: u64,
}

/// The chunks on disk, in the order they were last used.
#[derive(Default)]
struct Recency {
    tick: u64,
    /// File name → (bytes on disk, last use).
    chunks: HashMap<String, (u64, u64)>,
    /// Last use → file name.
    order: BTreeMap<u64, String>,
    bytes: u64,
}

impl Recency {
    fn touch(&mut self, name: &str) -> bool {
        let Some((_, used)) = self.chunks.get_mut(name) else {
            return false;
        };
        self.order.remove(used);
        self.tick += 1;
        *used = self.tick;
        self.order.insert(self.tick, name.to_string());
        true
    }

    fn insert(&mut self, name: String, bytes: u64) {
        self.remove(&name);
        self.tick += 1;
        self.bytes += bytes;
        self.order.insert(self.tick, name.clone());
        self.chunks.insert(name, (bytes, self.tick));
    }

    fn remove(&mut self, name: &str) {
        if let Some((bytes, used)) = self.chunks.remove(name) {
            self.order.remove(&used);
            self.bytes -= bytes;
        }
    }

    /// The least recently used chunk other than `keep`.
    fn oldest_but(&self, keep: &str) -> Option<String> {
        self.order.values().find(|name| *name != keep).cloned()
    }
}

/// Ranges of a bucket's objects, cached on local disk within a budget.
pub struct RangeCache {
    bucket: Arc<Bucket>,
    options: RangeCacheOptions,
    recency: Mutex<Recency>,
    /// The most bytes of chunks kept: the options' budget less what the
    /// owner reserved for other uses ([`RangeCache::reserve`]).
    budget: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    evicted: AtomicU64,
    damaged: AtomicU64,
    /// Numbers the partial files of concurrent fetches apart.
    partials: AtomicU64,
}

impl RangeCache {
    /// A cache of `bucket`'s objects in `options.dir`: the chunks a
    /// previous run left there are kept (their order of use taken from
    /// their modification times), partial writes removed, and the whole
    /// brought within the budget.
    pub fn open(bucket: Arc<Bucket>, options: RangeCacheOptions) -> Result<Arc<RangeCache>> {
        if options.chunk_bytes == 0 {
            return Err(ReplicaError::Config(
                "a range cache's chunk size must be at least one byte".into(),
            ));
        }
        let dir = &options.dir;
        std::fs::create_dir_all(dir).map_err(io_err(dir, "create the range cache"))?;
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io_err(dir, "list the range cache"))? {
            let entry = entry.map_err(io_err(dir, "list the range cache"))?;
            let path = entry.path();
            match path.extension().and_then(|e| e.to_str()) {
                Some(PARTIAL_EXTENSION) => {
                    std::fs::remove_file(&path).map_err(io_err(&path, "remove a cut write"))?;
                }
                Some(CHUNK_EXTENSION) => {
                    let meta = entry.metadata().map_err(io_err(&path, "stat"))?;
                    let used = meta.modified().ok();
                    found.push((
                        used,
                        entry.file_name().to_string_lossy().into_owned(),
                        meta.len(),
                    ));
                }
                _ => {}
            }
        }
        found.sort();
        let mut recency = Recency::default();
        for (_, name, bytes) in found {
            recency.insert(name, bytes);
        }
        let cache = RangeCache {
            bucket,
            budget: AtomicU64::new(options.budget_bytes),
            options,
            recency: Mutex::new(recency),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            damaged: AtomicU64::new(0),
            partials: AtomicU64::new(0),
        };
        cache.evict_beyond_budget("")?;
        Ok(Arc::new(cache))
    }

    /// Object `key` of `size` bytes as a [`strata_files::RangeSource`].
    pub fn object(self: &Arc<Self>, key: &str, size: u64) -> Arc<dyn strata_files::RangeSource> {
        Arc::new(CachedObject {
            cache: self.clone(),
            key: key.to_string(),
            size,
        })
    }

    /// What the cache did so far, and the bytes it holds.
    pub fn stats(&self) -> RangeCacheStats {
        RangeCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            damaged: self.damaged.load(Ordering::Relaxed),
            bytes: self.recency.lock().bytes,
            budget: self.budget.load(Ordering::Relaxed),
        }
    }

    /// Takes `bytes` off the chunks' budget (the owner keeps as much of
    /// the same objects elsewhere on the disk) and evicts what no longer
    /// fits.
    pub fn reserve(&self, bytes: u64) -> Result<()> {
        let _ = self
            .budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |budget| {
                Some(budget.saturating_sub(bytes))
            });
        self.evict_beyond_budget("")
    }

    /// Gives `bytes` back to the chunks' budget (the owner no longer keeps
    /// them elsewhere), never above the options' budget.
    pub fn release(&self, bytes: u64) {
        let most = self.options.budget_bytes;
        let _ = self
            .budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |budget| {
                Some(budget.saturating_add(bytes).min(most))
            });
    }

    /// Removes every chunk of object `key` (`size` bytes long): its owner
    /// holds the object whole now.
    pub fn forget(&self, key: &str, size: u64) -> Result<()> {
        for index in 0..size.div_ceil(self.options.chunk_bytes) {
            let name = chunk_name(key, index);
            let held = {
                let mut recency = self.recency.lock();
                let held = recency.chunks.contains_key(&name);
                recency.remove(&name);
                held
            };
            if held {
                let path = self.options.dir.join(&name);
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => return Err(io_err(&path, "remove a chunk held whole")(error)),
                }
            }
        }
        Ok(())
    }

    /// The size of a chunk.
    pub fn chunk_bytes(&self) -> u64 {
        self.options.chunk_bytes
    }

    /// The bucket read through.
    pub fn bucket(&self) -> &Arc<Bucket> {
        &self.bucket
    }

    /// Bytes `range` of object `key` (`size` bytes long).
    pub fn read(&self, key: &str, size: u64, range: Range<u64>) -> Result<Bytes> {
        if range.start > range.end || range.end > size {
            return Err(ReplicaError::Config(format!(
                "a read of bytes {}..{} of {} ({} bytes)",
                range.start,
                range.end,
                self.bucket.url().key(key),
                size
            )));
        }
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        let chunk = self.options.chunk_bytes;
        let (first, last) = (range.start / chunk, (range.end - 1) / chunk);
        if first == last {
            let data = self.chunk(key, size, first)?;
            let at = first * chunk;
            return Ok(data.slice((range.start - at) as usize..(range.end - at) as usize));
        }
        // The chunks not on disk, fetched a run at a time: one GET for a
        // run of neighbours (a file's index and filter, an iteration).
        let mut fetched: HashMap<u64, Bytes> = HashMap::new();
        let missing: Vec<u64> = {
            let recency = self.recency.lock();
            (first..=last)
                .filter(|&index| !recency.chunks.contains_key(&chunk_name(key, index)))
                .collect()
        };
        for run in missing.chunk_by(|a, b| a + 1 == *b) {
            let (from, to) = (run[0], run[run.len() - 1]);
            if from == to {
                continue;
            }
            let start = from * chunk;
            let end = ((to + 1) * chunk).min(size);
            let data = self.fetch(key, size, start..end)?;
            for index in from..=to {
                let at = ((index - from) * chunk) as usize;
                let part = data.slice(at..(at + chunk as usize).min(data.len()));
                self.keep_fetched(key, index, &part);
                fetched.insert(index, part);
            }
        }
        let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
        for index in first..=last {
            let data = match fetched.remove(&index) {
                Some(data) => data,
                None => self.chunk(key, size, index)?,
            };
            let at = index * chunk;
            let from = range.start.max(at) - at;
            let to = range.end.min(at + data.len() as u64) - at;
            out.extend_from_slice(&data[from as usize..to as usize]);
        }
        Ok(out.freeze())
    }

    /// Chunk `index` of object `key`: from the disk, else from the bucket
    /// (then kept).
    fn chunk(&self, key: &str, size: u64, index: u64) -> Result<Bytes> {
        let name = chunk_name(key, index);
        let path = self.options.dir.join(&name);
        if self.recency.lock().touch(&name) {
            match read_chunk(&path, key, index) {
                Ok(Some(data)) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(data);
                }
                Ok(None) => {
                    self.damaged.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(chunk = %path.display(), "a cached chunk does not hold what it names; fetching it again");
                }
                // Evicted since (or removed by hand): fetched again.
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(io_err(&path, "read")(error)),
            }
            self.recency.lock().remove(&name);
        }
        let chunk = self.options.chunk_bytes;
        let start = index * chunk;
        let end = (start + chunk).min(size);
        let data = self.fetch(key, size, start..end)?;
        self.keep_fetched(key, index, &data);
        Ok(data)
    }

    /// Bytes `range` of object `key` from the bucket: one GET, counted as
    /// a miss per chunk it covers.
    fn fetch(&self, key: &str, size: u64, range: Range<u64>) -> Result<Bytes> {
        let (start, end) = (range.start, range.end);
        let data = self.bucket.get_range_of(key, size, range)?;
        let chunks = (end - start).div_ceil(self.options.chunk_bytes);
        self.misses.fetch_add(chunks, Ordering::Relaxed);
        Ok(data)
    }

    /// Keeps fetched chunk `index` of `key`; a failure only logs (the read
    /// is answered all the same, the next one fetches again).
    fn keep_fetched(&self, key: &str, index: u64, data: &[u8]) {
        if let Err(error) = self.keep(&chunk_name(key, index), key, index, data) {
            tracing::warn!(%error, "could not keep a fetched chunk");
        }
    }

    /// Writes a fetched chunk beside its place, renames it in, and makes
    /// room for it.
    fn keep(&self, name: &str, key: &str, index: u64, data: &[u8]) -> Result<()> {
        let path = self.options.dir.join(name);
        let partial = self.options.dir.join(format!(
            "{name}.{}.{PARTIAL_EXTENSION}",
            self.partials.fetch_add(1, Ordering::Relaxed)
        ));
        let encoded = encode_chunk(key, index, data);
        std::fs::write(&partial, &encoded).map_err(io_err(&partial, "write"))?;
        std::fs::rename(&partial, &path).map_err(|error| {
            let _ = std::fs::remove_file(&partial);
            io_err(&path, "rename into place")(error)
        })?;
        self.recency
            .lock()
            .insert(name.to_string(), encoded.len() as u64);
        self.evict_beyond_budget(name)
    }

    /// Removes the least recently used chunks (never `keep`) until the
    /// cache is within its budget.
    fn evict_beyond_budget(&self, keep: &str) -> Result<()> {
        loop {
            let victim = {
                let mut recency = self.recency.lock();
                if recency.bytes <= self.budget.load(Ordering::Relaxed) {
                    return Ok(());
                }
                let Some(victim) = recency.oldest_but(keep) else {
                    return Ok(());
                };
                recency.remove(&victim);
                victim
            };
            let path = self.options.dir.join(&victim);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(io_err(&path, "remove an evicted chunk")(error)),
            }
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One object read through a [`RangeCache`].
struct CachedObject {
    cache: Arc<RangeCache>,
    key: String,
    size: u64,
}

impl strata_files::RangeSource for CachedObject {
    fn read_range(&self, range: Range<u64>) -> io::Result<Bytes> {
        self.cache
            .read(&self.key, self.size, range)
            .map_err(io::Error::other)
    }
}

/// The file name of chunk `index` of object `key`.
fn chunk_name(key: &str, index: u64) -> String {
    format!("{:016x}-{index}.{CHUNK_EXTENSION}", xxh3_64(key.as_bytes()))
}

/// A chunk file: magic, the object's key (length, bytes), the chunk's
/// index, its data, and a checksum over all that.
fn encode_chunk(key: &str, index: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 2 + key.len() + 8 + data.len() + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&index.to_le_bytes());
    out.extend_from_slice(data);
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The data of the chunk file at `path`, `None` when it does not hold
/// chunk `index` of `key` intact.
fn read_chunk(path: &Path, key: &str, index: u64) -> io::Result<Option<Bytes>> {
    let raw = Bytes::from(std::fs::read(path)?);
    let header = 4 + 2 + key.len() + 8;
    if raw.len() < header + 8 {
        return Ok(None);
    }
    let body = raw.len() - 8;
    let sum = u64::from_le_bytes(raw[body..].try_into().expect("8 bytes"));
    let key_len = u16::from_le_bytes([raw[4], raw[5]]) as usize;
    let intact = &raw[..4] == MAGIC
        && key_len == key.len()
        && &raw[6..6 + key_len] == key.as_bytes()
        && raw[6 + key_len..header] == index.to_le_bytes()
        && xxh3_64(&raw[..body]) == sum;
    Ok(intact.then(|| raw.slice(header..body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_file_is_refused_unless_it_holds_what_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let data = vec![7u8; 1000];
        std::fs::write(&path, encode_chunk("files/a.sst", 3, &data)).unwrap();
        assert_eq!(
            read_chunk(&path, "files/a.sst", 3).unwrap().unwrap(),
            Bytes::from(data.clone())
        );
        assert!(read_chunk(&path, "files/b.sst", 3).unwrap().is_none());
        assert!(read_chunk(&path, "files/a.sst", 4).unwrap().is_none());
        let mut damaged = encode_chunk("files/a.sst", 3, &data);
        damaged[100] ^= 1;
        std::fs::write(&path, &damaged).unwrap();
        assert!(read_chunk(&path, "files/a.sst", 3).unwrap().is_none());
        std::fs::write(&path, &damaged[..20]).unwrap();
        assert!(read_chunk(&path, "files/a.sst", 3).unwrap().is_none());
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut recency = Recency::default();
        recency.insert("a".into(), 10);
        recency.insert("b".into(), 10);
        recency.insert("c".into(), 10);
        assert!(recency.touch("a"));
        assert_eq!(recency.oldest_but("x").as_deref(), Some("b"));
        assert_eq!(recency.oldest_but("b").as_deref(), Some("c"));
        recency.remove("b");
        assert_eq!(recency.bytes, 20);
        assert!(!recency.touch("b"));
    }
}
