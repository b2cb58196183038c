//! `strata unwind --datadir DIR --to N`: restore block N, one of the last
//! blocks whose unwind data the datadir keeps (128 by default), and print
//! the new head as `N 0x…`. It also takes back a block that an older
//! version committed although its root did not match the trace.

use std::path::PathBuf;

use clap::Args;
use strata_storage::Regime;

use super::datadir::{head_line, open_existing};
use crate::CliError;

/// Arguments of `strata unwind`.
#[derive(Debug, Clone, Args)]
pub struct UnwindArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// The block to restore (at most `unwind_depth` blocks below the head).
    #[arg(long, value_name = "N")]
    pub to: u64,
}

pub(super) fn run(args: UnwindArgs) -> Result<(), CliError> {
    let db = open_existing(&args.datadir)?;
    let Some(last) = db.last_block() else {
        return Err(CliError::Usage(format!(
            "datadir {} holds no blocks: there is nothing to unwind",
            args.datadir.display()
        )));
    };
    db.unwind_to(args.to)
        .map_err(CliError::storage(&args.datadir))?;
    if args.to < last {
        eprintln!(
            "unwound {} from block {last} to block {}",
            args.datadir.display(),
            args.to
        );
    }
    println!("{}", head_line(&db.reader(Regime::Exec)));
    Ok(())
}
