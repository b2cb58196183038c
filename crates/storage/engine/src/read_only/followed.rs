//! The part of another process's commits that only its journal holds: the
//! blocks after redb's head, read as they are appended and kept as a
//! memory tier, the way the writer keeps them.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::branches::{FollowRestore, apply_in_runs};
use crate::error::{Error, Result};
use crate::ledger::check_recovered;
use strata_db::meta::Meta;
use strata_journal::{BlockRecord, BranchRecords, JournalRecord, JournalTail, TailMark};
use strata_telemetry::ReadMetrics;
use strata_types::Head;
use strata_types::datadir::{BRANCHES_DIR, JOURNAL_DIR};
use strata_view::memory::MemoryTier;

/// The journaled blocks a read-only handle has followed so far.
pub(super) struct Followed {
    tail: JournalTail,
    /// The writer's published branch records (`branches/`), read after
    /// the journal: a lean record whose branch records are found there is
    /// applied whole, without a rebuild.
    branch_tail: JournalTail,
    /// Branch records read from `branch_tail` for blocks not applied yet.
    published: BTreeMap<u64, JournalRecord>,
    /// How the lean records' branch records were had.
    counts: Arc<FollowCounts>,
    /// redb's head (the last flushed block) the memory tier sits on.
    flushed: Option<Head>,
    /// The writer's unwind count when these blocks were read.
    unwinds: u64,
    /// The blocks after `flushed`, oldest first.
    records: VecDeque<BlockRecord>,
    memory: MemoryTier,
    /// Untimed telemetry for the reads that rebuild lean records' branch
    /// records (they are not a client's).
    rebuild_metrics: Arc<ReadMetrics>,
    /// `Options::parallel_commitment_threshold`, for those rebuilds.
    parallel_threshold: usize,
}

/// How a follower got the branch records of the lean journal records it
/// applied, counted since it opened.
#[derive(Debug, Default)]
pub(super) struct FollowCounts {
    /// Blocks whose branch records the writer published.
    pub(super) published: AtomicU64,
    /// Blocks whose branch records were rebuilt (no published records:
    /// a writer that does not publish them, or a stream cut by a crash).
    pub(super) rebuilt: AtomicU64,
}

/// What [`Followed::advance`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Advance {
    /// The memory tier continues redb's head up to the newest journaled block.
    Continues,
    /// The writer flushed past the state a lean record's branches were to
    /// be rebuilt over: start over from a newer transaction.
    Moved,
    /// The journal does not continue redb's head (the writer released or
    /// cut segments meanwhile): start over from a newer transaction.
    Gap {
        /// The block that should have come next.
        expected: u64,
        /// The block the journal had instead.
        found: u64,
    },
}

impl Followed {
    /// Follows the journal of `datadir` (nothing read yet); lean records'
    /// branch records are taken from what the writer published, else
    /// rebuilt with `parallel_threshold`
    /// (`Options::parallel_commitment_threshold`).
    pub(super) fn new(datadir: &Path, parallel_threshold: usize) -> Followed {
        Followed {
            tail: JournalTail::new(datadir.join(JOURNAL_DIR), None),
            branch_tail: JournalTail::new(datadir.join(BRANCHES_DIR), None),
            published: BTreeMap::new(),
            counts: Arc::default(),
            flushed: None,
            unwinds: 0,
            records: VecDeque::new(),
            memory: MemoryTier::default(),
            rebuild_metrics: Arc::new(ReadMetrics::new(false)),
            parallel_threshold,
        }
    }

    /// The telemetry and threshold a rebuild of branch records runs with.
    pub(super) fn rebuild_settings(&self) -> (Arc<ReadMetrics>, usize) {
        (self.rebuild_metrics.clone(), self.parallel_threshold)
    }

    /// The counts of published and rebuilt branch records.
    pub(super) fn counts(&self) -> Arc<FollowCounts> {
        self.counts.clone()
    }

    /// Forgets every block read, to read the journal again from redb's head.
    pub(super) fn reset(&mut self) {
        self.tail.reset();
        self.branch_tail.reset();
        self.published.clear();
        self.flushed = None;
        self.records.clear();
        self.memory = MemoryTier::default();
    }

