//! The one owner of "what makes a block durable".
//!
//! A block is durable once its record is in the journal (one sequential,
//! checksummed append, fsynced per [`crate::Durability`]); it is visible
//! once the snapshot that holds it in the memory tier is published. The
//! flush moves batches of journaled blocks into redb in the background:
//! keys sorted, repeated writes collapsed to the newest, one write
//! transaction per batch, after which the memory tier forgets them and the
//! journal keeps them only as unwind data. Genesis, unwind and maintenance
//! publish through [`Ledger::publish`] too, so every snapshot swap is here.

use std::collections::{BTreeMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::{B256, keccak256};
use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};
use redb::{ReadableDatabase, ReadableTable};

use crate::branch_stream::BranchStream;
use crate::branches::{RecoveryRestore, apply_in_runs};
use crate::error::{Error, Result, db_err};
use crate::inner::{CommitGuard, Inner};
use crate::options::Options;
use crate::pause::{self, PausePoint};
use crate::worker::{Signal, Worker};
use strata_db::tables::{META, ROOTS};
use strata_db::value;
use strata_db::{DomainTables, HeadTables};
use strata_files::FileSystem;
use strata_journal::{
    self as journal, BlockRecord, DatadirId, Journal, JournalRecord, Link, Previous, Tip,
};
use strata_types::Head;
use strata_types::domain::Domain;
use strata_types::keys::ROOT_RECORD_KEY;
use strata_view::fileset::FileSet;
use strata_view::history::{BlockUndo, History};
use strata_view::memory::MemoryTier;
use strata_view::snapshot::Snapshot;

use strata_types::datadir::JOURNAL_DIR;

/// What a publication changes in the current snapshot.
pub(crate) enum Change<'a> {
    /// A block committed to the memory tier (same redb view and files),
    /// with the memory tier that holds it and its undo data (none for
    /// block 0).
    Block(&'a BlockRecord, MemoryTier, Option<Arc<BlockUndo>>),
    /// Blocks written to redb by a flush: a new redb view, and the memory
    /// tier without them (and the file set with their history files, in a
    /// datadir that keeps history).
    Flushed(&'a [Arc<BlockRecord>], Option<FileSet>),
    /// A new file set (maintenance): a new redb view, same memory tier.
    Files(FileSet),
    /// Part of a flush written to redb: a new redb view, same memory tier
    /// (which still shadows every key the flush has written so far), so that
    /// readers let go of the pages the flush replaced.
    DbView,
    /// redb rewritten under a new head with nothing in memory (genesis,
    /// unwind), with a new file set when it changed (an unwind's history
    /// files).
    Reset(Head, Option<FileSet>),
    /// A whole state imported into files under a new head (nothing in memory).
    Imported(Head, FileSet),
}

/// Counters of the flush and of the block loop's waits for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushStats {
    /// Flushes run.
    pub flushes: u64,
    /// Blocks flushed.
    pub blocks: u64,
    /// Keys written to redb after collapsing repeated writes.
    pub keys: u64,
    /// Time spent in flushes.
    pub time: Duration,
    /// Commits that waited for a flush because the memory tier was over budget.
    pub waits: u64,
    /// Total time those commits waited.
    pub wait_time: Duration,
}

/// How long one commit spent in the ledger.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CommitTimes {
    /// Encoding and appending (and syncing) the journal record.
    pub(crate) journal: Duration,
    /// Bytes appended to the journal.
    pub(crate) journal_bytes: u64,
    /// Waiting for a flush (memory tier over budget).
    pub(crate) flush_wait: Duration,
}

/// The journal, the blocks not yet flushed and the flush's bookkeeping.
pub(crate) struct Ledger {
    journal: Mutex<Journal>,
    /// Each block's branch records for readers in other processes, when
    /// the store is shared and publishes them (`None` after a failure).
    branch_stream: Mutex<Option<BranchStream>>,
    /// Committed blocks not yet in redb, oldest first (the memory tier's
    /// contents, as records).
    pending: Mutex<VecDeque<Arc<BlockRecord>>>,
    /// Held by one flush (or unwind) at a time. After `maintenance_lock`,
    /// before `commit_lock` in the lock order.
    flush_lock: Mutex<()>,
    /// Wakes the flusher; tells waiting commits a flush finished.
    signal: Signal,
    encode_buffer: Mutex<Vec<u8>>,
    flushes: AtomicU64,
    flushed_blocks: AtomicU64,
    flushed_keys: AtomicU64,
    flush_nanos: AtomicU64,
    waits: AtomicU64,
    wait_nanos: AtomicU64,
}

