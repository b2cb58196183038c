//! Readers running during commits and merges: no errors, every read returns
//! the value of some committed block, never a mix inside one snapshot.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use alloy_primitives::{Address, B256, U256};
use strata_storage::{Account, Options, ReadOnlyStateDb, Regime, StateDb, StateReader};

const PAIRS: u64 = 16;

fn account(i: u64) -> Address {
    Address::with_last_byte(i as u8 + 1)
}

/// An account only block `block` writes: old steps keep entries to collate.
fn one_off(block: u64) -> Address {
    let mut bytes = [0xaa; 20];
    bytes[12..].copy_from_slice(&block.to_be_bytes());
    Address::from(bytes)
}

/// Opens a read handle on the newest committed block.
type OpenReader = Arc<dyn Fn(Regime) -> StateReader + Send + Sync>;

fn workload_options(share_with_readers: bool) -> Options {
    Options::default()
        .with_step_size(2)
        .with_keep_steps_in_db(1)
        .with_background_maintenance(true)
        .with_share_with_readers(share_with_readers)
}

#[test]
fn readers_see_whole_blocks_during_commits_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(StateDb::open(dir.path(), workload_options(false)).unwrap());
    let handle = db.clone();
    let open: OpenReader = Arc::new(move |regime| handle.reader(regime));
    run_workload(&db, open);
}

/// The same workload read through a read-only handle (the way a second
/// process follows the writer): whole blocks only, and the root each
/// handle shows is the root the writer committed for that block.
#[test]
fn read_only_handles_follow_commits_with_whole_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(StateDb::open(dir.path(), workload_options(true)).unwrap());
    let follower = Arc::new(ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap());
    assert_eq!(follower.last_block().unwrap(), None);
    let handle = follower.clone();
    let open: OpenReader = Arc::new(move |regime| handle.reader(regime).unwrap());
    let seen = run_workload(&db, open);
    let distinct: std::collections::BTreeSet<u64> = seen.iter().map(|&(b, _)| b).collect();
    assert!(
        distinct.len() > 1,
        "the read-only handle followed no commits: {distinct:?}"
    );
    for (block, root) in seen {
        assert_eq!(
            Some(root),
            db.root_at(block).unwrap(),
            "the read-only handle's root of block {block}"
        );
    }
    // New files open off the read path: the handle catches up with the
    // writer once its refresher has opened them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while follower.last_block().unwrap() != db.last_block() {
        assert!(
            std::time::Instant::now() < deadline,
            "the handle never caught up"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(follower.root().unwrap(), db.root());
}

/// Commits 120 blocks (with merges) while three threads read through
/// `open`; returns the (block, root) pairs the readers saw.
fn run_workload(db: &Arc<StateDb>, open: OpenReader) -> Vec<(u64, B256)> {
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let slot = B256::with_last_byte(1);

    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (open, stop, reads) = (open.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                let mut highest = 0u64;
                let mut seen = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let reader = open(if r == 0 {
                        Regime::Commitment
                    } else {
                        Regime::Exec
                    });
                    let Some(block) = reader.block() else {
                        continue;
                    };
                    assert!(
                        block >= highest,
                        "snapshots went back from {highest} to {block}"
                    );
                    highest = block;
                    if seen.last().is_none_or(|&(b, _)| b != block) {
                        seen.push((block, reader.root()));
                    }
                    // Every block writes all pairs with its own number: one
                    // snapshot must show one block number everywhere.
                    for i in 0..PAIRS {
                        let balance = reader
                            .account(&account(i))
                            .unwrap()
                            .map(|a| a.balance)
                            .unwrap_or_default();
                        let value = reader.storage(&account(i), &slot).unwrap();
                        assert_eq!(balance, U256::from(block), "account {i} in block {block}");
                        assert_eq!(value, U256::from(block), "slot of {i} in block {block}");
                    }
                    let marker = reader.account(&one_off(block)).unwrap();
                    assert_eq!(
                        marker.map(|a| a.nonce),
                        Some(block),
                        "one-off of block {block}"
                    );
                    reads.fetch_add(1, Ordering::Relaxed);
                }
                seen
            })
        })
        .collect();

    for block in 0..120u64 {
        let mut writer = db.begin_block(block).unwrap();
        for i in 0..PAIRS {
            let balance = U256::from(block);
            writer.put_account(
                account(i),
                &Account {
                    balance,
                    ..Account::default()
                },
            );
            if block > 0 {
                writer.put_storage(account(i), slot, balance);
            }
        }
        writer.put_account(
            one_off(block),
            &Account {
                nonce: block,
                ..Account::default()
            },
        );
        writer.commit().unwrap();
        if block % 25 == 0 {
            db.compact().unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut seen = Vec::new();
    for reader in readers {
        seen.extend(reader.join().expect("a reader failed"));
    }
    assert!(reads.load(Ordering::Relaxed) > 0);
    let stats = db.stats().unwrap();
    assert!(
        stats.domains.iter().any(|d| !d.files.is_empty()),
        "maintenance built no files: {stats:?}"
    );
    seen
}
