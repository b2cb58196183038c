//! `verify`'s check of the unwind data (finding CR2): the state at every
//! block of the unwind window, rebuilt from the journal's previous values,
//! must have that block's root — what `unwind` and the reads at a block
//! (`reader_at`) check before they serve it. A previous value changed and
//! its frame re-checksummed passes every checksum and the chain of roots;
//! only this rebuild finds it.
//!
//! The window's frames come from the journal scan verify already holds,
//! so the journal is read once, and the walk goes block by block from the
//! head, newest first: undoing block `b` over the state after `b` (the
//! head's snapshot with an overlay of the values and commitment records
//! the later blocks changed) runs the commitment walk of
//! [`crate::unwind::records_at`] along the keys `b` wrote only, and its
//! root must be the root of `b - 1` that `b`'s frame links to. The records
//! it recomputes go into the overlay for the next block down. The cost is
//! one commitment pass over each block's own writes, as their commits paid.

use std::sync::Arc;

use strata_commitment::record_key;

use super::VerifyReport;
use crate::error::{Error, Result};
use strata_journal::{BlockRecord, Scan, ScannedFrame};
use strata_telemetry::ReadMetrics;
use strata_types::Head;
use strata_types::domain::{Domain, Regime};
use strata_view::history::BlockUndo;
use strata_view::overlay::Overlay;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;
use strata_view::sources::ReaderBranches;
use strata_view::trie_update::records_at;

/// How the walk runs: the window's depth and the handle's settings.
pub(super) struct Walk {
    /// Blocks below the head whose state must be rebuildable
    /// (`Options::unwind_depth`).
    pub(super) unwind_depth: u64,
    /// `Options::parallel_commitment_threshold`.
    pub(super) parallel_threshold: usize,
    /// The handle's read telemetry (the walk's reads are not timed).
    pub(super) metrics: Arc<ReadMetrics>,
}

/// Rebuilds the state at each block of the window below `snapshot`'s head
/// from the unwind data of the frames in `scan`, checking each against
/// its root; adds the blocks checked, and the first failure, to `report`.
pub(super) fn check(scan: &Scan, snapshot: &Arc<Snapshot>, walk: &Walk, report: &mut VerifyReport) {
    let Some(head) = snapshot.head else {
        return;
    };
    let oldest_target = head.block.saturating_sub(walk.unwind_depth);
    let frames: Vec<ScannedFrame<'_>> = scan
        .frames()
        .filter(|f| f.block > oldest_target && f.block <= head.block)
        .collect();
    let Some(newest) = frames.last() else {
        return;
    };
    if newest.block != head.block || newest.link.root != head.root {
        report.notes.push(format!(
            "the unwind data was not checked: the journal's newest block up to the head is {} with root {}, \
             the head is block {} with root {} (a writer committed or unwound meanwhile; verify again)",
            newest.block, newest.link.root, head.block, head.root
        ));
        return;
    }
    let started = std::time::Instant::now();
    let mut overlay = Arc::new(Overlay::default());
    let mut expected = head.block;
    for frame in frames.iter().rev() {
        // A gap or an undecodable record is the journal check's problem.
        if frame.block != expected {
            break;
        }
        let Ok(record) = BlockRecord::decode(&frame.payload) else {
            break;
        };
        // Block 0 keeps no unwind data: nothing is before it.
        let (Some(undo), Some(before)) = (
            BlockUndo::from_record(&record, |i| &record.writes[i].previous),
            frame.block.checked_sub(1),
        ) else {
            break;
        };
        let target = Head {
            block: before,
            root: frame.link.parent,
        };
        if let Err(error) = undo_block(snapshot, &mut overlay, &undo, target, walk) {
            report.problems.push(problem(frame, target, &error));
            return;
        }
        report.unwind_blocks_checked += 1;
        expected = before;
    }
    tracing::info!(
        target: "strata::verify",
        blocks = report.unwind_blocks_checked,
        head = head.block,
        ms = started.elapsed().as_secs_f64() * 1e3,
        "the unwind data rebuilds every block's root"
    );
}

/// Undoes one block over `overlay` (the state after it: values and
/// commitment records the later blocks changed), checking that the state
/// it gives has `target`'s root, and leaves `overlay` at `target`.
fn undo_block(
    snapshot: &Arc<Snapshot>,
    overlay: &mut Arc<Overlay>,
    undo: &BlockUndo,
    target: Head,
    walk: &Walk,
) -> Result<()> {
    let mut touched = Overlay::default();
    undo.apply_to(&mut touched);
    undo.apply_to(Arc::make_mut(overlay));
    // Its commitment records are still the block's; its values the target's.
    let state = ViewReader::new(
        snapshot.clone(),
        Some(overlay.clone()),
        Regime::Commitment,
        walk.metrics.clone(),
    )
    .untimed();
    let branches = ReaderBranches::new(state.clone());
    let records = records_at(&branches, state, &touched, target, walk.parallel_threshold)?;
    drop(branches);
    let overlay = Arc::make_mut(overlay);
    for (path, record) in records {
        overlay.put(Domain::Commitment, record_key(&path), record);
    }
    Ok(())
}

/// The problem of `frame`, whose unwind data failed to rebuild `target`.
fn problem(frame: &ScannedFrame<'_>, target: Head, error: &Error) -> String {
    let at = format!(
        "journal segment {} at offset {}: block {}",
        frame.path.display(),
        frame.offset,
        frame.block
    );
    match error {
        Error::RootMismatch { computed, .. } => format!(
            "{at}: its unwind data does not rebuild block {}: the state it gives has root {computed}, \
             block {} has root {} (a previous value was changed, or belongs to another state); \
             unwind to it or before, and reads at it or before, refuse it",
            target.block, target.block, target.root
        ),
        other => format!(
            "{at}: its unwind data could not be checked against block {}'s root: {other}",
            target.block
        ),
    }
}

#[cfg(all(test, feature = "test-utils"))]
#[path = "undo_tests.rs"]
mod tests;