/// The journal opened at startup and the blocks it holds after the
/// flushed head, decoded and checked.
pub(crate) struct Recovery {
    pub(crate) ledger: Ledger,
    pub(crate) memory: MemoryTier,
    pub(crate) head: Option<Head>,
    /// The undo data of the journaled blocks of the unwind window.
    pub(crate) history: History,
    /// Whether a replayed record carried its own commitment records (an
    /// older, whole record): those are checked against the state after
    /// the open ([`crate::replay_check`]); lean records' were rebuilt and
    /// their roots checked already.
    pub(crate) replayed_whole: bool,
}

/// Blocks whose undo data the writer keeps in memory: the unwind window
/// and the block before it.
pub(crate) fn history_blocks(options: &Options) -> usize {
    usize::try_from(options.unwind_depth)
        .unwrap_or(usize::MAX)
        .saturating_add(1)
}

impl Ledger {
    /// Opens the journal in `datadir`, replaying the blocks after `flushed`
    /// (redb's head) into a memory tier. The journal is scanned first
    /// without changing a byte; any problem (damage, a foreign segment, a
    /// broken chain of roots, a journal that ends before redb's head) is
    /// refused before the scan's verdict is applied (a torn tail kept aside
    /// and cut, segments of the first format converted). Each record is
    /// then checked: that it decodes, that blocks follow each other, that
    /// its root record carries its block and root, and that it continues
    /// the root of the block before. Each run of lean records gets its
    /// branch records back from `restore_branches` before its last record
    /// is applied ([`apply_in_runs`]).
    ///
    /// With `void_after` (an unwind to that block committed in redb before
    /// its journal cut), the records after it are the unwound blocks: the
    /// cut is finished here instead of replaying them, and the caller
    /// clears the mark.
    pub(crate) fn open(
        fs: Arc<dyn FileSystem>,
        datadir: &Path,
        id: DatadirId,
        flushed: Option<Head>,
        void_after: Option<u64>,
        options: &Options,
        restore_branches: &mut RecoveryRestore<'_>,
    ) -> Result<Recovery> {
        let segment_bytes = options.journal_segment_bytes;
        let keep = history_blocks(options);
        let dir = datadir.join(JOURNAL_DIR);
        let tip = flushed.map(|h| Tip {
            block: h.block,
            root: h.root,
        });
        let expect = journal::Expect {
            id: Some(id),
            flushed: tip,
        };
        let mut verdict = journal::scan(&fs, &dir, expect)?;
        if !verdict.problems.is_empty() {
            return Err(verdict.problems.remove(0).into());
        }
        if let Some(problem) = ends_before_head(&verdict, flushed, &dir) {
            return Err(problem);
        }
        // Every record is decoded and checked before anything is changed.
        let mut replayed = Vec::with_capacity(verdict.records().len());
        let mut head = flushed;
        for JournalRecord {
            block,
            link,
            payload,
        } in verdict
            .records()
            .iter()
            .filter(|r| void_after.is_none_or(|target| r.block <= target))
        {
            let record = BlockRecord::decode(payload).map_err(|e| Error::CorruptJournalRecord {
                block: *block,
                what: e.to_string(),
            })?;
            check_recovered(&record, *block, *link, head)?;
            head = Some(Head {
                block: *block,
                root: record.root,
            });
            replayed.push(record);
        }
        let (mut journal, _recovered) =
            Journal::open_scanned(fs.clone(), dir, id, tip, verdict, segment_bytes)?;
        if let Some(target) = void_after
            && journal.blocks().is_some_and(|(_, last)| last > target)
        {
            tracing::info!(
                target,
                "journal: finishing the cut of an unwind a crash interrupted"
            );
            journal.truncate_after(target)?;
        }
        // Damage there is unwind's to report; readers at those blocks are
        // told they are not retained.
        let mut history = flushed_history(&journal, flushed, keep).unwrap_or_else(|error| {
            tracing::warn!(%error, "journal: no reads at the blocks flushed before this open");
            History::default()
        });
        let replaying = Instant::now();
        let mut memory = MemoryTier::default();
        let mut pending = VecDeque::new();
        let replayed_whole = replayed.iter().any(|r| !r.branches_omitted);
        // With history, each block gets its own commitment records (its
        // history needs them), not only a run's last block.
        let per_block = options.history.unwrap_or_default().is_on();
        let keep = keep.max(replayed.len() + 1);
        let complete = apply_in_runs(
            &mut memory,
            flushed,
            per_block,
            replayed,
            |memory, before, run, last| restore_branches(memory, before, run, last).map(|()| true),
            |memory, record| {
                memory.apply(&record);
                if let Some(undo) = BlockUndo::from_record(&record, |i| &record.writes[i].previous)
                {
                    history = history.pushed(Arc::new(undo), keep);
                }
                pending.push_back(Arc::new(record));
            },
        )?;
        debug_assert!(complete, "the writer's rebuild never stops short");
        if !pending.is_empty() {
            tracing::info!(
                blocks = pending.len(),
                head = head.map(|h| h.block),
                ms = replaying.elapsed().as_secs_f64() * 1e3,
                "journal: replayed the blocks after the flushed one (commitment records rebuilt)"
            );
        }
        let branch_stream = if options.share_with_readers && options.publish_branches {
            match BranchStream::open_fresh(fs, datadir, id, head, segment_bytes) {
                Ok(stream) => Some(stream),
                Err(error) => {
                    tracing::warn!(%error, "journal: not publishing branch records (readers in other processes rebuild them)");
                    None
                }
            }
        } else {
            None
        };
        let ledger = Ledger {
            journal: Mutex::new(journal),
            branch_stream: Mutex::new(branch_stream),
            pending: Mutex::new(pending),
            flush_lock: Mutex::new(()),
            signal: Signal::default(),
            encode_buffer: Mutex::new(Vec::new()),
            flushes: AtomicU64::new(0),
            flushed_blocks: AtomicU64::new(0),
            flushed_keys: AtomicU64::new(0),
            flush_nanos: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            wait_nanos: AtomicU64::new(0),
        };
        Ok(Recovery {
            ledger,
            memory,
            head,
            history,
            replayed_whole,
        })
    }

