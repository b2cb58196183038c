//! The journal on the commit path: blocks not yet flushed come back from
//! it after a crash, a torn last record at any byte opens to the block
//! before, damage elsewhere is an error that names where, and unwind works
//! across the journal, the memory tier, redb and files.

use std::path::{Path, PathBuf};

use alloy_primitives::{Address, B256, U256};
use strata_storage::{Account, Error, JOURNAL_DIR, Options, Regime, StateDb};

use crate::model::small_options;

/// Nothing is flushed unless the test asks.
fn unflushed_options() -> Options {
    Options {
        flush_batch_bytes: u64::MAX,
        memory_budget_bytes: u64::MAX,
        ..small_options()
    }
}

fn who(i: u64) -> Address {
    Address::with_last_byte(i as u8 + 1)
}

/// Commits `block` with an account and a slot of its own.
fn commit(db: &StateDb, block: u64) -> B256 {
    let mut writer = db.begin_block(block).unwrap();
    writer.put_account(
        who(block),
        &Account {
            nonce: block + 1,
            balance: U256::from(block * 10),
            ..Account::default()
        },
    );
    writer.put_storage(who(block), B256::with_last_byte(1), U256::from(block + 7));
    writer.commit().unwrap().root
}

/// The journal's segment files, oldest first.
fn segments(datadir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(datadir.join(JOURNAL_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    out.sort();
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Checks that `db` shows block `block` with `root` and its own write.
fn assert_at(db: &StateDb, block: u64, root: B256, context: &str) {
    assert_eq!(db.last_block(), Some(block), "{context}");
    assert_eq!(db.root(), root, "{context}");
    let reader = db.reader(Regime::Exec);
    let account = reader.account(&who(block)).unwrap().unwrap();
    assert_eq!(account.nonce, block + 1, "{context}");
    assert!(
        reader.account(&who(block + 1)).unwrap().is_none(),
        "{context}: a later block's write"
    );
}

#[test]
fn blocks_only_the_journal_holds_come_back_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    let roots: Vec<B256> = (0..6).map(|b| commit(&db, b)).collect();
    assert_eq!(db.stats().unwrap().memory.blocks, Some((0, 5)));
    db.abandon();

    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    assert_at(&db, 5, roots[5], "recovered");
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    // The replayed blocks flush like committed ones, and stay unwindable.
    assert_eq!(db.flush().unwrap(), 6);
    assert_eq!(db.stats().unwrap().memory.blocks, None);
    assert_eq!(db.unwind_to(3).unwrap(), roots[3]);
    assert_at(&db, 3, roots[3], "unwound after recovery");
}

#[test]
fn a_torn_last_record_at_every_offset_opens_to_the_block_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    let mut roots: Vec<B256> = (0..3).map(|b| commit(&db, b)).collect();
    db.abandon();
    // A reopened journal appends to a new segment: block 3 is alone in it.
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    roots.push(commit(&db, 3));
    db.abandon();
    let last = segments(dir.path()).pop().unwrap();
    let whole = std::fs::read(&last).unwrap();
    assert!(
        whole.len() > 100,
        "block 3's record is {} bytes",
        whole.len()
    );

    for cut in 0..=whole.len() {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(dir.path(), copy.path());
        let segment = copy
            .path()
            .join(JOURNAL_DIR)
            .join(last.file_name().unwrap());
        std::fs::write(&segment, &whole[..cut]).unwrap();
        let db = StateDb::open(copy.path(), unflushed_options())
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let block = if cut == whole.len() { 3 } else { 2 };
        assert_at(&db, block, roots[block as usize], &format!("cut at {cut}"));
        // The next block follows the recovered head.
        commit(&db, block + 1);
    }
}

#[test]
fn damage_before_the_last_record_is_an_error_that_names_the_segment_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    for block in 0..4 {
        commit(&db, block);
    }
    db.abandon();
    let segment = segments(dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    // A byte inside the first record, with whole records after it.
    bytes[40] ^= 0xff;
    std::fs::write(&segment, &bytes).unwrap();
    let error = match StateDb::open(dir.path(), unflushed_options()) {
        Err(error) => error,
        Ok(_) => panic!("a damaged journal opened"),
    };
    let text = error.to_string();
    assert!(matches!(error, Error::Journal(_)), "{text}");
    assert!(
        text.contains(&segment.file_name().unwrap().to_string_lossy().into_owned())
            && text.contains("offset"),
        "{text}"
    );
    // Nothing was cut or deleted.
    assert_eq!(std::fs::read(&segment).unwrap(), bytes);
}

#[test]
fn unwind_reaches_back_through_memory_redb_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    let mut roots = Vec::new();
    for block in 0..12 {
        roots.push(commit(&db, block));
        // Blocks 0..=5 go to redb and on to files; 6..=11 stay in memory.
        if block == 5 {
            db.compact().unwrap();
        }
    }
    let stats = db.stats().unwrap();
    assert_eq!(stats.memory.blocks, Some((6, 11)));
    assert!(
        stats.domains.iter().any(|d| !d.files.is_empty()),
        "no file was built"
    );
    assert_eq!(db.oldest_unwindable().unwrap(), Some(11 - 6));
    assert_eq!(db.unwind_to(9).unwrap(), roots[9]);
    assert_at(&db, 9, roots[9], "unwound inside the memory tier");
    assert_eq!(db.unwind_to(5).unwrap(), roots[5]);
    assert_at(&db, 5, roots[5], "unwound into flushed blocks");
    // New blocks follow the unwound head, and survive a crash.
    let root = commit(&db, 6);
    db.abandon();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    assert_at(&db, 6, root, "after unwind, commit and crash");
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn code_a_later_block_of_the_same_flush_replaced_is_found_by_hash_after_unwind() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    commit(&db, 0);
    let codes = [
        alloy_primitives::Bytes::from_static(&[0x60, 0x01]),
        alloy_primitives::Bytes::from_static(&[0x60, 0x02]),
    ];
    for (block, code) in [1u64, 2].into_iter().zip(&codes) {
        let mut writer = db.begin_block(block).unwrap();
        let hash = alloy_primitives::keccak256(code);
        writer.put_account(
            who(0),
            &Account {
                code_hash: hash,
                ..Account::default()
            },
        );
        writer.put_code(who(0), code.0.clone());
        writer.commit().unwrap();
    }
    // One batch: the newest code per account wins in the domain, but both
    // codes stay findable by hash.
    assert_eq!(db.flush().unwrap(), 3);
    db.unwind_to(1).unwrap();
    let reader = db.reader(Regime::Exec);
    let first = alloy_primitives::keccak256(&codes[0]);
    assert_eq!(
        reader.code_by_hash(&first).unwrap(),
        Some(codes[0].0.clone())
    );
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}
