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
        db.init_genesis(&Default::default()).err(),
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
