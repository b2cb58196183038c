//! Observer latency (issue 8): independent readers of the head, a random
//! account and a random slot, first on the idle store and then while blocks
//! are committed at full speed with background collate/merge/prune and a
//! warmup pool — both windows in one run, so the ratio is read off the same
//! machine state.
//!
//! Two observers run side by side: a thread with its own `StateDb` read
//! handles, and a `ReadOnlyStateDb` that follows the datadir through its own
//! redb handle (what a second process does; `strata replay --observer
//! --observer-process` measures a real second process).
//!
//! `cargo bench -p strata-benches --bench observer` (100,000 accounts, 40
//! blocks of 2,000 accounts + 6,000 slots, 1,000 observations/s).
//! `STRATA_BENCH_ACCOUNTS`, `STRATA_BENCH_BLOCKS`, `STRATA_BENCH_RATE` and
//! `STRATA_BENCH_WARMERS` change the sizes; `--test` runs a small version.
//! The first second of observation (filling each handle's caches) belongs
//! to neither window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256};
use strata_benches::{block_writes, env_u64, genesis_with_contracts, machine_load, seeded, stage};
use strata_observer::{
    KeyPool, OBSERVER_REGIME, ObserverFigures, Sample, Window, format_ns, monotonic_ns, observe,
};
use strata_storage::{Options, ReadOnlyStateDb, StateDb, StateReader};

/// Targets of the issue, read against the loaded window.
const P99_RATIO_TARGET: f64 = 3.0;
const WORST_TARGET_NS: u64 = 2_000_000;

struct Sizes {
    accounts: usize,
    blocks: u64,
    rate: f64,
    warmers: usize,
    /// Observation before the idle window, discarded (fills the handles' caches).
    warmup: Duration,
    idle: Duration,
}

impl Sizes {
    fn from_env() -> Sizes {
        let quick = std::env::args().any(|a| a == "--test");
        Sizes {
            accounts: env_u64("STRATA_BENCH_ACCOUNTS", if quick { 5_000 } else { 100_000 })
                as usize,
            blocks: env_u64("STRATA_BENCH_BLOCKS", if quick { 4 } else { 40 }),
            rate: env_u64("STRATA_BENCH_RATE", 1000) as f64,
            warmers: env_u64("STRATA_BENCH_WARMERS", 16) as usize,
            warmup: if quick {
                Duration::from_millis(100)
            } else {
                Duration::from_secs(1)
            },
            idle: if quick {
                Duration::from_millis(300)
            } else {
                Duration::from_secs(3)
            },
        }
    }
}

fn options(warmers: usize) -> Options {
    Options::default()
        .with_share_with_readers(true)
        .with_background_maintenance(true)
        .with_warmers(warmers)
        // Small steps: collate, merge and prune run every few blocks.
        .with_step_size(4)
        .with_keep_steps_in_db(1)
}

/// Observe until `stop`, keeping every sample.
fn collect(
    open: &dyn Fn() -> strata_storage::Result<StateReader>,
    keys: &KeyPool,
    rate: f64,
    stop: &AtomicBool,
    seed: u64,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    observe(open, keys, rate, stop, None, seed, &mut |s| samples.push(s));
    samples
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes = Sizes::from_env();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = seeded(0x0B5E_47E5);
    let (alloc, contracts) = genesis_with_contracts(sizes.accounts, &mut rng);
    let addresses: Vec<Address> = alloc.keys().copied().collect();
    let slots: Vec<(Address, B256)> = contracts
        .iter()
        .flat_map(|c| alloc[c].storage.keys().map(move |s| (*c, *s)))
        .collect();
    let keys = KeyPool::new(addresses.clone(), slots);
    let db = StateDb::open(dir.path(), options(sizes.warmers)).expect("open");
    db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
        .expect("genesis");
    drop(alloc);
    let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).expect("read-only open");
    let blocks: Vec<_> = (0..sizes.blocks)
        .map(|_| block_writes(&addresses, &contracts, 2000, 6000, &mut rng))
        .collect();

    println!(
        "observer: {} accounts, {} blocks of 2,000 accounts + 6,000 slots, {} warmers, step 4, {} observations/s per observer, {}",
        sizes.accounts,
        sizes.blocks,
        sizes.warmers,
        sizes.rate,
        machine_load()
    );
    let committed_before = db.last_block();
    let stop = AtomicBool::new(false);
    let (thread_samples, follower_samples, idle, load, commits, wall) =
        std::thread::scope(|scope| {
            let (keys, stop, rate, db, follower) = (&keys, &stop, sizes.rate, &db, &follower);
            let thread = scope.spawn(move || {
                let open = || Ok(db.reader(OBSERVER_REGIME));
                collect(&open, keys, rate, stop, 1)
            });
            let other = scope.spawn(move || {
                let open = || follower.reader(OBSERVER_REGIME);
                collect(&open, keys, rate, stop, 2)
            });
            std::thread::sleep(sizes.warmup);
            let idle_start = monotonic_ns();
            std::thread::sleep(sizes.idle);
            let idle = Window {
                start_ns: idle_start,
                end_ns: monotonic_ns(),
            };
            let started = Instant::now();
            let mut commits = Vec::new();
            for (number, writes) in (1..).zip(&blocks) {
                let mut writer = db.begin_block(number).expect("begin block");
                stage(&mut writer, writes);
                let info = writer.commit().expect("commit");
                commits.push((monotonic_ns(), info.block));
            }
            let wall = started.elapsed();
            let load = Window {
                start_ns: idle.end_ns,
                end_ns: monotonic_ns(),
            };
            stop.store(true, Ordering::Release);
            let thread = thread.join().expect("observer thread");
            let other = other.join().expect("read-only observer");
            (thread, other, idle, load, commits, wall)
        });
    println!(
        "load: {} blocks in {:.2} s ({:.1} blocks/s) with maintenance and warmers",
        sizes.blocks,
        wall.as_secs_f64(),
        sizes.blocks as f64 / wall.as_secs_f64().max(1e-9)
    );
    for (name, samples) in [
        ("thread", &thread_samples),
        ("read-only handle", &follower_samples),
    ] {
        let figures = ObserverFigures::new(name, samples, idle, load, committed_before, &commits);
        for line in figures.table(sizes.rate) {
            println!("{line}");
        }
        for (kind, idle, load) in &figures.rows {
            let ratio = load.p99_ns as f64 / idle.p99_ns.max(1) as f64;
            println!(
                "  {name} {kind}: p99 under load / idle = {ratio:.2}x (target <= {P99_RATIO_TARGET}x{}), worst {} (target <= {}{})",
                if ratio <= P99_RATIO_TARGET {
                    ", met"
                } else {
                    ", MISSED"
                },
                format_ns(load.max_ns),
                format_ns(WORST_TARGET_NS),
                if load.max_ns <= WORST_TARGET_NS {
                    ", met"
                } else {
                    ", MISSED"
                },
            );
        }
    }
}
