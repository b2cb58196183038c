//! The root streamed while a block is written (`BlockWriter::stream_root`):
//! random blocks split into random transactions, each transaction folded
//! on its own or several together, give the root of the in-memory model
//! and the same stored commitment records as the root computed after the
//! block.

use proptest::prelude::*;
use strata_storage::{Domain, ReadOnlyStateDb, StateDb};

use crate::model::{Write, apply, small_options};
use crate::oracle::{Model, model_root};

/// How a transaction ends for the root thread.
#[derive(Clone, Copy, Debug)]
enum End {
    /// Handed over; folded whenever the root thread is free.
    Handover,
    /// Handed over and folded before the next transaction.
    Fold,
    /// Not handed over: it goes with the next transaction's writes.
    Nothing,
}

/// A block: its transactions, and whether `state_root` is asked before
/// the commit.
type Block = (Vec<(Vec<Write>, End)>, bool);

fn transaction() -> impl Strategy<Value = (Vec<Write>, End)> {
    let end = prop_oneof![Just(End::Handover), Just(End::Fold), Just(End::Nothing)];
    (prop::collection::vec(crate::model::write(), 0..6), end)
}

fn block() -> impl Strategy<Value = Block> {
    (prop::collection::vec(transaction(), 0..6), any::<bool>())
}

fn run(blocks: Vec<Block>) {
    let streamed_dir = tempfile::tempdir().unwrap();
    let streamed = StateDb::open(streamed_dir.path(), small_options()).unwrap();
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = StateDb::open(plain_dir.path(), small_options()).unwrap();
    for db in [&streamed, &plain] {
        db.begin_block(0).unwrap().commit().unwrap();
    }
    let mut model = Model::new();
    for (index, (transactions, ask_root)) in blocks.into_iter().enumerate() {
        let number = index as u64 + 1;
        let mut after = plain.begin_block(number).unwrap();
        let mut stream = streamed.begin_block(number).unwrap();
        stream.stream_root().unwrap();
        let mut plain_model = model.clone();
        for (writes, end) in &transactions {
            for write in writes {
                apply(&mut stream, &mut model, write);
                apply(&mut after, &mut plain_model, write);
            }
            match end {
                End::Handover => stream.end_transaction(),
                End::Fold => stream.fold_now(),
                End::Nothing => {}
            }
        }
        let context = format!("block {number}: {transactions:?}");
        if ask_root {
            assert_eq!(
                stream.state_root().unwrap(),
                model_root(&model),
                "{context}"
            );
        }
        let ours = stream.commit().unwrap();
        let theirs = after.commit().unwrap();
        assert_eq!(ours.root, model_root(&model), "{context}");
        assert_eq!(ours.root, theirs.root, "{context}");
        assert!(ours.root_wait.is_some(), "{context}");
        // Each `fold_now` with writes since the last one is a fold of its
        // own (handovers between may be folded apart or together).
        let (mut folds, mut unfolded) = (0u64, false);
        for (writes, end) in &transactions {
            unfolded |= !writes.is_empty();
            if matches!(end, End::Fold) && unfolded {
                folds += 1;
                unfolded = false;
            }
        }
        assert!(ours.root_folds >= folds.max(1), "{context}: {ours:?}");
    }
    // Every stored record is the one the values imply, and the two stores
    // hold the same records (a fold's write of a record back to its bytes
    // is a no-op; a record created and deleted within a block is not left).
    assert!(streamed.verify(&Default::default()).unwrap().is_ok());
    streamed.close().unwrap();
    plain.close().unwrap();
    let commitment = |dir: &std::path::Path| {
        ReadOnlyStateDb::open(dir, small_options())
            .unwrap()
            .live_sizes()
            .unwrap()
            .into_iter()
            .find(|size| size.domain == Domain::Commitment)
            .map(|size| (size.keys, size.value_bytes))
    };
    assert_eq!(
        commitment(streamed_dir.path()),
        commitment(plain_dir.path())
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_streamed_root_is_the_root_after_the_block(
        blocks in prop::collection::vec(block(), 1..8)
    ) {
        run(blocks);
    }
}

#[test]
fn a_block_dropped_with_its_root_thread_running_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    db.begin_block(0).unwrap().commit().unwrap();
    let mut model = Model::new();
    let mut block = db.begin_block(1).unwrap();
    block.stream_root().unwrap();
    let write = Write::Slot {
        who: 1,
        slot: 2,
        value: 7,
    };
    apply(&mut block, &mut model, &write);
    block.end_transaction();
    drop(block);
    assert_eq!(db.last_block(), Some(0));

    // The block is begun again, streamed, and commits.
    let mut model = Model::new();
    let mut block = db.begin_block(1).unwrap();
    block.stream_root().unwrap();
    apply(&mut block, &mut model, &write);
    block.end_transaction();
    let info = block.commit().unwrap();
    assert_eq!(info.root, model_root(&model));
}
