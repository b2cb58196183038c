//! `strata import-chain FILE.rlp --datadir D --genesis G.json`: execute a
//! file of RLP blocks on top of a genesis over strata (the `geth import` /
//! `reth import` workflow), every block checked against its header and its
//! state root, resuming after the datadir's last block; with replay's
//! report (Mgas/s, per-block phases, read latency per regime and tier), a
//! warmers sweep, the in-memory baseline (`--baseline memory`) and a block
//! trace of what the execution read and wrote (`--trace-out`).

mod baseline;
mod chain_file;
mod progress;
mod report;
mod run;
mod start;
mod trace_out;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use strata_executor::{GenesisBlock, StatePath};
use strata_storage::{Durability, Options};

use super::ef_test::state_path;
use super::replay::{MAX_CACHE_MIB, WarmerList, copy_datadir, format_bytes, warmer_list};
use crate::CliError;
use crate::output::Lines;
use run::{Import, ImportRun};
use start::ChainStart;
use trace_out::TraceOut;

/// Arguments of `strata import-chain`.
#[derive(Debug, Clone, Args)]
pub struct ImportChainArgs {
    /// The blocks: RLP, one after the other, from the block after the
    /// genesis — or, without --genesis, from any block after one the
    /// datadir holds (`geth export` writes this).
    #[arg(value_name = "FILE.rlp")]
    pub chain: PathBuf,
    /// Data directory: created from the genesis when new; an existing one
    /// resumes after its last block (the file's earlier blocks are checked
    /// against it and skipped).
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// The chain's geth genesis JSON: `config` (chain id, fork blocks and
    /// times), header fields and `alloc`. Without it the datadir must exist
    /// and record the chain (`init --state … --chain …`, or an earlier
    /// import): its configuration gives the fork rules, and the header of
    /// the block the file's first block builds on, the parent.
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
    /// Numbers of warmers to sweep, comma-separated (e.g. "0,16"). With
    /// more than one, every run imports into a copy of the datadir, which
    /// is left as it was.
    #[arg(long, value_name = "LIST", default_value = "0", value_parser = warmer_list)]
    pub warmers: WarmerList,
    /// Also execute the same blocks over revm's in-memory database
    /// preloaded with the genesis, and print both and their ratio.
    #[arg(long, value_name = "DATABASE")]
    pub baseline: Option<Baseline>,
    /// Write what each block's execution read and wrote as a block trace
    /// (TRACE_FORMAT.md) that `strata replay` replays without the EVM.
    /// Needs a new datadir (the trace starts at the genesis).
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace_out: Option<PathBuf>,
    /// Write the measurements as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// fsync every N-th block commit (1: every block).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub sync_every: u64,
    /// How the EVM reaches strata's state: `writer` (the block writer as
    /// revm's database: the default, the faster) or `bundle` (revm's State
    /// over a reader, its bundle applied after the block, as reth does);
    /// "bundle,writer" sweeps both. --trace-out runs the bundle path.
    #[arg(long, value_name = "PATH", default_value = "writer", value_delimiter = ',',
          value_parser = state_path)]
    pub state_path: Vec<StatePath>,
    /// Branch cache capacity in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_MIB))]
    pub cache_mib: u64,
}

/// The database the baseline executes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Baseline {
    /// revm's `CacheDB`, preloaded with the genesis allocation.
    Memory,
}

