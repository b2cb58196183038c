//! The blocks an open replays from the journal are checked against the
//! state they sit on, not only against their own checksums: a frame whose
//! bytes were changed and checksummed again (finding CR2), or a record
//! that does not belong on this state, must not become the head.
//!
//! The commitment is walked once along every key the replayed blocks
//! wrote, over the records the open now serves (the replayed ones over
//! redb's and the files') with the leaf values the replayed blocks leave:
//! records are canonical, so the walk must give back the very records it
//! read along those paths and the newest replayed block's root. A changed
//! value, record or root shows up as a difference. (redb below may hold
//! part of a flush a crash interrupted: the same keys with the same
//! values, which is why the walk reads what the open serves.) The cost is
//! one commitment pass over the union of the replayed writes (bounded by
//! `memory_budget_bytes`), paid only at open.

use crate::commit::trie_update;
use crate::domain::{Domain, Regime};
use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::overlay::Overlay;
use crate::sources::{OverlayState, ReaderBranches};
use strata_commitment::{ComputeOptions, compute_root, record_key};

/// Checks the blocks the memory tier holds after an open (those replayed
/// from the journal).
pub(crate) fn check_replayed(inner: &Inner) -> Result<()> {
    let current = inner.current.load_full();
    let Some((first, last)) = current.memory.blocks() else {
        return Ok(());
    };
    let corrupt = |what: String| Error::CorruptJournalRecord { block: last, what };
    let mut written = Overlay::default();
    for domain in [Domain::Account, Domain::Storage, Domain::Code] {
        for (key, value) in current.memory.entries(domain) {
            written.put(domain, key.to_vec(), value);
        }
    }
    let update = trie_update(&written);
    let head = inner.reader(current.clone(), None, Regime::Commitment);
    let branches = ReaderBranches::new(head.clone());
    let state = OverlayState::new(head.clone());
    let options = ComputeOptions {
        parallel_threshold: inner.options.parallel_commitment_threshold,
    };
    let output =
        compute_root(&update, &branches, &state, &options).map_err(|source| Error::Commitment {
            block: last,
            source,
        })?;
    if output.root != current.root() {
        return Err(corrupt(format!(
            "the writes of the journaled blocks {first}..={last} give the state root {}, \
             but their records say {}: a record was changed (or belongs to another state)",
            output.root,
            current.root()
        )));
    }
    for (path, value) in &output.writes {
        let key = record_key(path);
        if head.get_latest(Domain::Commitment, &key)? != *value {
            return Err(corrupt(format!(
                "the commitment record at {} is not the one the writes of blocks \
                 {first}..={last} give",
                crate::db::value::hex(&key)
            )));
        }
    }
    Ok(())
}
