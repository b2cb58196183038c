//! What a replay into an existing datadir checks before its writer opens
//! the datadir, from a read-only open: redb's writer open rewrites bytes of
//! `state.redb` (and recovers the journal), so a replay refused for a
//! reason known beforehand must refuse before it. Refused here, nothing in
//! the datadir changes:
//! - `--step-size` given and not the datadir's step size;
//! - a trace whose genesis root (the datadir still at block 0), state dump
//!   (the datadir still at the dump's block) or root of the datadir's last
//!   block is not the datadir's root: another chain's trace;
//! - a trace whose next block does not follow the datadir's last block.
//!
//! A datadir the read-only open cannot read is left to the writer's open,
//! which says what is wrong (or recovers what a reader cannot).

use std::path::Path;

use alloy_primitives::B256;
use strata_storage::{DB_FILE, ReadOnlyStateDb};

use super::ReplayArgs;
use super::source::{Start, TraceSource};
use crate::CliError;
use crate::commands::datadir::inspect_options;

/// Runs the checks above on `datadir` when it holds a database. The trace's
/// blocks up to the datadir's last block are read from `source` (they are
/// skipped by a resume anyway); `first_block` is the trace's first block.
pub(super) fn check_resume(
    args: &ReplayArgs,
    datadir: &Path,
    source: &mut TraceSource,
    start: &Start,
    first_block: Option<u64>,
) -> Result<(), CliError> {
    if !datadir.join(DB_FILE).is_file() {
        return Ok(());
    }
    let Ok(db) = ReadOnlyStateDb::open(datadir, inspect_options()) else {
        return Ok(());
    };
    check_step_size(args.step_size, db.step_size(), datadir)?;
    let (Ok(Some(last)), Ok(root)) = (db.last_block(), db.root()) else {
        return Ok(());
    };
    // The writer's open waits for no reader: this one goes first.
    drop(db);
    let trace = source.path().to_owned();
    let mismatch = |path: &Path, block: u64, expected: B256| {
        CliError::ResumeMismatch(Box::new(crate::ResumeMismatch {
            trace: path.to_owned(),
            datadir: datadir.to_owned(),
            block,
            trace_root: expected,
            datadir_root: root,
        }))
    };
    if last == 0
        && let Some(expected) = start.genesis_root
        && expected != root
    {
        return Err(mismatch(&trace, 0, expected));
    }
    let dump_block = first_block.map_or(0, |first| first.saturating_sub(1));
    if let Some(dump) = &start.state_dump
        && last == dump_block
    {
        let expected = crate::commands::init::open_dump(dump)?.root();
        if expected != root {
            return Err(mismatch(dump, dump_block, expected));
        }
    }
    while let Some(block) = source.peek_block()? {
        if block.number > last {
            break;
        }
        if block.number == last
            && let Some(expected) = block.state_root
            && expected != root
        {
            return Err(mismatch(&trace, last, expected));
        }
        source.next_block()?;
    }
    if let Some(block) = source.peek_block()?
        && Some(block.number) != last.checked_add(1)
    {
        return Err(not_following(&trace, block.number, last.saturating_add(1)));
    }
    Ok(())
}

/// Refuses an explicit `--step-size` (`asked`) other than the datadir's.
pub(super) fn check_step_size(
    asked: Option<u64>,
    recorded: u64,
    datadir: &Path,
) -> Result<(), CliError> {
    match asked {
        Some(asked) if asked != recorded => Err(CliError::StepSizeMismatch {
            datadir: datadir.to_owned(),
            asked,
            recorded,
        }),
        _ => Ok(()),
    }
}

/// The error of a trace block `number` where block `expected` (the one
/// after the datadir's last) belongs.
pub(super) fn not_following(trace: &Path, number: u64, expected: u64) -> CliError {
    CliError::TraceDoesNotFollow {
        trace: trace.to_owned(),
        number,
        expected,
    }
}
