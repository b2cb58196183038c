//! A datadir written by the build before strata-storage was split into
//! crates (main at 12fffb8) opens with this one, read-only and as a writer:
//! the on-disk format did not change. `testdata/datadir-pre-split` holds
//! redb's file (head at block 23), seven immutable files (collated and
//! merged) and a journal whose blocks 24..=27 were never flushed (the
//! writer exited without its final flush), so the open replays them.
//!
//! It was made by a scratch program over the pre-split API: 40 genesis
//! accounts (every fifth a contract with six slots), blocks 1..=23 of six
//! account and six slot writes each (an account deleted every sixth
//! block) with a flush and a compaction after every fourth, then blocks
//! 24..=27 writing account `who(100 + n)` and slot `n` of `who(0)`.
//! Options: `step_size` 4, `keep_steps_in_db` 1, `unwind_depth` 4.

use std::path::{Path, PathBuf};

use alloy_primitives::{Address, B256, U256, b256, keccak256};
use strata_storage::{Options, ReadOnlyStateDb, Regime, StateDb};

/// The root of block 27, as the pre-split build computed it.
const ROOT_27: B256 = b256!("92a33bcf3823d87b03f8e24f8faf71be8f6e3e8cba636fa0b9032bb3c3c94c42");
/// The root of block 23, redb's flushed head in the fixture.
const ROOT_23: B256 = b256!("3aa3f6313d05ae44bf11d79668df37539a732ed4b60f2c5ed3effd7b0b84977e");

fn options() -> Options {
    Options::default()
        .with_step_size(4)
        .with_keep_steps_in_db(1)
        .with_unwind_depth(4)
        .with_background_maintenance(false)
}

fn who(i: u64) -> Address {
    Address::from_slice(&keccak256(i.to_be_bytes())[..20])
}

/// A copy of the fixture (an open may write: the journal's replay, a flush).
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let fixture = strata_test_support::repo_root().join("testdata/datadir-pre-split");
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("datadir");
    copy(&fixture, &datadir);
    (dir, datadir)
}

#[test]
fn a_datadir_of_the_pre_split_build_opens_read_only_with_its_state() {
    let (_dir, datadir) = fixture_copy();
    let db = ReadOnlyStateDb::open(&datadir, options()).unwrap();
    assert_eq!(db.last_block().unwrap(), Some(27));
    assert_eq!(db.root().unwrap(), ROOT_27);
    let reader = db.reader(Regime::Exec).unwrap();
    let account = reader.account(&who(127)).unwrap().unwrap();
    assert_eq!((account.nonce, account.balance), (27, U256::from(27)));
    assert_eq!(
        reader
            .storage(&who(0), &B256::from(U256::from(27)))
            .unwrap(),
        U256::from(28)
    );
    let stats = db.stats().unwrap();
    let files: usize = stats.domains.iter().map(|d| d.files.len()).sum();
    assert_eq!(files, 7, "the fixture's seven files are served");
}

#[test]
fn a_datadir_of_the_pre_split_build_opens_as_a_writer_replays_its_journal_and_verifies() {
    let (_dir, datadir) = fixture_copy();
    let db = StateDb::open(&datadir, options()).unwrap();
    assert_eq!(db.last_block(), Some(27));
    assert_eq!(db.root(), ROOT_27);
    assert_eq!(db.root_at(23).unwrap(), Some(ROOT_23));
    let reader = db.reader(Regime::Exec);
    // A genesis contract, its code in a file since the first collation.
    assert_eq!(
        reader.code(&who(5)).unwrap().unwrap().as_ref(),
        &[0x60, 5, 0x60, 0x00, 0x55]
    );
    assert_eq!(
        reader
            .storage(&who(0), &B256::from(U256::from(26)))
            .unwrap(),
        U256::from(27)
    );
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.is_ok(), "{report:?}");
    // The state at block 23, undone from the journal's unwind data.
    assert_eq!(db.unwind_to(23).unwrap(), ROOT_23);
    assert_eq!(db.reader(Regime::Exec).account(&who(123)).unwrap(), None);

    // Headers were not kept then: none is served, and the first block
    // given one writes its journal record in the second encoding and, at
    // the flush, creates the headers' table.
    assert_eq!(db.reader(Regime::Exec).block_header(23).unwrap(), None);
    let mut writer = db.begin_block(24).unwrap();
    writer.set_block_header(bytes::Bytes::from_static(b"header 24"));
    writer.commit().unwrap();
    db.flush().unwrap();
    let reader = db.reader(Regime::Exec);
    assert_eq!(reader.block_header(23).unwrap(), None);
    assert_eq!(
        reader.block_header(24).unwrap().as_deref(),
        Some(&b"header 24"[..])
    );
}
