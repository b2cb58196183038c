//! `strata import-chain FILE.rlp --datadir D --genesis G.json`: execute a
//! file of RLP blocks on top of a genesis over strata (the `geth import` /
//! `reth import` workflow), every block checked against its header and its
//! state root, resuming after the datadir's last block; with replay's
//! report (Mgas/s, per-block phases, read latency per regime and tier), a
//! warmers sweep, cold runs (`--cold`), each block prefetched from a block
//! trace's access list (`--prefetch`), the in-memory baseline (`--baseline
//! memory`, from the genesis or a state dump) and a block trace of what the
//! execution read and wrote (`--trace-out`).

mod access_lists;
mod ahead;
mod baseline;
mod chain_file;
mod prefetch;
mod progress;
mod report;
mod rlp_items;
mod run;
mod start;
mod trace_out;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use strata_executor::{AccessListUse, GenesisBlock, RootTiming, StatePath};
use strata_storage::{Durability, HistoryRetention, Options};

use super::ef_test::state_path;
use super::replay::copy_datadir;
use crate::arg_values::{MAX_CACHE_MIB, WarmerList, warmer_list};
use crate::host::format_bytes;
use crate::output::Lines;
use crate::output_file::{OutputFile, Protected};
use crate::{CliError, FlagError};
pub use ahead::SendersTiming;
use baseline::BaselineStart;
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
    /// preloaded with the genesis (or, without --genesis, the
    /// --baseline-state dump), and print both and their ratio.
    #[arg(long, value_name = "DATABASE")]
    pub baseline: Option<Baseline>,
    /// The state dump `--baseline memory` starts from when there is no
    /// --genesis (the datadir made by `init --state FILE --chain …`): the
    /// file `init --state` reads (first line {"root": …}, then an account
    /// per line; gen-chain writes state.jsonl). It must be the state of the
    /// block the file's first block builds on: its root is checked against
    /// that block's header, and its accounts against its root.
    #[arg(
        long,
        value_name = "FILE",
        requires = "baseline",
        conflicts_with = "genesis"
    )]
    pub baseline_state: Option<PathBuf>,
    /// Write what each block's execution read and wrote as a block trace
    /// (book/src/reference/formats/trace.md) that `strata replay` replays without the EVM.
    /// The trace starts where the chain does: with --genesis, a new
    /// datadir and the trace's genesis line; without, a datadir still at
    /// the block the file's first block builds on (as `init --state` left
    /// it) and no genesis line — replay it with `--genesis` of that state
    /// (gen-chain's state.jsonl or genesis.json), or prefetch from it.
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace_out: Option<PathBuf>,
    /// Prefetch each block from its access list in this block trace (what
    /// `--trace-out` wrote for the same chain; book/src/reference/formats/trace.md): as soon
    /// as the block's writer is open (its header checked), the warmers load
    /// every account, slot and trie path the trace lists for it, while its
    /// body is checked, its senders recovered and it is executed. The trace's block must carry the header's state root.
    /// Does nothing with 0 warmers: give --warmers.
    #[arg(long, value_name = "TRACE")]
    pub prefetch: Option<PathBuf>,
    /// The access lists of the chain's Amsterdam blocks (EIP-7928), each
    /// the RLP its header's blockAccessListHash hashes, in block order
    /// (gen-chain --fork amsterdam writes access-lists.rlp). Each list is
    /// checked against its header as it is read and against what the
    /// block's execution builds; without the file each block's built list
    /// is checked against its header alone.
    #[arg(long, value_name = "FILE")]
    pub access_lists: Option<PathBuf>,
    /// What the --access-lists lists are used for: `use` (the default:
    /// each block's root is computed from its list's post-state on a
    /// thread of its own while the EVM runs, and with --warmers the store's
    /// warmers load everything the list names as soon as the block's writer
    /// is open) or `ignore` (checked only, the block runs as if it had
    /// none); "use,ignore" sweeps both.
    #[arg(long, value_name = "USE", default_value = "use", value_delimiter = ',',
          value_parser = access_list_use, requires = "access_lists")]
    pub access_list: Vec<AccessListUse>,
    /// Threads that run each Amsterdam block's transactions ahead of their
    /// turn from its access list when the list is used (writer path): each
    /// transaction runs over the state before the block with the list's
    /// changes of the steps before it, and is committed in its turn when
    /// every value it read still holds (else executed again). 0 (the
    /// default): one after the other; "0,2" sweeps both. At most 64.
    #[arg(long, value_name = "N", default_value = "0", value_delimiter = ',',
          value_parser = crate::arg_values::transaction_workers)]
    pub transaction_workers: Vec<usize>,
    /// Start every run cold: after the genesis (or the resume check) the
    /// store is closed, the datadir's files are evicted from the page cache
    /// (posix_fadvise) and the store is reopened with empty caches before
    /// the first block.
    #[arg(long)]
    pub cold: bool,
    /// Let other processes follow the datadir read-only while the import
    /// writes it (`strata serve`, `strata observe`): needs every commit
    /// durable (--sync-every 1), and one run (no sweep: a sweep imports
    /// into copies).
    #[arg(long)]
    pub share: bool,
    /// How much history the datadir keeps when this command creates it:
    /// `off` (reads at the last 128 blocks only, from the journal: the
    /// default), `full` (reads and proofs at every block from the first),
    /// or a number of blocks. Fixed when the datadir is made; for an
    /// existing datadir it must be what the datadir recorded.
    #[arg(long, value_name = "off|full|N")]
    pub history: Option<HistoryRetention>,
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
    /// When strata computes each block's state root: `streamed` (folded on
    /// a root thread as each transaction ends, so the block waits only for
    /// the last fold: the default) or `after` (over all the block's writes
    /// after its last transaction); "streamed,after" sweeps both. The
    /// bundle path computes it after the block.
    #[arg(long, value_name = "WHEN", default_value = "streamed", value_delimiter = ',',
          value_parser = root_timing)]
    pub root: Vec<RootTiming>,
    /// When each block's senders are recovered from its signatures: `ahead`
    /// (on a thread that reads the file one block ahead, while the block
    /// before executes and commits: the default) or `inline` (by the
    /// executor, before the block's EVM); "ahead,inline" sweeps both.
    #[arg(long, value_name = "WHEN", default_value = "ahead", value_delimiter = ',',
          value_parser = SendersTiming::parse)]
    pub senders: Vec<SendersTiming>,
    /// Whether the branch cache is warmed before the first block: the
    /// account trie's top levels read into it at open and after the
    /// genesis, whole levels within a quarter of --cache-mib (at 1M
    /// accounts the root and four levels, about 70,000 records). `on` (the
    /// default) or `off`; "off,on" sweeps both.
    #[arg(long, value_name = "ON|OFF", default_value = "on", value_delimiter = ',',
          value_parser = crate::arg_values::on_off)]
    pub warm_start: Vec<bool>,
    /// Branch cache capacity in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_MIB))]
    pub cache_mib: u64,
    /// Flush the memory tier to redb in the background once its blocks hold
    /// this many MiB of keys and values.
    #[arg(long, value_name = "MIB", default_value_t = Options::default().flush_batch_bytes >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_MIB))]
    pub flush_mib: u64,
    /// The memory tier's budget: a commit that finds it fuller waits for
    /// the flush (at least --flush-mib).
    #[arg(long, value_name = "MIB", default_value_t = Options::default().memory_budget_bytes >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_MIB))]
    pub memory_mib: u64,
}

