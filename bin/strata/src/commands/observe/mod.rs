//! `strata observe --datadir DIR [--trace FILE]`: a second process that
//! opens a datadir read-only — while another process writes it, or not —
//! and every 1/RATE s reads the head, a random account and a random slot,
//! timing each read. The keys come from the trace's genesis and first block,
//! or without `--trace` from the datadir itself (a seeded sample of its live
//! accounts and slots). Prints percentiles at the end,
//! or with `--samples` one line per observation (what `strata replay
//! --observer-process` reads; `process` is that parent's side).

pub(crate) mod process;

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use strata_observer::{KeyPool, OBSERVER_REGIME, Percentiles, READS, Sample, format_ns, observe};
use strata_storage::keys::{address_key, split_storage_key};
use strata_storage::{Domain, Options, ReadOnlyStateDb};

use super::replay::TraceSource;
use crate::CliError;
use crate::output::Lines;

/// Arguments of `strata observe`.
#[derive(Debug, Clone, Args)]
pub struct ObserveArgs {
    /// The data directory, opened read-only (its writer must share it:
    /// `Options::share_with_readers`, as `strata replay --observer-process` does).
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// The trace whose genesis and first block give the keys to read;
    /// without it, up to 4,096 accounts and 4,096 slots are sampled from the
    /// datadir (uniformly, seeded: the same state gives the same keys).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Genesis file, when the trace has no genesis line.
    #[arg(long, value_name = "FILE", requires = "trace")]
    pub genesis: Option<PathBuf>,
    /// Observations per second.
    #[arg(long, value_name = "RATE", default_value_t = 1000.0, value_parser = crate::arg_values::observer_rate)]
    pub rate: f64,
    /// How long to observe, in seconds (with --samples: until standard
    /// input closes, or this long if given).
    #[arg(long, value_name = "SECS", value_parser = duration_secs)]
    pub duration: Option<f64>,
    /// Print `ready`, then one line per observation (`at_ns block head_ns
    /// account_ns storage_ns errors waited_ns`, monotonic clock, `-` for
    /// none) until standard input closes.
    #[arg(long)]
    pub samples: bool,
}

/// Longest `--duration`, in seconds (about 31 years): far beyond any run,
/// and well inside what a `Duration` holds.
const MAX_DURATION_SECS: f64 = 1e9;

fn duration_secs(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= MAX_DURATION_SECS => Ok(secs),
        _ => Err(format!(
            "invalid duration {text:?} (expected seconds, more than 0 and at most {MAX_DURATION_SECS:e})"
        )),
    }
}

/// Keys sampled from a datadir when no trace is given, per domain.
const SAMPLED_KEYS: usize = 4096;

/// The seed of that sample.
const SAMPLE_SEED: u64 = 1;

pub(super) fn run(args: ObserveArgs) -> Result<(), CliError> {
    let trace_keys = match &args.trace {
        Some(trace) => {
            let (mut source, start) = TraceSource::open(trace, args.genesis.as_deref())?;
            Some(KeyPool::collect(
                start.genesis.as_ref(),
                source.peek_block()?,
            ))
        }
        None => None,
    };
    let options = Options::default().with_db_cache_bytes(256 << 20);
    let db = ReadOnlyStateDb::open(&args.datadir, options.clone())
        .map_err(CliError::storage(&args.datadir))?;
    let keys = match trace_keys {
        Some(keys) => keys,
        None => sampled_keys(&db).map_err(CliError::storage(&args.datadir))?,
    };
    let deadline = args
        .duration
        .map(|secs| Instant::now() + Duration::from_secs_f64(secs))
        .or_else(|| (!args.samples).then(|| Instant::now() + Duration::from_secs(10)));
    let stop = Arc::new(AtomicBool::new(false));
    let open = || db.reader(OBSERVER_REGIME);
    if args.samples {
        // The parent closes our input to stop us (a detached thread: it may
        // still be waiting when a deadline ends the observation).
        let closed = stop.clone();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::stdin().lock().read_until(0, &mut sink);
            closed.store(true, Ordering::Release);
        });
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        writeln!(out, "{}", process::READY_LINE).map_err(CliError::Output)?;
        out.flush().map_err(CliError::Output)?;
        let mut failed = None;
        observe(&open, &keys, args.rate, &stop, deadline, 2, &mut |sample| {
            if failed.is_none()
                && let Err(e) = writeln!(out, "{}", sample.to_line())
            {
                failed = Some(e);
                stop.store(true, Ordering::Release);
            }
        });
        match failed {
            Some(e) => Err(CliError::Output(e)),
            None => out.flush().map_err(CliError::Output),
        }
    } else {
        let mut samples = Vec::new();
        observe(&open, &keys, args.rate, &stop, deadline, 2, &mut |s| {
            samples.push(s)
        });
        let mut out = Lines::default();
        print_summary(&mut out, &samples);
        out.print()
    }
}

/// Up to [`SAMPLED_KEYS`] live accounts and slots of the datadir.
fn sampled_keys(db: &ReadOnlyStateDb) -> strata_storage::Result<KeyPool> {
    let accounts: Vec<_> = db
        .sample_keys(Domain::Account, SAMPLED_KEYS, SAMPLE_SEED)?
        .iter()
        .filter_map(|key| address_key(key))
        .collect();
    let slots: Vec<_> = db
        .sample_keys(Domain::Storage, SAMPLED_KEYS, SAMPLE_SEED)?
        .iter()
        .filter_map(|key| split_storage_key(key))
        .collect();
    eprintln!(
        "observe: reading {} accounts and {} slots sampled from the datadir",
        accounts.len(),
        slots.len()
    );
    Ok(KeyPool::new(accounts, slots))
}

fn print_summary(out: &mut Lines, samples: &[Sample]) {
    let blocks: Vec<u64> = samples.iter().filter_map(|s| s.block).collect();
    out.line(format_args!(
        "{} observations, blocks {}..={}, {} read errors",
        samples.len(),
        blocks.iter().min().map_or("-".into(), u64::to_string),
        blocks.iter().max().map_or("-".into(), u64::to_string),
        samples.iter().map(|s| u64::from(s.errors)).sum::<u64>()
    ));
    out.line(format_args!(
        "{:<8} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "read", "n", "p50", "p99", "p99.9", "worst"
    ));
    for (kind, read) in READS {
        let p = Percentiles::of(samples.iter().filter_map(read));
        out.line(format_args!(
            "{:<8} {:>7} {:>9} {:>9} {:>9} {:>9}",
            kind,
            p.count,
            format_ns(p.p50_ns),
            format_ns(p.p99_ns),
            format_ns(p.p999_ns),
            format_ns(p.max_ns)
        ));
    }
}