pub(super) fn run(args: ImportChainArgs) -> Result<(), CliError> {
    let start = match &args.genesis {
        Some(path) => ChainStart::genesis(GenesisBlock::read(path)?),
        None => ChainStart::from_datadir(&args.datadir, &args.chain)?,
    };
    if start.genesis.is_none() && (args.trace_out.is_some() || args.baseline.is_some()) {
        return Err(CliError::Usage(
            "--trace-out and --baseline start from the genesis allocation: give --genesis".into(),
        ));
    }
    let combos: Vec<(usize, StatePath)> = args
        .warmers
        .0
        .iter()
        .flat_map(|&warmers| args.state_path.iter().map(move |&state| (warmers, state)))
        .collect();
    let sweep = combos.len() > 1;
    if sweep && args.trace_out.is_some() {
        return Err(CliError::Usage(
            "--trace-out with a sweep: give one warmer count and one state path".into(),
        ));
    }
    let mut trace_out = args
        .trace_out
        .as_deref()
        .map(TraceOut::create)
        .transpose()?;
    if sweep {
        // Every run starts from the same store: the datadir, brought to
        // the genesis when new, then copied per run.
        if let Some(genesis) = &start.genesis {
            prepare_datadir(&args, genesis)?;
        }
    }
    let mut runs: Vec<ImportRun> = Vec::new();
    for (index, &(warmers, state)) in combos.iter().enumerate() {
        if sweep {
            eprintln!(
                "run {}/{}: warmers {warmers}, state path {}",
                index + 1,
                combos.len(),
                path_name(state)
            );
        }
        let copy = sweep.then(|| copy_datadir(&args.datadir)).transpose()?;
        let datadir = copy.as_ref().map_or(args.datadir.as_path(), |c| c.path());
        let run = Import {
            chain: &args.chain,
            datadir,
            start: &start,
            options: options(&args, warmers),
            trace_out: trace_out.as_mut(),
            state,
            progress: true,
        }
        .run()?;
        let mut out = Lines::default();
        report::print_run(&mut out, &run);
        out.print()?;
        runs.push(run);
    }
    let first = &runs[0];
    if let Some(other) = runs.iter().find(|r| r.final_root != first.final_root) {
        return Err(CliError::SweepDisagrees(format!(
            "warmers {} ({}) ended at {}, warmers {} ({}) at {}",
            first.warmers,
            path_name(first.state),
            first.final_root,
            other.warmers,
            path_name(other.state),
            other.final_root
        )));
    }
    let baseline = match (args.baseline, &start.genesis) {
        (Some(Baseline::Memory), Some(genesis)) => {
            Some(baseline::run(&args.chain, genesis, first.resumed_after)?)
        }
        _ => None,
    };
    let mut out = Lines::default();
    if let Some(baseline) = &baseline {
        report::print_baseline(&mut out, baseline, first);
    }
    if sweep {
        report::print_sweep(&mut out, &runs);
    }
    if let Some(path) = &args.json {
        report::write_json(path, &args.chain, start.hash, &runs, baseline.as_ref())?;
    }
    out.line(format_args!(
        "peak RSS {}",
        format_bytes(crate::commands::replay::peak_rss_bytes())
    ));
    out.line(format_args!(
        "final root {} at block {}",
        first.final_root,
        first
            .final_block
            .map_or_else(|| "none".to_owned(), |b| b.to_string())
    ));
    out.print()
}

/// `bundle` or `writer`.
pub(crate) fn path_name(state: StatePath) -> &'static str {
    match state {
        StatePath::Bundle => "bundle",
        StatePath::Writer => "writer",
    }
}

/// A new datadir gets its genesis (a sweep copies it per run).
fn prepare_datadir(args: &ImportChainArgs, genesis: &GenesisBlock) -> Result<(), CliError> {
    let db = strata_storage::StateDb::open(&args.datadir, options(args, 0))
        .map_err(CliError::storage(&args.datadir))?;
    if db.last_block().is_none() {
        db.init_genesis_with_header(&genesis.alloc, genesis.hash, genesis.header_rlp())
            .map_err(CliError::storage(&args.datadir))?;
        db.set_chain_config(&genesis.recorded_config())
            .map_err(CliError::storage(&args.datadir))?;
    }
    db.close().map_err(CliError::storage(&args.datadir))
}

/// The store's options for a run with `warmers`.
fn options(args: &ImportChainArgs, warmers: usize) -> Options {
    Options {
        warmers,
        cache_bytes: args.cache_mib << 20,
        read_metrics: true,
        background_maintenance: true,
        durability: match args.sync_every {
            1 => Durability::EveryBlock,
            n => Durability::EveryN(n),
        },
        ..Options::default()
    }
}
