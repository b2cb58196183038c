//! `strata verify --datadir DIR`: re-check every file, the tiers' agreement,
//! each account's code against its hash, every commitment record against
//! the values, the root recomputed from every live leaf, and redb's own
//! integrity check (on a copy-on-write view); non-zero exit on problems.
//!
//! The datadir is opened read-only and no byte of it changes; it may be on
//! a read-only mount or shared by a running `strata replay --share`.

use std::panic::PanicHookInfo;
use std::path::PathBuf;

use clap::Args;

use super::datadir::inspect_options;
use crate::CliError;

/// Arguments of `strata verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(args: VerifyArgs) -> Result<(), CliError> {
    let report = with_redb_panics_quiet(|| {
        strata_storage::verify_datadir(&args.datadir, &inspect_options())
    })
    .map_err(CliError::storage(&args.datadir))?;
    let block = report
        .block
        .map_or_else(|| "none".to_owned(), |b| b.to_string());
    println!("block {block}");
    println!(
        "files checked {} ({} bytes)",
        report.files_checked, report.file_bytes
    );
    println!("accounts {} slots {}", report.accounts, report.slots);
    println!("codes checked {}", report.codes_checked);
    println!(
        "commitment records checked {} (differences {})",
        report.records_checked, report.record_differences
    );
    if let Some(timing) = report.integrity {
        println!(
            "redb integrity check of {} bytes (copy-on-write view): open {:.3} s, check {:.3} s",
            timing.db_bytes,
            timing.open.as_secs_f64(),
            timing.check.as_secs_f64()
        );
    }
    println!("stored root   {}", report.stored_root);
    println!("computed root {}", report.computed_root);
    for problem in &report.problems {
        println!("problem: {problem}");
    }
    if report.is_ok() {
        println!("verify: ok");
        Ok(())
    } else {
        Err(CliError::VerifyFailed {
            path: args.datadir,
            count: report.problems.len(),
        })
    }
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
