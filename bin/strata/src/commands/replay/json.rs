//! `--json FILE`: the replay report, one document per invocation — the
//! build, the host, the configuration as given, the peak RSS and every run
//! with its totals, cache counters, read-latency cells and per-block series.
//! The schema is documented in `cli/REPLAY_REPORT.md`; a change of a field's
//! meaning or a removal bumps [`SCHEMA_VERSION`].

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use strata_observer::ObserverReport;

use crate::commands::cache_json::CacheJson;
use strata_storage::telemetry::CellSummary;
use strata_storage::{Durability, Options};

use super::ReplayArgs;
use super::run::{BlockTiming, MaintenanceTotals, RunResult};
use crate::CliError;
use crate::host::Host;
use crate::output_file::OutputFile;

/// The version of the report's layout (`schema_version`).
pub(super) const SCHEMA_VERSION: u32 = 1;

/// What is known before the first run starts: when, where and how.
#[derive(Clone, Debug)]
pub(super) struct Context {
    started: SystemTime,
    host: Host,
}

impl Context {
    /// The clock and the host now (the load average before the replay).
    pub(super) fn now() -> Self {
        Context {
            started: SystemTime::now(),
            host: Host::now(),
        }
    }
}

/// The whole report.
#[derive(Debug, Serialize)]
struct Report<'a> {
    schema_version: u32,
    strata: Build,
    /// Seconds since the Unix epoch when the replay started.
    started_unix_s: f64,
    host: &'a Host,
    config: Config<'a>,
    peak_rss_bytes: Option<u64>,
    runs: Vec<RunReport<'a>>,
}

/// The binary that ran.
#[derive(Debug, Serialize)]
struct Build {
    version: &'static str,
    git_commit: &'static str,
}

impl Build {
    const CURRENT: Build = Build {
        version: env!("CARGO_PKG_VERSION"),
        git_commit: env!("STRATA_GIT_COMMIT"),
    };
}

/// `strata replay`'s options as given (defaults filled in).
#[derive(Debug, Serialize)]
struct Config<'a> {
    trace: String,
    datadir: Option<String>,
    genesis: Option<String>,
    warmers: &'a [usize],
    caches: Vec<&'static str>,
    step_size: u64,
    keep_steps: u64,
    sync_every: u64,
    cache_mib: u64,
    flush_mib: u64,
    memory_mib: u64,
    observer: Option<f64>,
    observer_process: bool,
    share: bool,
    metrics: Option<String>,
    json: Option<String>,
    plot: Option<String>,
}

impl<'a> Config<'a> {
    fn new(args: &'a ReplayArgs) -> Self {
        let path = |p: &Path| p.display().to_string();
        Config {
            trace: path(&args.trace),
            datadir: args.datadir.as_deref().map(path),
            genesis: args.genesis.as_deref().map(path),
            warmers: &args.warmers.0,
            caches: args.cache.iter().map(|c| c.name()).collect(),
            step_size: args.step_size_or_default(),
            keep_steps: args.keep_steps,
            sync_every: args.sync_every,
            cache_mib: args.cache_mib,
            flush_mib: args.flush_mib,
            memory_mib: args.memory_mib,
            observer: args.observer,
            observer_process: args.observer_process,
            share: args.share,
            metrics: args.metrics.map(|a| a.to_string()),
            json: args.json.as_deref().map(path),
            plot: args.plot.as_deref().map(path),
        }
    }
}

/// The `Options` a run's store was opened with.
#[derive(Debug, Serialize)]
struct StoreOptions {
    step_size: u64,
    keep_steps_in_db: u64,
    unwind_depth: u64,
    /// 1 for `Durability::EveryBlock`, n for `EveryN(n)`.
    fsync_every_blocks: u64,
    cache_kind: &'static str,
    cache_bytes: u64,
    value_cache_bytes: u64,
    warmers: usize,
    read_metrics: bool,
    background_maintenance: bool,
    parallel_commitment_threshold: usize,
    db_cache_bytes: usize,
    share_with_readers: bool,
    follow_interval_ms: f64,
    flush_batch_bytes: u64,
    memory_budget_bytes: u64,
    journal_segment_bytes: u64,
    flush_txn_keys: usize,
}

