//! What many concurrent warmers cost the structures they share.
//!
//! 1. `cache_get`: hit-only branch-cache gets from 1–256 threads, skewed
//!    (Zipf s = 0.99 over 50,000 nibble paths of 3–8 nibbles — below the
//!    pinned levels, so every get goes through the sharded tail — with
//!    500-byte values): [`BranchCache`] beside the single-mutex LRU and the
//!    sharded LRU, in one criterion group, then a table of gets/s and
//!    sampled p50/p99 (every 16th get, `Instant` overhead included). Then
//!    the CPU-ns of one hit on 1 thread, [`BranchCache`] beside a bare
//!    `quick_cache::sync::Cache<Vec<u8>, Bytes>` holding the same keys and
//!    values: over the Zipf stream (memory-bound: the entries, the keys and
//!    the values' refcounts mostly miss the CPU caches) and over 64 hot keys
//!    (CPU-bound: what the code of a hit costs), interleaved rounds.
//! 2. `record_latency`: recording one read-latency sample from 1–256
//!    threads, [`ReadMetrics`] beside [`MutexReadMetrics`], then a table of
//!    CPU-ns per record (run time × min(threads, cores) / records).
//! 3. `state_db_sweep`: one block's commitment (2,000 accounts, 6,000
//!    slots) on a 1,000,000-account store (`STRATA_BENCH_ACCOUNTS`) opened
//!    cold, with 0, 1, 16, 64, 128 and 256 warmers: commitment time and the
//!    commitment-regime read latency per tier, for strata's configuration
//!    (sharded cache, striped telemetry) beside the baseline (single-mutex
//!    LRU, mutex telemetry). The block is unwound after each run so every
//!    run starts from the same state; 3 rounds, interleaved, median.
//!
//! `cargo bench -p strata-benches --bench warmers` (≈ 3.5 min). A filter
//! argument (`-- record`) selects groups, tables included.
//!
//! Reading the tables: wall-clock columns (criterion's and gets/s,
//! records/s) measure the machine as much as the code when other processes
//! hold the cores — each table header prints the load it started under. The
//! CPU-ns columns come from the worker threads' own CPU time
//! (`/proc/thread-self/schedstat`) and are what to compare on a busy host;
//! lock contention between our own threads only shows in wall time when
//! they actually run in parallel, i.e. on an otherwise idle machine.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use alloy_primitives::Address;
use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use strata_benches::{
    BlockWrite, block_writes, env_u64, genesis_with_contracts, machine_load, stage,
};
use strata_cache::{CacheKind, PrefixCache, build_cache};
use strata_storage::genesis::GenesisAlloc;
use strata_storage::telemetry::MetricsSnapshot;
use strata_storage::telemetry::{MutexReadMetrics, ReadMetrics, ReadRecorder, Tier};
use strata_storage::{Domain, Options, Regime, StateDb};

const THREADS: [usize; 5] = [1, 2, 16, 64, 256];

/// How a run is configured from the command line.
struct Run {
    filter: Option<String>,
    /// `--test` (cargo test --benches): exercise everything briefly.
    quick: bool,
    list: bool,
}

impl Run {
    fn from_args() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        Run {
            filter: args.iter().find(|a| !a.starts_with('-')).cloned(),
            quick: args.iter().any(|a| a == "--test"),
            list: args.iter().any(|a| a == "--list"),
        }
    }

    /// Whether the table for `group` should run.
    fn table(&self, group: &str) -> bool {
        !self.list
            && self
                .filter
                .as_deref()
                .is_none_or(|f| group.contains(f) || f.contains(group))
    }

    /// Length of one timed table run.
    fn slice(&self) -> Duration {
        if self.quick {
            Duration::from_millis(10)
        } else {
            Duration::from_millis(300)
        }
    }

    /// Interleaved rounds per table row (the median is reported).
    fn rounds(&self) -> usize {
        if self.quick { 1 } else { 3 }
    }
}

fn configure(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000))
        .throughput(Throughput::Elements(1));
}

