//! One replay run: open (or resume) a store, apply every block of the trace
//! with its read and root checks, and collect the measurements.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use indicatif::{ProgressBar, ProgressStyle};
use strata_observer::{
    KeyPool, OBSERVER_REGIME, ObserverFigures, ObserverReport, Window, monotonic_ns, observe,
};
use strata_storage::telemetry::MetricsSnapshot;
use strata_storage::{CacheKind, CacheStats, Durability, FlushStats, Options, Regime, StateDb};

use super::apply::check_reads;
use super::metrics::CurrentStore;
use super::precheck;
use super::source::{Start, TraceSource};
use super::{Combo, ReplayArgs};
use crate::CliError;
use crate::commands::observe::process::ObserverProcess;
use crate::scratch::{LockedDir, SWEEP_PREFIX, remove_stale};

/// How long the observer measures the idle store before the blocks.
const IDLE_OBSERVATION: Duration = Duration::from_millis(1500);

/// The measurements of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Warmers of the run.
    pub warmers: usize,
    /// Branch cache of the run.
    pub cache: CacheKind,
    /// Whether blocks were prefetched from their access lists, their roots
    /// computed alongside the read check.
    pub prefetch: bool,
    /// Whether the run started cold (page cache evicted, store reopened).
    pub cold: bool,
    /// Blocks applied (resumed blocks excluded).
    pub blocks: u64,
    /// Wall time of the block loop.
    pub wall: Duration,
    /// Wall time spent in `commit()`.
    pub commit: Duration,
    /// Of that, the commitment (root) calculation.
    pub commitment: Duration,
    /// Of the commit time, making blocks durable (journal record encoded,
    /// appended and fsynced).
    pub journal: Duration,
    /// Bytes appended to the journal.
    pub journal_bytes: u64,
    /// Of the commit time, waiting for a flush (memory tier over budget).
    pub flush_wait: Duration,
    /// The background flush's counters for the run.
    pub flush: FlushStats,
    /// Closing the store after the block loop (the final flush of the
    /// blocks still in the memory tier).
    pub close: Duration,
    /// Per block: its commit, root, journal write and flush wait.
    pub per_block: Vec<BlockTiming>,
    /// Of the wall time, reading and parsing the trace.
    pub parse: Duration,
    /// Time to write the genesis (zero when resumed).
    pub genesis: Duration,
    /// Gas of the applied blocks, when every block states it.
    pub gas: Option<u64>,
    /// Account and slot reads checked plus writes staged.
    pub keys: u64,
    /// Roots compared with the trace.
    pub roots_checked: u64,
    /// The last committed block.
    pub final_block: Option<u64>,
    /// Its root.
    pub final_root: B256,
    /// Read latencies of the block loop.
    pub reads: MetricsSnapshot,
    /// Branch cache counters at the end.
    pub cache_stats: CacheStats,
    /// Value cache counters at the end.
    pub value_cache_stats: CacheStats,
    /// Branch prefixes the warmers loaded over the run.
    pub warmer_loads: u64,
    /// Collations, merges and prunes over the run.
    pub maintenance: MaintenanceTotals,
    /// The options the store was opened with.
    pub options: Options,
    /// Observer figures, when `--observer` was given.
    pub observer: Option<ObserverReport>,
}

/// One block of the replay: where its wall time went and what it wrote.
/// The times are milliseconds; `wall_ms` covers the whole iteration of the
/// block loop (parse, read check, staging, commit), so the blocks' walls add
/// up to the run's `wall`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct BlockTiming {
    /// The block.
    pub block: u64,
    /// The block's whole turn of the loop, in ms.
    pub wall_ms: f64,
    /// Reading and parsing its trace line, in ms.
    pub parse_ms: f64,
    /// Checking its `reads` against the store (Exec regime), in ms.
    pub exec_read_ms: f64,
    /// Staging its `writes` in the block writer, in ms.
    pub stage_ms: f64,
    /// Its whole `commit()`, in ms.
    pub commit_ms: f64,
    /// The root calculation, in ms.
    pub root_ms: f64,
    /// The journal write (encode, append, fsync), in ms.
    pub journal_ms: f64,
    /// The wait for a flush, in ms.
    pub flush_wait_ms: f64,
    /// Keys the commit wrote across all domains (commitment records included).
    pub keys_written: u64,
    /// Reads checked plus writes staged from the trace.
    pub trace_keys: u64,
    /// Bytes of its journal record.
    pub journal_bytes: u64,
    /// Branch prefixes the warmers loaded for it.
    pub warmed: u64,
    /// Accounts, slots and trie paths its prefetch loaded (0 without).
    pub prefetched: u64,
    /// With the root computed alongside the read check: how long the
    /// commit waited for it, in ms (`root_ms` minus this overlapped the
    /// reads and staging); `None` when the commit computed the root.
    pub root_wait_ms: Option<f64>,
    /// Whether its commit was fsynced.
    pub durable: bool,
    /// Gas the trace states for it, if any.
    pub gas_used: Option<u64>,
}