    /// Makes `record` durable (lean: its plain writes with `previous`, the
    /// previous value of each, and its root record; the branch records are
    /// rebuilt from them on replay) and then runs `write_through` (the
    /// branch cache) while another thread adds the whole record to a copy
    /// of the memory tier; then publishes the block under `commit_lock`. The
    /// append is fsynced when `durable`. A failure or panic after the
    /// append poisons the store, as an I/O error does (a panic is caught
    /// and reported as [`Error::Panicked`]).
    pub(crate) fn commit(
        &self,
        inner: &Inner,
        record: BlockRecord,
        previous: Vec<Previous>,
        durable: bool,
        write_through: impl FnOnce() + Send,
    ) -> Result<CommitTimes> {
        let mut times = CommitTimes::default();
        let base = inner.current.load_full();
        // Two halves of about equal length: the journal append (small since
        // records are lean) and the branch cache's write-through on this
        // thread, the memory tier's update and the undo data on another.
        // Not on the rayon pool: the caller's pool may be busy with the
        // next block's work (an importer recovering its senders), and a
        // commit would wait behind all of it.
        let (journaled, memory) = beside(
            || -> Result<((Duration, u64), std::thread::Result<()>)> {
                let started = Instant::now();
                let mut buffer = self.encode_buffer.lock();
                let parent = base.head.map_or(B256::ZERO, |h| h.root);
                // Before the journal: a follower that reads the block
                // there finds its branch records already here.
                self.publish_branches(&record, parent);
                record.encode_lean(&previous, &mut buffer);
                let link = Link {
                    parent,
                    root: record.root,
                };
                let bytes = self
                    .journal
                    .lock()
                    .append(record.block, link, &buffer, durable)?;
                drop(buffer);
                let journal = (started.elapsed(), bytes);
                Ok((journal, catch_unwind(AssertUnwindSafe(write_through))))
            },
            || {
                catch_unwind(AssertUnwindSafe(|| {
                    let mut memory = base.memory.clone();
                    memory.apply(&record);
                    let undo = BlockUndo::from_record(&record, |i| &previous[i]).map(Arc::new);
                    (memory, undo)
                }))
            },
        );
        let (journal, written_through) = journaled?;
        (times.journal, times.journal_bytes) = journal;
        let memory = written_through.and(memory);
        let record = Arc::new(record);
        let published = memory.and_then(|(memory, undo)| {
            catch_unwind(AssertUnwindSafe(|| -> Result<()> {
                let commit = inner.lock_commit();
                self.pending.lock().push_back(record.clone());
                // A flush or maintenance published meanwhile: apply again
                // on what readers see now.
                let memory = if Arc::ptr_eq(&inner.current.load_full(), &base) {
                    memory
                } else {
                    let mut memory = inner.current.load().memory.clone();
                    memory.apply(&record);
                    memory
                };
                self.publish(inner, &commit, Change::Block(&record, memory, undo))
            }))
        });
        match published {
            Ok(result) => result?,
            Err(panic) => {
                return Err(Error::Panicked {
                    what: "publishing a block already in the journal",
                    message: strata_db::panic_message(&panic),
                });
            }
        }
        times.flush_wait = self.make_room(inner)?;
        Ok(times)
    }

