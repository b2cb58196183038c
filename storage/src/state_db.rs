//! [`StateDb`]: the facade that opens a datadir and ties the tiers, the
//! commitment, the branch cache, the warmers and maintenance together.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_primitives::B256;
use redb::ReadableDatabase;
use strata_cache::{CacheStats, WarmupPool, build_cache};

use crate::db::meta::{self, FORMAT_VERSION, Meta};
use crate::db::tables::{BLOCK_HASHES, CHANGES, CODE_BY_HASH, META, ROOTS, domain_table};
use crate::domain::{Domain, Regime};
use crate::error::{Error, Result, db_err};
use crate::files::{FileSystem, OsFileSystem};
use crate::fileset::FileSet;
use crate::inner::Inner;
use crate::maintenance::{self, MaintenanceReport, MaintenanceWorker};
use crate::options::Options;
use crate::reader::StateReader;
use crate::snapshot::Snapshot;
use crate::telemetry::ReadMetrics;
use crate::writer::BlockWriter;

/// Name of the redb file inside the datadir.
pub const DB_FILE: &str = "state.redb";
/// Name of the folder of immutable files inside the datadir.
pub const FILES_DIR: &str = "files";

/// A state database in one datadir: redb plus a folder of immutable files.
pub struct StateDb {
    inner: Arc<Inner>,
    worker: Option<MaintenanceWorker>,
}

impl StateDb {
    /// Opens (creating on first use) the datadir at `datadir`.
    pub fn open(datadir: impl AsRef<Path>, options: Options) -> Result<StateDb> {
        Self::open_with_fs(datadir, options, Arc::new(OsFileSystem))
    }

    /// Opens the datadir with immutable-file I/O going through `fs` (tests
    /// inject failures here).
    pub fn open_with_fs(
        datadir: impl AsRef<Path>,
        options: Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<StateDb> {
        Self::open_with_io::<redb::backends::FileBackend>(datadir, options, fs, None)
    }

    /// Opens the datadir with immutable-file I/O through `fs` and, when
    /// given, redb's storage through `db_backend` instead of the datadir's
    /// `state.redb` (crash tests rebuild power-cut images through both).
    pub fn open_with_io<B: redb::StorageBackend>(
        datadir: impl AsRef<Path>,
        options: Options,
        fs: Arc<dyn FileSystem>,
        db_backend: Option<B>,
    ) -> Result<StateDb> {
        check_options(&options)?;
        let datadir = datadir.as_ref().to_path_buf();
        let dir_err = |what| {
            let path = datadir.clone();
            move |source| Error::Datadir { path, what, source }
        };
        std::fs::create_dir_all(&datadir).map_err(dir_err("create"))?;
        let files_dir = datadir.join(FILES_DIR);
        let db_path = datadir.join(DB_FILE);
        if db_backend.is_none() && !db_path.exists() {
            create_redb_atomically(&datadir, &db_path, &options)?;
        }
        let db = open_redb(&db_path, &options, db_backend)?;
        let meta = load_or_init_meta(&db, &db_path, &options)?;
        // Only a datadir of this format gains a files folder.
        std::fs::create_dir_all(&files_dir).map_err(dir_err("create files folder"))?;

        maintenance::remove_orphans(fs.as_ref(), &files_dir, &meta.manifest)?;
        let files = Arc::new(FileSet::open(&fs, &files_dir, meta.manifest.clone())?);
        let snapshot = Snapshot::open(&db, meta.head, files)?;
        let metrics = Arc::new(if options.mutex_telemetry_baseline {
            ReadMetrics::mutex_baseline(options.read_metrics)
        } else {
            ReadMetrics::from_env(options.read_metrics)
        });
        let cache = build_cache(options.cache_kind, options.cache_bytes);
        let warmup = WarmupPool::new(options.warmers)?;
        let background = options.background_maintenance;
        let inner = Arc::new(Inner::new(
            files_dir,
            db,
            fs,
            options,
            meta.step_size,
            snapshot,
            metrics,
            cache,
            warmup,
        ));
        let worker = if background {
            Some(MaintenanceWorker::start(inner.clone())?)
        } else {
            None
        };
        Ok(StateDb { inner, worker })
    }

    /// A read handle on the last committed block for `regime`.
    pub fn reader(&self, regime: Regime) -> StateReader {
        StateReader::new(
            self.inner.current.load_full(),
            None,
            regime,
            self.inner.metrics.clone(),
        )
    }

    /// The last committed block, or `None` for an empty datadir.
    pub fn last_block(&self) -> Option<u64> {
        self.inner.current.load().block()
    }

    /// The state root of the last committed block (the empty root before genesis).
    pub fn root(&self) -> B256 {
        self.inner.current.load().root()
    }

    /// The root of `block` if it is still retained for unwind.
    pub fn root_at(&self, block: u64) -> Result<Option<B256>> {
        let txn = self.inner.db.begin_read().map_err(db_err("begin read"))?;
        let roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
        let root = roots.get(block).map_err(db_err("read root"))?;
        Ok(root.map(|guard| B256::from_slice(guard.value())))
    }

    /// Starts writing block `number`, which must follow the last committed
    /// block. Waits while another writer is open.
    pub fn begin_block(&self, number: u64) -> Result<BlockWriter<'_>> {
        self.inner
            .check_poisoned()
            .map_err(|error| error.in_block(number))?;
        let exclusive = self.inner.writer_lock.lock();
        let expected = self.last_block().map_or(0, |b| b + 1);
        if number != expected {
            return Err(Error::BlockOutOfOrder {
                expected,
                found: number,
            });
        }
        Ok(BlockWriter::new(&self.inner, exclusive, number))
    }

