//! `strata replay TRACE`: drive the storage engine with a block trace —
//! check every read against the store, apply the writes, commit, check every
//! root — and report read latencies per domain × tier × regime, throughput,
//! an optional warmer × cache sweep (table, JSON, SVG plot) and an optional
//! observer that measures reads of a second thread while the replay runs.

mod apply;
mod json;
mod metrics;
mod plot;
mod precheck;
mod report;
mod run;
mod source;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use strata_storage::CacheKind;

use crate::arg_values::{MAX_CACHE_MIB, WarmerList, observer_rate, warmer_list};
use crate::output::Lines;
use crate::output_file::{OutputFile, Protected};
use crate::{CliError, FlagError};
pub(crate) use json::ReadCell;
pub(crate) use report::print_reads;
pub use run::RunResult;
pub(crate) use run::copy_datadir;
pub(crate) use source::TraceSource;

/// Arguments of `strata replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The trace (JSON Lines, see book/src/reference/formats/trace.md).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Data directory: created when absent; an existing one is resumed after
    /// its last committed block (default: a temporary one, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub datadir: Option<PathBuf>,
    /// Genesis file, when the trace has no genesis line.
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
    /// Numbers of warmers to sweep, comma-separated (e.g. "0,1,16,64").
    #[arg(long, value_name = "LIST", default_value = "0", value_parser = warmer_list)]
    pub warmers: WarmerList,
    /// Branch caches to compare, comma-separated: sharded, mutex-lru, sharded-lru.
    #[arg(
        long,
        value_name = "KINDS",
        default_value = "sharded",
        value_delimiter = ',',
        value_parser = cache_kind
    )]
    pub cache: Vec<CacheKind>,
    /// Write the measurements as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw read latency and block time against warmers as an SVG plot.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Run an observer thread reading head, an account and a slot RATE
    /// times a second (first ~1.5 s on the idle store, then under load).
    #[arg(long, value_name = "RATE", value_parser = observer_rate)]
    pub observer: Option<f64>,
    /// With --observer: also run the observer as a second process
    /// (`strata observe`) that opens the datadir read-only while the replay
    /// writes it (the writer then shares the datadir; needs --sync-every 1).
    #[arg(long, requires = "observer")]
    pub observer_process: bool,
    /// Let other processes follow the datadir read-only while the replay
    /// writes it (`strata observe`); needs --sync-every 1.
    #[arg(long)]
    pub share: bool,
    /// Blocks per step (the unit of collation into files) for a new
    /// datadir [default: 64]. An existing datadir keeps the step size it
    /// was created with: giving another one is refused.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=MAX_STEP_SIZE))]
    pub step_size: Option<u64>,
    /// Steps kept in redb before they are collated into files.
    #[arg(long, value_name = "N", default_value_t = strata_storage::Options::default().keep_steps_in_db,
          value_parser = clap::value_parser!(u64).range(0..=MAX_KEEP_STEPS))]
    pub keep_steps: u64,
    /// fsync every N-th block commit (1: every block; a process crash loses
    /// nothing either way, a power cut at most N − 1 blocks).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=MAX_SYNC_EVERY))]
    pub sync_every: u64,
    /// Branch cache capacity in MiB (1 to 1,048,576, i.e. at most 1 TiB).
    #[arg(long, value_name = "MIB", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_MIB))]
    pub cache_mib: u64,
    /// Flush the memory tier to redb in the background once its blocks hold
    /// this many MiB of keys and values.
    #[arg(long, value_name = "MIB", default_value_t = strata_storage::Options::default().flush_batch_bytes >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_MIB))]
    pub flush_mib: u64,
    /// The memory tier's budget: a commit that finds it fuller waits for
    /// the flush (at least --flush-mib).
    #[arg(long, value_name = "MIB", default_value_t = strata_storage::Options::default().memory_budget_bytes >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_CACHE_MIB))]
    pub memory_mib: u64,
    /// State value cache capacity in MiB (0 turns it off).
    #[arg(long, value_name = "MIB", default_value_t = strata_storage::Options::default().value_cache_bytes >> 20,
          value_parser = clap::value_parser!(u64).range(0..=MAX_CACHE_MIB))]
    pub value_cache_mib: u64,
    /// Use each block's reads and writes as its access list (EIP-7928):
    /// the warmers prefetch every listed value and trie path while the
    /// reads are checked, and the root is computed from the listed writes
    /// alongside them. "off,on" sweeps both; `--prefetch` alone means on.
    #[arg(long, value_name = "off|on", num_args = 0..=1, default_value = "off",
          default_missing_value = "on", value_delimiter = ',', value_parser = crate::arg_values::on_off)]
    pub prefetch: Vec<bool>,
    /// Start every run cold: the datadir's files are evicted from the page
    /// cache (posix_fadvise) after the genesis or resume, and the store is
    /// reopened with empty caches before the first block.
    #[arg(long)]
    pub cold: bool,
    /// Serve Prometheus metrics of the running store over HTTP at
    /// ADDR/metrics (e.g. 127.0.0.1:9001; port 0 picks a free port; the
    /// bound address is printed to stderr).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
}

