//! CR2 in the unwind data: a previous value changed and its frame
//! re-checksummed, in an unflushed and in a flushed block of the window,
//! passed `verify` while `unwind` refused it; both verifies now refuse it
//! naming the block, its segment and offset.

use std::path::Path;

use bytes::Bytes;

use crate::test_chain::{account, blocks, options, who};
use crate::{Options, StateDb, VerifyReport, verify_datadir};
use strata_journal::Previous;
use strata_journal::testing::rechecksum_block;

/// Block 3 says account 0's nonce was 7 before it (it was 2).
fn change_an_unwind_value_of_block_3(dir: &Path) {
    rechecksum_block(dir, 3, |record| {
        let write = record
            .writes
            .iter_mut()
            .find(|w| w.key.as_ref() == who(0).as_slice())
            .unwrap();
        write.previous = Previous::Value(Bytes::from(account(7).encode()));
    });
}

/// The report refuses block 3's unwind data, naming its segment.
fn assert_refuses_block_3(report: &VerifyReport) {
    assert!(!report.is_ok(), "verify: ok over a changed unwind value");
    assert!(
        report.problems.iter().any(|p| p.contains("journal segment")
            && p.contains("block 3: its unwind data does not rebuild block 2")),
        "{:#?}",
        report.problems
    );
    // Blocks 6, 5 and 4 were undone before it.
    assert_eq!(report.unwind_blocks_checked, 3, "{report:?}");
}

#[test]
fn a_sound_window_rebuilds_every_block() {
    let dir = tempfile::tempdir().unwrap();
    let db = blocks(dir.path(), 7);
    db.flush().unwrap();
    // Blocks 6..=1 undone: block 0 keeps no unwind data.
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.is_ok(), "{:#?}", report.problems);
    assert_eq!(report.unwind_blocks_checked, 6);
    db.abandon();
    let report = verify_datadir(dir.path(), &options(), &Default::default()).unwrap();
    assert!(report.is_ok(), "{:#?}", report.problems);
    assert_eq!(report.unwind_blocks_checked, 6);
    // The window's depth bounds the walk.
    let shallow = Options {
        unwind_depth: 2,
        ..options()
    };
    let report = verify_datadir(dir.path(), &shallow, &Default::default()).unwrap();
    assert!(report.is_ok(), "{:#?}", report.problems);
    assert_eq!(report.unwind_blocks_checked, 2);
}

#[test]
fn a_rechecksummed_unwind_value_of_an_unflushed_block_is_refused_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    blocks(dir.path(), 7).abandon();
    change_an_unwind_value_of_block_3(dir.path());
    assert_refuses_block_3(&verify_datadir(dir.path(), &options(), &Default::default()).unwrap());
    // A writer opens it (the replayed values are right) and refuses the
    // unwind through block 3; its own verify says so first.
    let db = StateDb::open(dir.path(), options()).unwrap();
    assert_refuses_block_3(&db.verify(&Default::default()).unwrap());
    assert!(db.unwind_to(2).is_err());
}

#[test]
fn a_rechecksummed_unwind_value_of_a_flushed_block_is_refused_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let db = blocks(dir.path(), 7);
    assert_eq!(db.flush().unwrap(), 7);
    drop(db);
    change_an_unwind_value_of_block_3(dir.path());
    assert_refuses_block_3(&verify_datadir(dir.path(), &options(), &Default::default()).unwrap());
    let db = StateDb::open(dir.path(), options()).unwrap();
    assert_refuses_block_3(&db.verify(&Default::default()).unwrap());
    assert!(db.unwind_to(2).is_err());
    // Outside a window of 2 blocks, block 3's data is not used: no problem.
    drop(db);
    let shallow = Options {
        unwind_depth: 2,
        ..options()
    };
    let report = verify_datadir(dir.path(), &shallow, &Default::default()).unwrap();
    assert!(report.is_ok(), "{:#?}", report.problems);
}
