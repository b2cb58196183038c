//! `strata verify --datadir DIR [--json] [--sort-memory MIB] [--temp-dir DIR]`: re-check the
//! journal (every segment, and the unwind data of the window: the state
//! rebuilt at each block has its root), every file, the tiers' agreement,
//! each account's code against its hash, every commitment record against
//! the values, the root recomputed from every live leaf, and redb's own
//! integrity check (on a copy-on-write view); non-zero exit on problems.
//!
//! The datadir is opened read-only and no byte of it changes; it may be on
//! a read-only mount or shared by a running `strata replay --share`.

use std::fmt::Write as _;
use std::panic::PanicHookInfo;
use std::path::{Path, PathBuf};

use alloy_primitives::B256;
use clap::Args;
use serde::Serialize;
use strata_storage::{VerifyOptions, VerifyReport};

use super::datadir::inspect_options;
use crate::host::total_memory_bytes;
use crate::output::{print_json, print_text};
use crate::scratch::{LockedDir, VERIFY_PREFIX, remove_stale};
use crate::{CliError, FlagError};

/// Arguments of `strata verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// Print the report as one JSON object (`ok`, the counts, both roots,
    /// every problem); the exit status is still non-zero when it is not ok.
    #[arg(long)]
    pub json: bool,
    /// Memory (MiB) the sorts of the derived commitment may hold before
    /// they spill runs to the temp folder; peak memory is this plus a fixed
    /// margin, whatever the state's size. 1 to 1,048,576 and at most the
    /// machine's memory (the budget is allocated at once).
    #[arg(long, value_name = "MIB", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=crate::arg_values::MAX_CACHE_MIB))]
    pub sort_memory: u64,
    /// Where those runs go (in a folder of their own, removed afterwards);
    /// default: the system's temp folder (TMPDIR). Never the datadir.
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
}

/// `strata verify --json`: the report.
#[derive(Debug, Serialize)]
struct VerifyJson<'a> {
    /// Whether nothing was found wrong.
    ok: bool,
    /// The block verified (`None` before the genesis).
    block: Option<u64>,
    files_checked: usize,
    file_bytes: u64,
    accounts: u64,
    slots: u64,
    codes_checked: u64,
    records_checked: u64,
    record_differences: u64,
    /// Journal frames read and checked.
    journal_frames: u64,
    /// Blocks of the unwind window whose unwind data rebuilt their root.
    unwind_blocks_checked: u64,
    /// History entries checked (a datadir that keeps history).
    history_checked: u64,
    /// The kept block whose root was derived again from the history.
    history_rebuilt: Option<u64>,
    /// Runs the sorts spilled to the temp folder.
    sort_runs: usize,
    /// redb's integrity check, when it ran.
    integrity: Option<IntegrityJson>,
    stored_root: B256,
    computed_root: B256,
    /// What failed, one sentence each (empty when ok).
    problems: &'a [String],
    /// What is not wrong but worth knowing (a torn tail the next writer
    /// cuts and keeps aside, segments it converts).
    notes: &'a [String],
}

/// What redb's integrity check cost.
#[derive(Debug, Serialize)]
struct IntegrityJson {
    db_bytes: u64,
    open_secs: f64,
    check_secs: f64,
}