/// What the store's maintenance did during a run.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct MaintenanceTotals {
    /// Collations (db steps into a file).
    pub collates: u64,
    /// Their total time, in s.
    pub collate_s: f64,
    /// Merges of adjacent files.
    pub merges: u64,
    /// Their total time, in s.
    pub merge_s: f64,
    /// Db entries pruned because a file now holds them.
    pub pruned_entries: u64,
}

/// Replay the trace once as `combo` says. In a sweep (`sweep`), a given
/// datadir is copied and the copy replayed, so every run starts from the
/// same state.
pub(super) fn replay_once(
    args: &ReplayArgs,
    combo: Combo,
    sweep: bool,
    current: &CurrentStore,
) -> Result<RunResult, CliError> {
    let Combo {
        warmers,
        cache,
        prefetch,
    } = combo;
    // Parse the first line before the store is created or opened.
    let (mut source, start) = TraceSource::open(&args.trace, args.genesis.as_deref())?;
    let (copy, temp);
    let datadir: PathBuf = match &args.datadir {
        Some(dir) if sweep => {
            copy = copy_datadir(dir)?;
            copy.path().to_owned()
        }
        Some(dir) => dir.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("strata-replay-")
                .tempdir()
                .map_err(CliError::file(std::env::temp_dir()))?;
            temp.path().to_owned()
        }
    };
    let options = Options::default()
        .with_step_size(args.step_size_or_default())
        .with_keep_steps_in_db(args.keep_steps)
        .with_cache_kind(cache)
        .with_cache_bytes(args.cache_mib << 20)
        .with_warmers(warmers)
        .with_read_metrics(true)
        .with_background_maintenance(true)
        .with_durability(match args.sync_every {
            1 => Durability::EveryBlock,
            n => Durability::EveryN(n),
        })
        .with_share_with_readers(args.observer_process || args.share)
        .with_flush_batch_bytes(args.flush_mib << 20)
        .with_memory_budget_bytes(args.memory_mib << 20)
        .with_value_cache_bytes(args.value_cache_mib << 20);
    let first_block = source.peek_block()?.map(|b| b.number);
    precheck::check_resume(args, &datadir, &mut source, &start, first_block)?;
    let mut db = StateDb::open(&datadir, options.clone()).map_err(CliError::storage(&datadir))?;
    precheck::check_step_size(args.step_size, db.step_size(), &datadir)?;
    let mut published = current.publish(&db);
    let was_empty = db.last_block().is_none();
    let genesis_started = Instant::now();
    let resumed_at = prepare(&db, &datadir, &mut source, &start, first_block)?;
    let genesis = if was_empty {
        genesis_started.elapsed()
    } else {
        Duration::ZERO
    };
    if args.cold {
        // Closed first: the close flushes, and no cache survives it.
        drop(published);
        db.close().map_err(CliError::final_flush(&datadir))?;
        crate::cold::cold_start(&datadir)?;
        db = StateDb::open(&datadir, options).map_err(CliError::storage(&datadir))?;
        published = current.publish(&db);
    }
    let committed_before = db.last_block();
    let keys = match args.observer {
        Some(_) => Some(KeyPool::collect(
            start.genesis.as_ref(),
            source.peek_block()?,
        )),
        None => None,
    };
    let process = match args.observer {
        Some(rate) if args.observer_process => Some(ObserverProcess::spawn(
            &datadir,
            &args.trace,
            args.genesis.as_deref(),
            rate,
        )?),
        _ => None,
    };

    let stop = AtomicBool::new(false);
    let (outcome, thread_samples, idle, load) = std::thread::scope(|scope| {
        let handle = keys.as_ref().zip(args.observer).map(|(keys, rate)| {
            let (db, stop) = (&db, &stop);
            scope.spawn(move || {
                let mut samples = Vec::new();
                let open = || Ok(db.reader(OBSERVER_REGIME));
                observe(&open, keys, rate, stop, None, 1, &mut |s| samples.push(s));
                samples
            })
        });
        let idle_start = monotonic_ns();
        if handle.is_some() {
            std::thread::sleep(IDLE_OBSERVATION);
        }
        let idle = Window {
            start_ns: idle_start,
            end_ns: monotonic_ns(),
        };
        // The block loop's reads only (the idle observations are not).
        db.metrics().snapshot_and_reset();
        let outcome = block_loop(&db, &datadir, &mut source, resumed_at, prefetch);
        let load = Window {
            start_ns: idle.end_ns,
            end_ns: monotonic_ns(),
        };
        stop.store(true, Ordering::Release);
        let samples = handle.map(|h| h.join());
        (outcome, samples, idle, load)
    });
    let process_samples = process.map(ObserverProcess::finish);
    let totals = outcome?;
    let process_samples = process_samples.transpose()?;
    let reads = db.metrics().snapshot_and_reset();
    let observer = args.observer.map(|rate| {
        let figures = |name, samples: &[_]| {
            ObserverFigures::new(name, samples, idle, load, committed_before, &totals.commits)
        };
        let mut observers = Vec::new();
        match thread_samples {
            Some(Ok(samples)) => observers.push(figures("thread", &samples)),
            // A panicked observer thread counts as a failed read.
            Some(Err(_)) => {
                let mut failed = figures("thread", &[]);
                failed.errors += 1;
                observers.push(failed);
            }
            None => {}
        }
        if let Some(samples) = &process_samples {
            observers.push(figures("process", samples));
        }
        ObserverReport { rate, observers }
    });
    let final_block = db.last_block();
    let final_root = db.root();
    let cache_stats = db.cache_stats();
    let value_cache_stats = db.value_cache_stats();
    let flush = db.flush_stats();
    let store = db.store_metrics();
    let (collate, merge) = (store.collate().counts(), store.merge().counts());
    let maintenance = MaintenanceTotals {
        collates: collate.count,
        collate_s: collate.sum_seconds,
        merges: merge.count,
        merge_s: merge.sum_seconds,
        pruned_entries: store.pruned(),
    };
    let warmer_loads = store.warmer_loads();
    let options = db.options().clone();
    drop(published);
    let close_started = Instant::now();
    db.close().map_err(CliError::final_flush(&datadir))?;
    let close = close_started.elapsed();
    Ok(RunResult {
        warmers,
        cache,
        prefetch,
        cold: args.cold,
        blocks: totals.blocks,
        wall: totals.wall,
        commit: totals.commit,
        commitment: totals.commitment,
        journal: totals.journal,
        journal_bytes: totals.journal_bytes,
        flush_wait: totals.flush_wait,
        flush,
        close,
        per_block: totals.per_block,
        parse: totals.parse,
        genesis,
        gas: totals.gas,
        keys: totals.keys,
        roots_checked: totals.roots_checked,
        final_block,
        final_root,
        reads,
        cache_stats,
        value_cache_stats,
        warmer_loads,
        maintenance,
        options,
        observer,
    })
}

