//! `verify`'s journal check: the writer's own read-only scan (`journal::scan`)
//! over every segment — flushed ones too — so verify refuses whatever a
//! writer's open refuses (damage, foreign or misnamed segments, gaps, a
//! broken chain of roots, a journal ending before redb's head), and more:
//! every record decodes and names its frame's block and root, the roots of
//! journaled blocks that redb's `roots` table also holds agree with it, and
//! the records after redb's head continue it as the writer's replay checks.
//! A torn tail the writer would cut and segments it would convert are notes,
//! not problems.

use std::path::Path;
use std::sync::Arc;

use alloy_primitives::B256;

use super::VerifyReport;
use redb::ReadableDatabase;
use strata_db::meta;
use strata_db::tables::META;

use crate::error::{Error, Result, db_err};
use crate::inner::Inner;
use crate::ledger::{check_recovered, ends_before_head};
use crate::options::Options;
use crate::read_only::{JournalContext, journal_context};
use strata_files::{FileSystem, OsFileSystem};
use strata_journal::{self as journal, BlockRecord, Expect, Scan, Tip};
use strata_types::datadir::JOURNAL_DIR;
use strata_view::snapshot::Snapshot;

/// Checks the journal of `datadir`, adding what it finds to `report`, and
/// returns the scan (for the unwind-data check) unless it could not be
/// read. An error means redb's metadata could not be read (the caller
/// decides).
pub(super) fn check(
    datadir: &Path,
    options: &Options,
    report: &mut VerifyReport,
) -> Result<Option<Scan>> {
    let context = journal_context(datadir, options)?;
    let fs: Arc<dyn FileSystem> = Arc::new(OsFileSystem);
    Ok(scan_and_check(
        &fs,
        &datadir.join(JOURNAL_DIR),
        &context,
        report,
    ))
}

/// The same check on the journal of an open store, with its flushes and
/// appends held off while the segments are read; returns the scan and the
/// snapshot taken then (its head is the journal's newest block, or the one
/// before while a commit waits to publish).
pub(super) fn check_writer(
    inner: &Inner,
    report: &mut VerifyReport,
) -> (Option<Scan>, Arc<Snapshot>) {
    inner.ledger.with_journal_still(|dir| {
        let snapshot = inner.current.load_full();
        match writer_context(inner) {
            Ok(context) => (scan_and_check(&inner.fs, dir, &context, report), snapshot),
            Err(error) => {
                report.problems.push(format!(
                    "the journal was not checked: reading redb's head and roots: {error}"
                ));
                (None, snapshot)
            }
        }
    })
}

/// What the writer's redb holds that the journal must agree with.
fn writer_context(inner: &Inner) -> Result<JournalContext> {
    let txn = inner.db.begin_read().map_err(db_err("begin read"))?;
    let table = txn.open_table(META).map_err(db_err("open meta"))?;
    let (_, meta) = meta::load(&table)?.ok_or_else(|| Error::CorruptMeta {
        name: "format",
        what: "absent in an open store".into(),
    })?;
    JournalContext::read(&txn, &meta)
}

/// Scans the journal folder `dir` as a writer's open does and checks what
/// it found against `context`.
fn scan_and_check(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    context: &JournalContext,
    report: &mut VerifyReport,
) -> Option<Scan> {
    let expect = Expect {
        id: context.id,
        flushed: context.head.map(|h| Tip {
            block: h.block,
            root: h.root,
        }),
    };
    let scan = match journal::scan(fs, dir, expect) {
        Ok(scan) => scan,
        Err(error) => {
            report.problems.push(error.to_string());
            return None;
        }
    };
    report.journal_frames = scan.frames().count() as u64;
    report
        .problems
        .extend(scan.problems.iter().map(ToString::to_string));
    if let Some(problem) = ends_before_head(&scan, context.head, dir) {
        report.problems.push(problem.to_string());
    }
    if let Some(torn) = scan.torn_tail() {
        report.notes.push(format!(
            "journal segment {} ends in a torn tail at offset {} ({} bytes, an interrupted append): a writer's open keeps it aside and cuts it",
            torn.path.display(),
            torn.offset,
            torn.cut.len()
        ));
    }
    for path in scan.legacy_segments() {
        report.notes.push(format!(
            "journal segment {} is in the first journal format: a writer's open converts it",
            path.display()
        ));
    }
    check_frames(&scan, context, report);
    Some(scan)
}

/// Decodes every frame's record, compares the roots with redb's, and checks
/// the records after redb's head as the writer's replay does.
fn check_frames(scan: &Scan, context: &JournalContext, report: &mut VerifyReport) {
    let mut previous = context.head;
    for frame in scan.frames() {
        let at = || {
            format!(
                "journal segment {} at offset {}",
                frame.path.display(),
                frame.offset
            )
        };
        let record = match BlockRecord::decode(&frame.payload) {
            Ok(record) => record,
            Err(error) => {
                report
                    .problems
                    .push(format!("{}: block {}: {error}", at(), frame.block));
                continue;
            }
        };
        if record.block != frame.block || record.root != frame.link.root {
            report.problems.push(format!(
                "{}: the record is of block {} with root {}, its frame of block {} with root {}",
                at(),
                record.block,
                record.root,
                frame.block,
                frame.link.root
            ));
        }
        // Only flushed blocks: after an unwind, later numbers are new blocks.
        let stored = |block: u64| {
            context
                .head
                .filter(|h| block <= h.block)
                .and_then(|_| context.roots.get(&block).copied())
        };
        if let Some(root) = stored(frame.block)
            && root != frame.link.root
        {
            report.problems.push(format!(
                "{}: block {} has root {}, redb's roots table holds {root}",
                at(),
                frame.block,
                frame.link.root
            ));
        }
        if let Some(root) = frame.block.checked_sub(1).and_then(stored)
            && frame.link.parent != B256::ZERO
            && root != frame.link.parent
        {
            report.problems.push(format!(
                "{}: block {} follows root {}, redb's roots table holds {root} for block {}",
                at(),
                frame.block,
                frame.link.parent,
                frame.block - 1
            ));
        }
        if context.head.is_none_or(|h| frame.block > h.block) {
            if let Err(error) = check_recovered(&record, frame.block, frame.link, previous) {
                report.problems.push(format!("{}: {error}", at()));
            }
            previous = Some(strata_types::Head {
                block: frame.block,
                root: record.root,
            });
        }
    }
}
