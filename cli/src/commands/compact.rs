//! `strata compact --datadir DIR`: Collate, merge and prune a data directory (not wired yet).

use std::path::PathBuf;

use clap::Args;

use crate::CliError;

/// Arguments of `strata compact`.
#[derive(Debug, Clone, Args)]
pub struct CompactArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(_args: CompactArgs) -> Result<(), CliError> {
    Err(CliError::NotWired { command: "compact" })
}
