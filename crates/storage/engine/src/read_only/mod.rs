//! [`ReadOnlyStateDb`]: a second process's view of a datadir that another
//! process is writing, following its commits as they land.
//!
//! The writer opens its redb file in redb's `SingleWriter` mode
//! ([`crate::Options::share_with_readers`]); this side opens it read-only in
//! the same mode. A follower thread polls for new commits every
//! [`crate::Options::follow_interval`]: it begins a redb read transaction,
//! reads the head and the file manifest *from that transaction*, opens (and
//! verifies) any file the manifest newly lists, and publishes the snapshot.
//! Readers take the published snapshot — one whole committed block — and
//! never wait: not on redb's header lock while the writer commits, not on
//! the verification of a new file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use alloy_primitives::B256;
use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::{Condvar, Mutex};
use redb::{ReadOnlyDatabase, ReadTransaction, ReadableDatabase, ReadableTable, TableHandle};

use strata_cache::CacheStats;
use strata_db::cow::CopyOnWriteBackend;

use crate::StateReader;
use crate::branches::LeanRun;
use crate::error::guarded;
use crate::error::{Error, Result, db_err};
use crate::options::Options;
use crate::retained::Retained;
use strata_db::meta::{self, FORMAT_VERSION, Meta};
use strata_db::tables::{META, ROOTS};
use strata_files::{FileError, FileSystem, OsFileSystem};
use strata_journal::{BlockRecord, JournalError, JournalTail, TailMark, segment_first_block};
use strata_telemetry::ReadMetrics;
use strata_types::Head;
use strata_types::datadir::{DB_FILE, FILES_DIR, JOURNAL_DIR};
use strata_types::domain::Regime;
use strata_view::error::ReadError;
use strata_view::fileset::FileSet;
use strata_view::history::{BlockUndo, History};
use strata_view::memory::MemoryTier;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;
use strata_view::stats::DbStats;

mod followed;

use followed::{Advance, FollowCounts, Followed};

/// How many times a refresh starts over when the writer pruned a file
/// between the read transaction and the file's open.
const REFRESH_ATTEMPTS: usize = 16;

/// Whether [`newest`] builds a snapshot when nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refresh {
    /// Only when the commit moved on (the follower's periodic look).
    IfChanged,
    /// Always (an open, a refresh a caller asked for).
    Always,
}

/// A read-only handle on a datadir written by another process (or by a
/// [`crate::StateDb`] in this one) that shares it with readers.
///
/// Never writes: no maintenance, no orphan removal, no recovery. Readers
/// never wait on the writer's commits, its background maintenance or the
/// verification of new files; they see a commit within about one
/// [`crate::Options::follow_interval`] of its landing.
///
/// ```
/// use alloy_primitives::Address;
/// use strata_engine::{Account, Options, ReadOnlyStateDb, Regime, StateDb};
///
/// let dir = tempfile::tempdir().unwrap();
/// let shared = Options::default().with_share_with_readers(true);
/// let writer = StateDb::open(dir.path(), shared).unwrap();
/// let mut block = writer.begin_block(0).unwrap();
/// block.put_account(Address::ZERO, &Account { nonce: 1, ..Account::default() });
/// block.commit().unwrap();
///
/// // What another process opens beside the writer.
/// let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
/// assert_eq!(follower.last_block().unwrap(), Some(0));
/// let reader = follower.reader(Regime::Exec).unwrap();
/// assert_eq!(reader.account(&Address::ZERO).unwrap().unwrap().nonce, 1);
/// ```
pub struct ReadOnlyStateDb {
    follower: Arc<Follower>,
    thread: Option<JoinHandle<()>>,
    metrics: Arc<ReadMetrics>,
    /// The blocks [`ReadOnlyStateDb::reader_at`] reads back (`Options::unwind_depth`).
    unwind_depth: u64,
    /// Older states `reader_at` rebuilt and checked against their roots.
    checked: strata_view::history::CheckedStates,
    /// How the followed blocks' branch records were had.
    counts: Arc<FollowCounts>,
    /// For readers through the history: the undo of the journal's blocks
    /// back to redb's head, for one snapshot (its root and redb head).
    deep_undo: crate::state_history::UndoToDbHead,
}

