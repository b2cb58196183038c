//! `strata root --datadir DIR`: print the last committed block and its
//! state root as `N 0x…`.

use std::path::PathBuf;

use clap::Args;

use super::datadir::{head_line, open_existing};
use crate::CliError;

/// Arguments of `strata root`.
#[derive(Debug, Clone, Args)]
pub struct RootArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(args: RootArgs) -> Result<(), CliError> {
    let db = open_existing(&args.datadir)?;
    println!("{}", head_line(&db));
    Ok(())
}
