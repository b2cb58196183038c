//! `strata ef-test PATH... [--json FILE] [--filter TEXT]`: runs Ethereum's
//! BlockchainTests through the executor over strata, one fresh store per
//! case (like geth's `evm blocktest`): every block's state root, every
//! invalid block refused (the report says by which check), the head, and
//! the post state read back. Prints passed / failed / skipped per network
//! and per folder and every failure with its first difference; exits
//! non-zero on any failure.

use std::path::PathBuf;

use clap::Args;
use strata_executor::StatePath;
use strata_executor::ef_tests::{RunOptions, run_paths};

use crate::CliError;
use crate::output::Lines;
use crate::output_file::{OutputFile, Protected};
use crate::scratch::{EF_TEST_PREFIX, LockedDir, remove_stale};

/// Arguments of `strata ef-test`.
#[derive(Debug, Clone, Args)]
pub struct EfTestArgs {
    /// BlockchainTests fixture files, or folders searched for `.json` files.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Also write the report as JSON to FILE: totals, per network and
    /// folder, the refusing checks, every failure and skip (written beside
    /// FILE and renamed into place; never inside a PATH it reads).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run only the cases whose file path or case name contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// How the EVM reaches strata's state: `writer` (the block writer as
    /// revm's database: the default) or `bundle` (revm's State over a
    /// reader, its bundle applied after the block, as reth does).
    #[arg(long, value_name = "PATH", default_value = "writer", value_parser = state_path)]
    pub state_path: StatePath,
    /// Threads that run each Amsterdam block's transactions ahead of their
    /// turn from the block's access list, on the writer path (0: one after
    /// the other). The block's result is the serial one either way. At
    /// most 64.
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = crate::arg_values::transaction_workers)]
    pub transaction_workers: usize,
}

/// `bundle` or `writer`.
pub(crate) fn state_path(text: &str) -> Result<StatePath, String> {
    match text {
        "bundle" => Ok(StatePath::Bundle),
        "writer" => Ok(StatePath::Writer),
        other => Err(format!(
            "unknown state path {other:?} (expected bundle or writer)"
        )),
    }
}

/// Runs `strata ef-test`.
pub(crate) fn run(args: EfTestArgs) -> Result<(), CliError> {
    // The report never replaces a fixture: checked before anything runs.
    let mut protected = args.paths.iter().fold(Protected::new(), |protected, path| {
        protected.input_path("PATH", path)
    });
    let json = args
        .json
        .as_deref()
        .map(|path| OutputFile::create("--json", path, &mut protected))
        .transpose()?;
    let scratch = scratch_folder()?;
    let report = run_paths(
        &args.paths,
        args.filter.as_deref(),
        scratch.path(),
        RunOptions {
            state: args.state_path,
            transaction_workers: args.transaction_workers,
        },
        |done, total| {
            if done % 100 == 0 || done == total {
                tracing::info!(done, total, "ef-test: fixture files");
            }
        },
    )
    .map_err(|error| CliError::EfTest(Box::new(error)))?;
    if let Some(file) = json {
        file.write_json(&report.to_json())?;
    }
    let mut lines = Lines::default();
    for line in report.lines() {
        lines.line(line);
    }
    lines.print()?;
    let total = report.total();
    if total.failed > 0 {
        return Err(CliError::EfTestFailed {
            failed: total.failed,
            cases: report.cases.len(),
        });
    }
    Ok(())
}

/// The folder of the cases' stores, `strata-ef-test-XXXXXX` in the system's
/// temp folder, held locked while the run lasts, after removing the ones
/// killed runs left there ([`crate::scratch`]).
fn scratch_folder() -> Result<LockedDir, CliError> {
    let parent = std::env::temp_dir();
    remove_stale(&parent, EF_TEST_PREFIX);
    LockedDir::new_in(&parent, EF_TEST_PREFIX).map_err(CliError::file(parent))
}
