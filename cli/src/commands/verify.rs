//! `strata verify --datadir DIR`: re-check every file, the tiers' agreement
//! and the root recomputed from every live leaf; non-zero exit on problems.

use std::path::PathBuf;

use clap::Args;

use super::datadir::open_existing;
use crate::CliError;

/// Arguments of `strata verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(args: VerifyArgs) -> Result<(), CliError> {
    let db = open_existing(&args.datadir)?;
    let report = db.verify().map_err(CliError::storage(&args.datadir))?;
    let block = report
        .block
        .map_or_else(|| "none".to_owned(), |b| b.to_string());
    println!("block {block}");
    println!(
        "files checked {} ({} bytes)",
        report.files_checked, report.file_bytes
    );
    println!("accounts {} slots {}", report.accounts, report.slots);
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
