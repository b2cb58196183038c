//! The background tasks (flush, collate + prune, merge, unwind) and readers
//! under every interleaving we can force: one task is held at each of its
//! pause points (`Options::pause_points`) while another runs to completion
//! (or waits for a lock the held task owns, then finishes once it is let
//! go). Afterwards every key reads the value of the block the store is at,
//! `verify` is clean, and a reopen serves the same.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use strata_storage::{Account, Options, PausePoint, PausePoints, ReadOnlyStateDb, Regime, StateDb};

const KEYS: u64 = 12;

fn who(i: u64) -> Address {
    Address::with_last_byte(i as u8 + 1)
}

/// The state after each block: nonce per account, one slot per account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    nonces: BTreeMap<u64, u64>,
    slots: BTreeMap<u64, u64>,
}

/// The writes of `block` over `state`: account 0 and a third of the others
/// rewritten, the same third by both blocks of a step (of 2 blocks), so
/// keys repeat inside a step and across steps; one slot each.
fn next_state(state: &State, block: u64) -> State {
    let mut next = state.clone();
    for i in (0..KEYS).filter(|i| *i == 0 || (i + block / 2).is_multiple_of(3) || block == 0) {
        next.nonces.insert(i, block * 100 + i);
        next.slots.insert(i, block * 1_000 + i + 1);
    }
    next
}

/// Commits `block`: the keys whose value differs from `before`.
fn commit(db: &StateDb, block: u64, before: &State, state: &State) {
    let mut writer = db.begin_block(block).unwrap();
    for (&i, &nonce) in &state.nonces {
        if before.nonces.get(&i) != Some(&nonce) {
            writer.put_account(
                who(i),
                &Account {
                    nonce,
                    balance: U256::from(7),
                    ..Account::default()
                },
            );
        }
    }
    for (&i, &value) in &state.slots {
        if before.slots.get(&i) != Some(&value) {
            writer.put_storage(who(i), B256::with_last_byte(1), U256::from(value));
        }
    }
    writer.commit().unwrap();
}

/// A store and the state after each of its blocks.
struct Chain {
    db: Arc<StateDb>,
    states: Vec<State>,
    /// `states` before the last unwind: what a reader during it may see.
    unwound: Vec<State>,
    points: Arc<PausePoints>,
    options: Options,
}

impl Chain {
    fn open(dir: &std::path::Path) -> Chain {
        let points = Arc::new(PausePoints::new());
        let options = Options::default()
            .with_step_size(2)
            .with_keep_steps_in_db(1)
            .with_unwind_depth(8)
            // Every task runs when a test starts it.
            .with_background_maintenance(false)
            .with_flush_batch_bytes(1 << 30)
            .with_memory_budget_bytes(2 << 30)
            .with_flush_txn_keys(5)
            .with_journal_segment_bytes(2 << 10)
            .with_pause_points(Some(points.clone()));
        let db = Arc::new(StateDb::open(dir, options.clone()).unwrap());
        Chain {
            db,
            states: Vec::new(),
            unwound: Vec::new(),
            points,
            options,
        }
    }

    /// Commits the next block.
    fn grow(&mut self) {
        let block = self.states.len() as u64;
        let before = self.states.last().cloned().unwrap_or_default();
        let state = next_state(&before, block);
        commit(&self.db, block, &before, &state);
        self.states.push(state);
    }

    /// Closes the store (every task joined) and opens it again.
    fn reopen(self, dir: &std::path::Path) -> Chain {
        let Chain {
            db,
            states,
            unwound,
            points,
            options,
        } = self;
        drop(Arc::into_inner(db).expect("every task joined"));
        let db = Arc::new(StateDb::open(dir, options.clone()).unwrap());
        Chain {
            db,
            states,
            unwound,
            points,
            options,
        }
    }