/// Runs `work(thread, share)` on `threads` threads, each with an equal share
/// of `total`, and returns the wall time from the first worker's start to
/// the last worker's finish (thread spawning excluded; each worker reads the
/// clock itself, so a late-scheduled coordinator cannot skew the window).
fn timed_parallel(threads: usize, total: u64, work: impl Fn(usize, u64) + Sync) -> Duration {
    let share = total.div_ceil(threads as u64).max(1);
    let start = Barrier::new(threads);
    let windows: Vec<(Instant, Instant)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (start, work) = (&start, &work);
                scope.spawn(move || {
                    start.wait();
                    let began = Instant::now();
                    work(t, share);
                    (began, Instant::now())
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    span(&windows)
}

/// From the earliest start to the latest end.
fn span(windows: &[(Instant, Instant)]) -> Duration {
    let first = windows.iter().map(|w| w.0).min();
    let last = windows.iter().map(|w| w.1).max();
    first
        .zip(last)
        .map_or(Duration::ZERO, |(first, last)| last - first)
}

/// CPU time this thread has run, in ns (Linux `/proc/thread-self/schedstat`;
/// `None` elsewhere). Unlike wall time it does not count time the machine's
/// other processes held the cores.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The outcome of one timed run on several threads.
struct Timed<T> {
    /// What each thread returned.
    results: Vec<T>,
    /// Wall time from the first worker's start to the last worker's stop.
    elapsed: Duration,
    /// CPU time all worker threads used, when the OS reports it.
    cpu: Option<Duration>,
}

/// Runs `work(thread, stop)` on `threads` threads for `slice` and collects
/// what they return, the wall time and the CPU time they used.
fn for_a_while<T: Send>(
    threads: usize,
    slice: Duration,
    work: impl Fn(usize, &AtomicBool) -> T + Sync,
) -> Timed<T> {
    let start = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (start, stop, work) = (&start, &stop, &work);
                scope.spawn(move || {
                    start.wait();
                    let cpu_before = thread_cpu_ns();
                    let began = Instant::now();
                    let result = work(t, stop);
                    let window = (began, Instant::now());
                    let cpu = thread_cpu_ns()
                        .zip(cpu_before)
                        .map(|(after, before)| after - before);
                    (result, cpu, window)
                })
            })
            .collect();
        start.wait();
        std::thread::sleep(slice);
        stop.store(true, Ordering::Relaxed);
        let mut results = Vec::with_capacity(threads);
        let mut windows = Vec::with_capacity(threads);
        let mut cpu = Some(0u64);
        for (result, thread_cpu, window) in handles.into_iter().filter_map(|h| h.join().ok()) {
            results.push(result);
            windows.push(window);
            cpu = cpu.zip(thread_cpu).map(|(a, b)| a + b);
        }
        Timed {
            results,
            elapsed: span(&windows),
            cpu: cpu.map(Duration::from_nanos),
        }
    })
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

// ---------------------------------------------------------------------------
// Part 1: concurrent cache gets.
// ---------------------------------------------------------------------------

mod workload {
    use super::*;

    pub(crate) const KEYS: usize = 50_000;
    pub(crate) const VALUE_BYTES: usize = 500;
    const ZIPF_S: f64 = 0.99;
    /// Pre-drawn key indices; thread t reads them from offset t·7919.
    const STREAM: usize = 1 << 20;
    /// Keys of the hot stream ([`Workload::hot_key`]).
    pub(crate) const HOT: usize = 64;

    /// The bare quick_cache of the per-hit comparison.
    pub(crate) type BareCache = quick_cache::sync::Cache<Vec<u8>, Bytes>;

    /// The keys, their values and a Zipf-distributed stream of key indices.
    pub(crate) struct Workload {
        pub(crate) keys: Vec<Vec<u8>>,
        pub(crate) values: Vec<Bytes>,
        pub(crate) stream: Vec<u32>,
    }