    /// Writes the initial state `alloc` as block 0 of an empty store and
    /// returns its state root (bulk-built, streaming, in hashed-key order).
    pub fn init_genesis(&self, alloc: &crate::genesis::GenesisAlloc) -> Result<B256> {
        self.inner.check_poisoned()?;
        let _exclusive = self.inner.writer_lock.lock();
        let result = crate::genesis_init::init_genesis(&self.inner, alloc);
        self.inner.poison_on_error(result)
    }

    /// Restores the exact state of `block`, one of the last `unwind_depth`
    /// committed blocks. Returns its root.
    pub fn unwind_to(&self, block: u64) -> Result<B256> {
        self.inner.check_poisoned()?;
        let _exclusive = self.inner.writer_lock.lock();
        let result = crate::unwind::unwind_to(&self.inner, block);
        self.inner.poison_on_error(result)
    }

    /// The oldest block [`StateDb::unwind_to`] can restore, if any.
    pub fn oldest_unwindable(&self) -> Result<Option<u64>> {
        crate::unwind::oldest_retained(&self.inner)
    }

    /// Runs collate, merge and prune now, waiting for them to finish.
    pub fn compact(&self) -> Result<MaintenanceReport> {
        self.inner.check_poisoned()?;
        let result = maintenance::run(&self.inner);
        self.inner.poison_on_error(result)
    }

    /// Re-checks every file, checks that the tiers agree and recomputes the
    /// state root from every live leaf; the report lists what is wrong.
    pub fn verify(&self) -> Result<crate::verify::VerifyReport> {
        crate::verify::verify(&self.inner)
    }

    /// The read-latency telemetry of this store.
    pub fn metrics(&self) -> &Arc<ReadMetrics> {
        &self.inner.metrics
    }

    /// The branch cache's counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.inner.cache.stats()
    }

    /// Sizes of the tiers: db entries and files per domain.
    pub fn stats(&self) -> Result<DbStats> {
        let snapshot = self.inner.current.load_full();
        let mut domains = Vec::new();
        for domain in Domain::ALL {
            let files = snapshot.files.files(domain);
            domains.push(DomainStats {
                domain,
                db_entries: snapshot.db_len(domain)?,
                files: files
                    .iter()
                    .map(|f| FileStats {
                        name: f
                            .path()
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default(),
                        from_step: f.meta().from_step,
                        to_step: f.meta().to_step,
                        entries: f.entries(),
                        bytes: f.size_bytes(),
                    })
                    .collect(),
            });
        }
        Ok(DbStats {
            last_block: snapshot.block(),
            root: snapshot.root(),
            step_size: self.inner.step_size,
            domains,
            cache: self.cache_stats(),
        })
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }
}

impl Drop for StateDb {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            worker.stop();
        }
    }
}

/// Sizes of the tiers of a store.
#[derive(Clone, Debug)]
pub struct DbStats {
    /// The last committed block.
    pub last_block: Option<u64>,
    /// Its root.
    pub root: B256,
    /// Blocks per step.
    pub step_size: u64,
    /// Per domain.
    pub domains: Vec<DomainStats>,
    /// Branch cache counters.
    pub cache: CacheStats,
}

