//! The observer (issue 8): a thread with its own read handles that, every
//! 1/RATE s, reads the head (last committed block and root), a random
//! account and a random slot from the trace's keys, timing each read — first
//! on the idle store, then while the replay runs at full speed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_storage::genesis::GenesisAlloc;
use strata_storage::{Regime, StateDb};

use crate::trace::TraceBlock;

/// At most this many accounts and slots are sampled from.
const POOL_LIMIT: usize = 1 << 16;

/// Keys the observer samples from: the genesis and the first block.
#[derive(Debug, Default)]
pub(super) struct KeyPool {
    accounts: Vec<Address>,
    slots: Vec<(Address, B256)>,
}

impl KeyPool {
    /// Collect keys from the genesis (if any) and the first block (if any).
    pub(super) fn collect(genesis: Option<&GenesisAlloc>, first: Option<&TraceBlock>) -> Self {
        let mut pool = KeyPool::default();
        for (address, account) in genesis.into_iter().flatten() {
            if pool.accounts.len() < POOL_LIMIT {
                pool.accounts.push(*address);
            }
            for slot in account.storage.keys() {
                if pool.slots.len() < POOL_LIMIT {
                    pool.slots.push((*address, *slot));
                }
            }
        }
        if let Some(block) = first {
            for (address, read) in &block.reads {
                pool.accounts.push(*address);
                pool.slots
                    .extend(read.storage.keys().map(|slot| (*address, *slot)));
            }
        }
        pool
    }
}

/// Latencies of one observation phase.
#[derive(Debug, Clone, Default)]
pub(super) struct ObserverStats {
    /// Head reads (a read handle's block and root), ns.
    head: Vec<u64>,
    /// Account reads, ns.
    account: Vec<u64>,
    /// Slot reads, ns.
    storage: Vec<u64>,
    /// Observations that saw a block older than the last commit by more than one.
    stale: u64,
    /// Reads the store refused (counted, never fatal).
    errors: u64,
}

impl ObserverStats {
    /// The stats of an observer thread that panicked.
    pub(super) fn failed() -> Self {
        ObserverStats {
            errors: 1,
            ..Default::default()
        }
    }
}

/// Observe `db` at `rate` reads per second until `stop` is set or
/// `deadline` passes. Never fails: read errors are counted.
pub(super) fn observe(
    db: &StateDb,
    keys: &KeyPool,
    rate: f64,
    last_committed: &AtomicU64,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    seed: u64,
) -> ObserverStats {
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut stats = ObserverStats::default();
    let mut next = Instant::now();
    while !stop.load(Ordering::Acquire) && deadline.is_none_or(|d| Instant::now() < d) {
        let committed = last_committed.load(Ordering::Acquire);
        let t = Instant::now();
        let reader = db.reader(Regime::Exec);
        let block = reader.block().unwrap_or(0);
        let _root = reader.root();
        stats.head.push(t.elapsed().as_nanos() as u64);
        if block.saturating_add(1) < committed {
            stats.stale += 1;
        }
        if !keys.accounts.is_empty() {
            let address = keys.accounts[rng.random_range(0..keys.accounts.len())];
            let t = Instant::now();
            let result = reader.account(&address);
            stats.account.push(t.elapsed().as_nanos() as u64);
            stats.errors += u64::from(result.is_err());
        }
        if !keys.slots.is_empty() {
            let (address, slot) = keys.slots[rng.random_range(0..keys.slots.len())];
            let t = Instant::now();
            let result = reader.storage(&address, &slot);
            stats.storage.push(t.elapsed().as_nanos() as u64);
            stats.errors += u64::from(result.is_err());
        }
        drop(reader);
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            // Behind schedule: do not burst to catch up.
            next = now;
        }
    }
    stats
}

/// Percentiles of one kind of read.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: usize,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Worst, ns.
    pub max_ns: u64,
}

impl Percentiles {
    fn of(samples: &[u64]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let at = |q: f64| {
            if sorted.is_empty() {
                0
            } else {
                let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
                sorted[rank - 1]
            }
        };
        Percentiles {
            count: sorted.len(),
            p50_ns: at(0.5),
            p99_ns: at(0.99),
            p999_ns: at(0.999),
            max_ns: sorted.last().copied().unwrap_or(0),
        }
    }
}

/// What the observer saw, idle and under load.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ObserverReport {
    /// Target reads per second.
    pub rate: f64,
    /// (kind, idle, under load) for "head", "account", "storage".
    pub rows: Vec<(&'static str, Percentiles, Percentiles)>,
    /// Observations under load that saw a block more than one behind the last commit.
    pub stale_under_load: u64,
    /// Observations under load.
    pub observations_under_load: usize,
    /// Reads that returned an error (idle + under load).
    pub errors: u64,
}

impl ObserverReport {
    pub(super) fn new(rate: f64, idle: ObserverStats, load: ObserverStats) -> Self {
        ObserverReport {
            rate,
            rows: vec![
                (
                    "head",
                    Percentiles::of(&idle.head),
                    Percentiles::of(&load.head),
                ),
                (
                    "account",
                    Percentiles::of(&idle.account),
                    Percentiles::of(&load.account),
                ),
                (
                    "storage",
                    Percentiles::of(&idle.storage),
                    Percentiles::of(&load.storage),
                ),
            ],
            stale_under_load: load.stale,
            observations_under_load: load.head.len(),
            errors: idle.errors + load.errors,
        }
    }
}