/// The database the baseline executes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Baseline {
    /// revm's `CacheDB`, preloaded with the genesis allocation (or the
    /// `--baseline-state` dump).
    Memory,
}

pub(super) fn run(args: ImportChainArgs) -> Result<(), CliError> {
    if args.memory_mib < args.flush_mib {
        return Err(FlagError::MemoryBelowFlush {
            memory_mib: args.memory_mib,
            flush_mib: args.flush_mib,
        }
        .into());
    }
    if args.share && args.sync_every > 1 {
        return Err(FlagError::NeedsDurableCommits {
            flag: "--share",
            sync_every: args.sync_every,
        }
        .into());
    }
    // The outputs first: checked against the datadir and the inputs before
    // anything is read or opened, and written beside their targets.
    let mut protected = Protected::new()
        .datadir(&args.datadir)
        .input("FILE.rlp", &args.chain)
        .input_opt("--genesis", args.genesis.as_deref())
        .input_opt("--prefetch", args.prefetch.as_deref())
        .input_opt("--access-lists", args.access_lists.as_deref())
        .input_opt("--baseline-state", args.baseline_state.as_deref());
    let trace_file = args
        .trace_out
        .as_deref()
        .map(|path| OutputFile::create("--trace-out", path, &mut protected))
        .transpose()?;
    let json_file = args
        .json
        .as_deref()
        .map(|path| OutputFile::create("--json", path, &mut protected))
        .transpose()?;
    let start = match &args.genesis {
        Some(path) => ChainStart::genesis(GenesisBlock::read(path)?),
        None => ChainStart::from_datadir(&args.datadir, &args.chain)?,
    };
    let baseline_start = match (&args.baseline, &args.baseline_state, &start.genesis) {
        (None, _, _) => None,
        (Some(Baseline::Memory), Some(dump), _) => {
            // Its root and accounts, before anything is imported.
            baseline::check_dump(dump, &start)?;
            Some(BaselineStart::Dump(dump))
        }
        (Some(Baseline::Memory), None, Some(_)) => Some(BaselineStart::Genesis),
        (Some(Baseline::Memory), None, None) => {
            return Err(FlagError::BaselineNeedsState {
                starts: "preloads the state the file's first block builds on",
            }
            .into());
        }
    };
    let mut combos: Vec<RunSettings> = Vec::new();
    for &warmers in &args.warmers.0 {
        for &state in &args.state_path {
            for &root in &args.root {
                for &senders in &args.senders {
                    for &lists in &args.access_list {
                        for &transaction_workers in &args.transaction_workers {
                            for &warm_start in &args.warm_start {
                                combos.push(RunSettings {
                                    warmers,
                                    state,
                                    root,
                                    senders,
                                    lists,
                                    transaction_workers,
                                    warm_start,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    let sweep = combos.len() > 1;
    if sweep && (args.trace_out.is_some() || args.share) {
        let flag = if args.share { "--share" } else { "--trace-out" };
        return Err(FlagError::NotWithSweep { flag }.into());
    }
    let mut trace_out = trace_file.map(TraceOut::new);
    if sweep {
        // Every run starts from the same store: the datadir, brought to
        // the genesis when new, then copied per run.
        if let Some(genesis) = &start.genesis {
            prepare_datadir(&args, genesis)?;
        }
    }
    let mut runs: Vec<ImportRun> = Vec::new();
    for (index, settings) in combos.iter().enumerate() {
        let RunSettings {
            warmers,
            state,
            root,
            senders,
            lists,
            transaction_workers,
            warm_start,
        } = *settings;
        if sweep {
            eprintln!(
                "run {}/{}: warmers {warmers}, state path {}, root {}, senders {}, access lists {}, transaction workers {transaction_workers}, warm start {}",
                index + 1,
                combos.len(),
                path_name(state),
                root_name(root),
                senders.name(),
                access_list_name(lists),
                on_off_name(warm_start)
            );
        }
        let copy = sweep.then(|| copy_datadir(&args.datadir)).transpose()?;
        let datadir = copy.as_ref().map_or(args.datadir.as_path(), |c| c.path());
        let run = Import {
            chain: &args.chain,
            datadir,
            start: &start,
            options: options(&args, warmers).with_warm_start(warm_start),
            trace_out: trace_out.as_mut(),
            state,
            root,
            senders,
            cold: args.cold,
            prefetch: args.prefetch.as_deref(),
            access_lists: args.access_lists.as_deref(),
            access_list: lists,
            transaction_workers,
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
        let run = |run: &ImportRun| {
            format!(
                "warmers {} ({}, root {})",
                run.warmers,
                path_name(run.state),
                root_name(run.root)
            )
        };
        return Err(CliError::SweepDisagrees {
            first_run: run(first),
            first_root: first.final_root,
            other_run: run(other),
            other_root: other.final_root,
        });
    }
    let baseline = baseline_start
        .map(|state| baseline::run(&args.chain, &start, state, first.resumed_after))
        .transpose()?;
    let mut out = Lines::default();
    if let Some(baseline) = &baseline {
        report::print_baseline(&mut out, baseline, first);
    }
    if sweep {
        report::print_sweep(&mut out, &runs);
    }
    if let Some(out) = trace_out {
        out.finish()?;
    }
    if let Some(file) = json_file {
        report::write_json(file, &args.chain, start.hash, &runs, baseline.as_ref())?;
    }
    out.line(format_args!(
        "peak RSS {}",
        format_bytes(crate::host::peak_rss_bytes())
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

/// `streamed` or `after`: [`RootTiming`] as `--root` names it.
pub(crate) fn root_name(root: RootTiming) -> &'static str {
    match root {
        RootTiming::Streamed => "streamed",
        RootTiming::AfterBlock => "after",
    }
}

/// Parses a `--root` value.
fn root_timing(text: &str) -> Result<RootTiming, String> {
    match text {
        "streamed" => Ok(RootTiming::Streamed),
        "after" => Ok(RootTiming::AfterBlock),
        other => Err(format!(
            "unknown root timing {other:?} (expected streamed or after)"
        )),
    }
}

/// One run of a sweep: a value of each swept setting.
#[derive(Clone, Copy)]
struct RunSettings {
    warmers: usize,
    state: StatePath,
    root: RootTiming,
    senders: SendersTiming,
    lists: AccessListUse,
    transaction_workers: usize,
    warm_start: bool,
}

/// `on` or `off`, as the switches name them.
pub(crate) fn on_off_name(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// `use` or `ignore`: [`AccessListUse`] as `--access-list` names it.
pub(crate) fn access_list_name(lists: AccessListUse) -> &'static str {
    match lists {
        AccessListUse::Use => "use",
        AccessListUse::Ignore => "ignore",
    }
}

/// Parses an `--access-list` value.
fn access_list_use(text: &str) -> Result<AccessListUse, String> {
    match text {
        "use" => Ok(AccessListUse::Use),
        "ignore" => Ok(AccessListUse::Ignore),
        other => Err(format!(
            "unknown access-list use {other:?} (expected use or ignore)"
        )),
    }
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
    let db = strata_storage::StateDb::open(&args.datadir, options(args, 0).with_warm_start(false))
        .map_err(CliError::storage(&args.datadir))?;
    if db.last_block().is_none() {
        db.init_genesis(
            &genesis.alloc,
            strata_storage::GenesisName::HashAndHeader(genesis.hash, genesis.header_rlp()),
        )
        .map_err(CliError::storage(&args.datadir))?;
        db.set_chain_config(&genesis.recorded_config())
            .map_err(CliError::storage(&args.datadir))?;
    }
    db.close().map_err(CliError::final_flush(&args.datadir))
}

/// The store's options for a run with `warmers`.
fn options(args: &ImportChainArgs, warmers: usize) -> Options {
    Options::default()
        .with_warmers(warmers)
        .with_cache_bytes(args.cache_mib << 20)
        .with_flush_batch_bytes(args.flush_mib << 20)
        .with_memory_budget_bytes(args.memory_mib << 20)
        .with_read_metrics(true)
        .with_background_maintenance(true)
        .with_share_with_readers(args.share)
        .with_history(args.history)
        .with_durability(match args.sync_every {
            1 => Durability::EveryBlock,
            n => Durability::EveryN(n),
        })
}
