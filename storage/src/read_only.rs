//! [`ReadOnlyStateDb`]: a second process's view of a datadir that another
//! process is writing, following its commits as they land.
//!
//! The writer opens its redb file in redb's `SingleWriter` mode
//! ([`crate::Options::share_with_readers`]); this side opens it read-only in
//! the same mode. Every [`ReadOnlyStateDb::reader`] call begins a fresh redb
//! read transaction and reads the head and the file manifest *from that
//! transaction*, so a handle always shows one whole committed block.
//!
//! Files are opened (and verified completely) off the read path: while the
//! newest commit lists a file not yet open, readers get the newest snapshot
//! whose files are, and a refresher thread opens the new files. Files
//! already open are reused while later manifests still list them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use alloy_primitives::B256;
use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::{Condvar, Mutex};
use redb::{ReadOnlyDatabase, ReadTransaction, ReadableDatabase};

use crate::db::meta::{self, FORMAT_VERSION, Meta};
use crate::db::tables::META;
use crate::domain::Regime;
use crate::error::{Error, Result, db_err};
use crate::files::{FileError, FileSystem, OsFileSystem};
use crate::fileset::FileSet;
use crate::options::Options;
use crate::reader::StateReader;
use crate::snapshot::Snapshot;
use crate::state_db::{DB_FILE, FILES_DIR};
use crate::telemetry::ReadMetrics;

/// How many times a refresh starts over when the writer pruned a file
/// between the read transaction and the file's open.
const REFRESH_ATTEMPTS: usize = 16;

/// A read-only handle on a datadir written by another process (or by a
/// [`crate::StateDb`] in this one) that shares it with readers.
///
/// Never writes: no maintenance, no orphan removal, no recovery. Readers
/// never wait on the writer's commits, its background maintenance or the
/// verification of new files.
pub struct ReadOnlyStateDb {
    follower: Arc<Follower>,
    refresher: Option<JoinHandle<()>>,
    metrics: Arc<ReadMetrics>,
}

/// What the handle and its refresher thread share.
struct Follower {
    datadir: PathBuf,
    files_dir: PathBuf,
    db: ReadOnlyDatabase,
    fs: Arc<dyn FileSystem>,
    /// The newest file set opened.
    files: ArcSwap<FileSet>,
    /// The newest snapshot handed out: what readers get while new files open.
    latest: ArcSwapOption<Snapshot>,
    /// Set to wake the refresher; the refresher clears it.
    wanted: Mutex<bool>,
    wake: Condvar,
    /// The refresher could not open the newest files: readers open them
    /// themselves (and get the error).
    refresh_failed: AtomicBool,
    stop: AtomicBool,
}

impl ReadOnlyStateDb {
    /// Opens the datadir at `datadir` read-only. Uses `options.db_cache_bytes`
    /// and `options.read_metrics`; the rest belongs to the writer.
    ///
    /// Fails with [`Error::NotShared`] while a writer holds the datadir
    /// without sharing it, and with [`Error::NotADatadir`] where there is no
    /// strata database.
    pub fn open(datadir: impl AsRef<Path>, options: &Options) -> Result<ReadOnlyStateDb> {
        let datadir = datadir.as_ref().to_path_buf();
        let db_path = datadir.join(DB_FILE);
        if !db_path.is_file() {
            return Err(Error::NotADatadir {
                path: datadir,
                what: "no state.redb: not a strata datadir",
            });
        }
        let mut builder = redb::Builder::new();
        builder.set_cache_size(options.db_cache_bytes);
        builder.set_concurrency_mode(redb::ConcurrencyMode::SingleWriter);
        let db = builder.open_read_only(&db_path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen
            | redb::DatabaseError::LockProtocolMismatch => Error::NotShared {
                path: db_path.clone(),
            },
            other => Error::Db {
                op: "open database read-only",
                source: other.into(),
            },
        })?;
        let follower = Follower {
            files_dir: datadir.join(FILES_DIR),
            datadir,
            db,
            fs: Arc::new(OsFileSystem),
            files: ArcSwap::from_pointee(FileSet::default()),
            latest: ArcSwapOption::empty(),
            wanted: Mutex::new(false),
            wake: Condvar::new(),
            refresh_failed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        };
        // Fail now, not at the first read, on a datadir that cannot be read.
        let first = follower.open_newest()?;
        follower.publish(&Arc::new(first));
        let follower = Arc::new(follower);
        let worker = follower.clone();
        let refresher = std::thread::Builder::new()
            .name("strata-follower".into())
            .spawn(move || worker.refresh_loop())
            .map_err(|e| Error::Maintenance(format!("start the file refresher: {e}")))?;
        Ok(ReadOnlyStateDb {
            follower,
            refresher: Some(refresher),
            metrics: Arc::new(ReadMetrics::from_env(options.read_metrics)),
        })
    }

    /// A read handle on the newest committed block whose files are open:
    /// the last committed block, except while a newly listed file is being
    /// verified.
    pub fn reader(&self, regime: Regime) -> Result<StateReader> {
        Ok(StateReader::new(
            self.follower.snapshot()?,
            None,
            regime,
            self.metrics.clone(),
        ))
    }

    /// The block [`ReadOnlyStateDb::reader`] shows now, or `None` before genesis.
    pub fn last_block(&self) -> Result<Option<u64>> {
        Ok(self.follower.snapshot()?.block())
    }

    /// The state root of that block.
    pub fn root(&self) -> Result<B256> {
        Ok(self.follower.snapshot()?.root())
    }

    /// The read-latency telemetry of this handle's reads.
    pub fn metrics(&self) -> &Arc<ReadMetrics> {
        &self.metrics
    }

    /// The datadir this handle reads.
    pub fn datadir(&self) -> &Path {
        &self.follower.datadir
    }
}

