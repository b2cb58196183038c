//! `strata root --datadir DIR`: Print the state root of a data directory (not wired yet).

use std::path::PathBuf;

use clap::Args;

use crate::CliError;

/// Arguments of `strata root`.
#[derive(Debug, Clone, Args)]
pub struct RootArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(_args: RootArgs) -> Result<(), CliError> {
    Err(CliError::NotWired { command: "root" })
}