/// How a [`ReadOnlyStateDb`] got the branch records of the journaled
/// blocks it followed (a journal record leaves them out): counts of
/// blocks since it opened, a block read again after the writer moved on
/// counted again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FollowStats {
    /// Blocks whose branch records the writer published
    /// ([`crate::Options::publish_branches`]): applied as they are.
    pub published_branches: u64,
    /// Blocks whose branch records were rebuilt from their plain writes
    /// (a writer that does not publish them, or a stream a crash cut).
    pub rebuilt_branches: u64,
}

/// What the handle and its follower thread share.
struct Follower {
    datadir: PathBuf,
    /// Blocks per step (fixed when the datadir was created).
    step_size: u64,
    files_dir: PathBuf,
    db: ReadDb,
    fs: Arc<dyn FileSystem>,
    /// The newest snapshot: what readers get.
    latest: ArcSwap<Snapshot>,
    /// Where the journal's read stood when `latest` was published (`None`:
    /// unsure), for [`ReadOnlyStateDb::catch_up`]'s check without the lock.
    mark: ArcSwapOption<TailMark>,
    /// The follower thread could not open the newest commit: readers open
    /// it themselves (and get the error).
    follow_failed: AtomicBool,
    /// The journaled blocks followed so far; held by one refresh at a time
    /// (the thread's or a caller's), so snapshots are published in commit
    /// order.
    refreshing: Mutex<Followed>,
    /// Set to stop the follower thread; notified through `wake`.
    stop: Mutex<bool>,
    wake: Condvar,
}

