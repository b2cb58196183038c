//! `strata stats --datadir DIR`: Print statistics of a data directory (not wired yet).

use std::path::PathBuf;

use clap::Args;

use crate::CliError;

/// Arguments of `strata stats`.
#[derive(Debug, Clone, Args)]
pub struct StatsArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(_args: StatsArgs) -> Result<(), CliError> {
    Err(CliError::NotWired { command: "stats" })
}