    /// Publishes a new snapshot: the one place the current snapshot changes.
    pub(crate) fn publish(
        &self,
        inner: &Inner,
        _commit: &CommitGuard<'_>,
        change: Change<'_>,
    ) -> Result<()> {
        let current = inner.current.load_full();
        let history = match &change {
            // Every unflushed block keeps its undo data (a flush writes it
            // into the history, a reader at an older block undoes it).
            Change::Block(_, _, Some(undo)) => current.history.pushed(
                undo.clone(),
                history_blocks(&inner.options).max(self.pending.lock().len() + 1),
            ),
            // Genesis (nothing kept) or an unwind: the blocks up to the head stay.
            Change::Reset(head, _) | Change::Imported(head, _) => {
                current.history.through(head.block)
            }
            _ => current.history.clone(),
        };
        let mut next = match change {
            Change::Block(record, memory, _) => {
                let head = Head {
                    block: record.block,
                    root: record.root,
                };
                current.with_memory(Some(head), memory)
            }
            Change::Flushed(batch, files) => {
                let mut memory = current.memory.clone();
                memory.remove_flushed(batch.iter().map(Arc::as_ref));
                let files = files.map_or_else(|| current.files.clone(), Arc::new);
                Snapshot::open(&inner.db, current.head, files, memory)?
            }
            Change::Files(files) => Snapshot::open(
                &inner.db,
                current.head,
                Arc::new(files),
                current.memory.clone(),
            )?,
            Change::DbView => Snapshot::open(
                &inner.db,
                current.head,
                current.files.clone(),
                current.memory.clone(),
            )?,
            Change::Reset(head, files) => Snapshot::open(
                &inner.db,
                Some(head),
                files.map_or_else(|| current.files.clone(), Arc::new),
                MemoryTier::default(),
            )?,
            Change::Imported(head, files) => Snapshot::open(
                &inner.db,
                Some(head),
                Arc::new(files),
                MemoryTier::default(),
            )?,
        };
        next.history = history;
        inner.current.store(Arc::new(next));
        Ok(())
    }

    /// Back-pressure: asks for a flush once the memory tier holds a batch,
    /// and waits while it is over its budget. Without a background flusher
    /// the flush runs here. Returns the time waited.
    fn make_room(&self, inner: &Inner) -> Result<Duration> {
        let bytes = inner.current.load().memory.bytes();
        let options = &inner.options;
        if bytes < options.flush_batch_bytes {
            return Ok(Duration::ZERO);
        }
        if !options.background_maintenance {
            if bytes < options.memory_budget_bytes {
                return Ok(Duration::ZERO);
            }
            let started = Instant::now();
            self.flush(inner)?;
            return Ok(self.count_wait(started));
        }
        self.signal.request();
        if bytes < options.memory_budget_bytes {
            return Ok(Duration::ZERO);
        }
        let started = Instant::now();
        while inner.current.load().memory.bytes() >= options.memory_budget_bytes {
            inner.check_poisoned()?;
            self.signal.request();
            self.signal.wait_finished(Duration::from_millis(100));
        }
        Ok(self.count_wait(started))
    }

    fn count_wait(&self, started: Instant) -> Duration {
        let waited = started.elapsed();
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.wait_nanos
            .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
        waited
    }

