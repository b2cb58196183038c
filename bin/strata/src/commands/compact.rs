//! `strata compact --datadir DIR`: collate, merge and prune now, and print
//! what was done.

use std::path::PathBuf;

use clap::Args;

use super::datadir::open_existing;
use crate::CliError;
use crate::output::Lines;

/// Arguments of `strata compact`.
#[derive(Debug, Clone, Args)]
pub struct CompactArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(args: CompactArgs) -> Result<(), CliError> {
    let db = open_existing(&args.datadir)?;
    let report = db.compact().map_err(CliError::storage(&args.datadir))?;
    db.close().map_err(CliError::storage(&args.datadir))?;
    let mut out = Lines::default();
    for (domain, from, to, entries) in &report.collated {
        out.line(format_args!(
            "collated {domain} steps {from}..{to}: {entries} entries"
        ));
    }
    for (domain, from, to, entries) in &report.merged {
        out.line(format_args!(
            "merged {domain} steps {from}..{to}: {entries} entries"
        ));
    }
    out.line(format_args!(
        "compact: {} file(s) collated, {} merged, {} db entries pruned",
        report.collated.len(),
        report.merged.len(),
        report.pruned
    ));
    out.print()
}
