//! The part of another process's commits that only its journal holds: the
//! blocks after redb's head, read as they are appended and kept as a
//! memory tier, the way the writer keeps them.

use std::collections::VecDeque;
use std::path::Path;

use crate::error::{Error, Result};
use crate::ledger::check_recovered;
use strata_db::meta::Meta;
use strata_journal::{BlockRecord, JournalTail, TailMark};
use strata_types::Head;
use strata_view::memory::MemoryTier;

/// The journaled blocks a read-only handle has followed so far.
pub(super) struct Followed {
    tail: JournalTail,
    /// redb's head (the last flushed block) the memory tier sits on.
    flushed: Option<Head>,
    /// The writer's unwind count when these blocks were read.
    unwinds: u64,
    /// The blocks after `flushed`, oldest first.
    records: VecDeque<BlockRecord>,
    memory: MemoryTier,
}

/// What [`Followed::advance`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Advance {
    /// The memory tier continues redb's head up to the newest journaled block.
    Continues,
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
    /// Follows the journal in `dir` (nothing read yet).
    pub(super) fn new(dir: &Path) -> Followed {
        Followed {
            tail: JournalTail::new(dir, None),
            flushed: None,
            unwinds: 0,
            records: VecDeque::new(),
            memory: MemoryTier::default(),
        }
    }

    /// Forgets every block read, to read the journal again from redb's head.
    pub(super) fn reset(&mut self) {
        self.tail.reset();
        self.flushed = None;
        self.records.clear();
        self.memory = MemoryTier::default();
    }

    /// Brings the blocks up to the redb state `meta` was read from: drops
    /// what the writer flushed since, reads what it journaled since. After
    /// an unwind (or a head that went back) everything is read again.
    pub(super) fn advance(&mut self, meta: &Meta) -> Result<Advance> {
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
        self.flushed = meta.head;
        self.tail.set_identity(meta.datadir_id);
        let mut previous = self.head();
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
            self.memory.apply(&record);
            previous = Some(Head {
                block: record.block,
                root: record.root,
            });
            self.records.push_back(record);
        }
        Ok(Advance::Continues)
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
