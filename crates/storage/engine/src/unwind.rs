//! Unwind: restore the exact state of a recent block from the journal,
//! whose records carry every written state key's previous value; the
//! commitment records along the touched paths are recomputed from the
//! restored values (records are canonical) and the root checked against the
//! one the block had.

use std::collections::HashMap;
use std::sync::Arc;

use alloy_primitives::{B256, keccak256};
use bytes::Bytes;

use crate::error::{Error, Result, db_err};
use crate::inner::Inner;
use crate::ledger::{self, Change};
use crate::pause::{self, PausePoint};
use strata_commitment::RecordWrite;
use strata_db::meta;
use strata_db::tables::META;
use strata_db::value;
use strata_db::{DomainTables, HeadTables};
use strata_journal::{BlockRecord, Previous};
use strata_types::Head;
use strata_types::domain::Domain;
use strata_types::domain::Regime;
use strata_types::keys::ROOT_RECORD_KEY;
use strata_view::overlay::Overlay;
use strata_view::sources::CachedBranches;
use strata_view::trie_update::records_at;

/// Rolls the store back to `target`. The caller holds the writer lock.
///
/// Every committed block is flushed first, so the restore is one redb
/// transaction over the db tier. The commitment walks the touched paths
/// over the restored values like a block's commit does, and its root must
/// be `target`'s. That transaction also marks the journal's records after
/// `target` as unwound (`journal_void_after`); the journal is cut after
/// `target` only once it is durable, and the mark cleared after the cut.
/// A kill before the transaction leaves the old head with its whole
/// journal (the unwind can be retried); a kill after it leaves the new head
/// and the mark, and the next open finishes the cut. Nothing of the window
/// before `target` is ever lost.
pub(crate) fn unwind_to(inner: &Arc<Inner>, target: u64) -> Result<B256> {
    let current = inner.current.load_full();
    let Some(last) = current.block() else {
        return Err(Error::UnwindOutOfRange {
            target,
            oldest: 0,
            last: 0,
        });
    };
    let oldest = oldest_retained(inner)?.unwrap_or(last);
    if target > last || target < oldest {
        return Err(Error::UnwindOutOfRange {
            target,
            oldest,
            last,
        });
    }
    if target == last {
        return Ok(current.root());
    }
    let root = ledger::root_of(inner, target)?.ok_or(Error::MissingUnwindData { block: target })?;
    inner.ledger.flushed_and_locked(inner, |journal| {
        let mut records = Vec::new();
        for found in journal.read_blocks(target + 1, last)? {
            let record =
                BlockRecord::decode(&found.payload).map_err(|e| Error::CorruptJournalRecord {
                    block: found.block,
                    what: e.to_string(),
                })?;
            records.push(record);
        }
        let restores = restores(&records)?;
        let head = Head {
            block: target,
            root,
        };
        let records = recompute_commitment(inner, &restores, head)?;
        pause::reach(&inner.options, PausePoint::UnwindPrepared);
        restore(inner, &restores, &records, head, last)?;
        pause::reach(&inner.options, PausePoint::UnwindCommitted);
        journal
            .truncate_after(target)
            .map_err(Error::from)
            .and_then(|()| clear_void_mark(inner))
            .map_err(|source| Error::UnwindCutPending {
                target,
                source: Box::new(source),
            })
    })?;
    Ok(root)
}

/// The commitment records the restored state needs along the paths the
/// unwound blocks touched, computed over the current records (those of the
/// last block: untouched siblings are the same at `head`); fails unless
/// the root is `head`'s.
fn recompute_commitment(
    inner: &Inner,
    restores: &HashMap<(Domain, Bytes), Option<Bytes>>,
    head: Head,
) -> Result<Vec<RecordWrite>> {
    let mut overlay = Overlay::default();
    for ((domain, key), value) in restores {
        overlay.put(*domain, key.to_vec(), value.clone());
    }
    let overlay = Arc::new(overlay);
    let base = inner.current.load_full();
    let reader = |overlay| inner.reader(base.clone(), overlay, Regime::Commitment);
    let branches = CachedBranches::for_commitment(reader(None), inner.cache.clone());
    let state = reader(Some(overlay.clone()));
    let parallel = inner.options.parallel_commitment_threshold;
    Ok(records_at(&branches, state, &overlay, head, parallel)?)
}

/// The value each state key had after `target`: the previous value
/// recorded by the oldest unwound block that wrote it.
fn restores(records: &[BlockRecord]) -> Result<HashMap<(Domain, Bytes), Option<Bytes>>> {
    let mut out = HashMap::new();
    for record in records.iter().rev() {
        for write in &record.writes {
            if write.domain == Domain::Commitment {
                continue;
            }
            let previous = match &write.previous {
                Previous::NotKept => {
                    return Err(Error::MissingUnwindData {
                        block: record.block,
                    });
                }
                Previous::Absent => None,
                Previous::Value(value) => Some(value.clone()),
            };
            out.insert((write.domain, write.key.clone()), previous);
        }
    }
    Ok(out)
}

