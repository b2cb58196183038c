//! `strata init --genesis FILE --datadir DIR`: create a data directory from
//! a genesis (geth genesis JSON or a bare alloc map) and print its root on
//! the last line. A datadir that already holds blocks is refused.

use std::path::PathBuf;

use clap::Args;
use strata_storage::StateDb;
use strata_storage::genesis::parse_alloc_json;

use super::datadir::inspect_options;
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
    let alloc = parse_alloc_json(&text).map_err(|source| CliError::Genesis {
        path: args.genesis.clone(),
        source: Box::new(source),
    })?;
    let db = StateDb::open(&args.datadir, inspect_options())
        .map_err(CliError::storage(&args.datadir))?;
    if let Some(block) = db.last_block() {
        return Err(CliError::AlreadyInitialized {
            path: args.datadir,
            block,
            root: db.root(),
        });
    }
    let root = db
        .init_genesis(&alloc)
        .map_err(CliError::storage(&args.datadir))?;
    let slots: usize = alloc.values().map(|a| a.storage.len()).sum();
    println!(
        "genesis: {} accounts, {slots} slots written to {} as block 0",
        alloc.len(),
        args.datadir.display()
    );
    println!("{root}");
    Ok(())
}