    /// Wakes the background flusher.
    pub(crate) fn request_flush(&self) {
        self.signal.request();
    }

    /// Flushes every block committed so far into redb (transactions of
    /// `flush_txn_keys` keys, the head in the last), then drops those
    /// blocks from the memory tier and releases their journal segments.
    /// Returns the blocks flushed.
    pub(crate) fn flush(&self, inner: &Inner) -> Result<usize> {
        let serial = self.flush_lock.lock();
        self.flush_locked(inner, &serial)
    }

    fn flush_locked(&self, inner: &Inner, _serial: &MutexGuard<'_, ()>) -> Result<usize> {
        let batch: Vec<Arc<BlockRecord>> = self.pending.lock().iter().cloned().collect();
        let Some(last) = batch.last() else {
            return Ok(0);
        };
        let started = Instant::now();
        let head = Head {
            block: last.block,
            root: last.root,
        };
        pause::reach(&inner.options, PausePoint::FlushBatch);
        // redb must never hold a block the journal could lose.
        self.journal.lock().sync()?;
        let (keys, history) = write_batch(inner, &batch, head, || {
            pause::reach(&inner.options, PausePoint::FlushPart);
            let commit = inner.lock_commit();
            self.publish(inner, &commit, Change::DbView)
        })?;
        pause::reach(&inner.options, PausePoint::FlushCommitted);
        let (files, retired) = history.map(|c| (c.files, c.retired)).unzip();
        {
            let commit = inner.lock_commit();
            self.publish(inner, &commit, Change::Flushed(&batch, files))?;
        }
        if let Some(retired) = retired {
            // Readers holding the old set keep their mappings alive.
            crate::state_history::remove_files(inner, &retired)?;
        }
        self.pending.lock().drain(..batch.len());
        let newest = inner.current.load().block().unwrap_or(head.block);
        let release = head
            .block
            .min(newest.saturating_sub(inner.options.unwind_depth));
        self.journal.lock().release_through(release)?;
        if let Some(stream) = self.branch_stream.lock().as_mut()
            && let Err(error) = stream.release_through(release)
        {
            tracing::warn!(%error, "journal: could not release branch records of flushed blocks");
        }
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.flushed_blocks
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        self.flushed_keys.fetch_add(keys, Ordering::Relaxed);
        self.flush_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.signal.finished();
        inner.store_metrics.record_flush(started.elapsed());
        tracing::info!(
            target: "strata::flush",
            blocks = batch.len(),
            keys,
            through = head.block,
            ms = started.elapsed().as_millis() as u64,
            "flushed"
        );
        Ok(batch.len())
    }

    /// Appends `record`'s branch records to the stream, if one runs; a
    /// failure ends the stream (followers rebuild), never the commit.
    fn publish_branches(&self, record: &BlockRecord, parent: B256) {
        let mut stream = self.branch_stream.lock();
        if let Some(open) = stream.as_mut()
            && let Err(error) = open.append(record, parent)
        {
            tracing::warn!(
                %error,
                block = record.block,
                "journal: stopped publishing branch records (readers in other processes rebuild them)"
            );
            *stream = None;
        }
    }

    /// Flushes everything and holds the flush lock for `then` (unwind).
    pub(crate) fn flushed_and_locked<T>(
        &self,
        inner: &Inner,
        then: impl FnOnce(&mut Journal) -> Result<T>,
    ) -> Result<T> {
        let serial = self.flush_lock.lock();
        self.flush_locked(inner, &serial)?;
        let mut journal = self.journal.lock();
        then(&mut journal)
    }

    /// Runs `then` on the journal's folder while no append, flush or
    /// unwind changes the journal or redb's head: `StateDb::verify` scans
    /// the segments as a writer's open would, and must not see an append
    /// half-written or a segment released under it. Takes `flush_lock`,
    /// then the journal (commits wait for their append meanwhile).
    pub(crate) fn with_journal_still<T>(&self, then: impl FnOnce(&Path) -> T) -> T {
        let _serial = self.flush_lock.lock();
        let journal = self.journal.lock();
        then(journal.dir())
    }