    impl Workload {
        pub(crate) fn new() -> Self {
            let mut rng = StdRng::seed_from_u64(0x5742_4152);
            let mut seen = std::collections::HashSet::new();
            let mut keys = Vec::with_capacity(KEYS);
            while keys.len() < KEYS {
                let len = rng.random_range(3..=8);
                let key: Vec<u8> = (0..len).map(|_| rng.random_range(0..16u8)).collect();
                if seen.insert(key.clone()) {
                    keys.push(key);
                }
            }
            let values = (0..KEYS)
                .map(|i| {
                    let mut value = vec![0u8; VALUE_BYTES];
                    rng.fill(&mut value[..]);
                    value[..4].copy_from_slice(&(i as u32).to_be_bytes());
                    Bytes::from(value)
                })
                .collect();
            // Rank r (0-based) has weight 1/(r+1)^s; ranks map to keys
            // through a random permutation so hot keys are scattered.
            let mut cdf = Vec::with_capacity(KEYS);
            let mut total = 0.0;
            for rank in 0..KEYS {
                total += 1.0 / ((rank + 1) as f64).powf(ZIPF_S);
                cdf.push(total);
            }
            let mut permutation: Vec<u32> = (0..KEYS as u32).collect();
            permutation.shuffle(&mut rng);
            let stream = (0..STREAM)
                .map(|_| {
                    let u = rng.random::<f64>() * total;
                    let rank = cdf.partition_point(|&c| c < u).min(KEYS - 1);
                    permutation[rank]
                })
                .collect();
            Workload {
                keys,
                values,
                stream,
            }
        }

        /// A bare quick_cache holding every key (default options, sized so
        /// nothing is evicted): the floor a branch-cache hit is measured
        /// against.
        pub(crate) fn bare(&self) -> BareCache {
            let cache = BareCache::new(2 * KEYS);
            for (key, value) in self.keys.iter().zip(&self.values) {
                cache.insert(key.clone(), value.clone());
            }
            cache
        }

        /// A cache of `kind` holding every key, sized so nothing is evicted.
        pub(crate) fn filled(&self, kind: CacheKind) -> Arc<dyn PrefixCache> {
            let cache = build_cache(kind, 128 << 20);
            for (key, value) in self.keys.iter().zip(&self.values) {
                cache.insert(key, value.clone());
            }
            cache
        }

        #[inline]
        pub(crate) fn key(&self, thread: usize, i: u64) -> &[u8] {
            let at = (thread * 7919 + i as usize) & (STREAM - 1);
            &self.keys[self.stream[at] as usize]
        }

        /// Like [`key`](Self::key) but only over the stream's first
        /// [`HOT`] keys, which stay in the CPU's caches.
        #[inline]
        pub(crate) fn hot_key(&self, thread: usize, i: u64) -> &[u8] {
            let at = (thread * 7919 + i as usize) & (STREAM - 1);
            &self.keys[self.stream[at] as usize % HOT]
        }
    }
}

use workload::{BareCache, Workload};

fn cache_gets(c: &mut Criterion, run: &Run) {
    let workload = Workload::new();
    let caches: Vec<_> = CacheKind::ALL
        .iter()
        .map(|&kind| (kind, workload.filled(kind)))
        .collect();
    let bare = workload.bare();
    let mut group = c.benchmark_group("cache_get");
    configure(&mut group);
    for threads in THREADS {
        group.bench_with_input(
            BenchmarkId::new("bare-quick_cache", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    timed_parallel(threads, iters, |t, share| {
                        for i in 0..share {
                            black_box(bare.get(workload.key(t, i)));
                        }
                    })
                });
            },
        );
        for (kind, cache) in &caches {
            group.bench_with_input(
                BenchmarkId::new(kind.name(), threads),
                &threads,
                |b, &threads| {
                    b.iter_custom(|iters| {
                        timed_parallel(threads, iters, |t, share| {
                            for i in 0..share {
                                black_box(cache.get(workload.key(t, i)));
                            }
                        })
                    });
                },
            );
        }
    }
    group.finish();
    if run.table("cache_get") {
        cache_get_table(&workload, &caches, run);
        if let Some((_, ours)) = caches.iter().find(|(k, _)| *k == CacheKind::Sharded) {
            per_hit_table(&workload, ours.as_ref(), &bare, run);
        }
    }
}

/// One row of [`per_hit_table`]: both caches over the keys `key` yields,
/// `rounds` interleaved runs each.
fn per_hit_row<'w>(
    name: &str,
    rounds: usize,
    slice: Duration,
    ours: &dyn PrefixCache,
    bare: &BareCache,
    key: impl Fn(u64) -> &'w [u8] + Sync + Copy,
) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.extend(cpu_ns_per_hit(slice, key, |k| ours.get(k)));
        b.extend(cpu_ns_per_hit(slice, key, |k| bare.get(k)));
    }
    let span = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!("{:.0} [{lo:.0}–{hi:.0}]", median(v.to_vec()))
    };
    let ratios: Vec<f64> = a.iter().zip(&b).map(|(a, b)| a / b).collect();
    println!(
        "| {name} | {} | {} | {:.2}× (median of per-round ratios) |",
        span(&a),
        span(&b),
        median(ratios)
    );
}

