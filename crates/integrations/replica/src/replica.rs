//! A read replica: a datadir of its own in a local cache folder, built from
//! the bucket's base and kept at the bucket's head by replaying the
//! published blocks through a writer (each block's root checked against
//! the one its writer recorded), so that `strata serve` over it — a
//! [`ReadOnlyStateDb`] beside that writer, as on the writer's machine —
//! gives the answers a serve beside the original writer gives.
//!
//! What it claims is what it holds: its head is the last block it applied;
//! a damaged or foreign object stops it at the block before, and an
//! unreachable store leaves it serving what it has, its error kept in
//! [`ReplicaStatus::last_error`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};

use strata_engine::{Options, ReadOnlyStateDb, StateDb};
use strata_journal::BlockRecord;
use strata_types::{DatadirId, Domain};

use crate::batch::{self, BatchBlock, BatchDamage};
use crate::bucket::{Bucket, Fetched};
use crate::error::{ReplicaError, Result, io_err};
use crate::manifest::{BatchRef, BucketManifest, MANIFEST, fetch_manifest, now_ms};
use crate::ranges::{RangeCache, RangeCacheOptions, RangeCacheStats};
use crate::remote_files::{self, BaseFiles, RemoteEntry, RemoteFiles};

/// The replica's datadir inside the cache folder.
const DATADIR: &str = "datadir";
/// What the cache folder holds a replica of.
const ORIGIN: &str = "replica.json";
/// Where a base is assembled before it becomes the datadir.
const BUILDING: &str = "building";

/// How a replica runs.
#[derive(Clone, Debug)]
pub struct ReplicaOptions {
    /// The local cache folder (the replica's datadir and its records).
    pub cache: PathBuf,
    /// The pause between looks at the bucket's manifest.
    pub poll: Duration,
    /// The replica's store settings (its writer's; readers share it).
    pub store: Options,
    /// `Some(budget)`: the base's immutable files are read from the bucket
    /// as lookups need them, in ranges kept on local disk, and downloaded
    /// whole in the background as far as three quarters of `budget` holds
    /// them; the ranges keep the rest (least recently used out). `None`:
    /// they are downloaded whole when the replica is built, before it
    /// answers. Fixed when the cache folder is built.
    pub range_cache_bytes: Option<u64>,
    /// Whether [`Replica::open`] applies the bucket's blocks before it
    /// returns (`true`), or returns at the block the replica holds and lets
    /// its thread catch up (`false`: a server answers at once, at the
    /// block it claims).
    pub catch_up_at_open: bool,
    /// GETs at a time downloading the base's files whole in the
    /// background (0: none; reads then fetch the ranges they miss).
    pub fill_streams: usize,
}

/// GETs at a time downloading a replica's base files unless told: a GET
/// of 4 MiB waits on the store's latency as much as on its bytes.
pub const DEFAULT_FILL_STREAMS: usize = 4;

/// The budget of a replica's range cache unless one is given: 4 GiB.
pub const DEFAULT_RANGE_CACHE_BYTES: u64 = 4 << 30;

/// The pause before the background download tries again after a store
/// error, doubled after each failed round up to [`FILL_RETRY_MOST`].
const FILL_RETRY_FIRST: Duration = Duration::from_secs(1);

/// The longest pause between two rounds of the background download.
const FILL_RETRY_MOST: Duration = Duration::from_secs(60);

/// The folder of the range cache inside the cache folder.
const RANGES: &str = "ranges";

impl ReplicaOptions {
    /// A replica cached in `cache`, looking every 100 ms.
    pub fn new(cache: impl Into<PathBuf>) -> ReplicaOptions {
        ReplicaOptions {
            cache: cache.into(),
            poll: Duration::from_millis(100),
            store: Options::default(),
            range_cache_bytes: Some(DEFAULT_RANGE_CACHE_BYTES),
            catch_up_at_open: true,
            fill_streams: DEFAULT_FILL_STREAMS,
        }
    }
}