    /// Holds off flushes while the caller writes redb and publishes
    /// (maintenance: its redb view and file set must change together).
    pub(crate) fn hold_flushes(&self) -> MutexGuard<'_, ()> {
        self.flush_lock.lock()
    }

    /// The flush's counters.
    pub(crate) fn stats(&self) -> FlushStats {
        FlushStats {
            flushes: self.flushes.load(Ordering::Relaxed),
            blocks: self.flushed_blocks.load(Ordering::Relaxed),
            keys: self.flushed_keys.load(Ordering::Relaxed),
            time: Duration::from_nanos(self.flush_nanos.load(Ordering::Relaxed)),
            waits: self.waits.load(Ordering::Relaxed),
            wait_time: Duration::from_nanos(self.wait_nanos.load(Ordering::Relaxed)),
        }
    }

    /// The blocks the journal holds (oldest, newest) and its bytes.
    pub(crate) fn journal_extent(&self) -> (Option<(u64, u64)>, u64) {
        let journal = self.journal.lock();
        (journal.blocks(), journal.bytes())
    }

    /// The first block whose unwind data the journal holds.
    pub(crate) fn first_journaled(&self) -> Option<u64> {
        self.journal.lock().blocks().map(|(first, _)| first)
    }
}

/// When the journal holds blocks but its newest is before redb's head:
/// the error that refuses the open (B2: never start the journal anew).
pub(crate) fn ends_before_head(
    verdict: &journal::Scan,
    flushed: Option<Head>,
    dir: &Path,
) -> Option<Error> {
    let (flushed, (_, last)) = (flushed?, verdict.blocks()?);
    (last < flushed.block).then(|| Error::JournalBehindHead {
        dir: dir.to_path_buf(),
        last,
        head: flushed.block,
    })
}

/// Checks a replayed record against its frame (block and roots) and the
/// block before it (`previous`: its block and root, none before block 0).
pub(crate) fn check_recovered(
    record: &BlockRecord,
    block: u64,
    link: Link,
    previous: Option<Head>,
) -> Result<()> {
    let corrupt = |what: String| Error::CorruptJournalRecord { block, what };
    if record.block != block {
        return Err(corrupt(format!(
            "the record names block {}, its frame block {block}",
            record.block
        )));
    }
    let expected = previous.map_or(0, |h| h.block + 1);
    if block != expected {
        return Err(corrupt(format!("expected block {expected} next")));
    }
    if record.root != link.root {
        return Err(corrupt(format!(
            "the record's root {} is not its frame's {}",
            record.root, link.root
        )));
    }
    let parent = previous.map_or(B256::ZERO, |h| h.root);
    if link.parent != parent {
        return Err(corrupt(format!(
            "it follows root {}, but block {} has root {parent}: the record belongs to another state",
            link.parent,
            block.saturating_sub(1)
        )));
    }
    let root_record = record
        .writes
        .iter()
        .find(|w| w.domain == Domain::Commitment && w.key.as_ref() == ROOT_RECORD_KEY);
    let want = Head {
        block,
        root: record.root,
    }
    .encode();
    match root_record.and_then(|w| w.value.as_ref()) {
        Some(value) if value.as_ref() == want.as_slice() => Ok(()),
        Some(_) => Err(corrupt(
            "its root record does not carry its block and root".into(),
        )),
        None => Err(corrupt("it has no root record".into())),
    }
}

/// The undo data of the journaled blocks up to `flushed` (redb's head), at
/// most the newest `keep`: what a reader at a recent block needs of the
/// blocks flushed before this open. Read back from the segments.
fn flushed_history(journal: &Journal, flushed: Option<Head>, keep: usize) -> Result<History> {
    let (Some(flushed), Some((first, _))) = (flushed, journal.blocks()) else {
        return Ok(History::default());
    };
    let keep_from = flushed
        .block
        .saturating_sub(u64::try_from(keep).unwrap_or(u64::MAX));
    let mut history = History::default();
    for found in journal.read_blocks(first.max(keep_from), flushed.block)? {
        let record =
            BlockRecord::decode(&found.payload).map_err(|e| Error::CorruptJournalRecord {
                block: found.block,
                what: e.to_string(),
            })?;
        if let Some(undo) = BlockUndo::from_record(&record, |i| &record.writes[i].previous) {
            history = history.pushed(Arc::new(undo), keep);
        }
    }
    Ok(history)
}

/// The newest write of each key across `batch`, per domain, in key order,
/// with the block that made it.
type Collapsed = [BTreeMap<Bytes, (u64, Option<Bytes>)>; 4];