    /// Every key reads the state of the block the store is at.
    fn check(&self, db: &StateDb, when: &str) {
        let block = db.last_block().unwrap();
        let want = &self.states[block as usize];
        let reader = db.latest();
        for i in 0..KEYS {
            let account = reader.account(&who(i)).unwrap();
            assert_eq!(
                account.map(|a| a.nonce),
                want.nonces.get(&i).copied(),
                "{when}: nonce of account {i} at block {block}"
            );
            let slot = reader.storage(&who(i), &B256::with_last_byte(1)).unwrap();
            assert_eq!(
                slot,
                U256::from(want.slots.get(&i).copied().unwrap_or(0)),
                "{when}: slot of account {i} at block {block}"
            );
        }
        let report = db.verify(&Default::default()).unwrap();
        assert!(
            report.is_ok(),
            "{when}: verify at block {block}: {report:?}"
        );
    }
}

/// B6 of the durability findings: a flush landing between collation's read
/// of a step and its prune wrote a newer value of the same step, which the
/// prune deleted by step; reads then fell through to the file's older value.
#[test]
fn a_flush_while_collation_builds_its_file_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut chain = Chain::open(dir.path());
    for _ in 0..3 {
        chain.grow();
    }
    chain.db.flush().unwrap();
    // Blocks 3 and 4 land after the maintenance run began: block 4 makes
    // step 1 due, read from redb without block 3's writes of that step.
    chain.points.arm(PausePoint::MaintenanceStart);
    chain.points.arm(PausePoint::CollateBuilt);
    let maintenance = {
        let db = chain.db.clone();
        std::thread::spawn(move || db.compact().map(|_| ()))
    };
    assert!(wait(&chain.points, PausePoint::MaintenanceStart));
    chain.grow();
    chain.grow();
    chain.points.release(PausePoint::MaintenanceStart);
    assert!(wait(&chain.points, PausePoint::CollateBuilt));
    chain.db.flush().unwrap();
    chain.points.release(PausePoint::CollateBuilt);
    maintenance.join().unwrap().unwrap();
    chain.check(&chain.db, "after the collation");
    let chain = chain.reopen(dir.path());
    chain.check(&chain.db, "after a reopen");
}

/// Lean journal records: a follower rebuilds the commitment records of a
/// run of blocks at the run's last block. Here the writer's flush of
/// blocks 3..=5 is held while blocks 6..=8 commit and a follower reads
/// 3..=8 as one run; the flush then moves redb's head to 5, inside that
/// run: the follower reads 6..=8 again over redb's records of block 5, and
/// its values, root and proofs stay the writer's.
#[test]
fn a_follower_whose_redb_head_lands_inside_a_run_it_read_serves_the_writers_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let points = Arc::new(PausePoints::new());
    let options = Options::default()
        .with_share_with_readers(true)
        .with_publish_branches(false)
        .with_background_maintenance(false)
        .with_flush_batch_bytes(1 << 30)
        .with_memory_budget_bytes(2 << 30)
        .with_flush_txn_keys(5)
        .with_pause_points(Some(points.clone()));
    let db = Arc::new(StateDb::open(dir.path(), options).unwrap());
    let mut states: Vec<State> = Vec::new();
    let mut grow = |db: &StateDb| {
        let block = states.len() as u64;
        let before = states.last().cloned().unwrap_or_default();
        let state = next_state(&before, block);
        commit(db, block, &before, &state);
        states.push(state);
    };
    for _ in 0..3 {
        grow(&db);
    }
    db.flush().unwrap();
    for _ in 3..6 {
        grow(&db);
    }
    points.arm(PausePoint::FlushBatch);
    let flush = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    assert!(wait(&points, PausePoint::FlushBatch));
    for _ in 6..9 {
        grow(&db);
    }
    let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_follows(
        &follower,
        &db,
        8,
        "blocks 3..=8 read as one run over redb's head 2",
    );
    points.release(PausePoint::FlushBatch);
    assert_eq!(
        flush.join().unwrap().unwrap(),
        3,
        "the held flush took blocks 3..=5"
    );
    assert_follows(
        &follower,
        &db,
        8,
        "redb's head moved to block 5, inside the run",
    );
    let stats = follower.follow_stats();
    assert_eq!(stats.published_branches, 0, "{stats:?}");
    assert!(stats.rebuilt_branches >= 6, "{stats:?}");
}

