//! strata-observer: the observer (issue 8). Every 1/RATE s it opens a read
//! handle, reads the head (last committed block and root), a random account
//! and a random slot from the trace's keys, and times each read. It runs as
//! a thread of the replaying process (its own handles on the `StateDb`) or
//! as a second process (`strata observe`) following the datadir read-only;
//! the second process hands its samples over as lines ([`Sample::to_line`],
//! [`Sample::parse`]).
//!
//! Observations carry a time on the machine's monotonic clock, shared by
//! every process, so the replay can split them into an idle and a loaded
//! window and compare each with its own commit log ([`ObserverFigures`]).
//!
//! The `strata` binary (strata-cli) starts the second process and prints
//! the figures; this crate knows neither the commands nor their errors.
#![deny(missing_docs)]

mod figures;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_storage::genesis::GenesisAlloc;
use strata_storage::{Regime, StateReader};
use strata_trace::TraceBlock;

pub use figures::Window;
pub use figures::{ObserverFigures, ObserverReport, Percentiles, SLOW_NS, format_ns};

/// At most this many accounts and slots are sampled from.
const POOL_LIMIT: usize = 1 << 16;

/// Keys the observer samples from: the genesis and the first block.
#[derive(Debug, Default)]
pub struct KeyPool {
    accounts: Vec<Address>,
    slots: Vec<(Address, B256)>,
}

impl KeyPool {
    /// Collect keys from the genesis (if any) and the first block (if any).
    pub fn collect(genesis: Option<&GenesisAlloc>, first: Option<&TraceBlock>) -> Self {
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

    /// A pool of the given accounts and slots.
    pub fn new(accounts: Vec<Address>, slots: Vec<(Address, B256)>) -> Self {
        KeyPool { accounts, slots }
    }
}

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`): comparable
/// between processes of one machine, unlike `Instant`.
pub fn monotonic_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (now.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as u64)
}

/// One observation: when it started, the block it saw and how long each read took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// [`monotonic_ns`] before the read handle was opened.
    pub at_ns: u64,
    /// The block the handle showed (`None` before genesis or when the open failed).
    pub block: Option<u64>,
    /// Opening the handle and reading block and root, ns.
    pub head_ns: u64,
    /// The account read, ns (`None` when there was nothing to read).
    pub account_ns: Option<u64>,
    /// The slot read, ns.
    pub storage_ns: Option<u64>,
    /// Reads of this observation that failed.
    pub errors: u32,
    /// Time the observing thread spent waiting for a CPU (runnable but not
    /// running) during the observation, ns; `None` where the kernel does
    /// not say (`/proc/thread-self/schedstat`).
    pub waited_ns: Option<u64>,
}

impl Sample {
    /// Total time of the observation's reads, ns.
    pub fn total_ns(&self) -> u64 {
        self.head_ns + self.account_ns.unwrap_or(0) + self.storage_ns.unwrap_or(0)
    }
}

impl Sample {
    /// The sample as one line of `strata observe --samples` output:
    /// `at_ns block head_ns account_ns storage_ns errors waited_ns`, `-`
    /// for none.
    pub fn to_line(self) -> String {
        let opt = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        format!(
            "{} {} {} {} {} {} {}",
            self.at_ns,
            opt(self.block),
            self.head_ns,
            opt(self.account_ns),
            opt(self.storage_ns),
            self.errors,
            opt(self.waited_ns)
        )
    }

    /// Parses a line written by [`Sample::to_line`].
    pub fn parse(line: &str) -> Result<Sample, String> {
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        if fields.len() != 7 {
            return Err(format!(
                "expected 7 fields, found {}: {line:?}",
                fields.len()
            ));
        }
        let num = |i: usize| {
            fields[i]
                .parse::<u64>()
                .map_err(|e| format!("field {} of {line:?}: {e}", i + 1))
        };
        let opt = |i: usize| match fields[i] {
            "-" => Ok(None),
            _ => num(i).map(Some),
        };
        Ok(Sample {
            at_ns: num(0)?,
            block: opt(1)?,
            head_ns: num(2)?,
            account_ns: opt(3)?,
            storage_ns: opt(4)?,
            errors: u32::try_from(num(5)?).map_err(|e| format!("field 6 of {line:?}: {e}"))?,
            waited_ns: opt(6)?,
        })
    }
}

/// Observe through `open` at `rate` observations per second until `stop`
/// is set or `deadline` passes, handing each observation to `sink`. Never
/// fails: a handle that cannot be opened or a read that fails is counted.
pub fn observe(
    open: &dyn Fn() -> strata_storage::Result<StateReader>,
    keys: &KeyPool,
    rate: f64,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    seed: u64,
    sink: &mut dyn FnMut(Sample),
) {
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut next = Instant::now();
    while !stop.load(Ordering::Acquire) && deadline.is_none_or(|d| Instant::now() < d) {
        let waited_before = runqueue_wait_ns();
        let at_ns = monotonic_ns();
        let t = Instant::now();
        let opened = open();
        let (block, _root) = match &opened {
            Ok(reader) => (reader.block(), Some(reader.root())),
            Err(_) => (None, None),
        };
        let mut sample = Sample {
            at_ns,
            block,
            head_ns: t.elapsed().as_nanos() as u64,
            account_ns: None,
            storage_ns: None,
            errors: u32::from(opened.is_err()),
            waited_ns: None,
        };
        if let Ok(reader) = opened {
            if !keys.accounts.is_empty() {
                let address = keys.accounts[rng.random_range(0..keys.accounts.len())];
                let t = Instant::now();
                let result = reader.account(&address);
                sample.account_ns = Some(t.elapsed().as_nanos() as u64);
                sample.errors += u32::from(result.is_err());
            }
            if !keys.slots.is_empty() {
                let (address, slot) = keys.slots[rng.random_range(0..keys.slots.len())];
                let t = Instant::now();
                let result = reader.storage(&address, &slot);
                sample.storage_ns = Some(t.elapsed().as_nanos() as u64);
                sample.errors += u32::from(result.is_err());
            }
        }
        sample.waited_ns = waited_before
            .zip(runqueue_wait_ns())
            .map(|(before, after)| after.saturating_sub(before));
        sink(sample);
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            // Behind schedule: do not burst to catch up.
            next = now;
        }
    }
}

/// How long this thread has waited on a run queue (runnable, not running)
/// since it started, ns: the second field of `/proc/thread-self/schedstat`.
fn runqueue_wait_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The time of one kind of read in a sample.
pub type ReadTime = fn(&Sample) -> Option<u64>;

/// The kinds of read an observation times, and how to get each from a sample.
pub const READS: [(&str, ReadTime); 3] = [
    ("head", |s| Some(s.head_ns)),
    ("account", |s| s.account_ns),
    ("storage", |s| s.storage_ns),
];

/// The regime observers read under: RPC-style reads, not the commitment.
pub const OBSERVER_REGIME: Regime = Regime::Exec;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_round_trip_through_their_line() {
        let full = Sample {
            at_ns: 12,
            block: Some(3),
            head_ns: 400,
            account_ns: Some(5),
            storage_ns: Some(6),
            errors: 1,
            waited_ns: Some(7),
        };
        let empty = Sample {
            block: None,
            account_ns: None,
            storage_ns: None,
            waited_ns: None,
            ..full
        };
        for sample in [full, empty] {
            assert_eq!(Sample::parse(&sample.to_line()), Ok(sample));
        }
        assert!(Sample::parse("1 2 3").unwrap_err().contains("7 fields"));
        assert!(
            Sample::parse("1 x 3 4 5 0 -")
                .unwrap_err()
                .contains("field 2")
        );
    }
}