fn collapse(batch: &[Arc<BlockRecord>]) -> Collapsed {
    let mut out: Collapsed = Default::default();
    for record in batch {
        for write in &record.writes {
            out[write.domain.index()]
                .insert(write.key.clone(), (record.block, write.value.clone()));
        }
    }
    out
}

/// Writes `batch` to redb: the newest value of every key (tagged with its
/// block's step). The plain domains go in durable transactions of
/// `flush_txn_keys` keys (see [`crate::Options`]), calling `between` after
/// each; the last transaction holds every commitment record of the batch,
/// code by hash, roots, block hashes and the head. Until that last commit
/// redb's head stays where it was and so do its commitment records: every
/// plain key written before belongs to a journaled block after the head,
/// so a crash in between replays those blocks over the same keys and a
/// reader (this process's memory tier, or a follower that reads the journal
/// after its redb view) still sees them shadowed, and the branch records a
/// replay rebuilds from lean journal records are walked over redb's
/// records of one block, its head ([`crate::branches`]). In a datadir that
/// keeps history, the batch's history files are written first and the last
/// transaction lists them (and leaves out those a retention of N blocks
/// no longer needs). Returns the keys written, and with history the file
/// set to publish and the retired files to delete.
fn write_batch(
    inner: &Inner,
    batch: &[Arc<BlockRecord>],
    head: Head,
    mut between: impl FnMut() -> Result<()>,
) -> Result<(u64, Option<crate::state_history::HistoryChange>)> {
    let retention = inner.options.history.unwrap_or_default();
    let history = if retention.is_on() {
        let rows =
            crate::state_history::rows_of(inner, batch, |block| journal_record(inner, block))?;
        Some(crate::state_history::write_files(
            inner,
            rows,
            batch[0].block,
            head.block,
        )?)
    } else {
        None
    };
    let collapsed = collapse(batch);
    let manifest = inner.current.load().files.manifest.clone();
    let entries = |domains: &'static [Domain]| {
        let collapsed = &collapsed;
        domains.iter().flat_map(move |&domain| {
            collapsed[domain.index()]
                .iter()
                .map(move |(key, (block, value))| (domain, key, *block, value))
        })
    };
    let write = |txn: &redb::WriteTransaction,
                 entries: &mut dyn Iterator<Item = (Domain, &Bytes, u64, &Option<Bytes>)>|
     -> Result<()> {
        let mut tables = DomainTables::open(txn)?;
        for (domain, key, block, new) in entries {
            // Newer than every file, also after an unwind into collated steps.
            let step = manifest.db_step(domain, inner.step_of(block));
            tables
                .of(domain)
                .insert(key.as_ref(), value::encode(step, new.as_deref()).as_slice())
                .map_err(db_err("write value"))?;
        }
        Ok(())
    };
    const PLAIN: &[Domain] = &[Domain::Account, Domain::Storage, Domain::Code];
    let plain: usize = PLAIN.iter().map(|d| collapsed[d.index()].len()).sum();
    let mut plain_entries = entries(PLAIN);
    let mut left = plain;
    while left > 0 {
        let take = left.min(inner.options.flush_txn_keys);
        left -= take;
        let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
        write(&txn, &mut plain_entries.by_ref().take(take))?;
        txn.commit().map_err(db_err("commit flush part"))?;
        between()?;
    }
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    write(&txn, &mut entries(&[Domain::Commitment]))?;
    write_block_tables(&txn, inner, batch, head)?;
    let history = match history {
        Some(added) => {
            let before = inner.current.load();
            let change =
                crate::state_history::after_flush(&before.files, added, retention, head.block);
            let mut meta = txn.open_table(META).map_err(db_err("open meta"))?;
            strata_db::meta::write_manifest(&mut meta, &change.files.manifest)?;
            // The snapshot's redb view is the one before this flush's last
            // transaction: the first flush that writes history records where
            // reads become whole, redb's head before it.
            if before.history_kept().1.is_none() {
                let from = before.db_head().map_or(batch[0].block, |h| h.block);
                strata_db::meta::write_history_from(&mut meta, from)?;
            }
            Some(change)
        }
        None => None,
    };
    txn.commit().map_err(db_err("commit flush"))?;
    let total: usize = collapsed.iter().map(BTreeMap::len).sum();
    Ok((total as u64, history))
}

