//! `verify`: re-check every journal segment (`journal`: everything a
//! writer's open checks, and the roots against redb's), the unwind data of
//! the window (`undo`: the state rebuilt at each block has its root), every file, the tiers' agreement, every account's code
//! against its hash, every commitment record against the records the bulk
//! builder derives from the values, the root recomputed from scratch, and
//! (for [`verify_datadir`]) redb's own integrity check on a copy-on-write view of `state.redb`.
//!
//! Verify only reads: [`verify_datadir`] opens the datadir read-only and
//! changes no byte of it; a redb panic on a damaged page becomes a problem
//! naming the table.

mod code;
mod derive;
mod guard;
mod integrity;
mod journal;
mod open;
mod records;
mod undo;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_primitives::B256;

use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::options::Options;
use alloy_primitives::hex::encode as hex;
use strata_bulk::sort::ScratchDir;
use strata_files::{FileSystem, SortedFile};
use strata_telemetry::ReadMetrics;
use strata_types::datadir::DB_FILE;
use strata_types::domain::Domain;
use strata_types::domain::Regime;
use strata_types::keys::ROOT_RECORD_KEY;
use strata_view::memory::MemoryTier;
use strata_view::overlay::Overlay;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;

use self::guard::guarded;
pub use self::integrity::IntegrityTiming;

/// How `verify` may use memory and scratch space.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Memory the external sorts of the derived commitment may hold before
    /// they spill runs to [`VerifyOptions::temp_dir`]. Default: 256 MiB.
    pub sort_memory_bytes: usize,
    /// The folder in which the sorts' runs go, in a folder of their own
    /// (`strata-verify-…`, removed afterwards). Default: the system's temp
    /// folder (`TMPDIR`); never the datadir, which verify does not write.
    pub temp_dir: Option<PathBuf>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self {
            sort_memory_bytes: 256 << 20,
            temp_dir: None,
        }
    }
}

impl VerifyOptions {
    fn temp_dir(&self) -> PathBuf {
        self.temp_dir.clone().unwrap_or_else(std::env::temp_dir)
    }
}

/// What `verify` checked and what it found wrong.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// The block verified.
    pub block: Option<u64>,
    /// Files whose bytes were re-read and checked.
    pub files_checked: usize,
    /// Bytes of those files.
    pub file_bytes: u64,
    /// Live accounts found across the tiers.
    pub accounts: u64,
    /// Live storage slots found across the tiers.
    pub slots: u64,
    /// Codes hashed and compared with their account's code hash.
    pub codes_checked: u64,
    /// Commitment records stored (the root record aside), each compared
    /// with the record the values imply.
    pub records_checked: u64,
    /// Stored commitment records missing, extra or differing.
    pub record_differences: u64,
    /// Runs the sorts of the derived commitment spilled to the scratch
    /// folder (0 when the state fit in [`VerifyOptions::sort_memory_bytes`]).
    pub sort_runs: usize,
    /// The root the store holds for the block.
    pub stored_root: B256,
    /// The root recomputed from every live leaf.
    pub computed_root: B256,
    /// What redb's integrity check of `state.redb` (copy-on-write view) cost, when it
    /// ran ([`verify_datadir`] only).
    pub integrity: Option<IntegrityTiming>,
    /// Journal frames read and checked.
    pub journal_frames: u64,
    /// Blocks of the unwind window whose unwind data was checked: the state
    /// rebuilt from it, undoing the blocks after each, has that block's
    /// root (what `unwind` and reads at a block check before serving it).
    pub unwind_blocks_checked: u64,
    /// History entries checked (a datadir that keeps history): each history
    /// file's entries (key, block range, differences that apply), and the
    /// root record each sampled kept block's history gives back against the
    /// block's stored root.
    pub history_checked: u64,
    /// The kept block below redb's head whose whole root was derived again
    /// from the history's account, storage and code values (a datadir that
    /// keeps history and has flushed more than one block).
    pub history_rebuilt: Option<u64>,
    /// Every problem found; empty when the store is sound.
    pub problems: Vec<String>,
    /// What is not wrong but worth knowing: a torn tail a writer's open
    /// would cut (and keep aside), segments it would convert.
    pub notes: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing was found wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies the datadir at `datadir` without writing to it: opens it