impl<'a> VerifyJson<'a> {
    fn new(report: &'a VerifyReport) -> VerifyJson<'a> {
        VerifyJson {
            ok: report.is_ok(),
            block: report.block,
            files_checked: report.files_checked,
            file_bytes: report.file_bytes,
            accounts: report.accounts,
            slots: report.slots,
            codes_checked: report.codes_checked,
            records_checked: report.records_checked,
            record_differences: report.record_differences,
            journal_frames: report.journal_frames,
            unwind_blocks_checked: report.unwind_blocks_checked,
            history_checked: report.history_checked,
            history_rebuilt: report.history_rebuilt,
            sort_runs: report.sort_runs,
            integrity: report.integrity.map(|timing| IntegrityJson {
                db_bytes: timing.db_bytes,
                open_secs: timing.open.as_secs_f64(),
                check_secs: timing.check.as_secs_f64(),
            }),
            stored_root: report.stored_root,
            computed_root: report.computed_root,
            problems: &report.problems,
            notes: &report.notes,
        }
    }
}

pub(super) fn run(args: VerifyArgs) -> Result<(), CliError> {
    let sort_memory_bytes = sort_budget(args.sort_memory, total_memory_bytes())?;
    let scratch = scratch_folder(args.temp_dir.as_deref())?;
    let report = with_redb_panics_quiet(|| {
        strata_storage::verify_datadir(
            &args.datadir,
            &inspect_options(),
            &VerifyOptions {
                sort_memory_bytes,
                temp_dir: Some(scratch.path().to_owned()),
            },
        )
    })
    .map_err(CliError::storage(&args.datadir))?;
    if args.json {
        print_json(&VerifyJson::new(&report))?;
    } else {
        print_text(&text(&report))?;
    }
    if report.is_ok() {
        Ok(())
    } else {
        Err(CliError::VerifyFailed {
            path: args.datadir,
            count: report.problems.len(),
        })
    }
}

/// verify's scratch folder `strata-verify-XXXXXX` in `temp_dir` (default:
/// the system's temp folder), held locked while verify runs, after removing
/// the ones killed runs left there ([`crate::scratch`]). The sorts' own
/// folder goes inside it, so a kill at any moment leaves only this one.
fn scratch_folder(temp_dir: Option<&Path>) -> Result<LockedDir, CliError> {
    let parent = temp_dir.map_or_else(std::env::temp_dir, Path::to_owned);
    remove_stale(&parent, VERIFY_PREFIX);
    LockedDir::new_in(&parent, VERIFY_PREFIX).map_err(CliError::file(parent))
}

/// The sort budget in bytes for `--sort-memory MIB`, refused when it is more
/// than the machine's `memory` (bytes; unknown: only the argument's range
/// applies): the sorts allocate their arena whole, so a budget beyond the
/// memory would abort the process instead of failing.
fn sort_budget(mib: u64, memory: Option<u64>) -> Result<usize, CliError> {
    let bytes = mib << 20;
    if let Some(memory) = memory
        && bytes > memory
    {
        return Err(FlagError::SortMemory {
            mib,
            limit: format!("this machine's memory ({} MiB)", memory >> 20),
        }
        .into());
    }
    usize::try_from(bytes).map_err(|_| {
        FlagError::SortMemory {
            mib,
            limit: "this machine's address space".to_owned(),
        }
        .into()
    })
}

/// The text report, ending in `verify: ok` when nothing is wrong.
fn text(report: &VerifyReport) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_text(&mut out, report);
    out
}

fn write_text(out: &mut String, report: &VerifyReport) -> std::fmt::Result {
    let block = report
        .block
        .map_or_else(|| "none".to_owned(), |b| b.to_string());
    writeln!(out, "block {block}")?;
    writeln!(
        out,
        "files checked {} ({} bytes)",
        report.files_checked, report.file_bytes
    )?;
    writeln!(out, "accounts {} slots {}", report.accounts, report.slots)?;
    writeln!(out, "codes checked {}", report.codes_checked)?;
    writeln!(
        out,
        "commitment records checked {} (differences {})",
        report.records_checked, report.record_differences
    )?;
    writeln!(
        out,
        "journal frames checked {} (unwind data rebuilds the root of {} blocks)",
        report.journal_frames, report.unwind_blocks_checked
    )?;
    if report.history_checked > 0 {
        writeln!(
            out,
            "history entries checked {} (and the roots its sampled blocks give back)",
            report.history_checked
        )?;
    }
    if let Some(block) = report.history_rebuilt {
        writeln!(
            out,
            "history: block {block}'s root derived again from its account, storage and code values"
        )?;
    }
    if report.sort_runs > 0 {
        writeln!(out, "sort runs spilled {}", report.sort_runs)?;
    }
    if let Some(timing) = report.integrity {
        writeln!(
            out,
            "redb integrity check of {} bytes (copy-on-write view): open {:.3} s, check {:.3} s",
            timing.db_bytes,
            timing.open.as_secs_f64(),
            timing.check.as_secs_f64()
        )?;
    }
    writeln!(out, "stored root   {}", report.stored_root)?;
    writeln!(out, "computed root {}", report.computed_root)?;
    for note in &report.notes {
        writeln!(out, "note: {note}")?;
    }
    for problem in &report.problems {
        writeln!(out, "problem: {problem}")?;
    }
    if report.is_ok() {
        writeln!(out, "verify: ok")?;
    }
    Ok(())
}

/// Runs `f` with the panic hook silent for panics raised inside redb:
/// verify catches those and reports them as problems naming the table, so
/// the hook's "thread panicked" text would only be noise. Any other panic
/// is still printed.
fn with_redb_panics_quiet<T>(f: impl FnOnce() -> T) -> T {
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let fallback = previous.clone();
    std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
        if !raised_in_redb(info) {
            fallback(info);
        }
    }));
    let out = f();
    drop(std::panic::take_hook());
    std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| previous(info)));
    out
}

/// Whether the panic's location is in redb's source.
fn raised_in_redb(info: &PanicHookInfo<'_>) -> bool {
    info.location().is_some_and(|location| {
        let file = location.file().replace('\\', "/");
        file.contains("/redb-") && file.contains("/src/")
    })
}
