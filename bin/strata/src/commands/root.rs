//! `strata root --datadir DIR [--json]`: print the last committed block and
//! its state root as `N 0x…` (also beside a writer that shares the datadir).

use std::path::PathBuf;

use alloy_primitives::B256;
use clap::Args;
use serde::Serialize;

use strata_storage::Regime;

use super::datadir::{head_line, open_for_reading};
use crate::CliError;
use crate::output::{print_json, print_text};

/// Arguments of `strata root`.
#[derive(Debug, Clone, Args)]
pub struct RootArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// Print one JSON object (`{"block": N, "root": "0x…"}`; block null
    /// before the genesis) instead of `N 0x…`.
    #[arg(long)]
    pub json: bool,
}

/// `strata root --json`: the head of a datadir.
#[derive(Debug, Serialize)]
struct RootJson {
    /// The last committed block (`None` before the genesis).
    block: Option<u64>,
    /// Its state root.
    root: B256,
}

pub(super) fn run(args: RootArgs) -> Result<(), CliError> {
    let access = open_for_reading(&args.datadir)?;
    let reader = access
        .reader(Regime::Exec)
        .map_err(CliError::storage(&args.datadir))?;
    if args.json {
        print_json(&RootJson {
            block: reader.block(),
            root: reader.root(),
        })
    } else {
        print_text(&format!("{}\n", head_line(&reader)))
    }
}