/// read-only (it may be on a read-only mount, or shared by a running writer
/// that set [`Options::share_with_readers`]), checks its newest commit, then
/// runs redb's integrity check on a copy-on-write view of `state.redb`. Uses
/// `options.db_cache_bytes` only.
///
/// Damaged bytes are problems in the report; an error means the datadir
/// could not be looked at (none there, another format, a writer that does
/// not share it).
///
/// Memory: `options.db_cache_bytes` and the sorts' budget in
/// `verify_options` (its scratch folder takes what they spill): peak memory
/// is that budget plus a fixed margin and the largest single account's
/// storage, whatever the state's size. `VerifyOptions::default()`: 256 MiB,
/// spilling to the system's temp folder.
pub fn verify_datadir(
    datadir: impl AsRef<Path>,
    options: &Options,
    verify_options: &VerifyOptions,
) -> Result<VerifyReport> {
    let datadir = datadir.as_ref();
    let db_path = datadir.join(DB_FILE);
    if !db_path.is_file() {
        return Err(Error::NotADatadir {
            path: datadir.to_path_buf(),
            what: "no state.redb: not a strata datadir",
        });
    }
    let _span = tracing::info_span!("verify", datadir = %datadir.display()).entered();
    let started = std::time::Instant::now();
    let mut report = VerifyReport::default();
    let scan = match journal::check(datadir, options, &mut report) {
        Ok(scan) => scan,
        Err(error) if open::is_access_error(&error) => return Err(error),
        Err(error) => {
            report.problems.push(format!(
                "the journal was not checked: reading {}: {error}",
                db_path.display()
            ));
            None
        }
    };
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        open::open(datadir, options)
    }));
    match opened {
        Ok(Ok(opened)) => {
            if let Some(scan) = scan {
                let walk = undo::Walk {
                    unwind_depth: options.unwind_depth,
                    parallel_threshold: options.parallel_commitment_threshold,
                    metrics: opened.metrics(),
                };
                undo::check(&scan, &opened.snapshot, &walk, &mut report);
            }
            check_snapshot(
                &opened.snapshot,
                opened.fs.as_ref(),
                false,
                verify_options,
                &mut report,
            )
        }
        Ok(Err(error)) if open::is_access_error(&error) => return Err(error),
        Ok(Err(error)) => report
            .problems
            .push(format!("opening {} read-only: {error}", db_path.display())),
        Err(payload) => report.problems.push(format!(
            "opening {} read-only: the database is damaged (redb panicked: {})",
            db_path.display(),
            guard::panic_message(payload.as_ref())
        )),
    }
    let (timing, problem) = integrity::check_copy(&db_path);
    report.integrity = timing;
    report.problems.extend(problem);
    log_report(&report, started.elapsed());
    Ok(report)
}

/// Verifies the current snapshot of an open store: the journal scan and
/// its unwind data as [`verify_datadir`] checks them (with flushes and
/// appends held off while the segments are read), then everything else
/// (files re-read from disk; no redb integrity check, which needs the
/// database to itself).
pub(crate) fn verify(inner: &Arc<Inner>, options: &VerifyOptions) -> Result<VerifyReport> {
    let _span = tracing::info_span!("verify").entered();
    let started = std::time::Instant::now();
    let mut report = VerifyReport::default();
    let (scan, snapshot) = journal::check_writer(inner, &mut report);
    if let Some(scan) = scan {
        let walk = undo::Walk {
            unwind_depth: inner.options.unwind_depth,
            parallel_threshold: inner.options.parallel_commitment_threshold,
            metrics: inner.metrics.clone(),
        };
        undo::check(&scan, &snapshot, &walk, &mut report);
    }
    check_snapshot(&snapshot, inner.fs.as_ref(), true, options, &mut report);
    log_report(&report, started.elapsed());
    Ok(report)
}

/// One log event with what a verification checked and found.
fn log_report(report: &VerifyReport, elapsed: std::time::Duration) {
    let ms = elapsed.as_secs_f64() * 1e3;
    let (block, files, accounts, slots, records) = (
        report.block,
        report.files_checked,
        report.accounts,
        report.slots,
        report.records_checked,
    );
    for note in &report.notes {
        tracing::warn!(target: "strata::verify", "{note}");
    }
    if report.is_ok() {
        tracing::info!(target: "strata::verify", block, files, accounts, slots, records, ms, "verified");
    } else {
        let problems = report.problems.len();
        tracing::warn!(target: "strata::verify", block, files, accounts, slots, records, problems, ms, "verify found problems");
    }
}

