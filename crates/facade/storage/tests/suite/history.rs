//! History (`Options::history`): a datadir that keeps it answers reads and
//! proofs at every kept block — through redb's history below redb's head,
//! through the memory's undo data above — exactly as the model had the
//! state then, across flushes, collation into files, reopens, crashes and
//! unwinds; the retention is fixed at creation and bounds what is read.

use alloy_primitives::{Address, B256};
use proptest::prelude::*;
use strata_storage::{Error, HistoryRetention, Options, Regime, StateDb};

use crate::model::{
    ADDRESSES, SLOTS, Write, address, apply, commit_next_block, slot, small_options, write,
};
use crate::oracle::{Model, assert_proofs_match, assert_reads_match, model_root};

#[derive(Clone, Debug)]
enum Step {
    Block(Vec<Write>),
    Compact,
    Flush,
    Reopen,
    Crash,
    Unwind(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => prop::collection::vec(write(), 1..6).prop_map(Step::Block),
        1 => Just(Step::Compact),
        1 => Just(Step::Flush),
        1 => Just(Step::Reopen),
        1 => Just(Step::Crash),
        1 => (1..4u64).prop_map(Step::Unwind),
    ]
}

fn options(retention: HistoryRetention) -> Options {
    // An unwind window of 2 blocks: most reads go through the history.
    small_options()
        .with_unwind_depth(2)
        .with_history(Some(retention))
}

/// Reads and proofs at `block` equal the model's state after it.
fn assert_at(db: &StateDb, block: u64, then: &Model, context: &str) {
    let context = format!("{context}: at block {block}");
    let reader = db
        .reader_at(block, Regime::Exec)
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    assert_eq!(reader.block(), Some(block), "{context}");
    assert_eq!(reader.root(), model_root(then), "{context}: root");
    let addresses: Vec<Address> = (0..ADDRESSES).map(address).collect();
    let slots: Vec<B256> = (0..SLOTS).map(slot).collect();
    assert_reads_match(&reader, then, &addresses, &slots, &context);
    let prove = |a: &Address, s: &[B256]| db.proof_at(block, a, s);
    assert_proofs_match(&prove, then, &addresses, &slots, &context);
}

fn assert_every_block(db: &StateDb, states: &[Model], context: &str) {
    for (block, then) in states.iter().enumerate() {
        assert_at(db, block as u64, then, context);
    }
}

fn run(steps: Vec<Step>) {
    let dir = tempfile::tempdir().unwrap();
    let open = || StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    let mut db = open();
    // states[i] is the model after block i.
    let mut states: Vec<Model> = Vec::new();
    let mut model = Model::new();
    db.begin_block(0).unwrap().commit().unwrap();
    states.push(model.clone());
    for (i, step) in steps.into_iter().enumerate() {
        let context = format!("step {i} ({step:?})");
        match step {
            Step::Block(writes) => {
                commit_next_block(&db, &mut model, &writes);
                states.push(model.clone());
            }
            Step::Compact => {
                db.compact().unwrap();
            }
            Step::Flush => {
                db.flush().unwrap();
            }
            Step::Reopen => {
                drop(db);
                db = open();
            }
            Step::Crash => {
                db.abandon();
                db = open();
            }
            Step::Unwind(back) => {
                let last = db.last_block().unwrap();
                let oldest = db.oldest_unwindable().unwrap().unwrap();
                let target = last.saturating_sub(back).max(oldest);
                db.unwind_to(target).unwrap();
                states.truncate(target as usize + 1);
                model = states.last().unwrap().clone();
            }
        }
        let last = db.last_block().unwrap();
        if last >= 3 {
            // A block well below the unwind window, and the one below redb's head.
            assert_at(&db, last / 2, &states[last as usize / 2], &context);
        }
    }
    assert_every_block(&db, &states, "after the steps");
    db.compact().unwrap();
    assert_every_block(&db, &states, "after a compaction");
    drop(db);
    let db = open();
    assert_every_block(&db, &states, "after a reopen");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_kept_block_reads_and_proves_as_it_was(
        steps in prop::collection::vec(step(), 8..40)
    ) {
        run(steps);
    }
}

/// A fixed chain of 40 blocks, flushed every few: reads at every block.
#[test]
fn a_full_history_serves_every_block_of_a_long_chain() {
    let steps: Vec<Step> = (0..40u8)
        .flat_map(|i| {
            let writes = vec![
                Write::Account {
                    who: usize::from(i) % ADDRESSES,
                    nonce: u64::from(i),
                    balance: u64::from(i) * 7,
                },
                Write::Slot {
                    who: usize::from(i * 3) % ADDRESSES,
                    slot: usize::from(i) % SLOTS,
                    value: u64::from(i % 4),
                },
            ];
            let mut steps = vec![Step::Block(writes)];
            if i % 7 == 6 {
                steps.push(Step::Flush);
            }
            if i % 13 == 12 {
                steps.push(Step::Compact);
            }
            if i == 20 {
                steps.push(Step::Block(vec![Write::Delete { who: 2 }]));
            }
            steps
        })
        .collect();
    run(steps);
}