/// CPU-ns per call of `get` on this thread over `slice`, keys from `key`.
fn cpu_ns_per_hit<'w>(
    slice: Duration,
    key: impl Fn(u64) -> &'w [u8] + Sync,
    get: impl Fn(&[u8]) -> Option<Bytes> + Sync,
) -> Option<f64> {
    let timed = for_a_while(1, slice, |_, stop| {
        let mut gets = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..256 {
                black_box(get(key(gets)));
                gets += 1;
            }
        }
        gets
    });
    let gets: u64 = timed.results.iter().sum();
    timed
        .cpu
        .map(|cpu| cpu.as_nanos() as f64 / gets.max(1) as f64)
}

/// The branch cache's hit beside a bare quick_cache's on the same keys and
/// values, on one thread: CPU-ns per hit and their ratio.
fn per_hit_table(workload: &Workload, ours: &dyn PrefixCache, bare: &BareCache, run: &Run) {
    // Same answers first: the comparison is only fair if both hit.
    for i in 0..4096 {
        let key = workload.key(0, i);
        assert_eq!(ours.get(key), bare.get(key), "{key:?}");
    }
    let rounds = if run.quick { 1 } else { 7 };
    let load = machine_load();
    println!(
        "cache_get per hit: 1 thread, CPU-ns per hit (thread CPU time / gets), {rounds} interleaved × {:?} runs, median [min–max]; {load}",
        run.slice()
    );
    println!("| keys | branch cache (sharded) | bare quick_cache | ratio |");
    println!("|---|---|---|---|");
    let slice = run.slice();
    per_hit_row(
        "Zipf over 50,000 (memory-bound)",
        rounds,
        slice,
        ours,
        bare,
        |i| workload.key(0, i),
    );
    per_hit_row("64 hot keys (CPU-bound)", rounds, slice, ours, bare, |i| {
        workload.hot_key(0, i)
    });
    println!();
}

/// One timed run of gets.
struct GetRun {
    /// Gets per wall-clock second.
    rate: f64,
    /// CPU-ns per get, when measurable.
    cpu_ns: Option<f64>,
    /// Sorted latency samples, ns.
    samples: Vec<u64>,
}

fn cache_get_run(
    workload: &Workload,
    cache: &dyn PrefixCache,
    threads: usize,
    slice: Duration,
) -> GetRun {
    let timed = for_a_while(threads, slice, |t, stop| {
        let mut gets = 0u64;
        let mut samples = Vec::with_capacity(1 << 14);
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..15 {
                black_box(cache.get(workload.key(t, gets)));
                gets += 1;
            }
            let key = workload.key(t, gets);
            let began = Instant::now();
            black_box(cache.get(key));
            samples.push(began.elapsed().as_nanos() as u64);
            gets += 1;
        }
        (gets, samples)
    });
    let gets: u64 = timed.results.iter().map(|(g, _)| g).sum();
    let mut samples: Vec<u64> = timed.results.into_iter().flat_map(|(_, s)| s).collect();
    samples.sort_unstable();
    GetRun {
        rate: gets as f64 / timed.elapsed.as_secs_f64(),
        cpu_ns: timed
            .cpu
            .map(|cpu| cpu.as_nanos() as f64 / gets.max(1) as f64),
        samples,
    }
}

/// A table row: median-round figures of one (cache, threads) pair.
#[derive(Clone, Copy, Default)]
struct GetRow {
    rate: f64,
    cpu_ns: Option<f64>,
    p50: u64,
    p99: u64,
}

fn fmt_cpu(cpu_ns: Option<f64>) -> String {
    cpu_ns.map_or_else(|| "n/a".to_owned(), |ns| format!("{ns:.0}"))
}