impl Drop for ReadOnlyStateDb {
    fn drop(&mut self) {
        self.follower.stop.store(true, Ordering::Release);
        {
            let mut wanted = self.follower.wanted.lock();
            *wanted = true;
            self.follower.wake.notify_one();
        }
        if let Some(thread) = self.refresher.take() {
            let _ = thread.join();
        }
    }
}

impl Follower {
    /// The newest commit if its files are open, else the newest snapshot
    /// handed out so far (and the refresher is woken to open the files).
    fn snapshot(&self) -> Result<Arc<Snapshot>> {
        let (txn, meta) = self.begin()?;
        let files = self.files.load_full();
        if files.manifest == meta.manifest {
            let fresh = Arc::new(Snapshot::from_txn(txn, meta.head, files)?);
            self.publish(&fresh);
            return Ok(fresh);
        }
        drop(txn);
        let latest = match self.latest.load_full() {
            Some(latest) if !self.refresh_failed.swap(false, Ordering::AcqRel) => latest,
            // The refresher failed: open on this thread, so this reader
            // gets the error.
            _ => {
                let fresh = Arc::new(self.open_newest()?);
                self.publish(&fresh);
                return Ok(fresh);
            }
        };
        let mut wanted = self.wanted.lock();
        *wanted = true;
        self.wake.notify_one();
        drop(wanted);
        Ok(latest)
    }

    /// Makes `snapshot` the one readers fall back to, unless a newer block is.
    fn publish(&self, snapshot: &Arc<Snapshot>) {
        self.latest.rcu(|current| match current {
            Some(current) if current.block() > snapshot.block() => Some(current.clone()),
            _ => Some(snapshot.clone()),
        });
    }

    /// Opens the files of the newest commits until they are all open.
    fn refresh_loop(&self) {
        loop {
            {
                let mut wanted = self.wanted.lock();
                while !*wanted {
                    self.wake.wait(&mut wanted);
                }
                *wanted = false;
            }
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            match self.open_newest() {
                Ok(snapshot) => self.publish(&Arc::new(snapshot)),
                Err(error) => {
                    tracing::warn!(%error, "read-only follower: cannot open the newest files");
                    self.refresh_failed.store(true, Ordering::Release);
                }
            }
        }
    }

    /// A read transaction on the newest commit and the metadata it holds.
    fn begin(&self) -> Result<(ReadTransaction, Meta)> {
        let txn = self.db.begin_read().map_err(db_err("begin read"))?;
        let meta = {
            let table = txn.open_table(META).map_err(|e| match e {
                redb::TableError::TableDoesNotExist(_) => Error::NotADatadir {
                    path: self.datadir.clone(),
                    what: "the database holds no strata metadata",
                },
                other => db_err("open meta")(other),
            })?;
            match meta::load(&table)? {
                None => {
                    return Err(Error::NotADatadir {
                        path: self.datadir.clone(),
                        what: "the database holds no strata metadata",
                    });
                }
                Some((found, _)) if found != FORMAT_VERSION => {
                    return Err(Error::UnsupportedFormat {
                        path: self.datadir.join(DB_FILE),
                        found,
                        supported: FORMAT_VERSION,
                    });
                }
                Some((_, meta)) => meta,
            }
        };
        Ok((txn, meta))
    }

    /// A snapshot of the newest commit, opening the files its manifest
    /// lists (on the caller's thread).
    fn open_newest(&self) -> Result<Snapshot> {
        let mut last_missing = None;
        for _ in 0..REFRESH_ATTEMPTS {
            let (txn, meta) = self.begin()?;
            let previous = self.files.load_full();
            let files = if previous.manifest == meta.manifest {
                previous
            } else {
                match FileSet::open_reusing(&self.fs, &self.files_dir, meta.manifest, &previous) {
                    Ok(files) => {
                        let files = Arc::new(files);
                        self.files.store(files.clone());
                        files
                    }
                    // The writer pruned a file this (already superseded)
                    // manifest lists: start over from a newer commit.
                    Err(Error::File(FileError::Io { file, op, source }))
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        last_missing = Some(FileError::Io { file, op, source });
                        continue;
                    }
                    Err(other) => return Err(other),
                }
            };
            return Snapshot::from_txn(txn, meta.head, files);
        }
        Err(Error::File(
            last_missing.expect("a retry follows a missing file"),
        ))
    }
}
