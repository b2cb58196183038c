//! `strata root --datadir DIR`: print the last committed block and its
//! state root as `N 0x…` (also beside a writer that shares the datadir).

use std::path::PathBuf;

use clap::Args;

use strata_storage::Regime;

use super::datadir::{head_line, open_for_reading};
use crate::CliError;

/// Arguments of `strata root`.
#[derive(Debug, Clone, Args)]
pub struct RootArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(args: RootArgs) -> Result<(), CliError> {
    let access = open_for_reading(&args.datadir)?;
    let reader = access
        .reader(Regime::Exec)
        .map_err(CliError::storage(&args.datadir))?;
    println!("{}", head_line(&reader));
    Ok(())
}
