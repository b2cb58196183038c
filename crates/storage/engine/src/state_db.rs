//! [`StateDb`]: the facade that opens a datadir and ties the tiers, the
//! commitment, the branch cache, the warmers and maintenance together.

use std::path::Path;
use std::sync::Arc;

use alloy_primitives::B256;
use bytes::Bytes;
use redb::{ReadableDatabase, TableHandle};
use strata_cache::{CacheStats, WarmupPool, build_cache};

use crate::StateReader;
use crate::error::guarded;
use crate::error::{Error, Result, db_err};
use crate::genesis_init::{BlockZero, GenesisName};
use crate::inner::Inner;
use crate::ledger::{FlushStats, FlushWorker, Ledger};
use crate::maintenance::{self, MaintenanceReport, MaintenanceWorker};
use crate::options::Options;
use crate::retained::Retained;
use crate::warm_start::WarmStart;
use crate::writer::BlockWriter;
use crate::writer_slot::{Wait, WriterTicket};
use strata_db::meta::{self, FORMAT_VERSION, Meta};
use strata_db::tables::META;
use strata_db::{DomainTables, HeadTables};
use strata_files::{FileSystem, OsFileSystem};
use strata_telemetry::ReadMetrics;
use strata_types::domain::Regime;
use strata_view::fileset::FileSet;
use strata_view::overlay::Overlay;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;

pub use strata_view::stats::{DbStats, DomainStats, FileStats};

use strata_types::datadir::{DB_FILE, FILES_DIR};

/// A state database in one datadir: redb plus a folder of immutable files.
///
/// ```
/// use alloy_primitives::{Address, U256};
/// use strata_engine::{Account, Options, Regime, StateDb};
///
/// let dir = tempfile::tempdir().unwrap();
/// let db = StateDb::open(dir.path(), Options::default()).unwrap();
/// let mut block = db.begin_block(0).unwrap();
/// let alice = Address::repeat_byte(0xa1);
/// block.put_account(alice, &Account { balance: U256::from(5), ..Account::default() });
/// let root = block.commit().unwrap().root;
/// assert_eq!((db.last_block(), db.root()), (Some(0), root));
/// assert_eq!(db.reader(Regime::Exec).account(&alice).unwrap().unwrap().balance, U256::from(5));
/// db.close().unwrap(); // the final flush; the journal already holds the block
/// ```
pub struct StateDb {
    inner: Arc<Inner>,
    worker: Option<MaintenanceWorker>,
    flusher: Option<FlushWorker>,
    /// Set by [`StateDb::abandon`]: drop without the final flush.
    abandoned: bool,
    /// Older states `reader_at` rebuilt and checked against their roots.
    checked: strata_view::history::CheckedStates,
    /// For readers through the history: the undo of the memory tier's
    /// blocks back to redb's head, for one snapshot (its root and redb
    /// head), built once.
    deep_undo: crate::state_history::UndoToDbHead,
    /// What the last warm start of the branch cache read
    /// ([`Options::warm_start`]).
    warmed: parking_lot::Mutex<Option<WarmStart>>,
}

impl StateDb {
    /// Opens the datadir at `datadir`, creating it only when it is new: no
    /// `state.redb` and no strata files in `files/`. A missing database beside
    /// strata files, an empty or unreadable one is an error that names it;
    /// nothing is created or deleted then.
    pub fn open(datadir: impl AsRef<Path>, options: Options) -> Result<StateDb> {
        let fs = options
            .file_system
            .clone()
            .unwrap_or_else(|| Arc::new(OsFileSystem));
        Self::open_through::<redb::backends::FileBackend>(datadir, options, fs, None)
    }

    /// Opens the datadir with immutable-file and journal I/O going through
    /// `fs` (tests inject failures here). Feature `test-utils`.
    #[cfg(feature = "test-utils")]
    pub fn open_with_fs(
        datadir: impl AsRef<Path>,
        options: Options,
        fs: Arc<dyn FileSystem>,
    ) -> Result<StateDb> {
        Self::open_through::<redb::backends::FileBackend>(datadir, options, fs, None)
    }

