//! `strata replay TRACE [--datadir DIR] [--genesis FILE] [--warmers LIST]
//! [--cache KINDS] [--json FILE] [--plot FILE.svg]` (not wired yet: the
//! arguments are parsed and the trace is opened, nothing is replayed).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::CliError;

/// Arguments of `strata replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The trace (JSON Lines, see TRACE_FORMAT.md).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Data directory (default: a temporary one, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub datadir: Option<PathBuf>,
    /// Genesis file, when the trace has no genesis line.
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
    /// Numbers of warmers to sweep, comma-separated (e.g. "0,1,2,4,8").
    #[arg(long, value_name = "LIST", default_value = "0", value_parser = warmer_list)]
    pub warmers: WarmerList,
    /// Branch caches to compare, comma-separated.
    #[arg(
        long,
        value_name = "KINDS",
        default_value = "sharded",
        value_delimiter = ','
    )]
    pub cache: Vec<CacheKind>,
    /// Write the measurements as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw the warmer sweep as an SVG plot.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// The list of warmer counts to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmerList(pub Vec<usize>);

fn warmer_list(text: &str) -> Result<WarmerList, String> {
    let counts = text
        .split(',')
        .map(|part| {
            part.trim().parse::<usize>().map_err(|_| {
                format!("invalid warmer count {part:?} (expected a list like \"0,2,4\")")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(WarmerList(counts))
}

/// A branch-cache implementation to replay with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CacheKind {
    /// The sharded quick_cache-based branch cache.
    Sharded,
    /// The single-mutex LRU baseline.
    Lru,
    /// No branch cache.
    None,
}

pub(super) fn run(args: ReplayArgs) -> Result<(), CliError> {
    std::fs::metadata(&args.trace).map_err(CliError::file(&args.trace))?;
    Err(CliError::NotWired { command: "replay" })
}