impl ReplayArgs {
    /// `--step-size`, or the default when it was not given.
    pub fn step_size_or_default(&self) -> u64 {
        self.step_size
            .unwrap_or(strata_storage::Options::default().step_size)
    }
}

/// Largest `--step-size`: a step is the unit of collation, and a step of a
/// million blocks would keep months of history in redb.
const MAX_STEP_SIZE: u64 = 1_000_000;
/// Largest `--keep-steps`.
const MAX_KEEP_STEPS: u64 = 1_000_000;
/// Largest `--sync-every` (a power cut may lose up to this many blocks).
const MAX_SYNC_EVERY: u64 = 1_000_000;

/// One run of a sweep: its warmers, branch cache and whether it prefetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Combo {
    /// Warmer threads.
    pub(crate) warmers: usize,
    /// Branch cache kind.
    pub(crate) cache: CacheKind,
    /// Whether blocks are prefetched from their access lists (and their
    /// roots computed alongside the read check).
    pub(crate) prefetch: bool,
}

fn cache_kind(text: &str) -> Result<CacheKind, String> {
    text.trim().parse::<CacheKind>().map_err(|e| e.to_string())
}

pub(super) fn run(args: ReplayArgs) -> Result<(), CliError> {
    // The outputs first: never the datadir's files or the inputs; written
    // beside their targets once the replay is done.
    let mut protected = Protected::new()
        .input("TRACE", &args.trace)
        .input_opt("--genesis", args.genesis.as_deref());
    if let Some(datadir) = &args.datadir {
        protected = protected.datadir(datadir);
    }
    let json_file = args
        .json
        .as_deref()
        .map(|path| OutputFile::create("--json", path, &mut protected))
        .transpose()?;
    let plot_file = args
        .plot
        .as_deref()
        .map(|path| OutputFile::create("--plot", path, &mut protected))
        .transpose()?;
    let mut combos = Vec::new();
    for &warmers in &args.warmers.0 {
        for &cache in &args.cache {
            for &prefetch in &args.prefetch {
                combos.push(Combo {
                    warmers,
                    cache,
                    prefetch,
                });
            }
        }
    }
    if combos.len() > 1
        && let Some(datadir) = &args.datadir
        && !datadir.join(strata_storage::DB_FILE).exists()
    {
        return Err(FlagError::SweepWithoutStore {
            datadir: datadir.clone(),
        }
        .into());
    }
    if (args.observer_process || args.share) && args.sync_every > 1 {
        return Err(FlagError::NeedsDurableCommits {
            flag: if args.share {
                "--share"
            } else {
                "--observer-process"
            },
            sync_every: args.sync_every,
        }
        .into());
    }
    if args.memory_mib < args.flush_mib {
        return Err(FlagError::MemoryBelowFlush {
            memory_mib: args.memory_mib,
            flush_mib: args.flush_mib,
        }
        .into());
    }
    if args.step_size == Some(0) || args.keep_steps == 0 || args.sync_every == 0 {
        return Err(FlagError::ZeroCount.into());
    }
    let context = json::Context::now();
    let current = Arc::new(metrics::CurrentStore::default());
    let _server = args
        .metrics
        .map(|addr| metrics::serve(addr, &current))
        .transpose()?;
    let mut results = Vec::new();
    for (index, combo) in combos.iter().enumerate() {
        if combos.len() > 1 {
            eprintln!(
                "run {}/{}: warmers {}, cache {}, prefetch {}",
                index + 1,
                combos.len(),
                combo.warmers,
                combo.cache,
                if combo.prefetch { "on" } else { "off" }
            );
        }
        let result = run::replay_once(&args, *combo, combos.len() > 1, &current)?;
        let mut out = Lines::default();
        report::print_run(&mut out, &result);
        out.print()?;
        results.push(result);
    }
    if results.len() > 1 {
        let mut out = Lines::default();
        report::print_sweep(&mut out, &results);
        out.print()?;
    }
    if let Some(file) = json_file {
        json::write(
            file,
            &args,
            &context,
            &results,
            crate::host::peak_rss_bytes(),
        )?;
    }
    if let Some(file) = plot_file {
        plot::draw(file, &results)?;
    }
    let first = results[0].final_root;
    if let Some(other) = results.iter().find(|r| r.final_root != first) {
        return Err(CliError::SweepDisagrees {
            first_run: format!("warmers {} cache {}", results[0].warmers, results[0].cache),
            first_root: first,
            other_run: format!("warmers {} cache {}", other.warmers, other.cache),
            other_root: other.final_root,
        });
    }
    let mut out = Lines::default();
    out.line(format_args!(
        "peak RSS {}",
        crate::host::format_bytes(crate::host::peak_rss_bytes())
    ));
    let last = results.last().expect("at least one run");
    out.line(format_args!(
        "final root {} at block {}",
        last.final_root,
        last.final_block
            .map_or_else(|| "none".to_owned(), |b| b.to_string())
    ));
    out.print()
}