/// One durable redb transaction: the restored values, the recomputed
/// commitment records and root record, the unwound roots and hashes
/// dropped, the head at `head`; then the cache and the snapshot.
fn restore(
    inner: &Inner,
    restores: &HashMap<(Domain, Bytes), Option<Bytes>>,
    records: &[RecordWrite],
    head: Head,
    last: u64,
) -> Result<()> {
    let commit = inner.lock_commit();
    // Restored values are tagged with the step of the block being undone
    // (at least the first uncollated step: an earlier unwind may have left
    // the head inside collated steps), so they stay newer than every file
    // and a collation built before the unwind never prunes them.
    let manifest = inner.current.load().files.manifest.clone();
    let step_in = |domain: Domain| manifest.db_step(domain, inner.step_of(last));
    // The history files of unwound blocks, rewritten before the transaction
    // that lists the new ones.
    let history = if inner.options.history.unwrap_or_default().is_on() {
        let files = inner.current.load().files.clone();
        Some(crate::state_history::after_unwind(
            inner, &files, head.block,
        )?)
    } else {
        None
    };
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    {
        let mut tables = DomainTables::open(&txn)?;
        for ((domain, key), previous) in restores {
            tables
                .of(*domain)
                .insert(
                    key.as_ref(),
                    value::encode(step_in(*domain), previous.as_deref()).as_slice(),
                )
                .map_err(db_err("restore value"))?;
        }
        let mut heads = HeadTables::open(&txn)?;
        for ((domain, _), previous) in restores {
            if *domain == Domain::Code
                && let Some(code) = previous
            {
                heads.put_code(keccak256(code).as_slice(), code)?;
            }
        }
        let commitment = Domain::Commitment;
        let root_record = head.encode();
        let entries = records
            .iter()
            .map(|(path, value)| (strata_commitment::record_key(path), value.as_deref()))
            .chain(std::iter::once((
                ROOT_RECORD_KEY.to_vec(),
                Some(root_record.as_slice()),
            )));
        for (key, value) in entries {
            tables
                .of(commitment)
                .insert(
                    key.as_slice(),
                    value::encode(step_in(commitment), value).as_slice(),
                )
                .map_err(db_err("restore commitment record"))?;
        }
        heads.drop_after(head.block)?;
        if let Some(change) = &history {
            // The unwound blocks' history goes with them.
            meta::write_manifest(heads.meta(), &change.files.manifest)?;
        }
        heads.set_head(head)?;
        meta::count_unwind(heads.meta())?;
        meta::void_journal_after(heads.meta(), Some(head.block))?;
    }
    txn.commit().map_err(db_err("commit unwind"))?;
    for (path, value) in records {
        match value {
            Some(value) => inner.cache.insert(path, value.clone()),
            None => inner.cache.remove(path),
        }
    }
    // The cache's values may be those of the unwound blocks: start empty
    // at the restored head (readers of the old head bypass it).
    inner.values.reset(Some(head));
    let (files, retired) = history.map(|c| (c.files, c.retired)).unzip();
    inner
        .ledger
        .publish(inner, &commit, Change::Reset(head, files))?;
    drop(commit);
    if let Some(retired) = retired {
        crate::state_history::remove_files(inner, &retired)?;
    }
    Ok(())
}

/// Clears the mark an unwind (or an open finishing one) left once the
/// journal no longer holds the unwound records.
pub(crate) fn clear_void_mark(inner: &Inner) -> Result<()> {
    clear_void_mark_in(&inner.db)
}

/// [`clear_void_mark`] on a database before the store around it exists.
pub(crate) fn clear_void_mark_in(db: &redb::Database) -> Result<()> {
    let txn = db.begin_write().map_err(db_err("begin write"))?;
    {
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::void_journal_after(&mut meta_table, None)?;
    }
    txn.commit().map_err(db_err("commit the journal cut"))
}

/// The oldest block whose state can still be restored: the journal holds
/// the unwind data of every block after it, its root is known, and it is
/// within the last `unwind_depth` blocks. After an unwind the window does
/// not grow back until new blocks land.
pub(crate) fn oldest_retained(inner: &Inner) -> Result<Option<u64>> {
    let Some(last) = inner.current.load().block() else {
        return Ok(None);
    };
    let Some(first_journaled) = inner.ledger.first_journaled() else {
        return Ok(Some(last));
    };
    let first_root = ledger::first_root(inner)?
        .or_else(|| inner.current.load().memory.blocks().map(|(first, _)| first))
        .unwrap_or(last);
    Ok(Some(
        first_journaled
            .saturating_sub(1)
            .max(first_root)
            .max(last.saturating_sub(inner.options.unwind_depth))
            .min(last),
    ))
}