/// Runs every check on `snapshot`, adding what it finds to `report`. With
/// `reopen_files`, every file is opened (and so verified) again.
fn check_snapshot(
    snapshot: &Snapshot,
    fs: &dyn FileSystem,
    reopen_files: bool,
    options: &VerifyOptions,
    report: &mut VerifyReport,
) {
    report.block = snapshot.block();
    report.stored_root = snapshot.root();
    if snapshot.has_history() {
        check_history(snapshot, report);
    }
    for domain in Domain::ALL {
        for file in snapshot.files.files(domain) {
            report.files_checked += 1;
            report.file_bytes += file.size_bytes();
            if reopen_files && let Err(e) = SortedFile::open(fs, file.path()) {
                report.problems.push(e.to_string());
            }
        }
        let what = format!("redb table `{domain}` and the {domain} files");
        match guarded(&what, || check_tiers_agree(snapshot, domain)) {
            Ok(problems) => report.problems.extend(problems),
            Err(problem) => report.problems.push(problem),
        }
    }
    let scratch = match ScratchDir::unique_in(&options.temp_dir(), "strata-verify-") {
        Ok(scratch) => scratch,
        Err(error) => {
            report.problems.push(format!(
                "the root, the commitment records and the code were not checked: {error}"
            ));
            return;
        }
    };
    let head = Arc::new(snapshot.with_memory(snapshot.head, snapshot.memory.clone()));
    let view = ViewReader::new(
        head,
        None,
        Regime::Commitment,
        Arc::new(ReadMetrics::new(false)),
    )
    .untimed();
    if snapshot.has_history() {
        rebuild_from_history(snapshot, scratch.path(), options, report);
    }
    let derived = match derive::derive(&view, scratch.path(), options.sort_memory_bytes, report) {
        Ok(derived) => derived,
        Err(problems) => {
            report.problems.extend(problems);
            return;
        }
    };
    report.computed_root = derived.root;
    if report.block.is_some() && report.computed_root != report.stored_root {
        report.problems.push(
            Error::RootMismatch {
                block: report.block.unwrap_or(0),
                stored: report.stored_root,
                computed: report.computed_root,
            }
            .to_string(),
        );
    }
    check_records(snapshot, derived, report);
}

/// Derives again, from the history's account, storage and code values
/// alone, the whole root of the kept block halfway between the oldest the
/// history rebuilds and redb's head (read below redb's head, through the
/// history files), which must be the root the block had.
fn rebuild_from_history(
    snapshot: &Snapshot,
    scratch: &Path,
    options: &VerifyOptions,
    report: &mut VerifyReport,
) {
    let (Some(db_head), (_, Some(from))) = (snapshot.db_head(), snapshot.history_kept()) else {
        return;
    };
    if db_head.block <= from {
        return;
    }
    let block = from + (db_head.block - from) / 2;
    let stored = match snapshot.stored_root_of(block) {
        Ok(Some(root)) => root,
        Ok(None) => {
            report.problems.push(format!(
                "history at block {block}: no stored root to rebuild it against"
            ));
            return;
        }
        Err(error) => {
            report
                .problems
                .push(format!("history at block {block}: {error}"));
            return;
        }
    };
    // redb and the files only: the history undoes what came after `block`.
    let below = Arc::new(snapshot.with_memory(Some(db_head), MemoryTier::default()));
    let view = ViewReader::deep(
        below,
        Arc::new(Overlay::default()),
        strata_types::Head {
            block,
            root: stored,
        },
        Regime::Commitment,
        Arc::new(ReadMetrics::new(false)),
    )
    .untimed();
    let mut rebuilt = VerifyReport {
        block: Some(block),
        ..VerifyReport::default()
    };
    let said = |problem: String| format!("history at block {block}: {problem}");
    match derive::derive(&view, scratch, options.sort_memory_bytes, &mut rebuilt) {
        Ok(derived) if derived.root == stored => report.history_rebuilt = Some(block),
        Ok(derived) => report.problems.push(said(format!(
            "its values give the root {}, the block had {stored}",
            derived.root
        ))),
        Err(problems) => report.problems.extend(problems.into_iter().map(said)),
    }
    report
        .problems
        .extend(rebuilt.problems.into_iter().map(said));
    report.sort_runs += rebuilt.sort_runs;
}

