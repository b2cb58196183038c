//! Lean journal records made whole again. A block's journal record keeps
//! its plain writes, not the commitment's branch records (they follow from
//! the state before the block and those writes), so whoever replays the
//! journal — the writer's recovery, a reader in another process following
//! it — rebuilds them.
//!
//! They are rebuilt once per run of consecutive lean records, at the run's
//! last block, along every key the run wrote, and the root they give is
//! checked against that block's. Once per run and not once per block: a
//! flush writes redb in several transactions and moves redb's head only
//! in the last, so after a crash mid-flush redb may hold the branch records
//! of later blocks of the run under the head before it. A walk along every
//! path the run touched reads such a record only where the run rewrote it
//! anyway, and each child it keeps (one the run did not touch) is the same
//! in every version the run passed through. The records land on the run's
//! last block; its earlier blocks keep their plain writes only, which is
//! all a reader at the head needs, and a flush takes every pending block at
//! once, so redb's head never stops inside a run.

use std::sync::Arc;

use bytes::Bytes;
use strata_commitment::record_key;
use strata_journal::{BlockRecord, Previous, RecordWrite};
use strata_telemetry::ReadMetrics;
use strata_types::Head;
use strata_types::domain::{Domain, Regime};
use strata_types::keys::ROOT_RECORD_KEY;
use strata_view::error::ReadError;
use strata_view::memory::MemoryTier;
use strata_view::overlay::Overlay;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;
use strata_view::sources::ReaderBranches;
use strata_view::trie_update::records_at;

use crate::error::{Error, Result};

/// How the writer's recovery rebuilds a run's branch records: given the
/// memory tier and the head before the run's last record, the run and that
/// record.
pub(crate) type RecoveryRestore<'a> =
    dyn FnMut(&MemoryTier, Option<Head>, &mut LeanRun, &mut BlockRecord) -> Result<()> + 'a;

/// How a follower rebuilds them, the same way; `Ok(false)`: redb moved on
/// past the state the rebuild was to read (the follower starts over).
pub(crate) type FollowRestore<'a> =
    dyn FnMut(&MemoryTier, Option<Head>, &mut LeanRun, &mut BlockRecord) -> Result<bool> + 'a;

/// Applies `records` in order, the first on top of `before`, through
/// `apply` (which adds a record to `state`), each run of consecutive lean
/// records given its branch records by `restore` before the run's last
/// record is applied: the run's earlier records are applied as they come,
/// its last one held back until then. With `per_block`, every lean record
/// is a run of its own (each block gets its own records back: what a
/// datadir that keeps history needs, at one walk per block). `Ok(false)`: `restore` found its
/// state gone; what was applied stays, the rest is not.
pub(crate) fn apply_in_runs<S>(
    state: &mut S,
    mut before: Option<Head>,
    per_block: bool,
    records: impl IntoIterator<Item = BlockRecord>,
    mut restore: impl FnMut(&S, Option<Head>, &mut LeanRun, &mut BlockRecord) -> Result<bool>,
    mut apply: impl FnMut(&mut S, BlockRecord),
) -> Result<bool> {
    let head_of = |record: &BlockRecord| Head {
        block: record.block,
        root: record.root,
    };
    let mut run = LeanRun::default();
    let mut held: Option<BlockRecord> = None;
    for record in records {
        if let Some(mut last) = held.take() {
            if (per_block || !record.branches_omitted)
                && !restore(state, before, &mut run, &mut last)?
            {
                return Ok(false);
            }
            before = Some(head_of(&last));
            apply(state, last);
        }
        if record.branches_omitted {
            run.add(&record);
            held = Some(record);
        } else {
            before = Some(head_of(&record));
            apply(state, record);
        }
    }
    if let Some(mut last) = held {
        if !restore(state, before, &mut run, &mut last)? {
            return Ok(false);
        }
        apply(state, last);
    }
    Ok(true)
}

/// The plain writes of a run of lean records, as they are read: the keys
/// the run's branch records are rebuilt along.
#[derive(Default)]
pub(crate) struct LeanRun {
    /// The run's first block, once it has one.
    first: Option<u64>,
    /// Every plain key the run wrote.
    written: Overlay,
}

impl LeanRun {
    /// Adds `record`'s plain writes to the run.
    pub(crate) fn add(&mut self, record: &BlockRecord) {
        self.first.get_or_insert(record.block);
        put_plain_writes(&mut self.written, record);
    }
}