fn cache_get_table(workload: &Workload, caches: &[(CacheKind, Arc<dyn PrefixCache>)], run: &Run) {
    let load = machine_load();
    let misses_before: Vec<u64> = caches.iter().map(|(_, c)| c.stats().misses).collect();
    let mut rows = vec![vec![GetRow::default(); THREADS.len()]; caches.len()];
    for (ti, &threads) in THREADS.iter().enumerate() {
        let mut runs: Vec<Vec<GetRun>> = caches.iter().map(|_| Vec::new()).collect();
        for _ in 0..run.rounds() {
            for (ki, (_, cache)) in caches.iter().enumerate() {
                runs[ki].push(cache_get_run(
                    workload,
                    cache.as_ref(),
                    threads,
                    run.slice(),
                ));
            }
        }
        for (ki, mut kind_runs) in runs.into_iter().enumerate() {
            kind_runs.sort_by(|a, b| a.rate.total_cmp(&b.rate));
            let cpu_ns = median(kind_runs.iter().filter_map(|r| r.cpu_ns).collect());
            let middle = &kind_runs[kind_runs.len() / 2];
            rows[ki][ti] = GetRow {
                rate: middle.rate,
                cpu_ns: middle.cpu_ns.map(|_| cpu_ns),
                p50: percentile(&middle.samples, 0.5),
                p99: percentile(&middle.samples, 0.99),
            };
        }
    }
    println!();
    println!(
        "cache_get: hit-only, Zipf s=0.99 over {} keys, {} B values; median of {} interleaved × {:?} runs; \
         latency sampled every 16th get (Instant overhead included); {} cores; {load}",
        workload::KEYS,
        workload::VALUE_BYTES,
        run.rounds(),
        run.slice(),
        cores()
    );
    println!("| cache | threads | gets/s (wall) | CPU-ns per get | p50 ns | p99 ns |");
    println!("|---|---|---|---|---|---|");
    for (ki, (kind, _)) in caches.iter().enumerate() {
        for (ti, threads) in THREADS.iter().enumerate() {
            let row = rows[ki][ti];
            println!(
                "| {kind} | {threads} | {:.2} M/s | {} | {} | {} |",
                row.rate / 1e6,
                fmt_cpu(row.cpu_ns),
                row.p50,
                row.p99
            );
        }
    }
    for (ki, (kind, cache)) in caches.iter().enumerate() {
        let misses = cache.stats().misses - misses_before[ki];
        if misses != 0 {
            println!("WARNING: {kind} missed {misses} times; the workload is meant to be hit-only");
        }
    }
    let index = |kind| caches.iter().position(|(k, _)| *k == kind);
    if let (Some(ours), Some(mutex)) = (index(CacheKind::Sharded), index(CacheKind::MutexLru)) {
        let last = THREADS.len() - 1;
        let (ours_256, mutex_256) = (rows[ours][last], rows[mutex][last]);
        let ratio = ours_256.rate / mutex_256.rate;
        let verdict = |met: bool| if met { "met" } else { "MISSED" };
        println!(
            "sharded / mutex-lru throughput at 256 threads (wall): {ratio:.1}× (target ≥ 5×: {})",
            verdict(ratio >= 5.0)
        );
        if let (Some(a), Some(b)) = (ours_256.cpu_ns, mutex_256.cpu_ns) {
            println!(
                "sharded / mutex-lru throughput at 256 threads (per CPU-second): {:.1}×",
                b / a
            );
        }
        let growth = ours_256.p99 as f64 / rows[ours][0].p99.max(1) as f64;
        println!(
            "sharded p99 at 256 threads / at 1 thread: {growth:.2}× (target ≤ 2×: {})",
            verdict(growth <= 2.0)
        );
    }
    println!();
}

// ---------------------------------------------------------------------------
// Part 2: recording one read-latency sample.
// ---------------------------------------------------------------------------

/// Log-uniform latencies from 128 ns to ~1 ms.
fn latency_table() -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(0x4c41_5453);
    (0..4096)
        .map(|_| 2f64.powf(rng.random_range(7.0..20.0)) as u64)
        .collect()
}

fn recorders() -> Vec<(&'static str, Box<dyn ReadRecorder>)> {
    vec![
        ("read-metrics", Box::new(ReadMetrics::new(true))),
        ("mutex-read-metrics", Box::new(MutexReadMetrics::new())),
    ]
}