/// Bring an empty store to the trace's start (genesis), or check where an
/// existing one resumes (again: [`precheck::check_resume`] did before the
/// open, unless the datadir could not be read read-only); `first_block` is
/// the trace's first block. Returns the last block already in the store.
fn prepare(
    db: &StateDb,
    datadir: &Path,
    source: &mut TraceSource,
    start: &Start,
    first_block: Option<u64>,
) -> Result<Option<u64>, CliError> {
    let trace = source.path().to_owned();
    // A dump (`--genesis DUMP`) is the state the trace's first block starts from.
    let dump_block = first_block.map_or(0, |first| first.saturating_sub(1));
    if let Some(last) = db.last_block() {
        if last == 0
            && let Some(expected) = start.genesis_root
        {
            check_resume_root(db, datadir, &trace, 0, expected)?;
        }
        // A datadir still at the dump's block must hold the dump's state.
        if let Some(dump) = &start.state_dump
            && last == dump_block
        {
            let root = crate::commands::init::open_dump(dump)?.root();
            check_resume_root(db, datadir, dump, dump_block, root)?;
        }
        eprintln!(
            "resuming {} after block {last} (root {})",
            datadir.display(),
            db.root()
        );
        return Ok(Some(last));
    }
    if let Some(dump) = &start.state_dump {
        let reader = crate::commands::init::open_dump(dump)?;
        let block = crate::commands::init::BlockToImport {
            number: dump_block,
            hash: None,
            header: None,
        };
        crate::commands::init::import(db, reader, dump, block, datadir)?;
        return Ok(Some(dump_block));
    }
    if start.genesis.is_none() && first_block == Some(0) {
        // The trace's block 0 builds the state from nothing.
        return Ok(None);
    }
    let empty = Default::default();
    let alloc = start.genesis.as_ref().unwrap_or(&empty);
    let root = db
        .init_genesis(alloc, strata_storage::GenesisName::Unnamed)
        .map_err(CliError::storage(datadir))?;
    if let Some(expected) = start.genesis_root
        && root != expected
    {
        return Err(CliError::RootMismatch(Box::new(
            crate::ReplayRootMismatch {
                path: trace,
                block: 0,
                expected,
                found: root,
            },
        )));
    }
    Ok(Some(0))
}

