//! A cold block with and without its access list (issue 14): the same
//! block of a mainnet-shaped trace, executed (every read the trace lists,
//! one after another on one thread, as an EVM would issue them) and then
//! its root computed, four ways, interleaved so the ratios come from the
//! same machine state:
//!
//! * `cold plain` (the baseline): the datadir's files evicted from the page
//!   cache, the store reopened (empty strata caches), no warmers;
//! * `cold prefetch`: the same, with `--warmers` warmers prefetching the
//!   block's access list while it executes, the root computed after;
//! * `cold alongside`: prefetch, and the root computed from the list on a
//!   thread of its own while the block executes;
//! * `warm plain`: the datadir in the page cache (strata caches empty),
//!   no warmers — the reference the cold runs are read against.
//!
//! Nothing is committed (the root is computed with `state_root()` and the
//! block dropped), so every run starts from the same state. Each run checks
//! the root against the trace's. First, the disk itself: random 4 KiB reads
//! of the evicted `state.redb` at queue depths 1, 4, 16 and 64 (a thread
//! per slot), the ceiling any prefetch works under.
//!
//! `cargo bench -p strata-benches --bench cold_block` generates a trace of
//! `STRATA_BENCH_ACCOUNTS` accounts (default 200,000; contracts 1/200 of
//! that) or replays `STRATA_BENCH_TRACE=FILE` (e.g. the 1M trace of
//! `strata gen-trace --accounts 1000000 --contracts 5000 --blocks 40 --seed
//! 7`); `STRATA_BENCH_BEFORE` blocks (default 20, at most the trace's
//! blocks − 1) are committed first and the next one is measured;
//! `STRATA_BENCH_WARMERS` (16), `STRATA_BENCH_RUNS` (5 rounds). `--test`
//! runs a small version. The datadir lives under `TMPDIR`, or in
//! `STRATA_BENCH_DATADIR`, which is built once and reused by later runs
//! whose head is the same block (nothing is committed to it).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use strata_benches::{env_u64, machine_load};
use strata_cli::cold::evict_page_cache;
use strata_storage::{BlockAccessList, Durability, Options, StateDb};
use strata_trace::generator::{GenConfig, generate};
use strata_trace::{TraceBlock, TraceLine, TraceReader, TraceWriter};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    ColdPlain,
    ColdPrefetch,
    ColdAlongside,
    WarmPlain,
}

impl Mode {
    const ALL: [Mode; 4] = [
        Mode::ColdPlain,
        Mode::ColdPrefetch,
        Mode::ColdAlongside,
        Mode::WarmPlain,
    ];

    fn name(self) -> &'static str {
        match self {
            Mode::ColdPlain => "cold plain",
            Mode::ColdPrefetch => "cold prefetch",
            Mode::ColdAlongside => "cold alongside",
            Mode::WarmPlain => "warm plain",
        }
    }

    fn cold(self) -> bool {
        self != Mode::WarmPlain
    }

    fn prefetch(self) -> bool {
        matches!(self, Mode::ColdPrefetch | Mode::ColdAlongside)
    }
}

/// One measured run of the block.
#[derive(Clone, Debug)]
struct Run {
    /// From `begin_block` to the root.
    block: Duration,
    /// The execution's reads, back to back.
    exec: Duration,
    /// From the end of execution to the root (the root's whole time when
    /// it is computed after execution; the wait for it when alongside).
    root: Duration,
    read_p50: Duration,
    read_p99: Duration,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let work = tempfile::tempdir().expect("temporary folder");
    let trace = match std::env::var_os("STRATA_BENCH_TRACE") {
        Some(path) => PathBuf::from(path),
        None => generate_trace(work.path(), quick),
    };
    let (genesis, blocks) = read_trace(&trace);
    let before = env_u64("STRATA_BENCH_BEFORE", if quick { 2 } else { 20 })
        .min(blocks.len().saturating_sub(1) as u64) as usize;
    let warmers = env_u64("STRATA_BENCH_WARMERS", 16) as usize;
    let rounds = env_u64("STRATA_BENCH_RUNS", if quick { 1 } else { 5 });
    let datadir = std::env::var_os("STRATA_BENCH_DATADIR")
        .map_or_else(|| work.path().join("datadir"), PathBuf::from);
    let started = Instant::now();
    if head_of(&datadir) != Some(before as u64) {
        if datadir.exists() {
            std::fs::remove_dir_all(&datadir).expect("remove the stale datadir");
        }
        build_datadir(&datadir, genesis, &blocks[..before]);
    }
    let block = &blocks[before];
    let list = Arc::new(block.access_list());
    let size = dir_bytes(&datadir);
    println!(
        "cold_block: trace {} — block {} ({} accounts, {} slots listed) on the state after block {}; datadir {:.1} MB built in {:.1} s; {} warmers; {}",
        trace.display(),
        block.number,
        list.accounts.len(),
        list.len() - list.accounts.len(),
        block.number - 1,
        size as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        warmers,
        machine_load(),
    );