    /// Opens the datadir with immutable-file I/O through `fs` and, when
    /// given, redb's storage through `db_backend` instead of the datadir's
    /// `state.redb` (crash tests rebuild power-cut images through both).
    /// Feature `test-utils`.
    #[cfg(feature = "test-utils")]
    pub fn open_with_io<B: redb::StorageBackend>(
        datadir: impl AsRef<Path>,
        options: Options,
        fs: Arc<dyn FileSystem>,
        db_backend: Option<B>,
    ) -> Result<StateDb> {
        Self::open_through(datadir, options, fs, db_backend)
    }

    fn open_through<B: redb::StorageBackend>(
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
        let files_dir = datadir.join(FILES_DIR);
        let db_path = datadir.join(DB_FILE);
        let (db, meta) = match db_backend {
            Some(backend) => {
                std::fs::create_dir_all(&datadir).map_err(dir_err("create"))?;
                let db = open_redb(&db_path, &options, Backing::Given(backend))?;
                let meta = load_or_init_meta(&db, &db_path, &options, MetaAbsent::Initialise)?;
                (db, meta)
            }
            None => {
                match existing_database(&datadir, &db_path, &files_dir)? {
                    Existing::Database => {}
                    Existing::Nothing => {
                        std::fs::create_dir_all(&datadir).map_err(dir_err("create"))?;
                        create_redb_atomically(&datadir, &db_path, &options)?;
                    }
                }
                // redb may panic on a damaged page while it recovers or
                // reads the metadata: that is an error naming the table.
                let db = guarded("(database recovery)", || {
                    open_redb::<redb::backends::FileBackend>(&db_path, &options, Backing::Existing)
                })?;
                let meta = guarded(META.name(), || {
                    load_or_init_meta(&db, &db_path, &options, MetaAbsent::Refuse)
                })?;
                (db, meta)
            }
        };
        // Only a datadir of this format gains a files folder.
        std::fs::create_dir_all(&files_dir).map_err(dir_err("create files folder"))?;

        maintenance::remove_orphans(fs.as_ref(), &files_dir, &meta.manifest)?;
        let history_dir = strata_view::history_files::history_dir_beside(&files_dir);
        let meta = if meta.history.is_on() {
            fs.create_dir_all(&history_dir)
                .map_err(dir_err("create history folder"))?;
            maintenance::remove_history_orphans(fs.as_ref(), &history_dir, &meta.manifest)?;
            let manifest = crate::state_history::move_legacy_history(
                &db,
                &fs,
                &history_dir,
                meta.manifest.clone(),
            )?;
            strata_db::meta::Meta { manifest, ..meta }
        } else {
            meta
        };
        strata_bulk::sort::remove_scratch(&datadir.join(strata_types::datadir::IMPORT_DIR))?;
        let files = Arc::new(FileSet::open(&fs, &files_dir, meta.manifest.clone())?);
        let id = meta.datadir_id.ok_or_else(|| Error::CorruptMeta {
            name: "datadir_id",
            what: "missing after the writer's open".into(),
        })?;
        // The retention the datadir recorded is the one it keeps.
        let options = Options {
            history: Some(meta.history),
            ..options
        };
        let metrics = Arc::new(if options.mutex_telemetry_baseline() {
            ReadMetrics::mutex_baseline(options.read_metrics)
        } else {
            ReadMetrics::from_env(options.read_metrics)
        });
        let parallel_threshold = options.parallel_commitment_threshold;
        let recovery = Ledger::open(
            fs.clone(),
            &datadir,
            id,
            meta.head,
            meta.journal_void_after,
            &options,
            &mut |memory, before, run, last| {
                let snapshot = Snapshot::open(&db, before, files.clone(), memory.clone())?;
                crate::branches::restore_branches(
                    run,
                    last,
                    Arc::new(snapshot),
                    &metrics,
                    parallel_threshold,
                )
            },
        )?;
        if meta.journal_void_after.is_some() {
            crate::unwind::clear_void_mark_in(&db)?;
        }
        let replayed_whole = recovery.replayed_whole;
        let mut snapshot = Snapshot::open(&db, recovery.head, files, recovery.memory)?;
        snapshot.history = recovery.history;
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
            recovery.ledger,
        ));
        if replayed_whole {
            crate::replay_check::check_replayed(&inner)?;
        }
        // No writer exists yet: what the warm start reads is the head's.
        let warmed = crate::warm_start::warm_branch_cache(&inner);
        let (worker, flusher) = if background {
            (
                Some(maintenance::start_worker(inner.clone())?),
                Some(crate::ledger::start_flusher(inner.clone())?),
            )
        } else {
            (None, None)
        };
        Ok(StateDb {
            inner,
            worker,
            flusher,
            abandoned: false,
            checked: Default::default(),
            deep_undo: Default::default(),
            warmed: parking_lot::Mutex::new(warmed),
        })
    }

    /// A read handle on the last committed block, its reads timed as EVM
    /// execution ([`Regime::Exec`]): what a client serving RPC or executing
    /// transactions wants without naming a regime.
    pub fn latest(&self) -> StateReader {
        self.reader(Regime::Exec)
    }

    /// A read handle on the last committed block for `regime`.
    pub fn reader(&self, regime: Regime) -> StateReader {
        StateReader::new(
            self.inner
                .reader(self.inner.current.load_full(), None, regime),
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

    /// A read handle on the state as it was after `block`, one of the last
    /// `unwind_depth` committed blocks (reth's `history_by_block_number`
    /// within the window): the current state with the writes of the later
    /// blocks undone from their unwind data, kept in memory. Fails with
    /// [`Error::StateNotRetained`] outside the window, or for blocks
    /// flushed before this open whose journal records could not be read.
    pub fn reader_at(&self, block: u64, regime: Regime) -> Result<StateReader> {
        self.view_at(block, regime).map(StateReader::new)
    }

    /// The engine's reader behind [`StateDb::reader_at`].
    fn view_at(&self, block: u64, regime: Regime) -> Result<ViewReader> {
        let snapshot = self.inner.current.load_full();
        let last = snapshot.block();
        let metrics = self.inner.metrics.clone();
        if last == Some(block) {
            return Ok(self.inner.reader(snapshot, None, regime));
        }
        let last = last.unwrap_or(0);
        let window = Retained::new(&snapshot.history, last, self.inner.options.unwind_depth)
            .with_history(snapshot.history_kept(), &snapshot.history);
        window.check(block)?;
        // Below redb's head the history answers directly (no undo overlay
        // to build, no records to recompute for a proof).
        if snapshot.has_history()
            && let Some(db_head) = snapshot.db_head()
            && block < db_head.block
        {
            return self.deep_view(snapshot, block, db_head, last, regime, &window);
        }
        let Some(undo) = snapshot.history.undo_to(block, last) else {
            return Err(window.not_retained(block));
        };
        let root = match snapshot.history.root_of(block) {
            Some(root) => root,
            None => crate::ledger::root_of(&self.inner, block)?
                .ok_or_else(|| window.not_retained(block))?,
        };
        let at = strata_types::Head { block, root };
        let head_root = snapshot.root();
        let reader = ViewReader::at(snapshot, undo, at, regime, metrics)
            .with_values(self.inner.values.clone());
        self.checked.check_once(block, head_root, || {
            let cache = self.inner.cache.clone();
            reader.check_rebuilt(
                |head| strata_view::sources::CachedBranches::for_commitment(head, cache),
                self.inner.options.parallel_commitment_threshold,
            )
        })?;
        Ok(reader)
    }

    /// A reader at `block`, older than `db_head` (the snapshot's redb
    /// head), through redb's history (a datadir that keeps history): the
    /// memory tier's blocks undone (once per snapshot), then the history.
    fn deep_view(
        &self,
        snapshot: Arc<Snapshot>,
        block: u64,
        db_head: strata_types::Head,
        last: u64,
        regime: Regime,
        window: &Retained,
    ) -> Result<ViewReader> {
        let to_db_head = self
            .deep_undo
            .get_or_build(snapshot.root(), db_head.block, || {
                if db_head.block == last {
                    return Ok(Overlay::default());
                }
                snapshot
                    .history
                    .undo_to(db_head.block, last)
                    .ok_or_else(|| window.not_retained(block))
            })?;
        crate::state_history::deep_reader(
            snapshot,
            to_db_head,
            block,
            regime,
            self.inner.metrics.clone(),
        )
    }

    /// The Merkle proof of `address` and `slots` after `block`, one of the
    /// last `unwind_depth` blocks (`eth_getProof` with a block number). For
    /// an older block than the last, the commitment records along the paths
    /// the later blocks touched are recomputed over the state as it was
    /// (the root checked against the block's), nothing written; the cost
    /// grows with the keys written since.
    pub fn proof_at(
        &self,
        block: u64,
        address: &alloy_primitives::Address,
        slots: &[B256],
    ) -> Result<crate::AccountProof> {
        let cache = self.inner.cache.clone();
        Ok(self.view_at(block, Regime::Exec)?.proof_recomputed(
            address,
            slots,
            |head| strata_view::sources::CachedBranches::for_commitment(head, cache),
            self.inner.options.parallel_commitment_threshold,
        )?)
    }

    /// The root of `block` if it is still retained for unwind.
    pub fn root_at(&self, block: u64) -> Result<Option<B256>> {
        crate::ledger::root_of(&self.inner, block)
    }

    /// Starts writing block `number`, which must follow the last committed
    /// block. Waits while a writer open on another thread is alive; on the
    /// thread that holds one (a writer not yet committed or dropped) it
    /// fails with [`Error::WriterBusy`] instead of waiting for itself.
    pub fn begin_block(&self, number: u64) -> Result<BlockWriter> {
        self.open_writer(number, Wait::Yes)
    }

    /// Starts writing block `number` like [`StateDb::begin_block`], but
    /// fails at once with [`Error::WriterBusy`] while any writer is open.
    pub fn try_begin_block(&self, number: u64) -> Result<BlockWriter> {
        self.open_writer(number, Wait::No)
    }

    fn open_writer(&self, number: u64, wait: Wait) -> Result<BlockWriter> {
        self.inner
            .check_poisoned()
            .map_err(|error| error.in_block(number))?;
        let write_side = WriterTicket::take(&self.inner.writer_slot, wait)?;
        let expected = self.last_block().map_or(0, |b| b + 1);
        if number != expected {
            return Err(Error::BlockOutOfOrder {
                expected,
                found: number,
            });
        }
        Ok(BlockWriter::new(&self.inner, write_side, number))
    }

    /// Writes the initial state `alloc` as block 0 of an empty store,
    /// named as `block` says (its hash, served to `BLOCKHASH(0)` by the
    /// blocks after it, and its header, served by
    /// `StateReader::block_header(0)` while block 0 is among the last 256),
    /// and returns its state root (bulk-built, in hashed-key order; from
    /// 100,000 accounts on written as immutable files).
    pub fn init_genesis(
        &self,
        alloc: &strata_genesis::GenesisAlloc,
        block: GenesisName,
    ) -> Result<B256> {
        let block_zero = match block {
            GenesisName::Unnamed => None,
            GenesisName::Hash(hash) => Some(BlockZero { hash, header: None }),
            GenesisName::HashAndHeader(hash, header) => Some(BlockZero {
                hash,
                header: Some(header),
            }),
        };
        Ok(self.write_genesis(alloc, |_| Ok(block_zero))?.0)
    }

    /// Writes `genesis` — a genesis as clients hold it, e.g. from reth's
    /// chain spec — as block 0 with its block hash (the genesis header's,
    /// built as the chain's configuration shapes it; see
    /// [`strata_genesis::chain`]). Returns the state root and block hash.
    #[cfg(feature = "alloy-genesis")]
    pub fn init_chain_genesis(&self, genesis: &alloy_genesis::Genesis) -> Result<(B256, B256)> {
        use strata_genesis::chain;
        let alloc = chain::alloc_of(genesis);
        let (root, hash) = self.write_genesis(&alloc, |root| {
            let header = chain::genesis_header(genesis, root)
                .map_err(|error| Error::GenesisHeader(error.to_string()))?;
            Ok(Some(BlockZero {
                hash: header.hash_slow(),
                header: Some(Bytes::from(alloy_rlp::encode(&header))),
            }))
        })?;
        Ok((root, hash.expect("a hash was given")))
    }

    /// Imports a whole state — `accounts` in any order, e.g. the lines of a
    /// state dump ([`strata_bulk::dump::DumpReader`]) or any iterator of
    /// `Result<(Address, GenesisAccount), E>` ([`strata_bulk::import::AccountSource`])
    /// — as block `options.block` of an empty store, in bounded memory,
    /// straight into immutable files (see [`strata_bulk::import`]). With
    /// `options.expected_root`, a state whose root differs is refused before
    /// anything is written. The store then continues at `options.block + 1`;
    /// the blocks before it cannot be read or unwound to.
    pub fn import_state(
        &self,
        accounts: impl strata_bulk::import::AccountSource,
        options: &strata_bulk::import::ImportOptions,
    ) -> Result<strata_bulk::import::ImportReport> {
        self.inner.check_poisoned()?;
        let _write_side = WriterTicket::take(&self.inner.writer_slot, Wait::Yes)?;
        let report = crate::imported::import(&self.inner, accounts, options)?;
        self.warm_after_import();
        Ok(report)
    }

    /// Warms the branch cache over the state just imported; the caller
    /// holds the writer slot.
    fn warm_after_import(&self) {
        *self.warmed.lock() = crate::warm_start::warm_branch_cache(&self.inner);
    }

    /// What the last warm start of the branch cache read (at open, or
    /// after the last genesis or state import), if one ran
    /// ([`Options::warm_start`]).
    pub fn warm_start(&self) -> Option<WarmStart> {
        *self.warmed.lock()
    }

    fn write_genesis(
        &self,
        alloc: &strata_genesis::GenesisAlloc,
        block_of: impl FnOnce(B256) -> Result<Option<BlockZero>>,
    ) -> Result<(B256, Option<B256>)> {
        self.inner.check_poisoned()?;
        let _write_side = WriterTicket::take(&self.inner.writer_slot, Wait::Yes)?;
        let result = crate::genesis_init::init_genesis(&self.inner, alloc, block_of);
        let written = self.inner.poison_on_error(result)?;
        self.warm_after_import();
        Ok(written)
    }

    /// Restores the exact state of `block`, one of the last `unwind_depth`
    /// committed blocks. Returns its root.
    pub fn unwind_to(&self, block: u64) -> Result<B256> {
        self.inner.check_poisoned()?;
        let _write_side = WriterTicket::take(&self.inner.writer_slot, Wait::Yes)?;
        let result = crate::unwind::unwind_to(&self.inner, block);
        self.inner.poison_on_error(result)
    }

    /// The oldest block [`StateDb::unwind_to`] can restore, if any.
    pub fn oldest_unwindable(&self) -> Result<Option<u64>> {
        crate::unwind::oldest_retained(&self.inner)
    }

    /// Flushes every committed block into redb, then runs collate, merge
    /// and prune, waiting for them to finish.
    pub fn compact(&self) -> Result<MaintenanceReport> {
        self.flush()?;
        let result = maintenance::run(&self.inner, maintenance::HistoryMerges::All);
        self.inner.poison_on_error(result)
    }

    /// Records the chain's configuration as the client encodes it (opaque
    /// to the store; `strata import-chain` and `init --chain` keep the geth
    /// genesis `config` object as JSON), in one durable redb transaction,
    /// replacing any earlier one. It tells a later process over the datadir
    /// — a resumed import, `strata serve` running calls — the chain's fork
    /// rules.
    pub fn set_chain_config(&self, config: &[u8]) -> Result<()> {
        self.inner.check_poisoned()?;
        let txn = self.inner.db.begin_write().map_err(db_err("begin write"))?;
        {
            let mut table = txn.open_table(META).map_err(db_err("open meta"))?;
            meta::write_chain_config(&mut table, config)?;
        }
        txn.commit().map_err(db_err("commit chain configuration"))
    }

    /// The chain's configuration [`StateDb::set_chain_config`] recorded, if
    /// any.
    pub fn chain_config(&self) -> Result<Option<Bytes>> {
        let txn = guarded("(database header)", || {
            self.inner.db.begin_read().map_err(db_err("begin read"))
        })?;
        guarded(META.name(), || {
            let table = txn.open_table(META).map_err(db_err("open meta"))?;
            Ok(meta::read_chain_config(&table)?.map(Bytes::from))
        })
    }

    /// Moves every committed block from the memory tier (and journal) into
    /// redb now (in transactions of `Options::flush_txn_keys` keys, redb's
    /// head advancing with the last); returns the blocks moved.
    pub fn flush(&self) -> Result<usize> {
        self.inner.check_poisoned()?;
        let result = self.inner.ledger.flush(&self.inner);
        self.inner.poison_on_error(result)
    }

    /// Asks the background flusher to move every committed block into
    /// redb, and returns at once (with background maintenance off, flushes
    /// here as [`StateDb::flush`] does).
    pub fn request_flush(&self) -> Result<()> {
        self.inner.check_poisoned()?;
        if self.flusher.is_some() {
            self.inner.ledger.request_flush();
            Ok(())
        } else {
            self.flush().map(drop)
        }
    }

    /// The flush's counters: batches, blocks, keys, time, and how often
    /// (and how long) commits waited for it.
    pub fn flush_stats(&self) -> FlushStats {
        self.inner.ledger.stats()
    }

    /// Runs the writer's journal scan over every segment (the chain of
    /// roots, redb's roots) and rebuilds the state at every block of the
    /// unwind window from the unwind data (each must give its block's
    /// root), then re-checks every file, checks that the tiers agree and
    /// recomputes the state root from every live leaf; the report lists
    /// what is wrong, as [`crate::verify_datadir`]'s does. While the
    /// segments are read, flushes wait and commits wait for their journal
    /// append (a read of the journal's bytes); the rest runs beside them.
    /// The sorts take `options`' memory and scratch folder
    /// (`VerifyOptions::default()`: 256 MiB, the system's temp folder).
    pub fn verify(
        &self,
        options: &crate::verify::VerifyOptions,
    ) -> Result<crate::verify::VerifyReport> {
        // Verify re-reads the snapshot's files by name: no merge may
        // remove one meanwhile (flushes and commits go on).
        let _no_maintenance = self.inner.maintenance_lock.lock();
        crate::verify::verify(&self.inner, options)
    }

    /// The read-latency telemetry of this store.
    pub fn metrics(&self) -> &Arc<ReadMetrics> {
        &self.inner.metrics
    }

    /// The state value cache's counters (hits, misses, inserts,
    /// evictions, bytes held).
    pub fn value_cache_stats(&self) -> CacheStats {
        self.inner.values.stats()
    }

    /// The branch cache's counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.inner.cache.stats()
    }

    /// What the datadir's history holds per domain (`None` when it keeps
    /// none): a scan of redb's history.
    pub fn history_stats(&self) -> Result<Option<strata_view::stats::HistoryStats>> {
        Ok(strata_view::stats::history_stats(
            &self.inner.current.load_full(),
        )?)
    }

    /// Sizes of the tiers: db entries and files per domain.
    pub fn stats(&self) -> Result<DbStats> {
        let (blocks, bytes) = self.inner.ledger.journal_extent();
        Ok(strata_view::stats::collect(
            &self.inner.current.load_full(),
            self.inner.step_size,
            self.cache_stats(),
            strata_view::stats::JournalStats { blocks, bytes },
        )?)
    }

    /// Closes the store as a crash would after the last commit returned:
    /// the background threads stop and nothing more is written, so the
    /// blocks not yet flushed exist only in the journal. For tests of
    /// recovery. Feature `test-utils`.
    #[cfg(feature = "test-utils")]
    pub fn abandon(mut self) {
        if let Some(flusher) = self.flusher.take() {
            flusher.stop();
        }
        if let Some(worker) = self.worker.take() {
            worker.stop();
        }
        self.abandoned = true;
    }

    /// Closes the store: stops the background threads and flushes the
    /// blocks still in the memory tier into redb, returning what that final
    /// flush (or an earlier failure that poisoned the store) did wrong.
    /// Dropping a `StateDb` does the same but can only log a failure. Either
    /// way every committed block is safe in the journal, which the next open
    /// replays.
    pub fn close(mut self) -> Result<()> {
        if let Some(flusher) = self.flusher.take() {
            flusher.stop();
        }
        if let Some(worker) = self.worker.take() {
            worker.stop();
        }
        // Drop has nothing left to do, whatever happens below.
        self.abandoned = true;
        let flushed = self
            .inner
            .check_poisoned()
            .and_then(|()| self.inner.ledger.flush(&self.inner).map(|_| ()));
        self.inner.drop_behind.settle();
        flushed
    }

    /// Blocks per step of this datadir (recorded when it was created;
    /// `Options::step_size` applies only to a new datadir).
    pub fn step_size(&self) -> u64 {
        self.inner.step_size
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Durations and totals of this store's commits, flushes and maintenance.
    pub fn store_metrics(&self) -> &strata_telemetry::StoreMetrics {
        &self.inner.store_metrics
    }

    /// A handle that does not keep the store open, for exporters that read
    /// its [`StoreFigures`](crate::StoreFigures) at scrape time.
    pub fn downgrade(&self) -> crate::WeakStateDb {
        crate::WeakStateDb::new(&self.inner)
    }
}

impl Drop for StateDb {
    fn drop(&mut self) {
        if let Some(flusher) = self.flusher.take() {
            flusher.stop();
        }
        if let Some(worker) = self.worker.take() {
            worker.stop();
        }
        // What the journal holds is durable either way; flushing it now
        // makes the next open quick. A failure is left for that open.
        if !self.abandoned
            && self.inner.check_poisoned().is_ok()
            && let Err(error) = self.inner.ledger.flush(&self.inner)
        {
            tracing::warn!(%error, "flush at close failed; the next open replays the journal");
        }
        self.inner.drop_behind.settle();
    }
}

/// Where redb's storage comes from.
enum Backing<B> {
    /// A backend the caller gives (crash images).
    Given(B),
    /// The database file at the path, which must exist and be a database.
    Existing,
    /// The database file at the path, created when missing or empty.
    Create,
}

fn open_redb<B: redb::StorageBackend>(
    path: &Path,
    options: &Options,
    backing: Backing<B>,
) -> Result<redb::Database> {
    let mut builder = redb::Database::builder();
    builder.set_cache_size(options.db_cache_bytes);
    builder.set_concurrency_mode(concurrency_mode(options));
    let opened = match backing {
        Backing::Given(backend) => builder.create_with_backend(backend),
        Backing::Existing => builder.open(path),
        Backing::Create => builder.create(path),
    };
    opened.map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen | redb::DatabaseError::LockProtocolMismatch => {
            Error::Locked {
                path: path.to_path_buf(),
            }
        }
        other => Error::DatabaseUnreadable {
            path: path.to_path_buf(),
            source: other.into(),
        },
    })
}