/// The history's tables against each other, and for up to 16 kept blocks
/// below redb's head the root record the history gives back: it must name
/// the block and carry the root `roots` keeps for it.
fn check_history(snapshot: &Snapshot, report: &mut VerifyReport) {
    match snapshot.check_history() {
        Ok((checked, problems)) => {
            report.history_checked += checked;
            report.problems.extend(problems);
        }
        Err(error) => report.problems.push(format!("history: {error}")),
    }
    let (Some(db_head), (_, Some(from))) = (snapshot.db_head(), snapshot.history_kept()) else {
        return;
    };
    let span = db_head.block.saturating_sub(from);
    let samples = span.min(16);
    for i in 0..samples {
        let block = from + span * i / samples.max(1);
        let read = snapshot.history_value_at(
            Domain::Commitment,
            strata_types::keys::ROOT_RECORD_KEY,
            block,
        );
        let head = match read {
            Ok(Some(Some(record))) => strata_types::Head::decode(&record),
            Ok(_) => None,
            Err(error) => {
                report
                    .problems
                    .push(format!("history at block {block}: {error}"));
                continue;
            }
        };
        match (head, snapshot.stored_root_of(block)) {
            (Some(head), Ok(stored)) if head.block == block && stored.is_none_or(|r| r == head.root) => {}
            (head, stored) => report.problems.push(format!(
                "history at block {block}: the root record it gives back is {head:?}, the roots table {stored:?}"
            )),
        }
    }
}

/// Compares the stored commitment records (and the root record) with the
/// records derived from the values, as a merge of two sorted streams.
fn check_records(snapshot: &Snapshot, derived: derive::Derived, report: &mut VerifyReport) {
    let derived_count = derived.record_count;
    let mut unreadable = None;
    let derived_records = derived.records.map_while(|pair| match pair {
        Ok(pair) => Some(pair),
        Err(e) => {
            unreadable = Some(e);
            None
        }
    });
    let mut comparer = records::RecordComparer::new(derived_records);
    let mut root_record = None;
    let walked = guarded("redb table `commitment` and the commitment files", || {
        snapshot.visit_live_range(Domain::Commitment, Vec::new(), &[], None, |key, record| {
            if key.as_ref() == ROOT_RECORD_KEY {
                root_record = Some(record);
            } else {
                comparer.stored(&key, &record);
            }
            true
        })
    });
    let diff = comparer.finish();
    if let Err(problem) = walked {
        report.problems.push(problem);
        report
            .problems
            .push("the commitment records were not checked: they could not be read".to_owned());
        return;
    }
    if let Some(e) = unreadable {
        report.problems.push(format!(
            "the commitment records were not checked: reading back the derived records: {e}"
        ));
        return;
    }
    let expected_root_record = snapshot.head.map(|head| head.encode());
    if root_record.as_deref() != expected_root_record.as_ref().map(|r| r.as_slice()) {
        report.problems.push(format!(
            "the commitment domain's root record ({}) does not hold the head ({})",
            root_record.map_or_else(|| "absent".to_owned(), |r| format!("0x{}", hex(r))),
            expected_root_record.map_or_else(|| "none".to_owned(), |r| format!("0x{}", hex(r)))
        ));
    }
    report.records_checked = diff.stored;
    report.record_differences = diff.total();
    if diff.total() > 0 {
        report.problems.push(format!(
            "{} commitment records differ from those the values imply: {} missing, {} extra, {} differing ({} derived, {} stored; the first {} follow)",
            diff.total(),
            diff.missing,
            diff.extra,
            diff.differing,
            derived_count,
            diff.stored,
            diff.listed.len()
        ));
        report.problems.extend(diff.listed);
    }
}

/// A db-tier record must be newer than every file version of its key: a file
/// covering steps after the db record's step would mean the db shadows a
/// newer value.
fn check_tiers_agree(snapshot: &Snapshot, domain: Domain) -> Result<Vec<String>> {
    let files = snapshot.files.files(domain);
    let mut problems = Vec::new();
    if files.is_empty() {
        return Ok(problems);
    }
    snapshot.visit_db_keys_and_steps(domain, |key, step| {
        for file in files {
            if file.meta().from_step > step && file.may_contain(key) && file.get(key)?.is_some() {
                problems.push(format!(
                    "{domain} key 0x{}: file {} (steps {}..{}) is newer than the db record at step {step}",
                    hex(key),
                    file.path().display(),
                    file.meta().from_step,
                    file.meta().to_step
                ));
            }
        }
        Ok(())
    })?;
    Ok(problems)
}