/// The follower's values, root and proofs are the writer's.
fn assert_follows(follower: &ReadOnlyStateDb, db: &StateDb, last: u64, when: &str) {
    follower.refresh().unwrap();
    assert_eq!(follower.last_block().unwrap(), Some(last), "{when}");
    assert_eq!(follower.root().unwrap(), db.root(), "{when}");
    let theirs = db.reader(Regime::Exec);
    let ours = follower.reader(Regime::Exec).unwrap();
    for i in 0..KEYS {
        let slots = [B256::with_last_byte(1)];
        assert_eq!(
            ours.proof(&who(i), &slots).unwrap(),
            theirs.proof(&who(i), &slots).unwrap(),
            "{when}: proof of account {i}"
        );
    }
}

/// A shared writer publishes each block's branch records beside its
/// journal (`branches/`) and a follower applies them instead of
/// rebuilding them; where the stream lacks a block (its segments deleted,
/// a frame damaged) the follower rebuilds that block, and a writer's
/// reopen starts the stream again. The follower's values, root and
/// proofs stay the writer's throughout.
#[test]
fn a_follower_applies_the_published_branch_records_and_rebuilds_what_the_stream_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let options = || {
        Options::default()
            .with_share_with_readers(true)
            .with_background_maintenance(false)
            .with_flush_batch_bytes(1 << 30)
            .with_memory_budget_bytes(2 << 30)
    };
    let mut db = StateDb::open(dir.path(), options()).unwrap();
    let mut states: Vec<State> = Vec::new();
    let mut grow = |db: &StateDb, blocks: u64| {
        for _ in 0..blocks {
            let block = states.len() as u64;
            let before = states.last().cloned().unwrap_or_default();
            let state = next_state(&before, block);
            commit(db, block, &before, &state);
            states.push(state);
        }
    };
    grow(&db, 4);
    // Only the refreshes below read the journal, so each block is read
    // in the state the test left the stream in.
    let follower = ReadOnlyStateDb::open(
        dir.path(),
        Options::default().with_follow_interval(Duration::from_secs(3600)),
    )
    .unwrap();
    assert_follows(&follower, &db, 3, "blocks 0..=3 published");
    let stats = follower.follow_stats();
    assert_eq!((stats.published_branches, stats.rebuilt_branches), (4, 0));

    let stream = dir.path().join(strata_storage::BRANCHES_DIR);
    let segments = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&stream)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    };
    assert!(
        !segments().is_empty(),
        "the writer publishes into {stream:?}"
    );
    for segment in segments() {
        std::fs::remove_file(segment).unwrap();
    }
    grow(&db, 2);
    assert_follows(
        &follower,
        &db,
        5,
        "blocks 4..=5 with the stream's segments gone",
    );
    let stats = follower.follow_stats();
    assert_eq!((stats.published_branches, stats.rebuilt_branches), (4, 2));

    drop(db);
    db = StateDb::open(dir.path(), options()).unwrap();
    grow(&db, 2);
    assert_follows(&follower, &db, 7, "blocks 6..=7 after the writer's reopen");
    let stats = follower.follow_stats();
    assert_eq!((stats.published_branches, stats.rebuilt_branches), (6, 2));

    // A flipped byte inside the newest frame: its checksum fails, the
    // block is rebuilt.
    grow(&db, 1);
    let newest = segments().into_iter().max().unwrap();
    let mut bytes = std::fs::read(&newest).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 0x40;
    std::fs::write(&newest, &bytes).unwrap();
    assert_follows(
        &follower,
        &db,
        8,
        "block 8 with its published frame damaged",
    );
    let stats = follower.follow_stats();
    assert_eq!((stats.published_branches, stats.rebuilt_branches), (6, 3));
}

fn wait(points: &PausePoints, point: PausePoint) -> bool {
    points.wait_reached(point, Duration::from_secs(20))
}

/// A task the matrix below runs, held or beside a held one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    /// `compact`: a flush, then collate, merge and prune.
    Compact,
    Flush,
    /// The next block's commit.
    Commit,
    /// An unwind by two blocks.
    Unwind,
    /// Every key read from the newest snapshot and compared with its block.
    Read,
}