    /// Brings the blocks up to the redb state `meta` was read from: drops
    /// what the writer flushed since, reads what it journaled since (each
    /// run of lean records given its branch records by `restore_branches`
    /// over the memory tier and the head before the run's last record, as
    /// the writer's recovery does; `false`: redb moved on meanwhile,
    /// [`Advance::Moved`]). After an unwind (or a head that went back)
    /// everything is read again.
    pub(super) fn advance(
        &mut self,
        meta: &Meta,
        restore_branches: &mut FollowRestore<'_>,
    ) -> Result<Advance> {
        let flushed = meta.head.map(|h| h.block);
        if meta.unwinds != self.unwinds || flushed < self.flushed.map(|h| h.block) {
            self.reset();
            self.unwinds = meta.unwinds;
        }
        if meta.journal_void_after.is_some() {
            // An unwind committed in redb whose journal cut is not done:
            // the records after its head are the unwound blocks.
            self.reset();
            self.flushed = meta.head;
            return Ok(Advance::Continues);
        }
        let mut gone = Vec::new();
        while self
            .records
            .front()
            .is_some_and(|r| Some(r.block) <= flushed)
        {
            gone.extend(self.records.pop_front());
        }
        self.memory.remove_flushed(gone.iter());
        if self.records.front().is_some_and(|r| r.branches_omitted) {
            // redb's head landed inside a run of lean records, whose branch
            // records sit on its last block and were walked from the run's
            // start: read the rest again over redb's records, its head's.
            self.reset();
        }
        self.flushed = meta.head;
        self.tail.set_identity(meta.datadir_id);
        self.branch_tail.set_identity(meta.datadir_id);
        let mut previous = self.head();
        let start = previous;
        let mut records = Vec::new();
        for found in self.tail.read_after(previous.map(|h| h.block))? {
            let expected = previous.map_or(0, |h| h.block + 1);
            if found.block != expected {
                return Ok(Advance::Gap {
                    expected,
                    found: found.block,
                });
            }
            let record =
                BlockRecord::decode(&found.payload).map_err(|e| Error::CorruptJournalRecord {
                    block: found.block,
                    what: e.to_string(),
                })?;
            check_recovered(&record, found.block, found.link, previous)?;
            previous = Some(Head {
                block: record.block,
                root: record.root,
            });
            records.push(record);
        }
        self.complete_from_published(&mut records, start);
        let lean = records.iter().filter(|r| r.branches_omitted).count() as u64;
        self.counts.rebuilt.fetch_add(lean, Ordering::Relaxed);
        let complete = apply_in_runs(
            self,
            start,
            false,
            records,
            |followed, before, run, last| restore_branches(&followed.memory, before, run, last),
            Followed::apply,
        )?;
        if !complete {
            return Ok(Advance::Moved);
        }
        Ok(Advance::Continues)
    }

    /// Gives each lean record of `records` (the blocks after `start`, in
    /// order) the branch records the writer published for it, when they
    /// are there for the same block and state (the frame's chain of roots
    /// and the payload's block and root); the others stay lean and are
    /// rebuilt. A stream that cannot be read is left for the next look.
    fn complete_from_published(&mut self, records: &mut [BlockRecord], start: Option<Head>) {
        let Some(last) = records.last().map(|r| r.block) else {
            return;
        };
        if records.iter().any(|r| r.branches_omitted) {
            match self.branch_tail.read_after(start.map(|h| h.block)) {
                Ok(found) => self
                    .published
                    .extend(found.into_iter().map(|f| (f.block, f))),
                Err(error) => {
                    tracing::debug!(%error, "follower: published branch records unreadable, rebuilding");
                    self.branch_tail.reset();
                    self.published.clear();
                }
            }
        }
        let mut parent = start.map(|h| h.root);
        for record in records.iter_mut() {
            if record.branches_omitted
                && let Some(found) = self.published.remove(&record.block)
                && parent.is_none_or(|p| p == found.link.parent)
                && found.link.root == record.root
                && let Ok(branches) = BranchRecords::decode(&found.payload)
                && branches.complete(record)
            {
                self.counts.published.fetch_add(1, Ordering::Relaxed);
            }
            parent = Some(record.root);
        }
        self.published = self.published.split_off(&(last + 1));
    }

    /// Adds a record to the memory tier.
    fn apply(&mut self, record: BlockRecord) {
        self.memory.apply(&record);
        self.records.push_back(record);
    }

    /// Where the journal's read stands ([`JournalTail::mark`]).
    pub(super) fn mark(&self) -> Option<TailMark> {
        self.tail.mark()
    }

    /// The newest block followed: the last journaled one, else redb's head.
    pub(super) fn head(&self) -> Option<Head> {
        self.records
            .back()
            .map(|r| Head {
                block: r.block,
                root: r.root,
            })
            .or(self.flushed)
    }

    /// redb's head these blocks sit on, and the unwind count they belong to.
    pub(super) fn base(&self) -> (Option<Head>, u64) {
        (self.flushed, self.unwinds)
    }

    /// The memory tier of the followed blocks.
    pub(super) fn memory(&self) -> &MemoryTier {
        &self.memory
    }
}