/// Sizes of one domain's tiers.
#[derive(Clone, Debug)]
pub struct DomainStats {
    /// The domain.
    pub domain: Domain,
    /// Entries in redb.
    pub db_entries: u64,
    /// Live files, newest first.
    pub files: Vec<FileStats>,
}

/// One immutable file.
#[derive(Clone, Debug)]
pub struct FileStats {
    /// File name.
    pub name: String,
    /// First step covered.
    pub from_step: u64,
    /// End of the step range (exclusive).
    pub to_step: u64,
    /// Keys held (tombstones included).
    pub entries: u64,
    /// Size on disk.
    pub bytes: u64,
}

fn open_redb<B: redb::StorageBackend>(
    path: &PathBuf,
    options: &Options,
    backend: Option<B>,
) -> Result<redb::Database> {
    let mut builder = redb::Database::builder();
    builder.set_cache_size(options.db_cache_bytes);
    builder.set_concurrency_mode(concurrency_mode(options));
    let opened = match backend {
        Some(backend) => builder.create_with_backend(backend),
        None => builder.create(path),
    };
    opened.map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen | redb::DatabaseError::LockProtocolMismatch => {
            Error::Locked { path: path.clone() }
        }
        other => Error::Db {
            op: "open database",
            source: other.into(),
        },
    })
}

/// How the writer shares the database file with other processes.
pub(crate) fn concurrency_mode(options: &Options) -> redb::ConcurrencyMode {
    if options.share_with_readers {
        redb::ConcurrencyMode::SingleWriter
    } else {
        redb::ConcurrencyMode::ExclusiveWriter
    }
}

/// Refuses options that contradict each other, before anything is opened.
fn check_options(options: &Options) -> Result<()> {
    if options.step_size == 0 {
        return Err(Error::InvalidOptions("step_size must be at least 1".into()));
    }
    if let crate::options::Durability::EveryN(n) = options.durability
        && options.share_with_readers
        && n > 1
    {
        return Err(Error::InvalidOptions(format!(
            "durability EveryN({n}) cannot be combined with share_with_readers: \
             a non-durable commit exists only in the writer's memory"
        )));
    }
    Ok(())
}

/// Creates and initialises the database under a temporary name, then
/// renames it into place: a crash during creation never leaves a
/// half-written `state.redb` that cannot be opened.
fn create_redb_atomically(datadir: &Path, db_path: &Path, options: &Options) -> Result<()> {
    let temp = datadir.join(format!("{DB_FILE}.creating"));
    let io = |what: &'static str| {
        let path = datadir.to_path_buf();
        move |source| Error::Datadir { path, what, source }
    };
    if temp.exists() {
        std::fs::remove_file(&temp).map_err(io("remove an interrupted creation"))?;
    }
    let db = open_redb::<redb::backends::FileBackend>(&temp.to_path_buf(), options, None)?;
    load_or_init_meta(&db, db_path, options)?;
    drop(db);
    std::fs::File::open(&temp)
        .and_then(|f| f.sync_all())
        .map_err(io("sync the new database"))?;
    std::fs::rename(&temp, db_path).map_err(io("rename the new database"))?;
    std::fs::File::open(datadir)
        .and_then(|d| d.sync_all())
        .map_err(io("sync the datadir"))?;
    Ok(())
}

fn load_or_init_meta(db: &redb::Database, db_path: &Path, options: &Options) -> Result<Meta> {
    let txn = db.begin_write().map_err(db_err("begin write"))?;
    let meta = {
        let mut table = txn.open_table(META).map_err(db_err("open meta"))?;
        match meta::load(&table)? {
            Some((found, _)) if found != FORMAT_VERSION => {
                return Err(Error::UnsupportedFormat {
                    path: db_path.to_path_buf(),
                    found,
                    supported: FORMAT_VERSION,
                });
            }
            Some((_, meta)) => meta,
            None => {
                meta::init(&mut table, options.step_size)?;
                Meta {
                    step_size: options.step_size,
                    head: None,
                    manifest: Default::default(),
                }
            }
        }
    };
    for domain in Domain::ALL {
        txn.open_table(domain_table(domain))
            .map_err(db_err("create table"))?;
    }
    txn.open_table(CHANGES).map_err(db_err("create table"))?;
    txn.open_table(CODE_BY_HASH)
        .map_err(db_err("create table"))?;
    txn.open_table(BLOCK_HASHES)
        .map_err(db_err("create table"))?;
    txn.open_table(ROOTS).map_err(db_err("create table"))?;
    txn.commit().map_err(db_err("commit metadata"))?;
    Ok(meta)
}