/// Where a replica stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicaStatus {
    /// The last block applied: the block it serves.
    pub head: u64,
    /// The bucket's head, as its manifest last read said.
    pub bucket_head: u64,
    /// Blocks applied since the replica opened.
    pub applied: u64,
    /// When the bucket last answered (milliseconds since the Unix epoch).
    pub last_contact_unix_ms: u64,
    /// The last round's error (`None` after a round that succeeded).
    pub last_error: Option<String>,
    /// Milliseconds from the last applied block's upload to its application.
    pub last_lag_ms: Option<u64>,
}

/// The most lag samples a replica keeps (the newest).
const LAG_SAMPLES: usize = 1 << 16;

/// What the cache folder holds a replica of.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Origin {
    bucket: String,
    datadir_id: String,
}

struct Shared {
    bucket: Arc<Bucket>,
    /// The base's files read from the bucket, when the replica does not
    /// hold them whole.
    file_system: Option<Arc<dyn strata_files::FileSystem>>,
    /// The same, as the replica's own.
    remote: Option<Arc<RemoteFiles>>,
    /// The cache their ranges go through.
    ranges: Option<Arc<RangeCache>>,
    datadir: PathBuf,
    id: DatadirId,
    db: StateDb,
    status: Mutex<ReplicaStatus>,
    etag: Mutex<Option<String>>,
    /// Milliseconds from a batch's upload to each of its blocks applied.
    lags: Mutex<Vec<u64>>,
    stop: Mutex<bool>,
    wake: Condvar,
    /// One round at a time (the thread's or a caller's); holds the blocks
    /// applied since the replica's last flush.
    round: Mutex<u64>,
    /// Flush once this many blocks wait in memory: a reader at an older
    /// block than the unwind window reads the history files, which only
    /// flushed blocks have (the writer's own unwind depth).
    flush_every: u64,
    /// Rounds of the background download a store error stopped.
    failed_fills: AtomicU64,
}

/// A read replica following a bucket.
pub struct Replica {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The thread downloading the base's files whole.
    fill: Option<JoinHandle<()>>,
    stopped: Arc<AtomicBool>,
}