/// The last part of a flush: code by hash, roots, block hashes and the head.
fn write_block_tables(
    txn: &redb::WriteTransaction,
    inner: &Inner,
    batch: &[Arc<BlockRecord>],
    head: Head,
) -> Result<()> {
    let mut heads = HeadTables::open(txn)?;
    // Every code the batch stored, not only the newest per account: an
    // unwind may bring back code a later block of the batch replaced.
    let codes = batch.iter().flat_map(|record| {
        record
            .writes
            .iter()
            .filter(|w| w.domain == Domain::Code)
            .filter_map(|w| w.value.as_ref())
    });
    for code in codes {
        heads.put_code(keccak256(code).as_slice(), code)?;
    }
    for record in batch {
        heads.put_block(record.block, record.root, record.hash)?;
        if let Some(header) = &record.header {
            heads.put_header(record.block, header)?;
        }
    }
    heads.trim_windows(
        head.block,
        crate::state_history::kept_blocks(&inner.options),
    )?;
    Ok(heads.set_head(head)?)
}

/// Block `block`'s record read back from the journal, previous values
/// and all (`None`: the journal no longer holds it).
fn journal_record(inner: &Inner, block: u64) -> Result<Option<BlockRecord>> {
    let found = match inner.ledger.journal.lock().read_blocks(block, block) {
        Ok(found) => found,
        Err(journal::JournalError::Gap { .. }) => return Ok(None),
        Err(other) => return Err(other.into()),
    };
    found
        .into_iter()
        .next()
        .map(|found| {
            BlockRecord::decode(&found.payload).map_err(|e| Error::CorruptJournalRecord {
                block: found.block,
                what: e.to_string(),
            })
        })
        .transpose()
}

/// The root of `block` when redb (the roots of the unwind window) or the
/// memory tier holds it.
pub(crate) fn root_of(inner: &Inner, block: u64) -> Result<Option<B256>> {
    if let Some(found) = inner.current.load().memory.block(block) {
        return Ok(Some(found.root));
    }
    let txn = inner.db.begin_read().map_err(db_err("begin read"))?;
    let roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
    let root = roots.get(block).map_err(db_err("read root"))?;
    Ok(root.map(|guard| B256::from_slice(guard.value())))
}

/// The first block redb keeps a root for.
pub(crate) fn first_root(inner: &Inner) -> Result<Option<u64>> {
    let txn = inner.db.begin_read().map_err(db_err("begin read"))?;
    let roots = txn.open_table(ROOTS).map_err(db_err("open roots"))?;
    let first = roots.first().map_err(db_err("read roots"))?;
    Ok(first.map(|(block, _)| block.value()))
}

/// The background thread that flushes when the memory tier holds a batch.
pub(crate) type FlushWorker = Worker<Inner>;

/// Starts the flusher: one flush per request, a failure poisoning the store.
pub(crate) fn start_flusher(inner: Arc<Inner>) -> Result<FlushWorker> {
    Worker::start(
        "strata-flush",
        "start the flush thread",
        inner,
        |inner| &inner.ledger.signal,
        |inner| {
            if inner.check_poisoned().is_err() {
                return;
            }
            let flushed = inner.ledger.flush(inner);
            // A failure poisons the store (commits then refuse);
            // `poison_on_error` is called with no lock held.
            if let Ok(blocks) = inner.poison_on_error(flushed)
                && blocks > 0
            {
                inner.maintenance.request();
            }
        },
    )
}

/// Runs `here` on this thread and `there` on a thread of its own, and
/// returns both results. Where no thread can be started, `there` runs
/// after `here` on this thread.
fn beside<A, B>(here: impl FnOnce() -> A, there: impl FnOnce() -> B + Send) -> (A, B)
where
    B: Send,
{
    // Taken by the thread, or left here when none could start.
    let there = Mutex::new(Some(there));
    let take = || there.lock().take();
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("strata-commit".into())
            .spawn_scoped(scope, || take().map(|work| work()));
        let a = here();
        let b = match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(error) => {
                tracing::warn!(%error, "cannot start a thread: the commit's halves run one after the other");
                None
            }
        };
        match b.or_else(|| take().map(|work| work())) {
            Some(b) => (a, b),
            None => unreachable!("the second half runs on the thread or here"),
        }
    })
}
