//! [`ReadOnlyStateDb`]: a second process's view of a datadir that another
//! process is writing, following its commits as they land.
//!
//! The writer opens its redb file in redb's `SingleWriter` mode
//! ([`crate::Options::share_with_readers`]); this side opens it read-only in
//! the same mode. Every [`ReadOnlyStateDb::reader`] call begins a fresh redb
//! read transaction, reads the head and the file manifest *from that
//! transaction* and pairs it with the files that manifest lists, so a handle
//! always shows one whole committed block. Files already opened (and
//! verified) are kept and reused while later manifests still list them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_primitives::B256;
use parking_lot::Mutex;
use redb::{ReadOnlyDatabase, ReadableDatabase};

use crate::db::meta::{self, FORMAT_VERSION};
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
/// never wait on the writer's commits or its background maintenance.
pub struct ReadOnlyStateDb {
    datadir: PathBuf,
    files_dir: PathBuf,
    db: ReadOnlyDatabase,
    fs: Arc<dyn FileSystem>,
    /// The files of the last refresh, reused while later manifests list them.
    files: Mutex<Arc<FileSet>>,
    metrics: Arc<ReadMetrics>,
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
        let handle = ReadOnlyStateDb {
            files_dir: datadir.join(FILES_DIR),
            datadir,
            db,
            fs: Arc::new(OsFileSystem),
            files: Mutex::new(Arc::new(FileSet::default())),
            metrics: Arc::new(ReadMetrics::from_env(options.read_metrics)),
        };
        // Fail now, not at the first read, on a datadir that cannot be read.
        handle.snapshot()?;
        Ok(handle)
    }

    /// A read handle on the last block the writer has committed.
    pub fn reader(&self, regime: Regime) -> Result<StateReader> {
        Ok(StateReader::new(
            Arc::new(self.snapshot()?),
            None,
            regime,
            self.metrics.clone(),
        ))
    }

    /// The last committed block, or `None` before genesis.
    pub fn last_block(&self) -> Result<Option<u64>> {
        Ok(self.snapshot()?.block())
    }

    /// The state root of the last committed block.
    pub fn root(&self) -> Result<B256> {
        Ok(self.snapshot()?.root())
    }

    /// The read-latency telemetry of this handle's reads.
    pub fn metrics(&self) -> &Arc<ReadMetrics> {
        &self.metrics
    }

    /// The datadir this handle reads.
    pub fn datadir(&self) -> &Path {
        &self.datadir
    }

    /// A snapshot of the newest commit: head, manifest and tables from one
    /// read transaction, and the files that manifest lists.
    fn snapshot(&self) -> Result<Snapshot> {
        let mut last_missing = None;
        for _ in 0..REFRESH_ATTEMPTS {
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
            let previous = self.files.lock().clone();
            let files = if previous.manifest == meta.manifest {
                previous
            } else {
                match FileSet::open_reusing(&self.fs, &self.files_dir, meta.manifest, &previous) {
                    Ok(files) => {
                        let files = Arc::new(files);
                        *self.files.lock() = files.clone();
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
