//! `strata init --genesis FILE --datadir DIR`: create a data directory from
//! a genesis (not wired yet; the genesis is already parsed and checked).

use std::path::PathBuf;

use clap::Args;
use strata_storage::genesis::parse_alloc_json;

use crate::CliError;

/// Arguments of `strata init`.
#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// A geth genesis JSON (with "alloc") or a bare alloc map.
    #[arg(long, value_name = "FILE")]
    pub genesis: PathBuf,
    /// The data directory to create.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
}

pub(super) fn run(args: InitArgs) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&args.genesis).map_err(CliError::file(&args.genesis))?;
    parse_alloc_json(&text).map_err(|source| CliError::Genesis {
        path: args.genesis.clone(),
        source: Box::new(source),
    })?;
    Err(CliError::NotWired { command: "init" })
}