#[inline]
fn record_share(recorder: &dyn ReadRecorder, latencies: &[u64], thread: usize, records: u64) {
    let mut at = thread * 131;
    for _ in 0..records {
        at = (at + 1) & (latencies.len() - 1);
        recorder.record(
            Domain::Commitment,
            Tier::File(0),
            Regime::Commitment,
            latencies[at],
        );
    }
}

fn record_latency(c: &mut Criterion, run: &Run) {
    let latencies = latency_table();
    let recorders = recorders();
    let mut group = c.benchmark_group("record_latency");
    configure(&mut group);
    for threads in THREADS {
        for (name, recorder) in &recorders {
            group.bench_with_input(BenchmarkId::new(*name, threads), &threads, |b, &threads| {
                b.iter_custom(|iters| {
                    timed_parallel(threads, iters, |t, share| {
                        record_share(recorder.as_ref(), &latencies, t, share)
                    })
                });
            });
        }
    }
    group.finish();
    if run.table("record_latency") {
        record_table(&latencies, run);
    }
}

fn record_table(latencies: &[u64], run: &Run) {
    let load = machine_load();
    let recorders = recorders();
    // rows[recorder][threads] = (records/s wall, CPU-ns by formula, CPU-ns measured)
    let mut rows = vec![vec![(0.0, 0.0, None); THREADS.len()]; recorders.len()];
    for (ti, &threads) in THREADS.iter().enumerate() {
        let mut rates = vec![Vec::new(); recorders.len()];
        let mut cpu = vec![Vec::new(); recorders.len()];
        for _ in 0..run.rounds() {
            for (ri, (_, recorder)) in recorders.iter().enumerate() {
                let timed = for_a_while(threads, run.slice(), |t, stop| {
                    let mut records = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        record_share(recorder.as_ref(), latencies, t + records as usize, 256);
                        records += 256;
                    }
                    records
                });
                let records: u64 = timed.results.iter().sum();
                rates[ri].push(records as f64 / timed.elapsed.as_secs_f64());
                if let Some(used) = timed.cpu {
                    cpu[ri].push(used.as_nanos() as f64 / records.max(1) as f64);
                }
            }
        }
        for ri in 0..recorders.len() {
            let rate = median(std::mem::take(&mut rates[ri]));
            let by_formula = 1e9 * threads.min(cores()) as f64 / rate;
            let measured = (!cpu[ri].is_empty()).then(|| median(std::mem::take(&mut cpu[ri])));
            rows[ri][ti] = (rate, by_formula, measured);
        }
    }
    println!();
    println!(
        "record_latency: one cell, log-uniform 128 ns – 1 ms; median of {} interleaved × {:?} runs; {} cores; {load}",
        run.rounds(),
        run.slice(),
        cores()
    );
    println!(
        "CPU-ns (formula) = wall time × min(threads, cores) / records; CPU-ns (measured) = worker threads' CPU time / records"
    );
    println!(
        "| recorder | threads | records/s (wall) | CPU-ns per record (formula) | CPU-ns per record (measured) |"
    );
    println!("|---|---|---|---|---|");
    for (ri, (name, _)) in recorders.iter().enumerate() {
        for (ti, threads) in THREADS.iter().enumerate() {
            let (rate, by_formula, measured) = rows[ri][ti];
            println!(
                "| {name} | {threads} | {:.1} M/s | {by_formula:.1} | {} |",
                rate / 1e6,
                fmt_cpu1(measured)
            );
        }
    }
    let formula = rows[0].iter().map(|r| r.1).fold(0.0, f64::max);
    let measured = rows[0].iter().filter_map(|r| r.2).fold(0.0, f64::max);
    let verdict = |ns: f64| if ns <= 15.0 { "met" } else { "MISSED" };
    println!(
        "read-metrics worst CPU-ns per record: {formula:.1} by formula ({}), {measured:.1} measured ({}); target ≤ 15",
        verdict(formula),
        verdict(measured)
    );
    println!();
}

fn fmt_cpu1(cpu_ns: Option<f64>) -> String {
    cpu_ns.map_or_else(|| "n/a".to_owned(), |ns| format!("{ns:.1}"))
}

/// Warmer counts of the StateDb sweep.
const SWEEP_WARMERS: [usize; 6] = [0, 1, 16, 64, 128, 256];