/// Refuses to resume unless the datadir's root at its head `block` is the
/// trace's root of that block (`expected`).
fn check_resume_root(
    db: &StateDb,
    datadir: &Path,
    trace: &Path,
    block: u64,
    expected: B256,
) -> Result<(), CliError> {
    let found = db.root();
    if found == expected {
        return Ok(());
    }
    Err(CliError::ResumeMismatch(Box::new(crate::ResumeMismatch {
        trace: trace.to_owned(),
        datadir: datadir.to_owned(),
        block,
        trace_root: expected,
        datadir_root: found,
    })))
}

/// Totals of the block loop.
struct Totals {
    blocks: u64,
    wall: Duration,
    commit: Duration,
    commitment: Duration,
    journal: Duration,
    journal_bytes: u64,
    flush_wait: Duration,
    per_block: Vec<BlockTiming>,
    parse: Duration,
    gas: Option<u64>,
    keys: u64,
    roots_checked: u64,
    /// (monotonic ns once `commit()` returned, block) of every commit.
    commits: Vec<(u64, u64)>,
}

fn block_loop(
    db: &StateDb,
    datadir: &Path,
    source: &mut TraceSource,
    resumed_at: Option<u64>,
    prefetch: bool,
) -> Result<Totals, CliError> {
    let trace = source.path().to_owned();
    let started = Instant::now();
    let mut totals = Totals {
        blocks: 0,
        wall: Duration::ZERO,
        commit: Duration::ZERO,
        commitment: Duration::ZERO,
        journal: Duration::ZERO,
        journal_bytes: 0,
        flush_wait: Duration::ZERO,
        per_block: Vec::new(),
        parse: Duration::ZERO,
        gas: Some(0),
        keys: 0,
        roots_checked: 0,
        commits: Vec::new(),
    };
    let mut progress = Progress::new();
    let mut expected_next = resumed_at.map_or(0, |b| b + 1);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    loop {
        let block_started = Instant::now();
        let next = source.next_block()?;
        let parse = block_started.elapsed();
        totals.parse += parse;
        let Some(block) = next else { break };
        if let Some(last) = resumed_at
            && block.number <= last
        {
            // The trace must lead to the datadir's head: its block there
            // carries the datadir's root (checked before any block is written).
            if block.number == last
                && let Some(expected) = block.state_root
            {
                check_resume_root(db, datadir, &trace, last, expected)?;
            }
            continue;
        }
        if block.number != expected_next {
            return Err(precheck::not_following(&trace, block.number, expected_next));
        }
        let reads_started = Instant::now();
        let list = Arc::new(block.access_list());
        let mut writer = db
            .begin_block(block.number)
            .map_err(CliError::storage(datadir))?;
        if prefetch {
            writer.prefetch(&list);
            writer
                .root_alongside(list.clone())
                .map_err(CliError::storage(datadir))?;
        }
        let reader = db.reader(Regime::Exec);
        let reads = check_reads(&trace, datadir, &reader, &block)? as u64;
        drop(reader);
        let stage_started = Instant::now();
        let exec_read = stage_started - reads_started;
        let writes = writer
            .apply_access_list(&list)
            .map_err(CliError::storage(datadir))? as u64;
        let stage = stage_started.elapsed();
        totals.keys += reads + writes;
        // A block that does not reach the trace's root is refused, not committed.
        if let Some(expected) = block.state_root {
            writer.expect_root(expected);
        }
        let commit_started = Instant::now();
        let info = writer.commit().map_err(|error| match error {
            strata_storage::Error::BlockRootMismatch {
                block,
                expected,
                computed,
            } => CliError::RootMismatch(Box::new(crate::ReplayRootMismatch {
                path: trace.clone(),
                block,
                expected,
                found: computed,
            })),
            other => CliError::storage(datadir)(other),
        })?;
        let commit_time = commit_started.elapsed();
        totals.commit += commit_time;
        totals.commitment += info.commitment_time;
        totals.journal += info.write_time;
        totals.journal_bytes += info.journal_bytes;
        totals.flush_wait += info.flush_wait;
        totals.per_block.push(BlockTiming {
            block: info.block,
            wall_ms: ms(block_started.elapsed()),
            parse_ms: ms(parse),
            exec_read_ms: ms(exec_read),
            stage_ms: ms(stage),
            commit_ms: ms(commit_time),
            root_ms: ms(info.commitment_time),
            journal_ms: ms(info.write_time),
            flush_wait_ms: ms(info.flush_wait),
            keys_written: info.keys_written as u64,
            trace_keys: reads + writes,
            journal_bytes: info.journal_bytes,
            warmed: info.warmed,
            prefetched: info.prefetched,
            root_wait_ms: info.root_wait.map(ms),
            durable: info.durable,
            gas_used: block.gas_used,
        });
        totals.commits.push((monotonic_ns(), info.block));
        if block.state_root.is_some() {
            totals.roots_checked += 1;
        }
        totals.gas = match (totals.gas, block.gas_used) {
            (Some(total), Some(gas)) => {
                Some(
                    total
                        .checked_add(gas)
                        .ok_or_else(|| CliError::GasOverflow {
                            path: trace.clone(),
                            block: block.number,
                            total,
                            gas,
                        })?,
                )
            }
            _ => None,
        };
        totals.blocks += 1;
        expected_next = block.number.saturating_add(1);
        progress.update(block.number, totals.blocks, totals.keys, started);
    }
    totals.wall = started.elapsed();
    if totals.blocks == 0 {
        totals.gas = None;
    }
    progress.finish(totals.blocks, totals.keys, started);
    Ok(totals)
}

