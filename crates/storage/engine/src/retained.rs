//! Which older blocks a reader can be opened at ([`Retained`]): the same
//! rule for the writer's store and a read-only one, whose histories come
//! from memory and from the journal.

use crate::error::{Error, Result};
use strata_types::HistoryRetention;
use strata_view::history::History;

/// The blocks before the last one that `history` can rebuild, at most
/// `unwind_depth` back.
pub(crate) struct Retained {
    oldest: u64,
    last: u64,
}

impl Retained {
    /// The window of `history` below block `last`.
    pub(crate) fn new(history: &History, last: u64, unwind_depth: u64) -> Self {
        let oldest = history
            .oldest_reachable()
            .unwrap_or(last)
            .max(last.saturating_sub(unwind_depth))
            .min(last);
        Self { oldest, last }
    }

    /// The window widened to the blocks a datadir that keeps history can
    /// read (`kept`: its retention, and the block redb's history rebuilds
    /// from once a flush wrote some, as a snapshot's metadata records
    /// them), and those the undo data of `history` rebuilds (every
    /// unflushed block keeps its own), no older than the retention keeps.
    pub(crate) fn with_history(
        self,
        (retention, from): (HistoryRetention, Option<u64>),
        history: &History,
    ) -> Self {
        if !retention.is_on() {
            return self;
        }
        let reach = match (from, history.oldest_reachable()) {
            (Some(from), Some(memory)) => Some(from.min(memory)),
            (from, memory) => from.or(memory),
        };
        let oldest = reach
            .and_then(|reach| retention.oldest(reach, self.last))
            .map_or(self.oldest, |kept| kept.min(self.oldest));
        Self { oldest, ..self }
    }

    /// The error for `block` outside the window, naming it.
    pub(crate) fn not_retained(&self, block: u64) -> Error {
        Error::StateNotRetained {
            block,
            oldest: self.oldest,
            last: self.last,
        }
    }

    /// `block` is in the window (an older block than the last).
    pub(crate) fn check(&self, block: u64) -> Result<()> {
        if block < self.oldest || block >= self.last {
            return Err(self.not_retained(block));
        }
        Ok(())
    }
}