    for depth in [1, 4, 16, 64] {
        let (reads, elapsed) = random_reads(&datadir.join(strata_storage::DB_FILE), depth);
        println!(
            "  disk: random 4 KiB reads at queue depth {depth:>2}: {:>7.0} reads/s, {:>6.0} µs each",
            reads as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64() * 1e6 * depth as f64 / reads as f64,
        );
    }

    let mut runs: Vec<(Mode, Run)> = Vec::new();
    for round in 0..rounds {
        for mode in Mode::ALL {
            let run = run_block(&datadir, block, &list, mode, warmers);
            println!(
                "  round {round} {:<15} block {:>8.1} ms  exec {:>8.1} ms  root {:>7.1} ms  read p50 {:>6.1} µs p99 {:>7.1} µs",
                mode.name(),
                ms(run.block),
                ms(run.exec),
                ms(run.root),
                us(run.read_p50),
                us(run.read_p99),
            );
            runs.push((mode, run));
        }
    }

    let median = |mode: Mode, field: fn(&Run) -> Duration| {
        let mut values: Vec<Duration> = runs
            .iter()
            .filter(|(m, _)| *m == mode)
            .map(|(_, r)| field(r))
            .collect();
        values.sort();
        values[values.len() / 2]
    };
    println!("\nmedians of {rounds} rounds:");
    println!(
        "| mode | block ms | exec reads ms | root after exec ms | read p50 µs | read p99 µs | block vs cold plain |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let base = median(Mode::ColdPlain, |r| r.block);
    for mode in Mode::ALL {
        let block = median(mode, |r| r.block);
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}× faster |",
            mode.name(),
            ms(block),
            ms(median(mode, |r| r.exec)),
            ms(median(mode, |r| r.root)),
            us(median(mode, |r| r.read_p50)),
            us(median(mode, |r| r.read_p99)),
            base.as_secs_f64() / block.as_secs_f64(),
        );
    }
    let sequential_root = median(Mode::ColdPrefetch, |r| r.root);
    let alongside = median(Mode::ColdAlongside, |r| r.block);
    let floor = median(Mode::ColdAlongside, |r| r.exec).max(sequential_root);
    println!(
        "root alongside: block {:.1} ms = {:.2}× max(exec reads, root) (root measured after execution with prefetch: {:.1} ms)",
        ms(alongside),
        alongside.as_secs_f64() / floor.as_secs_f64(),
        ms(sequential_root),
    );
    println!(
        "cold prefetch exec-read p99 / warm plain p99: {:.2}×",
        median(Mode::ColdPrefetch, |r| r.read_p99).as_secs_f64()
            / median(Mode::WarmPlain, |r| r.read_p99).as_secs_f64()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A mainnet-shaped trace of `STRATA_BENCH_ACCOUNTS` accounts.
fn generate_trace(dir: &Path, quick: bool) -> PathBuf {
    let accounts = env_u64("STRATA_BENCH_ACCOUNTS", if quick { 5_000 } else { 200_000 }) as usize;
    let config = GenConfig {
        accounts,
        contracts: (accounts / 200).max(10),
        blocks: if quick { 3 } else { 21 },
        seed: 7,
        account_reads: None,
        account_writes: None,
        slot_reads: None,
        slot_writes: None,
    };
    let path = dir.join("trace.jsonl");
    let file = std::io::BufWriter::new(File::create(&path).expect("create the trace"));
    let mut out = TraceWriter::new(file);
    generate(&config, &mut out, None).expect("generate the trace");
    out.finish().expect("write the trace");
    path
}

/// The trace's genesis and blocks.
fn read_trace(path: &Path) -> (strata_storage::genesis::GenesisAlloc, Vec<TraceBlock>) {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut genesis = None;
    let mut blocks = Vec::new();
    for line in TraceReader::new(BufReader::with_capacity(1 << 20, file)) {
        match line.unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
            TraceLine::Genesis { alloc, .. } => genesis = Some(alloc),
            TraceLine::Block(block) => blocks.push(block),
        }
    }
    let genesis = genesis.unwrap_or_else(|| panic!("{} has no genesis line", path.display()));
    assert!(
        blocks.len() >= 2,
        "{} needs at least 2 blocks",
        path.display()
    );
    (genesis, blocks)
}