/// One configuration of the store the sweep runs.
#[derive(Clone, Copy)]
struct StoreConfig {
    name: &'static str,
    cache: CacheKind,
    mutex_telemetry: bool,
}

const CONFIGS: [StoreConfig; 2] = [
    StoreConfig {
        name: "strata (sharded cache, striped telemetry)",
        cache: CacheKind::Sharded,
        mutex_telemetry: false,
    },
    StoreConfig {
        name: "baseline (mutex-lru cache, mutex telemetry)",
        cache: CacheKind::MutexLru,
        mutex_telemetry: true,
    },
];

/// Median commitment time and commitment-regime read latencies of one
/// (configuration, warmers) cell.
#[derive(Default, Clone)]
struct SweepRow {
    commit_ms: f64,
    /// (tier name, count, p50, p99) of commitment-regime reads.
    tiers: Vec<(String, u64, u64, u64)>,
    /// p50 / p99 over all commitment-regime reads (count-weighted medians of cells).
    p50: u64,
    p99: u64,
}

fn sweep_options(config: StoreConfig, warmers: usize) -> Options {
    Options::default()
        .with_warmers(warmers)
        .with_cache_kind(config.cache)
        .with_mutex_telemetry_baseline(config.mutex_telemetry)
        .with_background_maintenance(false)
        // Every block's changes stay in the db tier; the state is in redb.
        .with_step_size(1 << 20)
}

/// A genesis of `accounts` accounts (one in 50 with 20 slots) and one block
/// touching 2,000 accounts and 6,000 slots of it.
fn sweep_state(accounts: usize) -> (GenesisAlloc, Vec<BlockWrite>) {
    let mut rng = StdRng::seed_from_u64(0x5745_4550);
    let (alloc, contracts) = genesis_with_contracts(accounts, &mut rng);
    let addresses: Vec<Address> = alloc.keys().copied().collect();
    let writes = block_writes(&addresses, &contracts, 2000, 6000, &mut rng);
    (alloc, writes)
}

/// Commits the sweep's block on a freshly opened (cold-cache) store, then
/// unwinds it so the next run starts from the same state.
fn sweep_once(
    dir: &std::path::Path,
    config: StoreConfig,
    warmers: usize,
    writes: &[BlockWrite],
) -> (Duration, MetricsSnapshot) {
    let db = StateDb::open(dir, sweep_options(config, warmers)).expect("open");
    db.metrics().reset();
    let mut writer = db.begin_block(1).expect("block");
    stage(&mut writer, writes);
    let info = writer.commit().expect("commit");
    let snapshot = db.metrics().snapshot_and_reset();
    db.unwind_to(0).expect("unwind");
    (info.commitment_time, snapshot)
}

fn sweep_row(runs: Vec<(Duration, MetricsSnapshot)>) -> SweepRow {
    let mut times: Vec<f64> = runs.iter().map(|(t, _)| t.as_secs_f64() * 1e3).collect();
    times.sort_by(f64::total_cmp);
    // The run with the median commitment time supplies the latencies.
    let median = runs
        .iter()
        .min_by(|a, b| {
            let m = times[times.len() / 2];
            (a.0.as_secs_f64() * 1e3 - m)
                .abs()
                .total_cmp(&(b.0.as_secs_f64() * 1e3 - m).abs())
        })
        .expect("runs");
    let cells: Vec<_> = median
        .1
        .cells
        .iter()
        .filter(|c| c.regime == Regime::Commitment)
        .collect();
    let tiers = cells
        .iter()
        .map(|c| {
            (
                format!("{}/{}", c.domain.name(), c.tier.name()),
                c.count,
                c.p50_ns,
                c.p99_ns,
            )
        })
        .collect();
    let weighted = |pick: fn(&&strata_storage::telemetry::CellSummary) -> u64| {
        let mut v: Vec<(u64, u64)> = cells.iter().map(|c| (pick(c), c.count)).collect();
        v.sort();
        let total: u64 = v.iter().map(|(_, n)| n).sum();
        let mut seen = 0;
        for (value, n) in &v {
            seen += n;
            if seen * 2 >= total {
                return *value;
            }
        }
        0
    };
    SweepRow {
        commit_ms: times[times.len() / 2],
        tiers,
        p50: weighted(|c| c.p50_ns),
        p99: weighted(|c| c.p99_ns),
    }
}