/// The task that reaches `point`.
fn holder(point: PausePoint) -> Task {
    match point {
        PausePoint::FlushBatch | PausePoint::FlushPart | PausePoint::FlushCommitted => Task::Flush,
        PausePoint::UnwindPrepared | PausePoint::UnwindCommitted => Task::Unwind,
        _ => Task::Compact,
    }
}

/// Starts `task` on a thread; returns it and the states the store may end
/// up with (the chain's states are updated as if it finished).
fn start(chain: &mut Chain, task: Task) -> JoinHandle<()> {
    let db = chain.db.clone();
    match task {
        Task::Compact => std::thread::spawn(move || {
            db.compact().unwrap();
        }),
        Task::Flush => std::thread::spawn(move || {
            db.flush().unwrap();
        }),
        Task::Commit => {
            let block = chain.states.len() as u64;
            let before = chain.states.last().cloned().unwrap_or_default();
            let state = next_state(&before, block);
            chain.states.push(state.clone());
            std::thread::spawn(move || commit(&db, block, &before, &state))
        }
        Task::Unwind => {
            let target = chain.states.len() as u64 - 3;
            chain.unwound = chain.states.clone();
            chain.states.truncate(target as usize + 1);
            std::thread::spawn(move || {
                db.unwind_to(target).unwrap();
            })
        }
        Task::Read => {
            let states = if chain.unwound.len() > chain.states.len() {
                chain.unwound.clone()
            } else {
                chain.states.clone()
            };
            std::thread::spawn(move || {
                let reader = db.latest();
                let block = reader.block().unwrap();
                let want = &states[block as usize];
                for i in 0..KEYS {
                    let nonce = reader.account(&who(i)).unwrap().map(|a| a.nonce);
                    assert_eq!(
                        nonce,
                        want.nonces.get(&i).copied(),
                        "read of {i} at {block}"
                    );
                }
            })
        }
    }
}

/// Every pause point of every background task, held while each other task
/// runs: the other task finishes, or waits for a lock the held one owns and
/// finishes once it is let go (at most 300 ms later). Then one more block
/// and a compaction, and every key, `verify` and a reopen must agree with
/// the chain's states.
#[test]
fn every_task_held_at_every_point_beside_every_other_loses_nothing() {
    let others = [
        Task::Compact,
        Task::Flush,
        Task::Commit,
        Task::Unwind,
        Task::Read,
    ];
    let mut tried = 0;
    for point in PausePoint::ALL {
        let held = holder(point);
        for other in others {
            // The writer side is one at a time: a commit beside an unwind
            // would only wait for it.
            if held == Task::Unwind && other == Task::Commit {
                continue;
            }
            let when = format!("{point:?} beside {other:?}");
            let dir = tempfile::tempdir().unwrap();
            let mut chain = Chain::open(dir.path());
            // Files to merge with, flushed blocks to collate, and blocks in
            // memory for the flush: the held task has work at every point.
            for _ in 0..3 {
                chain.grow();
            }
            chain.db.compact().unwrap();
            for _ in 0..3 {
                chain.grow();
            }
            chain.points.arm(point);
            let held_task = start(&mut chain, held);
            assert!(
                wait(&chain.points, point),
                "{when}: no task reached the point"
            );
            let other_task = start(&mut chain, other);
            let patience = std::time::Instant::now() + Duration::from_millis(300);
            while !other_task.is_finished() && std::time::Instant::now() < patience {
                std::thread::sleep(Duration::from_millis(2));
            }
            chain.points.release(point);
            other_task
                .join()
                .unwrap_or_else(|_| panic!("{when}: {other:?} failed"));
            held_task
                .join()
                .unwrap_or_else(|_| panic!("{when}: {held:?} failed"));
            chain.check(&chain.db, &when);
            chain.grow();
            chain.db.compact().unwrap();
            chain.check(&chain.db, &format!("{when}, one block later"));
            let chain = chain.reopen(dir.path());
            chain.check(&chain.db, &format!("{when}, reopened"));
            tried += 1;
        }
    }
    assert_eq!(tried, 11 * 5 - 2);
}