/// The last block of an existing datadir (`None` when there is none).
fn head_of(datadir: &Path) -> Option<u64> {
    if !datadir.join(strata_storage::DB_FILE).exists() {
        return None;
    }
    strata_storage::ReadOnlyStateDb::open(datadir, Options::default())
        .ok()?
        .last_block()
        .ok()?
}

/// The store after `blocks`, flushed into redb and closed.
fn build_datadir(
    datadir: &Path,
    genesis: strata_storage::genesis::GenesisAlloc,
    blocks: &[TraceBlock],
) {
    let db = StateDb::open(
        datadir,
        Options::default().with_durability(Durability::EveryN(u64::MAX)),
    )
    .expect("open the datadir");
    db.init_genesis(&genesis, strata_storage::GenesisName::Unnamed)
        .expect("genesis");
    drop(genesis);
    for block in blocks {
        let mut writer = db.begin_block(block.number).expect("begin");
        writer
            .apply_access_list(&block.access_list())
            .expect("stage");
        let info = writer.commit().expect("commit");
        if let Some(expected) = block.state_root {
            assert_eq!(info.root, expected, "block {}", block.number);
        }
    }
    db.flush().expect("flush");
}

/// One run of `block` on a freshly opened store.
fn run_block(
    datadir: &Path,
    block: &TraceBlock,
    list: &Arc<BlockAccessList>,
    mode: Mode,
    warmers: usize,
) -> Run {
    if mode.cold() {
        evict_page_cache(datadir).expect("evict the datadir");
    } else {
        read_all(datadir);
    }
    let db = StateDb::open(
        datadir,
        Options::default()
            .with_warmers(if mode.prefetch() { warmers } else { 0 })
            .with_background_maintenance(false),
    )
    .expect("open the datadir");
    let started = Instant::now();
    let mut writer = db.begin_block(block.number).expect("begin");
    if mode.prefetch() {
        writer.prefetch(list);
    }
    if mode == Mode::ColdAlongside {
        writer.root_alongside(list.clone()).expect("root thread");
    }
    let mut latencies = Vec::new();
    for (address, read) in &block.reads {
        let at = Instant::now();
        let account = writer.account(address).expect("read");
        latencies.push(at.elapsed());
        if read.code.is_some()
            && let Some(account) = account
        {
            let at = Instant::now();
            let reader = writer.reader(strata_storage::Regime::Exec);
            reader.code_by_hash(&account.code_hash).expect("read code");
            latencies.push(at.elapsed());
        }
        for slot in read.storage.keys() {
            let at = Instant::now();
            writer.storage(address, slot).expect("read");
            latencies.push(at.elapsed());
        }
    }
    let exec = started.elapsed();
    writer.apply_access_list(list).expect("stage");
    let root = writer.state_root().expect("root");
    let block_time = started.elapsed();
    if let Some(expected) = block.state_root {
        assert_eq!(
            root,
            expected,
            "{} root of block {}",
            mode.name(),
            block.number
        );
    }
    drop(writer);
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    Run {
        block: block_time,
        exec,
        root: block_time - exec,
        read_p50: at(0.5),
        read_p99: at(0.99),
    }
}

/// Random 4 KiB reads of `file` (evicted first) by `depth` threads: how
/// many, and how long they took.
fn random_reads(file: &Path, depth: usize) -> (u64, Duration) {
    use std::os::unix::fs::FileExt;
    let dir = file.parent().expect("a file in a folder");
    evict_page_cache(dir).expect("evict");
    let handle = File::open(file).expect("open");
    let pages = handle.metadata().expect("stat").len() / 4096;
    let per_thread = (4096 / depth as u64).max(64);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for thread in 0..depth as u64 {
            let handle = &handle;
            scope.spawn(move || {
                let mut rng = strata_benches::seeded(thread);
                let mut page = [0u8; 4096];
                for _ in 0..per_thread {
                    let at = rng.random_range(0..pages.max(1));
                    let _ = handle.read_at(&mut page, at * 4096);
                }
            });
        }
    });
    (per_thread * depth as u64, started.elapsed())
}

/// Reads every file of `dir` once, so its pages are in the page cache.
fn read_all(dir: &Path) {
    for entry in walk(dir) {
        let _ = std::io::copy(&mut File::open(&entry).expect("open"), &mut std::io::sink());
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    walk(dir)
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).expect("list").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
