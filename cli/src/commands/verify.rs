//! `strata verify --datadir DIR`: Verify the stored state root of a data directory (not wired yet).

use std::path::PathBuf;

use clap::Args;

use crate::CliError;

/// Arguments of `strata verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(_args: VerifyArgs) -> Result<(), CliError> {
    Err(CliError::NotWired { command: "verify" })
}