impl ReadOnlyStateDb {
    /// Opens the datadir at `datadir` read-only. Uses `options.db_cache_bytes`
    /// and `options.read_metrics`; the rest belongs to the writer.
    ///
    /// Works on a datadir no process holds (whichever mode wrote it) and
    /// beside a writer that shares it; writes nothing, so a read-only
    /// directory or mount is fine. Fails with [`Error::NotShared`] while a
    /// writer holds the datadir without sharing it, [`Error::NotADatadir`]
    /// where there is no strata database, [`Error::DatabaseEmpty`] for a
    /// zero-length one. A database whose last writer was killed is recovered
    /// in memory (a copy-on-write view of the file), never on disk.
    pub fn open(datadir: impl AsRef<Path>, options: Options) -> Result<ReadOnlyStateDb> {
        let options = &options;
        let datadir = datadir.as_ref().to_path_buf();
        let db_path = datadir.join(DB_FILE);
        let db = open_database(&datadir, &db_path, options)?;
        let files_dir = datadir.join(FILES_DIR);
        let fs: Arc<dyn FileSystem> = options
            .file_system
            .clone()
            .unwrap_or_else(|| Arc::new(OsFileSystem));
        // Fail now, not at the first read, on a datadir that cannot be read.
        let mut followed = Followed::new(&datadir, options.parallel_commitment_threshold);
        let first = newest(
            &db,
            &datadir,
            &files_dir,
            &fs,
            &Arc::default(),
            &mut followed,
            Refresh::Always,
        )?
        .expect("a forced open returns a snapshot");
        let step_size = begin(&db, &datadir)?.1.step_size;
        let follower = Arc::new(Follower {
            step_size,
            datadir,
            files_dir,
            db,
            fs,
            latest: ArcSwap::from_pointee(first),
            mark: ArcSwapOption::from(followed.mark().map(Arc::new)),
            follow_failed: AtomicBool::new(false),
            refreshing: Mutex::new(followed),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let counts = follower.refreshing.lock().counts();
        let worker = follower.clone();
        let interval = options.follow_interval;
        let thread = std::thread::Builder::new()
            .name("strata-follower".into())
            .spawn(move || worker.follow(interval))
            .map_err(|source| Error::Thread {
                what: "start the follower thread",
                source,
            })?;
        Ok(ReadOnlyStateDb {
            follower,
            thread: Some(thread),
            metrics: Arc::new(ReadMetrics::from_env(options.read_metrics)),
            unwind_depth: options.unwind_depth,
            checked: Default::default(),
            counts,
            deep_undo: Default::default(),
        })
    }

    /// How the branch records of the blocks followed so far were had:
    /// published by the writer beside its journal, or rebuilt here.
    pub fn follow_stats(&self) -> FollowStats {
        FollowStats {
            published_branches: self.counts.published.load(Ordering::Relaxed),
            rebuilt_branches: self.counts.rebuilt.load(Ordering::Relaxed),
        }
    }

    /// A read handle on the newest committed block the follower thread
    /// has published (whose files are open and verified).
    pub fn reader(&self, regime: Regime) -> Result<StateReader> {
        Ok(StateReader::new(ViewReader::new(
            self.follower.snapshot()?,
            None,
            regime,
            self.metrics.clone(),
        )))
    }

    /// A read handle on the state after `block`, one of the blocks the
    /// writer's journal still holds within `Options::unwind_depth` of the
    /// newest (the unwind window): the newest
    /// snapshot with the later blocks undone from their journal records,
    /// read back from the journal on each call (cost: the journal's bytes
    /// after `block`). Fails with [`Error::StateNotRetained`] for a block
    /// outside the window.
    pub fn reader_at(&self, block: u64, regime: Regime) -> Result<StateReader> {
        self.view_at(block, regime).map(StateReader::new)
    }

    /// The engine's reader behind [`ReadOnlyStateDb::reader_at`].
    fn view_at(&self, block: u64, regime: Regime) -> Result<ViewReader> {
        let snapshot = self.follower.snapshot()?;
        let metrics = self.metrics.clone();
        let last = snapshot.block().unwrap_or(0);
        if snapshot.block() == Some(block) {
            return Ok(ViewReader::new(snapshot, None, regime, metrics));
        }
        if snapshot.has_history()
            && let Some(db_head) = snapshot.db_head()
            && block < db_head.block
        {
            return self.deep_view(snapshot, block, db_head, last, regime);
        }
        let (history, roots) = self.journal_history(block, last)?;
        let window = Retained::new(&history, last, self.unwind_depth);
        window.check(block)?;
        // The journal read must continue the snapshot: the same newest root.
        if roots.get(&last) != Some(&snapshot.root()) {
            return Err(window.not_retained(block));
        }
        // The roots redb keeps for the window (of flushed blocks) must be
        // the ones the journal gives.
        let stored = self.stored_root(block)?;
        let root = match (roots.get(&block), stored) {
            (Some(&journaled), Some(stored)) if journaled != stored => {
                return Err(Error::RootMismatch {
                    block,
                    stored,
                    computed: journaled,
                });
            }
            (Some(&root), _) => Some(root),
            // Not journaled (genesis): the roots redb keeps for unwind.
            (None, stored) => stored,
        };
        let (Some(undo), Some(root)) = (history.undo_to(block, last), root) else {
            return Err(window.not_retained(block));
        };
        let at = Head { block, root };
        let head_root = snapshot.root();
        let reader = ViewReader::at(snapshot, undo, at, regime, metrics);
        self.checked.check_once(block, head_root, || {
            reader.check_rebuilt(strata_view::sources::ReaderBranches::new, usize::MAX)
        })?;
        Ok(reader)
    }

    /// A reader at `block`, older than redb's head, through redb's history
    /// (a datadir that keeps history): the journal's blocks after redb's
    /// head undone (read once per snapshot), then the history.
    fn deep_view(
        &self,
        snapshot: Arc<Snapshot>,
        block: u64,
        db_head: Head,
        last: u64,
        regime: Regime,
    ) -> Result<ViewReader> {
        let (retention, from) = snapshot.history_kept();
        let oldest = from
            .and_then(|from| retention.oldest(from, last))
            .unwrap_or(db_head.block);
        let not_retained = Error::StateNotRetained {
            block,
            oldest,
            last,
        };
        if block < oldest {
            return Err(not_retained);
        }
        let to_db_head = self
            .undo_to_db_head(&snapshot, db_head, last)
            .map_err(|_| not_retained)?;
        crate::state_history::deep_reader(snapshot, to_db_head, block, regime, self.metrics.clone())
    }

    /// The undo of the journal's blocks after `snapshot`'s redb head
    /// (`db_head`) up to `last`: the state back at redb's head.
    pub(crate) fn undo_to_db_head(
        &self,
        snapshot: &Snapshot,
        db_head: Head,
        last: u64,
    ) -> Result<Arc<strata_view::overlay::Overlay>> {
        let not_retained = || Error::StateNotRetained {
            block: db_head.block,
            oldest: db_head.block,
            last,
        };
        self.deep_undo
            .get_or_build(snapshot.root(), db_head.block, || {
                if db_head.block == last {
                    return Ok(strata_view::overlay::Overlay::default());
                }
                let (history, roots) = self.journal_history(db_head.block + 1, last)?;
                // A journal that does not end at this snapshot's root: the
                // writer moved on meanwhile, the next snapshot reads it.
                if roots.get(&last) != Some(&snapshot.root()) {
                    return Err(not_retained());
                }
                history
                    .undo_to(db_head.block, last)
                    .ok_or_else(not_retained)
            })
    }

    /// The number of the block with `hash` among the unflushed blocks and,
    /// in a datadir that keeps history, every kept block; `None` when the
    /// store does not know it (a datadir without history knows the hashes
    /// of the last 256 blocks by number: `StateReader::block_hash`).
    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>> {
        Ok(self.follower.snapshot()?.block_number_of(hash)?)
    }

    /// The Merkle proof of `address` and `slots` after `block`, one of the
    /// blocks [`ReadOnlyStateDb::reader_at`] reads: at the newest block from
    /// the stored records, at an older one from records recomputed along
    /// the paths the later blocks touched (root checked, nothing written).
    pub fn proof_at(
        &self,
        block: u64,
        address: &alloy_primitives::Address,
        slots: &[B256],
    ) -> Result<crate::AccountProof> {
        Ok(self.view_at(block, Regime::Exec)?.proof_recomputed(
            address,
            slots,
            strata_view::sources::ReaderBranches::new,
            usize::MAX,
        )?)
    }

    /// The chain's configuration the writer recorded
    /// ([`crate::StateDb::set_chain_config`]), if any.
    pub fn chain_config(&self) -> Result<Option<bytes::Bytes>> {
        let txn = guarded("(database header)", || {
            self.follower.db.begin_read().map_err(db_err("begin read"))
        })?;
        guarded(META.name(), || {
            let table = txn.open_table(META).map_err(db_err("open meta"))?;
            Ok(meta::read_chain_config(&table)?.map(bytes::Bytes::from))
        })
    }

    /// The root redb keeps for `block` (the unwind window's flushed blocks).
    fn stored_root(&self, block: u64) -> Result<Option<B256>> {
        let txn = guarded("(database header)", || {
            self.follower.db.begin_read().map_err(db_err("begin read"))
        })?;
        guarded(ROOTS.name(), || {
            let roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
            let root = roots.get(block).map_err(db_err("read root"))?;
            Ok(root.map(|guard| B256::from_slice(guard.value())))
        })
    }

    /// The undo data and roots of the journaled blocks `from..=last`, read
    /// back now.
    fn journal_history(&self, from: u64, last: u64) -> Result<(History, BTreeMap<u64, B256>)> {
        let id = begin(&self.follower.db, &self.follower.datadir)?
            .1
            .datadir_id;
        let mut tail = JournalTail::new(self.follower.datadir.join(JOURNAL_DIR), id);
        let mut history = History::default();
        let mut roots = BTreeMap::new();
        let mut previous: Option<B256> = None;
        for found in tail.read_after(from.checked_sub(1))? {
            if found.block > last {
                break;
            }
            let corrupt = |what: String| Error::CorruptJournalRecord {
                block: found.block,
                what,
            };
            let record = BlockRecord::decode(&found.payload).map_err(|e| corrupt(e.to_string()))?;
            // The records read back form one chain of roots, ending (the
            // caller checks) at the snapshot's root.
            if record.root != found.link.root {
                return Err(corrupt(format!(
                    "the record's root {} is not its frame's {}",
                    record.root, found.link.root
                )));
            }
            if let Some(root) = previous
                && found.link.parent != root
            {
                return Err(corrupt(format!(
                    "it follows root {}, but the block before has root {root}",
                    found.link.parent
                )));
            }
            previous = Some(record.root);
            roots.insert(record.block, record.root);
            // Block 0 keeps no unwind data (nothing is before it).
            if let Some(undo) = BlockUndo::from_record(&record, |i| &record.writes[i].previous) {
                history = history.pushed(Arc::new(undo), usize::MAX);
            }
        }
        Ok((history, roots))
    }

    /// Looks for a new commit now, without waiting for the follower
    /// thread, and returns the block readers see afterwards. Errors (a new
    /// file that fails verification) name what is wrong; readers keep the
    /// last whole snapshot.
    pub fn refresh(&self) -> Result<Option<u64>> {
        self.follower.refresh()?;
        Ok(self.follower.latest.load().block())
    }

    /// Makes sure readers see every block the writer had committed when
    /// this call began, and returns the block they see: when the journal
    /// shows nothing new (a `stat` of its newest segment and a read of its
    /// last frame's 8-byte checksum, no lock) the
    /// published snapshot already is that block; otherwise it refreshes
    /// now, without waiting for the follower thread. What a server calls
    /// before answering for the head, so that no answer is older than the
    /// head published before the request arrived.
    ///
    /// Blocks are published through the journal, which this checks; an
    /// unwind committed in redb whose journal cut is still to come, and a
    /// bulk import, are seen within one
    /// [`crate::Options::follow_interval`], as before.
    pub fn catch_up(&self) -> Result<Option<u64>> {
        self.follower.catch_up()?;
        Ok(self.follower.latest.load().block())
    }

    /// The block [`ReadOnlyStateDb::reader`] shows now, or `None` before genesis.
    pub fn last_block(&self) -> Result<Option<u64>> {
        Ok(self.follower.snapshot()?.block())
    }

    /// The state root of that block.
    pub fn root(&self) -> Result<B256> {
        Ok(self.follower.snapshot()?.root())
    }

    /// Sizes of the tiers of the block [`ReadOnlyStateDb::reader`] shows
    /// (the branch-cache counters are zero: this handle has no cache).
    pub fn stats(&self) -> Result<DbStats> {
        Ok(strata_view::stats::collect(
            self.follower.snapshot()?.as_ref(),
            self.follower.step_size,
            CacheStats::default(),
            self.journal_stats(),
        )?)
    }

    /// The journal's segments on disk: their bytes, and the blocks from the
    /// oldest segment's first to the head readers see.
    fn journal_stats(&self) -> strata_view::stats::JournalStats {
        let dir = self.follower.datadir.join(JOURNAL_DIR);
        let (mut first, mut bytes) = (None::<u64>, 0);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(block) = segment_first_block(&name.to_string_lossy()) else {
                continue;
            };
            first = Some(first.map_or(block, |f| f.min(block)));
            bytes += entry.metadata().map_or(0, |m| m.len());
        }
        let head = self.follower.latest.load().block();
        strata_view::stats::JournalStats {
            blocks: first.zip(head).filter(|(f, h)| f <= h),
            bytes,
        }
    }

    /// What the datadir's history holds per domain (`None` when it keeps
    /// none): a scan of redb's history table.
    pub fn history_stats(&self) -> Result<Option<strata_view::stats::HistoryStats>> {
        Ok(strata_view::stats::history_stats(
            self.follower.snapshot()?.as_ref(),
        )?)
    }

    /// The live keys and their raw bytes per domain at the block
    /// [`ReadOnlyStateDb::reader`] shows: a full scan of every tier.
    pub fn live_sizes(&self) -> Result<Vec<strata_view::stats::LiveSize>> {
        Ok(strata_view::stats::live_sizes(
            self.follower.snapshot()?.as_ref(),
        )?)
    }

    /// The snapshot readers get now (for crate-internal checks such as
    /// `verify` that read every entry of one commit).
    pub(crate) fn snapshot(&self) -> Result<Arc<Snapshot>> {
        self.follower.snapshot()
    }

    /// Blocks per step of this datadir.
    pub fn step_size(&self) -> u64 {
        self.follower.step_size
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
        *self.follower.stop.lock() = true;
        self.follower.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Follower {
    /// The published snapshot; after a failure of the follower thread, the
    /// newest commit opened on this thread, so this reader gets the error.
    fn snapshot(&self) -> Result<Arc<Snapshot>> {
        if self.follow_failed.swap(false, Ordering::AcqRel) {
            let mut followed = self.refreshing.lock();
            self.publish_newest(&mut followed, Refresh::Always)?;
        }
        Ok(self.latest.load_full())
    }

    /// Polls for new commits every `interval` and publishes each. After a
    /// failure it waits longer (up to a second) and logs each new error once.
    fn follow(&self, interval: Duration) {
        let mut wait = interval;
        let mut last_error = String::new();
        loop {
            {
                let mut stop = self.stop.lock();
                if !*stop {
                    self.wake.wait_for(&mut stop, wait);
                }
                if *stop {
                    return;
                }
            }
            match self.refresh() {
                Ok(()) => {
                    wait = interval;
                    last_error.clear();
                }
                Err(error) => {
                    let text = error.to_string();
                    if text != last_error {
                        tracing::warn!(%error, "read-only follower: cannot open the newest commit");
                        last_error = text;
                    }
                    self.follow_failed.store(true, Ordering::Release);
                    wait = (wait * 2).clamp(interval, Duration::from_secs(1));
                }
            }
        }
    }

    /// Refreshes unless the published snapshot holds every journaled block
    /// (see [`ReadOnlyStateDb::catch_up`]). The check takes no lock: many
    /// readers make it at once, and only when the journal moved on do they
    /// queue for one refresh.
    fn catch_up(&self) -> Result<()> {
        let caught_up = || {
            !self.follow_failed.load(Ordering::Acquire)
                && self
                    .mark
                    .load()
                    .as_ref()
                    .is_some_and(|mark| mark.caught_up())
        };
        if caught_up() {
            return Ok(());
        }
        let mut followed = self.refreshing.lock();
        // Another reader may have refreshed while this one waited.
        if caught_up() {
            return Ok(());
        }
        self.publish_newest(&mut followed, Refresh::IfChanged)
            .inspect_err(|_| self.follow_failed.store(true, Ordering::Release))
    }

    /// Publishes the newest commit if it differs from the published one.
    fn refresh(&self) -> Result<()> {
        let mut followed = self.refreshing.lock();
        self.publish_newest(&mut followed, Refresh::IfChanged)
    }

    /// Opens the newest commit and publishes it (with `IfChanged`, only
    /// when it differs from the published one), then the journal's mark
    /// for it; after a failure the mark is cleared, as the journal may have
    /// been read past the published snapshot.
    fn publish_newest(&self, followed: &mut Followed, refresh: Refresh) -> Result<()> {
        let current = self.latest.load_full();
        let result = newest(
            &self.db,
            &self.datadir,
            &self.files_dir,
            &self.fs,
            &current.files,
            followed,
            refresh,
        );
        match result {
            Ok(fresh) => {
                if let Some(fresh) = fresh {
                    self.latest.store(Arc::new(fresh));
                }
                // After the snapshot: a mark never promises more than it holds.
                self.mark.store(followed.mark().map(Arc::new));
                Ok(())
            }
            Err(error) => {
                self.mark.store(None);
                Err(error)
            }
        }
    }
}

/// Opens `db_path` read-only in redb's `SingleWriter` mode: beside a writer
/// that shares the datadir, and on a datadir no process holds (whatever mode
/// wrote it). Nothing is written: the file is opened `O_RDONLY` and only
/// shared locks are taken, so a read-only directory or mount works.
fn open_database(datadir: &Path, db_path: &Path, options: &Options) -> Result<ReadDb> {
    match std::fs::metadata(db_path) {
        Ok(meta) if meta.len() == 0 => {
            return Err(Error::DatabaseEmpty {
                path: db_path.to_path_buf(),
            });
        }
        Ok(meta) if meta.is_file() => {}
        _ => {
            return Err(Error::NotADatadir {
                path: datadir.to_path_buf(),
                what: "no state.redb: not a strata datadir",
            });
        }
    }
    let mut builder = redb::Builder::new();
    builder.set_cache_size(options.db_cache_bytes);
    builder.set_concurrency_mode(redb::ConcurrencyMode::SingleWriter);
    let opened = guarded("(database header)", || Ok(builder.open_read_only(db_path)))?;
    match opened {
        Ok(db) => return Ok(ReadDb::Shared(db)),
        // The last writer was killed: run redb's recovery on a copy-on-write
        // view of the file, in memory; the file itself is never written.
        Err(redb::DatabaseError::RepairAborted) => {}
        // Either a writer that does not share the file, or another reader
        // holding a recovered view (below): its shared locks on every byte
        // read, to redb's read-only open, as a writer of another kind. The
        // recovered view tells them apart — it takes only shared locks, so
        // it opens beside such a reader and fails beside any writer.
        Err(
            redb::DatabaseError::DatabaseAlreadyOpen | redb::DatabaseError::LockProtocolMismatch,
        ) => {}
        Err(other) => return Err(open_error(db_path, other)),
    }
    let backend = CopyOnWriteBackend::open(db_path).map_err(|source| Error::Datadir {
        path: db_path.to_path_buf(),
        what: "open the database read-only",
        source,
    })?;
    let mut builder = redb::Builder::new();
    builder.set_cache_size(options.db_cache_bytes);
    let recovered = guarded("(database recovery)", || {
        Ok(builder.create_with_backend(backend))
    })?;
    recovered
        .map(ReadDb::Recovered)
        .map_err(|e| open_error(db_path, e))
}

/// What redb holds that the journal must agree with, read once without
/// following the journal (for `verify`, whose journal check must run even
/// when the journal is too damaged for [`ReadOnlyStateDb::open`]).
pub(crate) struct JournalContext {
    /// The datadir's identity.
    pub(crate) id: Option<strata_journal::DatadirId>,
    /// redb's flushed head.
    pub(crate) head: Option<Head>,
    /// The roots redb keeps for the flushed blocks of the unwind window.
    pub(crate) roots: BTreeMap<u64, B256>,
}

/// Reads [`JournalContext`] of `datadir` read-only (the handle is dropped
/// before this returns).
pub(crate) fn journal_context(datadir: &Path, options: &Options) -> Result<JournalContext> {
    let db = open_database(datadir, &datadir.join(DB_FILE), options)?;
    let (txn, meta) = begin(&db, datadir)?;
    JournalContext::read(&txn, &meta)
}

impl JournalContext {
    /// What `txn`, whose metadata is `meta`, holds for the journal check
    /// (also a writer's own transaction, for `StateDb::verify`).
    pub(crate) fn read(txn: &ReadTransaction, meta: &Meta) -> Result<JournalContext> {
        let roots = guarded(ROOTS.name(), || {
            let table = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
            let mut roots = BTreeMap::new();
            for entry in table.iter().map_err(db_err("read roots"))? {
                let (block, root) = entry.map_err(db_err("read roots"))?;
                if root.value().len() == 32 {
                    roots.insert(block.value(), B256::from_slice(root.value()));
                }
            }
            Ok(roots)
        })?;
        Ok(JournalContext {
            id: meta.datadir_id,
            head: meta.head,
            roots,
        })
    }
}

/// The error of a read-only open of `db_path`.
fn open_error(db_path: &Path, error: redb::DatabaseError) -> Error {
    match error {
        redb::DatabaseError::DatabaseAlreadyOpen | redb::DatabaseError::LockProtocolMismatch => {
            Error::NotShared {
                path: db_path.to_path_buf(),
            }
        }
        other => Error::DatabaseUnreadable {
            path: db_path.to_path_buf(),
            source: other.into(),
        },
    }
}

/// The redb handle of a read-only open.
enum ReadDb {
    /// Opened read-only in `SingleWriter` mode (beside a sharing writer, or
    /// no writer at all).
    Shared(ReadOnlyDatabase),
    /// Recovered in memory after its writer was killed (see
    /// [`CopyOnWriteBackend`]); shows the last commit that writer made durable.
    Recovered(redb::Database),
}

impl ReadDb {
    fn begin_read(&self) -> std::result::Result<ReadTransaction, redb::TransactionError> {
        match self {
            ReadDb::Shared(db) => db.begin_read(),
            ReadDb::Recovered(db) => db.begin_read(),
        }
    }
}

/// A read transaction on the newest commit and the metadata it holds.
fn begin(db: &ReadDb, datadir: &Path) -> Result<(ReadTransaction, Meta)> {
    let txn = guarded("(database header)", || {
        db.begin_read().map_err(db_err("begin read"))
    })?;
    let no_meta = || Error::NotADatadir {
        path: datadir.to_path_buf(),
        what: "the database holds no strata metadata",
    };
    let meta = guarded(META.name(), || {
        let table = txn.open_table(META).map_err(|e| match e {
            redb::TableError::TableDoesNotExist(_) => no_meta(),
            other => db_err("open meta")(other),
        })?;
        match meta::load(&table)? {
            None => Err(no_meta()),
            Some((found, _)) if found != FORMAT_VERSION => Err(Error::UnsupportedFormat {
                path: datadir.join(DB_FILE),
                found,
                supported: FORMAT_VERSION,
            }),
            Some((_, meta)) => Ok(meta),
        }
    })?;
    Ok((txn, meta))
}

/// A snapshot of the newest commit: redb's newest transaction, the files
/// its manifest lists (reusing those `previous` holds) and the blocks the
/// journal holds after redb's head. `None` when nothing changed since
/// `followed` was last brought up to date (unless [`Refresh::Always`]).
///
/// Starts over from a newer transaction when the writer got ahead in
/// between: a file pruned before its open (the manifest was already
/// superseded), or journal segments released or cut before they were read.
/// After reading the journal the unwind count is read again, so blocks of
/// an unwound history are never shown on top of the state before it.
fn newest(
    db: &ReadDb,
    datadir: &Path,
    files_dir: &Path,
    fs: &Arc<dyn FileSystem>,
    previous: &Arc<FileSet>,
    followed: &mut Followed,
    refresh: Refresh,
) -> Result<Option<Snapshot>> {
    let mut last_error = None;
    for _ in 0..REFRESH_ATTEMPTS {
        let (txn, meta) = begin(db, datadir)?;
        let before = (followed.base(), followed.head());
        let files = if previous.manifest == meta.manifest {
            previous.clone()
        } else {
            match FileSet::open_reusing(fs, files_dir, meta.manifest.clone(), previous) {
                Ok(files) => Arc::new(files),
                Err(ReadError::File(FileError::Io { file, op, source }))
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    last_error = Some(Error::File(FileError::Io { file, op, source }));
                    continue;
                }
                Err(other) => return Err(other.into()),
            }
        };
        // A run of lean records' branches are rebuilt over redb's state as
        // `meta` saw it: a transaction that shows another flushed head is
        // too new.
        let (metrics, parallel_threshold) = followed.rebuild_settings();
        let mut restore = |memory: &MemoryTier,
                           before: Option<Head>,
                           run: &mut LeanRun,
                           last: &mut BlockRecord| {
            let (txn, now) = begin(db, datadir)?;
            if now.head != meta.head || now.unwinds != meta.unwinds {
                return Ok(false);
            }
            let snapshot = Snapshot::from_txn(txn, before, files.clone(), memory.clone())?;
            crate::branches::restore_branches(
                run,
                last,
                Arc::new(snapshot),
                &metrics,
                parallel_threshold,
            )?;
            Ok(true)
        };
        match followed.advance(&meta, &mut restore)? {
            Advance::Continues => {}
            Advance::Moved => {
                followed.reset();
                last_error = Some(Error::FollowerOutrun {
                    attempts: REFRESH_ATTEMPTS,
                });
                continue;
            }
            Advance::Gap { expected, found } => {
                followed.reset();
                last_error = Some(Error::Journal(JournalError::Gap {
                    path: datadir.join(JOURNAL_DIR),
                    expected,
                    found,
                }));
                continue;
            }
        }
        if begin(db, datadir)?.1.unwinds != meta.unwinds {
            followed.reset();
            continue;
        }
        let unchanged =
            before == (followed.base(), followed.head()) && previous.manifest == meta.manifest;
        if unchanged && refresh == Refresh::IfChanged {
            return Ok(None);
        }
        let head = followed.head();
        let memory = followed.memory().clone();
        return Ok(Snapshot::from_txn(txn, head, files, memory).map(Some)?);
    }
    Err(last_error.unwrap_or(Error::FollowerOutrun {
        attempts: REFRESH_ATTEMPTS,
    }))
}