/// A progress bar on a terminal, a log line every few seconds otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    last_log: Instant,
}

impl Progress {
    fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            last_log: Instant::now(),
        }
    }

    fn line(number: u64, blocks: u64, keys: u64, started: Instant) -> String {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        format!(
            "block {number}: {blocks} blocks, {:.1} blocks/s, {:.0} keys/s",
            blocks as f64 / secs,
            keys as f64 / secs
        )
    }

    fn update(&mut self, number: u64, blocks: u64, keys: u64, started: Instant) {
        match &self.bar {
            Some(bar) => bar.set_message(Self::line(number, blocks, keys, started)),
            None if self.last_log.elapsed() >= Duration::from_secs(5) => {
                self.last_log = Instant::now();
                eprintln!("replay: {}", Self::line(number, blocks, keys, started));
            }
            None => {}
        }
    }

    fn finish(&mut self, blocks: u64, keys: u64, started: Instant) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        eprintln!(
            "replay: done: {blocks} blocks in {secs:.2} s, {:.1} blocks/s, {:.0} keys/s",
            blocks as f64 / secs,
            keys as f64 / secs
        );
    }
}

/// A copy of `datadir` beside it (same file system), removed when dropped:
/// what one run of a sweep replays. Held locked while it lives; the copies
/// killed sweeps left beside it are removed first ([`crate::scratch`]).
pub(crate) fn copy_datadir(datadir: &Path) -> Result<LockedDir, CliError> {
    let parent = datadir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    remove_stale(parent, SWEEP_PREFIX);
    let copy = LockedDir::new_in(parent, SWEEP_PREFIX).map_err(CliError::file(parent))?;
    copy_tree(datadir, copy.path())?;
    std::fs::File::open(copy.path())
        .and_then(|dir| dir.sync_all())
        .map_err(CliError::file(copy.path()))?;
    Ok(copy)
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), CliError> {
    for entry in std::fs::read_dir(from).map_err(CliError::file(from))? {
        let entry = entry.map_err(CliError::file(from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(CliError::file(&source))?.is_dir() {
            std::fs::create_dir(&target).map_err(CliError::file(&target))?;
            copy_tree(&source, &target)?;
        } else {
            std::fs::copy(&source, &target).map_err(CliError::file(&source))?;
            // On disk before the run: else its write-back competes with the
            // run's own writes and fsyncs, and the runs of a sweep differ
            // by how much of the copy is still dirty.
            std::fs::File::open(&target)
                .and_then(|file| file.sync_all())
                .map_err(CliError::file(&target))?;
        }
    }
    Ok(())
}