/// What a datadir already holds, as far as creating a database goes.
enum Existing {
    /// `state.redb` exists and is not empty: open it, never create.
    Database,
    /// No database and no strata files: a new datadir (or one whose
    /// creation was interrupted before the rename).
    Nothing,
}

/// Decides whether `datadir` is new. A zero-length `state.redb`, or none
/// beside strata's own files, is refused: creating a database there would
/// start again from genesis and orphan the files.
fn existing_database(datadir: &Path, db_path: &Path, files_dir: &Path) -> Result<Existing> {
    match std::fs::metadata(db_path) {
        Ok(meta) if meta.len() == 0 => Err(Error::DatabaseEmpty {
            path: db_path.to_path_buf(),
        }),
        Ok(_) => Ok(Existing::Database),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let files = strata_files_in(files_dir).map_err(|source| Error::Datadir {
                path: files_dir.to_path_buf(),
                what: "list the files folder",
                source,
            })?;
            if files > 0 {
                return Err(Error::DatabaseMissing {
                    path: datadir.to_path_buf(),
                    files,
                });
            }
            Ok(Existing::Nothing)
        }
        Err(source) => Err(Error::Datadir {
            path: db_path.to_path_buf(),
            what: "inspect the database file",
            source,
        }),
    }
}

/// How many files in `files_dir` carry a name strata gives its files (0
/// when the folder does not exist).
fn strata_files_in(files_dir: &Path) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(files_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut count = 0;
    for entry in entries {
        let name = entry?.file_name();
        if maintenance::is_strata_file_name(&name.to_string_lossy()) {
            count += 1;
        }
    }
    Ok(count)
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
    if options.flush_txn_keys == 0 {
        return Err(Error::InvalidOptions(
            "flush_txn_keys must be at least 1".into(),
        ));
    }
    if options.memory_budget_bytes == 0 || options.memory_budget_bytes < options.flush_batch_bytes {
        return Err(Error::InvalidOptions(format!(
            "memory_budget_bytes ({}) must be at least 1 and at least flush_batch_bytes ({})",
            options.memory_budget_bytes, options.flush_batch_bytes
        )));
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
    let db = open_redb::<redb::backends::FileBackend>(&temp, options, Backing::Create)?;
    load_or_init_meta(&db, db_path, options, MetaAbsent::Initialise)?;
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

/// Whether [`load_or_init_meta`] may write first metadata into a database
/// that holds none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MetaAbsent {
    /// The database was just created: it gets metadata.
    Initialise,
    /// An existing database without metadata is not a strata database.
    Refuse,
}

/// Loads the metadata (checking the format) and makes sure every table
/// exists. Only a database being created ([`MetaAbsent::Initialise`])
/// gains new metadata.
fn load_or_init_meta(
    db: &redb::Database,
    db_path: &Path,
    options: &Options,
    absent: MetaAbsent,
) -> Result<Meta> {
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
            Some((_, mut meta)) => {
                if let Some(requested) = options.history
                    && requested != meta.history
                {
                    return Err(Error::HistoryRetentionMismatch {
                        path: db_path.to_path_buf(),
                        recorded: meta.history,
                        requested,
                    });
                }
                if meta.datadir_id.is_none() {
                    // A datadir of an earlier release: it gets its identity now.
                    let id = new_datadir_id(db_path)?;
                    meta::write_datadir_id(&mut table, id)?;
                    meta.datadir_id = Some(id);
                }
                meta
            }
            None if absent == MetaAbsent::Refuse => {
                return Err(Error::NotADatadir {
                    path: db_path.to_path_buf(),
                    what: "the database holds no strata metadata",
                });
            }
            None => {
                let id = new_datadir_id(db_path)?;
                meta::init(&mut table, options.step_size, id)?;
                let history = options.history.unwrap_or_default();
                if history.is_on() {
                    meta::write_history_retention(&mut table, history)?;
                }
                Meta {
                    step_size: options.step_size,
                    head: None,
                    manifest: Default::default(),
                    unwinds: 0,
                    journal_void_after: None,
                    datadir_id: Some(id),
                    history,
                    history_from: None,
                }
            }
        }
    };
    // Every table exists from the first commit on (opening creates it).
    DomainTables::open(&txn)?;
    HeadTables::open(&txn)?;
    if meta.history.is_on() {
        HeadTables::create_block_numbers(&txn)?;
    }
    txn.commit().map_err(db_err("commit metadata"))?;
    Ok(meta)
}

/// A new datadir identity from the operating system's generator.
fn new_datadir_id(db_path: &Path) -> Result<strata_journal::DatadirId> {
    strata_journal::DatadirId::random().map_err(|source| Error::Datadir {
        path: db_path.to_path_buf(),
        what: "make the datadir's identity",
        source,
    })
}