impl From<&Options> for StoreOptions {
    fn from(o: &Options) -> Self {
        StoreOptions {
            step_size: o.step_size,
            keep_steps_in_db: o.keep_steps_in_db,
            unwind_depth: o.unwind_depth,
            fsync_every_blocks: match o.durability {
                Durability::EveryBlock => 1,
                Durability::EveryN(n) => n,
            },
            cache_kind: o.cache_kind.name(),
            cache_bytes: o.cache_bytes,
            value_cache_bytes: o.value_cache_bytes,
            warmers: o.warmers,
            read_metrics: o.read_metrics,
            background_maintenance: o.background_maintenance,
            parallel_commitment_threshold: o.parallel_commitment_threshold,
            db_cache_bytes: o.db_cache_bytes,
            share_with_readers: o.share_with_readers,
            follow_interval_ms: o.follow_interval.as_secs_f64() * 1e3,
            flush_batch_bytes: o.flush_batch_bytes,
            memory_budget_bytes: o.memory_budget_bytes,
            journal_segment_bytes: o.journal_segment_bytes,
            flush_txn_keys: o.flush_txn_keys,
        }
    }
}

/// One read-latency cell (domain × tier × regime), nanoseconds.
#[derive(Debug, Serialize)]
pub(crate) struct ReadCell {
    domain: &'static str,
    tier: &'static str,
    regime: &'static str,
    count: u64,
    sum_ns: u64,
    mean_ns: u64,
    p50_ns: u64,
    p99_ns: u64,
    max_ns: u64,
}

impl From<&CellSummary> for ReadCell {
    fn from(c: &CellSummary) -> Self {
        ReadCell {
            domain: c.domain.name(),
            tier: c.tier.name(),
            regime: c.regime.name(),
            count: c.count,
            sum_ns: c.sum_ns,
            mean_ns: c.mean_ns,
            p50_ns: c.p50_ns,
            p99_ns: c.p99_ns,
            max_ns: c.max_ns,
        }
    }
}

/// One run of the sweep.
#[derive(Debug, Serialize)]
struct RunReport<'a> {
    warmers: usize,
    cache: &'static str,
    prefetch: bool,
    cold: bool,
    options: StoreOptions,
    blocks: u64,
    blocks_per_s: f64,
    wall_s: f64,
    commit_s: f64,
    commitment_s: f64,
    journal_s: f64,
    journal_bytes: u64,
    flush_wait_s: f64,
    flush_waits: u64,
    flushes: u64,
    flushed_blocks: u64,
    flushed_keys: u64,
    flush_s: f64,
    close_s: f64,
    parse_s: f64,
    genesis_s: f64,
    gas: Option<u64>,
    keys: u64,
    roots_checked: u64,
    final_block: Option<u64>,
    final_root: String,
    cache_stats: CacheJson,
    value_cache_stats: CacheJson,
    warmer_loads: u64,
    maintenance: &'a MaintenanceTotals,
    reads: Vec<ReadCell>,
    per_block: &'a [BlockTiming],
    observer: Option<&'a ObserverReport>,
}

impl<'a> From<&'a RunResult> for RunReport<'a> {
    fn from(run: &'a RunResult) -> Self {
        let s = Duration::as_secs_f64;
        RunReport {
            warmers: run.warmers,
            cache: run.cache.name(),
            prefetch: run.prefetch,
            cold: run.cold,
            options: StoreOptions::from(&run.options),
            blocks: run.blocks,
            blocks_per_s: super::report::blocks_per_s(run),
            wall_s: s(&run.wall),
            commit_s: s(&run.commit),
            commitment_s: s(&run.commitment),
            journal_s: s(&run.journal),
            journal_bytes: run.journal_bytes,
            flush_wait_s: s(&run.flush_wait),
            flush_waits: run.flush.waits,
            flushes: run.flush.flushes,
            flushed_blocks: run.flush.blocks,
            flushed_keys: run.flush.keys,
            flush_s: s(&run.flush.time),
            close_s: s(&run.close),
            parse_s: s(&run.parse),
            genesis_s: s(&run.genesis),
            gas: run.gas,
            keys: run.keys,
            roots_checked: run.roots_checked,
            final_block: run.final_block,
            final_root: run.final_root.to_string(),
            cache_stats: CacheJson::from(&run.cache_stats),
            value_cache_stats: CacheJson::from(&run.value_cache_stats),
            warmer_loads: run.warmer_loads,
            maintenance: &run.maintenance,
            reads: run.reads.cells.iter().map(ReadCell::from).collect(),
            per_block: &run.per_block,
            observer: run.observer.as_ref(),
        }
    }
}

/// Writes the report of `runs` into `file` (its `--json` path).
pub(super) fn write(
    file: OutputFile,
    args: &ReplayArgs,
    context: &Context,
    runs: &[RunResult],
    peak_rss_bytes: Option<u64>,
) -> Result<(), CliError> {
    let started_unix_s = context
        .started
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let report = Report {
        schema_version: SCHEMA_VERSION,
        strata: Build::CURRENT,
        started_unix_s,
        host: &context.host,
        config: Config::new(args),
        peak_rss_bytes,
        runs: runs.iter().map(RunReport::from).collect(),
    };
    file.write_json(&report)
}