/// Puts into `last` (the last record of `run`, lean) the branch records
/// the run changed, computed over `before` (the state after the block
/// before `last`: the run's earlier blocks applied) with `last`'s plain
/// writes on top, before its root record; fails, naming the run's blocks,
/// unless they give `last`'s root. The run is emptied.
pub(crate) fn restore_branches(
    run: &mut LeanRun,
    last: &mut BlockRecord,
    before: Arc<Snapshot>,
    metrics: &Arc<ReadMetrics>,
    parallel_threshold: usize,
) -> Result<()> {
    let run = std::mem::take(run);
    let first = run.first.unwrap_or(last.block);
    let mut own = Overlay::default();
    put_plain_writes(&mut own, last);
    let reader = |overlay| {
        ViewReader::new(before.clone(), overlay, Regime::Commitment, metrics.clone()).untimed()
    };
    let branches = ReaderBranches::new(reader(None));
    let head = Head {
        block: last.block,
        root: last.root,
    };
    let rebuilt = records_at(
        &branches,
        reader(Some(Arc::new(own))),
        &run.written,
        head,
        parallel_threshold,
    )
    .map_err(|error| match error {
        ReadError::RootMismatch { computed, .. } => Error::CorruptJournalRecord {
            block: last.block,
            what: format!(
                "the writes of the journaled blocks {first}..={} give the state root {computed}, \
                 but the record says {}: a record was changed (or belongs to another state)",
                last.block, last.root
            ),
        },
        other => other.into(),
    })?;
    let at = last
        .writes
        .iter()
        .position(|w| w.domain == Domain::Commitment && w.key.as_ref() == ROOT_RECORD_KEY)
        .unwrap_or(last.writes.len());
    let restored = rebuilt.into_iter().map(|(path, value)| RecordWrite {
        domain: Domain::Commitment,
        key: Bytes::from(record_key(&path)),
        value,
        previous: Previous::NotKept,
    });
    last.writes.splice(at..at, restored);
    last.branches_omitted = false;
    Ok(())
}

/// Puts the record's writes outside the commitment domain into `overlay`.
fn put_plain_writes(overlay: &mut Overlay, record: &BlockRecord) {
    for write in record
        .writes
        .iter()
        .filter(|w| w.domain != Domain::Commitment)
    {
        overlay.put(write.domain, write.key.to_vec(), write.value.clone());
    }
}

#[cfg(all(test, feature = "test-utils"))]
mod tests {
    use crate::test_chain::{blocks, options, who};
    use crate::{Regime, StateDb};
    use strata_journal::testing::rechecksum_block;
    use strata_types::domain::Domain;

    /// Every block's journal record is lean, and an open that replays them
    /// (no flush before the crash) rebuilds the records: the same root and
    /// the same proofs as before the crash, and the next block commits.
    #[test]
    fn a_lean_journal_replays_to_the_same_root_and_proofs() {
        let dir = tempfile::tempdir().unwrap();
        let db = blocks(dir.path(), 6);
        let root = db.root();
        let proofs: Vec<_> = (0..6)
            .map(|i| db.reader(Regime::Exec).proof(&who(i), &[]).unwrap())
            .collect();
        db.abandon();
        for block in 0..6 {
            rechecksum_block(dir.path(), block, |record| {
                assert!(record.branches_omitted, "block {block} is journaled whole");
                let commitment = record
                    .writes
                    .iter()
                    .filter(|w| w.domain == Domain::Commitment)
                    .count();
                assert_eq!(commitment, 1, "block {block}: only its root record");
            });
        }
        let db = StateDb::open(dir.path(), options()).unwrap();
        assert_eq!(db.root(), root);
        assert_eq!(db.last_block(), Some(5));
        for (i, proof) in proofs.iter().enumerate() {
            let again = db.reader(Regime::Exec).proof(&who(i as u64), &[]).unwrap();
            assert_eq!(&again, proof, "account {i}");
        }
        let mut block = db.begin_block(6).unwrap();
        block.put_account(who(9), &crate::test_chain::account(1));
        block.commit().unwrap();
        let after = db.reader(Regime::Exec).proof(&who(3), &[]).unwrap();
        db.flush().unwrap();
        db.close().unwrap();
        let db = StateDb::open(dir.path(), options()).unwrap();
        assert_eq!(db.last_block(), Some(6));
        assert_eq!(db.reader(Regime::Exec).proof(&who(3), &[]).unwrap(), after);
    }
}
