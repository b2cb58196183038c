//! The owned writer: `Send`, storable beside the store, moved to another
//! thread to commit; a second writer on the same thread is refused instead
//! of deadlocking, and `try_begin_block` never waits.

use std::sync::mpsc;
use std::thread;

use alloy_primitives::Address;
use strata_storage::{Account, BlockWriter, Error, Regime, StateDb, StateReader};

use crate::model::small_options;

/// Compile-time: what is meant to cross threads does.
#[allow(dead_code)]
fn assert_thread_safety() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<BlockWriter>();
    send::<StateDb>();
    sync::<StateDb>();
    send::<StateReader>();
    sync::<StateReader>();
    send::<Error>();
}

fn who(n: u8) -> Address {
    Address::with_last_byte(n)
}

fn stage(writer: &mut BlockWriter, nonce: u64) {
    writer.put_account(
        who(1),
        &Account {
            nonce,
            ..Account::default()
        },
    );
}

#[test]
fn a_writer_moves_to_another_thread_and_commits_there() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let mut writer = db.begin_block(0).unwrap();
    stage(&mut writer, 7);
    let root = thread::spawn(move || writer.commit().unwrap().root)
        .join()
        .unwrap();
    assert_eq!(db.root(), root);
    let account = db.reader(Regime::Exec).account(&who(1)).unwrap().unwrap();
    assert_eq!(account.nonce, 7);

    // Kept beside the store in a struct, as a client would.
    struct Node {
        db: StateDb,
        pending: Option<BlockWriter>,
    }
    let mut node = Node { db, pending: None };
    node.pending = Some(node.db.begin_block(1).unwrap());
    stage(node.pending.as_mut().unwrap(), 8);
    node.pending.take().unwrap().commit().unwrap();
    assert_eq!(node.db.last_block(), Some(1));
}

#[test]
fn a_second_writer_on_the_same_thread_is_refused_not_deadlocked() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let mut first = db.begin_block(0).unwrap();
    for busy in [
        db.begin_block(0).err(),
        db.try_begin_block(0).err(),
        db.unwind_to(0).err(),
        db.init_genesis(&Default::default(), strata_storage::GenesisName::Unnamed)
            .err(),
    ] {
        let busy = busy.expect("refused while the writer is open");
        assert!(
            matches!(busy, Error::WriterBusy { same_thread: true }),
            "{busy}"
        );
        assert!(busy.to_string().contains("deadlock"), "{busy}");
        assert!(!busy.poisons());
    }
    stage(&mut first, 1);
    first.commit().unwrap();
    // Committed, the write side is free again; a dropped writer frees it too.
    drop(db.begin_block(1).unwrap());
    let mut again = db.try_begin_block(1).unwrap();
    stage(&mut again, 2);
    again.commit().unwrap();
    assert_eq!(db.last_block(), Some(1));
}

#[test]
fn another_thread_waits_for_the_writer_or_is_told_busy() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let mut writer = db.begin_block(0).unwrap();
    stage(&mut writer, 1);
    let db = &db;
    thread::scope(|scope| {
        let busy = scope.spawn(|| db.try_begin_block(0).err()).join().unwrap();
        assert!(
            matches!(busy, Some(Error::WriterBusy { same_thread: false })),
            "{busy:?}"
        );
        // A waiting begin_block gets the write side once the writer commits,
        // and then sees block 0 committed.
        let (began, told) = mpsc::channel();
        let waiter = scope.spawn(move || {
            let next = db.begin_block(1);
            began.send(()).unwrap();
            next.map(|w| w.number())
        });
        assert!(
            told.recv_timeout(std::time::Duration::from_millis(100))
                .is_err(),
            "begin_block did not wait for the open writer"
        );
        writer.commit().unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), 1);
    });
}

/// Commitment-regime reads so far (the root's and the warmers' reads).
fn commitment_reads(db: &StateDb) -> u64 {
    db.metrics()
        .snapshot()
        .cells
        .iter()
        .filter(|cell| cell.regime == Regime::Commitment)
        .map(|cell| cell.count)
        .sum()
}

#[test]
fn a_root_computed_before_deciding_is_reused_or_dropped_without_trace() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let mut genesis = db.begin_block(0).unwrap();
    for n in 1..40 {
        genesis.put_account(
            who(n),
            &Account {
                nonce: 1,
                ..Account::default()
            },
        );
    }
    let genesis_root = genesis.commit().unwrap().root;

    // Computed, then dropped: nothing of the block is anywhere.
    let mut writer = db.begin_block(1).unwrap();
    stage(&mut writer, 5);
    let computed = writer.state_root().unwrap();
    assert_ne!(computed, genesis_root);
    drop(writer);
    assert_eq!((db.last_block(), db.root()), (Some(0), genesis_root));
    let reader = db.reader(Regime::Exec);
    assert_eq!(reader.account(&who(1)).unwrap().unwrap().nonce, 1);

    // Computed, then committed: the same root, not computed again.
    let mut writer = db.begin_block(1).unwrap();
    stage(&mut writer, 5);
    assert_eq!(writer.state_root().unwrap(), computed);
    assert_eq!(writer.state_root().unwrap(), computed, "asked twice");
    let reads = commitment_reads(&db);
    let info = writer.commit().unwrap();
    assert_eq!(info.root, computed);
    assert_eq!(
        commitment_reads(&db),
        reads,
        "commit computed the root again"
    );
    assert_eq!(db.root(), computed);

    // Written to after the root was computed: the commit computes anew, and
    // gets what a block with only the final writes gets.
    let mut writer = db.begin_block(2).unwrap();
    stage(&mut writer, 6);
    let stale = writer.state_root().unwrap();
    stage(&mut writer, 7);
    let mut expected = writer
        .reader(Regime::Exec)
        .account(&who(1))
        .unwrap()
        .unwrap();
    assert_eq!(expected.nonce, 7);
    let info = writer.commit().unwrap();
    assert_ne!(info.root, stale);
    let reference = tempfile::tempdir().unwrap();
    let other = StateDb::open(reference.path(), small_options()).unwrap();
    for (number, nonce) in [(0u64, None), (1, Some(5)), (2, Some(7))] {
        let mut writer = other.begin_block(number).unwrap();
        match nonce {
            None => {
                for n in 1..40 {
                    writer.put_account(
                        who(n),
                        &Account {
                            nonce: 1,
                            ..Account::default()
                        },
                    );
                }
            }
            Some(nonce) => stage(&mut writer, nonce),
        }
        writer.commit().unwrap();
    }
    assert_eq!(other.root(), info.root);
    expected.nonce = 7;
    assert_eq!(
        db.reader(Regime::Exec).account(&who(1)).unwrap(),
        Some(expected)
    );
}

#[test]
fn latest_reads_the_last_block_as_execution() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let mut writer = db.begin_block(0).unwrap();
    stage(&mut writer, 3);
    writer.commit().unwrap();
    let latest = db.latest();
    assert_eq!(latest.regime(), Regime::Exec);
    assert_eq!(latest.block(), Some(0));
    assert_eq!(latest.account(&who(1)).unwrap().unwrap().nonce, 3);
}