impl Replica {
    /// Opens the replica cached in `options.cache` (built from the bucket's
    /// base when the folder is empty), brings it to the bucket's head
    /// (unless `catch_up_at_open` is off: then its thread does), and starts
    /// following the manifest.
    pub fn open(bucket: Arc<Bucket>, options: ReplicaOptions) -> Result<Replica> {
        let cache = &options.cache;
        if cache.join(strata_types::datadir::DB_FILE).exists() {
            return Err(ReplicaError::Config(format!(
                "cache {} is a datadir: a replica's cache is a folder of its own",
                cache.display()
            )));
        }
        let manifest = read_manifest(&bucket)?;
        let id = manifest
            .datadir()
            .map_err(|what| damaged(&bucket, MANIFEST, what))?;
        std::fs::create_dir_all(cache).map_err(io_err(cache, "create the cache folder"))?;
        let origin = Origin {
            bucket: bucket.url().to_string(),
            datadir_id: id.to_string(),
        };
        let datadir = cache.join(DATADIR);
        match read_origin(cache)? {
            Some(found)
                if found == origin && datadir.join(strata_types::datadir::DB_FILE).exists() => {}
            Some(found) => {
                return Err(ReplicaError::Config(format!(
                    "cache {} holds a replica of {} (datadir {}), not of {} (datadir {}): give an empty folder",
                    cache.display(),
                    found.bucket,
                    found.datadir_id,
                    origin.bucket,
                    origin.datadir_id
                )));
            }
            None => {
                if datadir.exists() {
                    return Err(ReplicaError::Config(format!(
                        "cache {} holds a datadir without a record of its origin: give an empty folder",
                        cache.display()
                    )));
                }
                build_from_base(
                    &bucket,
                    &manifest,
                    cache,
                    options.range_cache_bytes.is_some(),
                )?;
                write_origin(cache, &origin)?;
            }
        }
        let mut ranges = None;
        let remote: Option<Arc<RemoteFiles>> = match remote_files::read_list(cache)? {
            Some(list) => {
                let cache_of_ranges = RangeCache::open(
                    bucket.clone(),
                    RangeCacheOptions::new(
                        cache.join(RANGES),
                        options
                            .range_cache_bytes
                            .unwrap_or(DEFAULT_RANGE_CACHE_BYTES),
                    ),
                )?;
                ranges = Some(cache_of_ranges.clone());
                let remote = RemoteFiles::new(cache, &datadir, list, cache_of_ranges.clone());
                // The files an earlier run downloaded whole count against
                // the same budget.
                cache_of_ranges.reserve(remote.held_whole().whole_bytes)?;
                Some(Arc::new(remote))
            }
            None => None,
        };
        let file_system = remote
            .clone()
            .map(|remote| remote as Arc<dyn strata_files::FileSystem>);
        let mut store = options
            .store
            .clone()
            .with_share_with_readers(true)
            .with_publish_branches(true)
            .with_file_system(file_system.clone());
        if file_system.is_some() {
            // The warm start reads the account trie's top levels (tens of
            // MB at 1M accounts) before the first answer: from the bucket,
            // that is the whole cold start. The replay's roots read them
            // as they need them.
            store = store.with_warm_start(false);
        }
        let db = StateDb::open(&datadir, store)?;
        let shared = Arc::new(Shared {
            bucket,
            file_system,
            remote,
            ranges,
            datadir,
            id,
            db,
            status: Mutex::new(ReplicaStatus::default()),
            etag: Mutex::new(None),
            lags: Mutex::new(Vec::new()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            round: Mutex::new(0),
            flush_every: options.store.unwind_depth.max(1),
            failed_fills: AtomicU64::new(0),
        });
        // The base's files are downloaded whole in the background, in long
        // runs, the commitment's first: the replay's roots read its records
        // all over its files (one chunk GET a miss without it), and a file
        // held whole is read without the range cache's per-chunk work.
        let fill = match (&shared.remote, options.range_cache_bytes) {
            (Some(remote), Some(budget)) if options.fill_streams > 0 => {
                let streams = options.fill_streams;
                let (shared, remote) = (shared.clone(), remote.clone());
                let handle = std::thread::Builder::new()
                    .name("strata-replica-fill".into())
                    .spawn(move || shared.fill_base(&remote, budget, streams))
                    .map_err(|source| ReplicaError::Io {
                        path: PathBuf::new(),
                        op: "start the replica's base download",
                        source,
                    })?;
                Some(handle)
            }
            _ => None,
        };
        let first = if options.catch_up_at_open {
            if let Err(error) = shared.follow(Some(manifest), Flush::Wait) {
                *shared.stop.lock() = true;
                if let Some(fill) = fill {
                    let _ = fill.join();
                }
                return Err(error);
            }
            None
        } else {
            // Serves the block it holds while the thread catches up.
            let mut status = shared.status.lock();
            status.head = shared.db.last_block().unwrap_or(0);
            status.bucket_head = manifest.head;
            Some(manifest)
        };
        let stopped = Arc::new(AtomicBool::new(false));
        let thread = {
            let shared = shared.clone();
            let poll = options.poll;
            std::thread::Builder::new()
                .name("strata-replica".into())
                .spawn(move || shared.run(poll, first))
                .map_err(|source| ReplicaError::Io {
                    path: PathBuf::new(),
                    op: "start the replica's thread",
                    source,
                })?
        };
        Ok(Replica {
            shared,
            thread: Some(thread),
            fill,
            stopped,
        })
    }

    /// The replica's datadir (what a [`ReadOnlyStateDb`] serves).
    pub fn datadir(&self) -> &Path {
        &self.shared.datadir
    }

    /// A read-only handle over the replica's datadir, following its
    /// writer as a serve beside a writer does.
    pub fn read_only(&self, options: Options) -> Result<ReadOnlyStateDb> {
        let options = options.with_file_system(self.shared.file_system.clone());
        Ok(ReadOnlyStateDb::open(&self.shared.datadir, options)?)
    }

    /// The store settings a reader of the replica's datadir needs: the
    /// file system that reads the base's files from the bucket, if any.
    pub fn reader_options(&self, options: Options) -> Options {
        options.with_file_system(self.shared.file_system.clone())
    }

    /// The replica's own writer (its reads are the replica's state).
    pub fn store(&self) -> &StateDb {
        &self.shared.db
    }

    /// Looks at the bucket now and applies what it holds beyond the head.
    pub fn sync(&self) -> Result<ReplicaStatus> {
        self.shared.follow(None, Flush::Wait)?;
        Ok(self.status())
    }

    /// What the cache of the base's ranges did so far (`None`: the
    /// replica holds its files whole).
    pub fn range_cache_stats(&self) -> Option<RangeCacheStats> {
        self.shared.ranges.as_ref().map(|ranges| ranges.stats())
    }

    /// Of the base's files read from the bucket, how many the replica
    /// holds whole by now (`None`: it was built with every file whole).
    pub fn base_files(&self) -> Option<BaseFiles> {
        let downloading = self.fill.as_ref().is_some_and(|fill| !fill.is_finished());
        self.shared.remote.as_ref().map(|remote| BaseFiles {
            downloading,
            failed_rounds: self.shared.failed_fills.load(Ordering::Relaxed),
            ..remote.held_whole()
        })
    }

    /// Where the replica stands.
    pub fn status(&self) -> ReplicaStatus {
        self.shared.status.lock().clone()
    }

    /// The milliseconds from each applied block's upload to its
    /// application, in the order applied (the newest 32,768 to 65,536).
    pub fn lags_ms(&self) -> Vec<u64> {
        self.shared.lags.lock().clone()
    }

    /// The bucket followed.
    pub fn bucket(&self) -> &Arc<Bucket> {
        &self.shared.bucket
    }

    /// Stops following and closes the replica's writer.
    pub fn close(mut self) -> Result<()> {
        self.stop_thread();
        Ok(())
    }

    fn stop_thread(&mut self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        *self.shared.stop.lock() = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(fill) = self.fill.take() {
            let _ = fill.join();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// How a round moves the blocks it applied down from memory once
/// `flush_every` of them wait there.
#[derive(Clone, Copy)]
enum Flush {
    /// Flushes before the round returns (a caller's `sync`, the catch-up
    /// at open): what it returns is flushed.
    Wait,
    /// Asks the store's background flusher (the replica's own thread): the
    /// next blocks are applied while it writes, as a writer's are.
    Behind,
}

impl Shared {
    /// The background download of the base's files whole: a round of
    /// [`RemoteFiles::fill_cache`], and after a round a store error
    /// stopped, another for what is still missing once a pause has passed
    /// (1 s, doubling up to a minute), until a round ends or the replica
    /// stops.
    fn fill_base(&self, remote: &RemoteFiles, budget: u64, streams: usize) {
        let go_on = || !*self.stop.lock();
        let mut pause = FILL_RETRY_FIRST;
        loop {
            match remote.fill_cache(&self.bucket, budget, streams, &go_on) {
                Ok(bytes) => {
                    if go_on() {
                        tracing::info!(bytes, "replica: the base's files downloaded whole");
                    }
                    return;
                }
                Err(error) => {
                    self.failed_fills.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        bucket = %self.bucket.url(),
                        %error,
                        again_in_s = pause.as_secs(),
                        "replica: downloading the base's files stopped; trying again"
                    );
                }
            }
            if !self.wait_unless_stopped(pause) {
                return;
            }
            pause = (pause * 2).min(FILL_RETRY_MOST);
        }
    }

    /// Waits `time` (less when woken), unless the replica stops first:
    /// false once it has.
    fn wait_unless_stopped(&self, time: Duration) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            self.wake.wait_for(&mut stop, time);
        }
        !*stop
    }

    /// The thread's loop: `first` followed at once (a replica that serves
    /// while it catches up), then a round every `poll`.
    fn run(&self, poll: Duration, first: Option<BucketManifest>) {
        if let Some(manifest) = first
            && let Err(error) = self.follow(Some(manifest), Flush::Behind)
        {
            tracing::warn!(bucket = %self.bucket.url(), %error, "replica round failed");
        }
        while self.wait_unless_stopped(poll) {
            if let Err(error) = self.follow(None, Flush::Behind) {
                tracing::warn!(bucket = %self.bucket.url(), %error, "replica round failed");
            }
        }
    }

    /// One round: the manifest (unless given, when it changed), then every
    /// block after the head, batch by batch. Its error is kept in the status.
    fn follow(&self, given: Option<BucketManifest>, flush: Flush) -> Result<()> {
        let mut unflushed = self.round.lock();
        let before = self.db.last_block().unwrap_or(0);
        let mut result = self.follow_round(given);
        *unflushed += self.db.last_block().unwrap_or(0).saturating_sub(before);
        if *unflushed >= self.flush_every {
            let flushed = match flush {
                Flush::Wait => self.db.flush().map(drop),
                Flush::Behind => self.db.request_flush(),
            };
            match flushed {
                Ok(_) => *unflushed = 0,
                Err(error) => result = result.and(Err(error.into())),
            }
        }
        if result.is_err() {
            // The next round reads the manifest again even if it is
            // unchanged: a refusal stays in the status until it is put right.
            *self.etag.lock() = None;
        }
        let mut status = self.status.lock();
        status.head = self.db.last_block().unwrap_or(0);
        status.last_error = result.as_ref().err().map(ToString::to_string);
        result
    }

    fn follow_round(&self, given: Option<BucketManifest>) -> Result<()> {
        let manifest = match given {
            Some(manifest) => manifest,
            None => {
                let etag = self.etag.lock().clone();
                let (fetched, key) = fetch_manifest(&self.bucket, etag.as_deref())?;
                match fetched {
                    Fetched::NotModified => {
                        self.status.lock().last_contact_unix_ms = now_ms();
                        return Ok(());
                    }
                    Fetched::NotFound => {
                        return Err(ReplicaError::Missing {
                            bucket: self.bucket.url().to_string(),
                            key: self.bucket.url().key(MANIFEST),
                        });
                    }
                    Fetched::Object(data, etag) => {
                        let manifest = BucketManifest::decode(&data)
                            .map_err(|what| damaged(&self.bucket, &key, what))?;
                        *self.etag.lock() = etag;
                        manifest
                    }
                }
            }
        };
        if manifest.datadir_id != self.id.to_string() {
            return Err(ReplicaError::Foreign {
                bucket: self.bucket.url().to_string(),
                key: self.bucket.url().key(MANIFEST),
                expected: self.id.to_string(),
                found: manifest.datadir_id.clone(),
            });
        }
        {
            let mut status = self.status.lock();
            status.bucket_head = manifest.head;
            status.last_contact_unix_ms = now_ms();
        }
        if let Some(remote) = &self.remote {
            let named = manifest
                .base
                .files
                .iter()
                .map(|file| file.object.key.as_str())
                .collect();
            remote.hold_retired(&self.bucket, &named)?;
        }
        let mut head = self.db.last_block().unwrap_or(0);
        let mut rejoined = false;
        if head > manifest.head || (head == manifest.head && self.db.root() != manifest.root) {
            // The replica holds blocks the bucket no longer claims.
            self.rejoin(&manifest)?;
            rejoined = true;
            head = self.db.last_block().unwrap_or(0);
        }
        let batches: Vec<&BatchRef> = manifest.earlier.iter().chain(&manifest.batches).collect();
        while head < manifest.head {
            let Some(batch) = batches
                .iter()
                .filter(|b| b.first <= head + 1 && b.last > head)
                .max_by_key(|b| b.last)
            else {
                return Err(ReplicaError::Diverged {
                    bucket: self.bucket.url().to_string(),
                    head,
                    base: manifest.base.block,
                });
            };
            match self.apply_batch(batch, head) {
                Ok(()) => {}
                Err(ReplicaError::Forked { .. }) if !rejoined => {
                    self.rejoin(&manifest)?;
                    rejoined = true;
                }
                Err(error) => return Err(error),
            }
            head = self.db.last_block().unwrap_or(0);
        }
        Ok(())
    }

    /// After the writer unwound: goes back to the bucket's base when the
    /// replica holds the base's block with the base's root (one of its
    /// last `unwind_depth` blocks), so that the base's batches continue
    /// it; else the replica cannot follow ([`ReplicaError::Diverged`]).
    fn rejoin(&self, manifest: &BucketManifest) -> Result<()> {
        let base = &manifest.base;
        let head = self.db.last_block().unwrap_or(0);
        let diverged = || ReplicaError::Diverged {
            bucket: self.bucket.url().to_string(),
            head,
            base: base.block,
        };
        let holds_base = base.block <= head
            && self
                .db
                .reader_at(base.block, strata_types::Regime::Exec)
                .is_ok_and(|reader| reader.root() == base.root);
        if !holds_base {
            return Err(diverged());
        }
        if base.block < head {
            tracing::info!(bucket = %self.bucket.url(), from = head, to = base.block, "the writer unwound: the replica goes back to the bucket's base");
            self.db.unwind_to(base.block)?;
        }
        Ok(())
    }

    /// Applies the blocks of `batch` after `head`.
    fn apply_batch(&self, batch: &BatchRef, head: u64) -> Result<()> {
        let key = &batch.object.key;
        let data = self.bucket.get(key)?;
        let blocks = batch::decode(self.id, &data).map_err(|damage| match damage {
            BatchDamage::Damaged(what) => damaged(&self.bucket, key, what),
            BatchDamage::Foreign(found) => ReplicaError::Foreign {
                bucket: self.bucket.url().to_string(),
                key: self.bucket.url().key(key),
                expected: self.id.to_string(),
                found: found.to_string(),
            },
        })?;
        if blocks.first().map(|b| b.block) != Some(batch.first)
            || blocks.last().map(|b| b.block) != Some(batch.last)
        {
            return Err(damaged(
                &self.bucket,
                key,
                format!(
                    "holds other blocks than {}..={} the manifest names",
                    batch.first, batch.last
                ),
            ));
        }
        for block in blocks.iter().filter(|b| b.block > head) {
            self.apply_block(key, block)?;
            let lag = now_ms().saturating_sub(batch.published_unix_ms);
            {
                let mut status = self.status.lock();
                // The block it serves from now on, also while a long
                // round catches up.
                status.head = block.block;
                status.applied += 1;
                status.last_lag_ms = Some(lag);
            }
            let mut lags = self.lags.lock();
            if lags.len() >= LAG_SAMPLES {
                lags.drain(..LAG_SAMPLES / 2);
            }
            lags.push(lag);
        }
        Ok(())
    }

    /// Replays one block: its writes through the replica's writer, its root
    /// checked against the record's before anything is committed.
    fn apply_block(&self, key: &str, block: &BatchBlock) -> Result<()> {
        if block.link.parent != self.db.root() {
            return Err(ReplicaError::Forked {
                bucket: self.bucket.url().to_string(),
                key: self.bucket.url().key(key),
                block: block.block,
            });
        }
        let record = BlockRecord::decode(&block.payload)
            .map_err(|e| damaged(&self.bucket, key, format!("block {}: {e}", block.block)))?;
        if record.block != block.block || record.root != block.link.root {
            return Err(damaged(
                &self.bucket,
                key,
                format!(
                    "block {}: the record names block {} root {}",
                    block.block, record.block, record.root
                ),
            ));
        }
        let mut writer = self.db.begin_block(block.block)?;
        for write in &record.writes {
            if write.domain == Domain::Commitment {
                continue;
            }
            writer.put_raw(write.domain, &write.key, write.value.clone())?;
        }
        if let Some(hash) = record.hash {
            writer.set_block_hash(hash);
        }
        if let Some(header) = record.header.clone() {
            writer.set_block_header(header);
        }
        writer.expect_root(block.link.root);
        writer.commit().map_err(|error| match error {
            strata_engine::Error::BlockRootMismatch { .. } => damaged(
                &self.bucket,
                key,
                format!(
                    "block {}: its writes do not give its root: {error}",
                    block.block
                ),
            ),
            other => other.into(),
        })?;
        Ok(())
    }
}

fn damaged(bucket: &Bucket, key: &str, what: impl Into<String>) -> ReplicaError {
    ReplicaError::Damaged {
        bucket: bucket.url().to_string(),
        key: bucket.url().key(key),
        what: what.into(),
    }
}

fn read_manifest(bucket: &Bucket) -> Result<BucketManifest> {
    let (fetched, key) = fetch_manifest(bucket, None)?;
    match fetched {
        Fetched::Object(data, _) => {
            BucketManifest::decode(&data).map_err(|what| damaged(bucket, &key, what))
        }
        Fetched::NotFound | Fetched::NotModified => Err(ReplicaError::Missing {
            bucket: bucket.url().to_string(),
            key: bucket.url().key(MANIFEST),
        }),
    }
}

fn read_origin(cache: &Path) -> Result<Option<Origin>> {
    let path = cache.join(ORIGIN);
    match std::fs::read(&path) {
        Ok(data) => serde_json::from_slice(&data)
            .map(Some)
            .map_err(|e| ReplicaError::Config(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(&path, "read")(e)),
    }
}

fn write_origin(cache: &Path, origin: &Origin) -> Result<()> {
    let path = cache.join(ORIGIN);
    let partial = cache.join(format!("{ORIGIN}.part"));
    let data = serde_json::to_vec_pretty(origin).expect("an origin serializes");
    std::fs::write(&partial, data).map_err(io_err(&partial, "write"))?;
    std::fs::rename(&partial, &path).map_err(io_err(&path, "rename into place"))
}

/// Builds the replica's datadir from the manifest's base: the redb stream
/// loaded into a new database, every file downloaded and its footer
/// checksum compared with the manifest's, all in a folder beside the
/// datadir, renamed into place when whole.
fn build_from_base(
    bucket: &Bucket,
    manifest: &BucketManifest,
    cache: &Path,
    remote: bool,
) -> Result<()> {
    let building = cache.join(BUILDING);
    if building.exists() {
        std::fs::remove_dir_all(&building)
            .map_err(io_err(&building, "remove a cut-short build"))?;
    }
    std::fs::create_dir_all(&building).map_err(io_err(&building, "create"))?;
    let stream = cache.join("base.stream");
    bucket.get_to_file(&manifest.base.db.key, &stream)?;
    let summary = {
        let file = std::fs::File::open(&stream).map_err(io_err(&stream, "open"))?;
        let mut input = std::io::BufReader::with_capacity(1 << 20, file);
        strata_engine::base::install_base(&building, &mut input).map_err(|error| match error {
            strata_engine::Error::Base(error) => {
                damaged(bucket, &manifest.base.db.key, error.to_string())
            }
            other => other.into(),
        })?
    };
    let _ = std::fs::remove_file(&stream);
    if summary.checksum != manifest.base.db.checksum {
        return Err(damaged(
            bucket,
            &manifest.base.db.key,
            format!(
                "checksum {:016x}, the manifest names {:016x}",
                summary.checksum, manifest.base.db.checksum
            ),
        ));
    }
    for file in &manifest.base.files {
        if file.name.contains('/') || file.name.starts_with('.') {
            return Err(damaged(
                bucket,
                MANIFEST,
                format!("a file named {:?}", file.name),
            ));
        }
        let folder = building.join(&file.folder);
        std::fs::create_dir_all(&folder).map_err(io_err(&folder, "create"))?;
        if remote {
            // Read where it lives; its footer is checked at open.
            continue;
        }
        let path = folder.join(&file.name);
        bucket.get_to_file(&file.object.key, &path)?;
        let footer = footer_checksum(&path)?;
        if footer != Some(file.object.checksum) {
            return Err(damaged(
                bucket,
                &file.object.key,
                format!(
                    "its footer checksum is not the {:016x} the manifest names",
                    file.object.checksum
                ),
            ));
        }
    }
    if remote {
        let list: Vec<RemoteEntry> = manifest
            .base
            .files
            .iter()
            .map(|file| RemoteEntry {
                path: format!("{}/{}", file.folder, file.name),
                key: file.object.key.clone(),
                size: file.object.bytes,
                checksum: file.object.checksum,
            })
            .collect();
        remote_files::write_list(cache, &list)?;
    }
    let datadir = cache.join(DATADIR);
    std::fs::rename(&building, &datadir).map_err(io_err(&datadir, "rename into place"))?;
    Ok(())
}

/// The whole-file checksum a sorted file's footer records (the file is
/// verified whole when the replica's writer opens it).
fn footer_checksum(path: &Path) -> Result<Option<u64>> {
    let fs = strata_files::OsFileSystem;
    match strata_files::SortedFile::open(&fs, path) {
        Ok(file) => Ok(Some(file.checksum())),
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "a downloaded file does not open");
            Ok(None)
        }
    }
}