/// Commits blocks `0..blocks` (each but the first an account and a slot
/// written), flushing after those `flush_after` names; the model after
/// each.
fn commit_chain(db: &StateDb, blocks: u64, flush_after: impl Fn(u64) -> bool) -> Vec<Model> {
    let mut model = Model::new();
    let mut states = Vec::new();
    for block in 0..blocks {
        let mut writer = db.begin_block(block).unwrap();
        if block > 0 {
            let who = block as usize % ADDRESSES;
            let account = Write::Account {
                who,
                nonce: block,
                balance: block * 3,
            };
            let slot = Write::Slot {
                who: (who + 3) % ADDRESSES,
                slot: block as usize % SLOTS,
                value: block % 3,
            };
            apply(&mut writer, &mut model, &account);
            apply(&mut writer, &mut model, &slot);
        }
        writer.commit().unwrap();
        states.push(model.clone());
        if flush_after(block) {
            db.flush().unwrap();
        }
    }
    states
}

/// A retention of N blocks keeps N blocks below the last one; older
/// blocks are refused naming the range. The retention is the datadir's:
/// an open asking for another is refused, one that does not say opens it.
#[test]
fn a_retention_bounds_the_blocks_read_and_is_fixed_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Blocks(10))).unwrap();
    let states = commit_chain(&db, 30, |block| block % 4 == 3);
    db.flush().unwrap();
    for block in 20..30u64 {
        assert_at(&db, block, &states[block as usize], "retention 10");
    }
    match db.reader_at(19, Regime::Exec) {
        Err(Error::StateNotRetained { oldest, last, .. }) => assert_eq!((oldest, last), (20, 29)),
        other => panic!("block 19 outside a retention of 10: {other:?}"),
    }
    drop(db);
    let refused = StateDb::open(dir.path(), options(HistoryRetention::Full)).err();
    assert!(
        matches!(
            refused,
            Some(Error::HistoryRetentionMismatch {
                recorded: HistoryRetention::Blocks(10),
                requested: HistoryRetention::Full,
                ..
            })
        ),
        "{refused:?}"
    );
    let db = StateDb::open(dir.path(), small_options().with_unwind_depth(2)).unwrap();
    assert_at(&db, 22, &states[22], "reopened without a setting");
}

/// Without history a datadir reads the unwind window only, as before.
#[test]
fn without_history_only_the_unwind_window_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options().with_unwind_depth(2)).unwrap();
    for block in 0..10u64 {
        db.begin_block(block).unwrap().commit().unwrap();
        db.flush().unwrap();
    }
    assert!(db.reader_at(8, Regime::Exec).is_ok());
    assert!(matches!(
        db.reader_at(3, Regime::Exec),
        Err(Error::StateNotRetained { oldest: 7, .. })
    ));
}

/// A reader in another process (`ReadOnlyStateDb`, what `strata serve`
/// opens) reads and proves every kept block as the writer does: below
/// redb's head through the history, above it from the journal.
#[test]
fn a_follower_reads_every_kept_block_through_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(
        dir.path(),
        options(HistoryRetention::Full).with_share_with_readers(true),
    )
    .unwrap();
    let states = commit_chain(&db, 24, |block| block == 15);
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_eq!(follower.last_block().unwrap(), Some(23));
    let addresses: Vec<Address> = (0..ADDRESSES).map(address).collect();
    let slots: Vec<B256> = (0..SLOTS).map(slot).collect();
    for (block, then) in states.iter().enumerate().take(23) {
        let block = block as u64;
        let context = format!("follower at block {block}");
        let reader = follower
            .reader_at(block, Regime::Exec)
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(reader.root(), model_root(then), "{context}");
        assert_reads_match(&reader, then, &addresses, &slots, &context);
        let prove = |a: &Address, s: &[B256]| follower.proof_at(block, a, s);
        assert_proofs_match(&prove, then, &addresses, &slots, &context);
    }
}

/// `verify` checks the history: clean after a chain, and a change whose
/// index entry is gone is a problem it names.
#[test]
fn verify_checks_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    commit_chain(&db, 20, |block| block % 5 == 4);
    db.flush().unwrap();
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(report.history_checked > 0, "{report:?}");
    drop(db);
    {
        let redb = redb::Database::open(dir.path().join(strata_storage::DB_FILE)).unwrap();
        let txn = redb.begin_write().unwrap();
        {
            let history_index: redb::TableDefinition<&[u8], &[u8]> =
                redb::TableDefinition::new("history_index");
            let mut index = txn.open_table(history_index).unwrap();
            let first = redb::ReadableTable::first(&index)
                .unwrap()
                .unwrap()
                .0
                .value()
                .to_vec();
            index.remove(first.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let report =
        strata_storage::verify_datadir(dir.path(), &Options::default(), &Default::default())
            .unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("has no index entry")),
        "{:?}",
        report.problems
    );
}

/// A datadir that keeps history finds a block by its hash among every
/// kept block (what `strata serve` resolves a `blockHash` parameter by),
/// not only the last 256; an unwind forgets the unwound blocks' hashes.
#[test]
fn every_kept_block_is_found_by_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(
        dir.path(),
        options(HistoryRetention::Full).with_share_with_readers(true),
    )
    .unwrap();
    let hash = |block: u64| B256::from(alloy_primitives::U256::from(block + 1_000));
    for block in 0..300u64 {
        let mut writer = db.begin_block(block).unwrap();
        writer.set_block_hash(hash(block));
        writer.commit().unwrap();
        if block % 50 == 49 {
            db.flush().unwrap();
        }
    }
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    for block in [0, 5, 43, 250, 299] {
        assert_eq!(follower.block_number(&hash(block)).unwrap(), Some(block));
    }
    assert_eq!(follower.block_number(&hash(300)).unwrap(), None);
    drop(follower);
    db.unwind_to(298).unwrap();
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_eq!(follower.block_number(&hash(299)).unwrap(), None);
    assert_eq!(follower.block_number(&hash(298)).unwrap(), Some(298));
}