/// Part 3: a block's commitment on a cold-cache store with 0–256 warmers,
/// strata's configuration beside the baseline's, from the same state.
fn state_db_sweep(run: &Run) {
    if !run.table("state_db_sweep") {
        return;
    }
    let accounts = env_u64(
        "STRATA_BENCH_ACCOUNTS",
        if run.quick { 20_000 } else { 1_000_000 },
    ) as usize;
    let rounds = if run.quick { 1 } else { 3 };
    let dir = tempfile::tempdir().expect("temp dir");
    let (alloc, writes) = sweep_state(accounts);
    let genesis_root = {
        let db = StateDb::open(dir.path(), sweep_options(CONFIGS[0], 0)).expect("open");
        db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
            .expect("genesis")
    };
    drop(alloc);
    println!(
        "\nstate_db_sweep: one block (2,000 accounts, 6,000 slots) on {accounts} accounts, cold cache, {} ({rounds} rounds, median)",
        machine_load()
    );
    let mut rows = vec![vec![SweepRow::default(); SWEEP_WARMERS.len()]; CONFIGS.len()];
    let mut runs: Vec<Vec<Vec<(Duration, MetricsSnapshot)>>> =
        vec![vec![Vec::new(); SWEEP_WARMERS.len()]; CONFIGS.len()];
    for _ in 0..rounds {
        for (w, warmers) in SWEEP_WARMERS.iter().enumerate() {
            for (c, config) in CONFIGS.iter().enumerate() {
                runs[c][w].push(sweep_once(dir.path(), *config, *warmers, &writes));
            }
        }
    }
    for (c, per_warmers) in runs.into_iter().enumerate() {
        for (w, r) in per_warmers.into_iter().enumerate() {
            rows[c][w] = sweep_row(r);
        }
    }
    let db = StateDb::open(dir.path(), sweep_options(CONFIGS[0], 0)).expect("open");
    assert_eq!(
        db.root(),
        genesis_root,
        "the sweep must leave the state as it found it"
    );
    drop(db);

    println!(
        "{:<46} {:>7} {:>11} {:>9} {:>9}   per tier (count p50/p99 ns)",
        "configuration", "warmers", "commit ms", "p50 ns", "p99 ns"
    );
    for (c, config) in CONFIGS.iter().enumerate() {
        for (w, warmers) in SWEEP_WARMERS.iter().enumerate() {
            let row = &rows[c][w];
            let tiers: Vec<String> = row
                .tiers
                .iter()
                .map(|(t, n, p50, p99)| format!("{t} {n} {p50}/{p99}"))
                .collect();
            println!(
                "{:<46} {:>7} {:>11.1} {:>9} {:>9}   {}",
                config.name,
                warmers,
                row.commit_ms,
                row.p50,
                row.p99,
                tiers.join(", ")
            );
        }
    }
    let at = |w: usize| {
        SWEEP_WARMERS
            .iter()
            .position(|x| *x == w)
            .expect("warmer count")
    };
    for (c, config) in CONFIGS.iter().enumerate() {
        let one = &rows[c][at(1)];
        let most = &rows[c][at(256)];
        let none = &rows[c][at(0)];
        let best_warm = SWEEP_WARMERS
            .iter()
            .enumerate()
            .filter(|(_, w)| **w >= 2)
            .map(|(i, _)| rows[c][i].commit_ms)
            .fold(f64::INFINITY, f64::min);
        println!(
            "{}: p50 at 256 / at 1 warmer = {:.2}x (target <= 1.5x), p99 = {:.2}x (target <= 2x); commit with no warmup / best with >= 2 warmers = {:.2}x (target > 1x)",
            config.name,
            most.p50 as f64 / one.p50.max(1) as f64,
            most.p99 as f64 / one.p99.max(1) as f64,
            none.commit_ms / best_warm,
        );
    }
}

fn main() {
    let run = Run::from_args();
    let mut criterion = Criterion::default().configure_from_args();
    cache_gets(&mut criterion, &run);
    record_latency(&mut criterion, &run);
    state_db_sweep(&run);
    criterion.final_summary();
}
