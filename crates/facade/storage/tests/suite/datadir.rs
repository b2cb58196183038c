//! Opening existing datadirs: a database is created only for a new datadir,
//! and only strata's own unlisted files are ever deleted.

use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use strata_storage::{Account, DB_FILE, Error, FILES_DIR, Options, ReadOnlyStateDb, StateDb};
use strata_test_support::tree_contents;

use crate::model::small_options;

/// A closed datadir with a dozen blocks, compacted so `files/` holds files.
fn datadir_with_files(dir: &Path) {
    let db = StateDb::open(dir, small_options()).unwrap();
    for number in 0..12u64 {
        let mut writer = db.begin_block(number).unwrap();
        writer.put_account(
            Address::with_last_byte(number as u8 + 1),
            &Account {
                nonce: number + 1,
                ..Account::default()
            },
        );
        writer.commit().unwrap();
    }
    db.compact().unwrap();
    drop(db);
    assert!(strata_files(dir) > 0, "the fixture made no files");
}

fn strata_files(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(FILES_DIR))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count()
}

#[test]
fn a_zero_length_database_is_refused_and_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    datadir_with_files(dir.path());
    std::fs::File::create(dir.path().join(DB_FILE)).unwrap();
    let before = tree_contents(dir.path());

    let err = StateDb::open(dir.path(), small_options()).err().unwrap();
    assert!(matches!(err, Error::DatabaseEmpty { .. }), "{err}");
    assert!(err.to_string().contains(DB_FILE), "{err}");
    assert!(err.to_string().contains("empty"), "{err}");
    let err = ReadOnlyStateDb::open(dir.path(), Options::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::DatabaseEmpty { .. }), "{err}");
    assert_eq!(
        tree_contents(dir.path()),
        before,
        "a refused open changed the datadir"
    );
}

#[test]
fn a_missing_database_beside_strata_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    datadir_with_files(dir.path());
    std::fs::remove_file(dir.path().join(DB_FILE)).unwrap();
    let before = tree_contents(dir.path());

    let err = StateDb::open(dir.path(), small_options()).err().unwrap();
    assert!(matches!(err, Error::DatabaseMissing { .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
    assert_eq!(
        tree_contents(dir.path()),
        before,
        "a refused open changed the datadir"
    );
}

#[test]
fn an_unreadable_database_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    datadir_with_files(dir.path());
    std::fs::write(dir.path().join(DB_FILE), vec![0x5a; 8192]).unwrap();
    let before = tree_contents(dir.path());

    let err = StateDb::open(dir.path(), small_options()).err().unwrap();
    assert!(matches!(err, Error::DatabaseUnreadable { .. }), "{err}");
    assert!(err.to_string().contains(DB_FILE), "{err}");
    assert_eq!(
        tree_contents(dir.path()),
        before,
        "a refused open changed the datadir"
    );
}

#[test]
fn an_interrupted_creation_is_redone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(format!("{DB_FILE}.creating")), b"half").unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    assert_eq!(db.last_block(), None);
    drop(db);
    assert!(!dir.path().join(format!("{DB_FILE}.creating")).exists());
    assert!(dir.path().join(DB_FILE).is_file());
}

#[test]
fn a_new_datadir_keeps_foreign_files_in_its_files_folder() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join(FILES_DIR);
    std::fs::create_dir_all(files.join("notes")).unwrap();
    std::fs::write(files.join("my.jsonl"), b"{}\n").unwrap();
    std::fs::write(files.join("notes").join("a.txt"), b"keep").unwrap();
    std::fs::write(files.join("account-0000000000-00000000.sst"), b"near miss").unwrap();

    let db = StateDb::open(dir.path(), small_options()).unwrap();
    drop(db);
    assert_eq!(std::fs::read(files.join("my.jsonl")).unwrap(), b"{}\n");
    assert_eq!(
        std::fs::read(files.join("notes").join("a.txt")).unwrap(),
        b"keep"
    );
    assert!(files.join("account-0000000000-00000000.sst").is_file());
}

#[test]
fn only_strata_files_no_manifest_lists_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    datadir_with_files(dir.path());
    let files = dir.path().join(FILES_DIR);
    let listed: Vec<PathBuf> = std::fs::read_dir(&files)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let orphan = files.join("storage-0000000090-0000000091.sst");
    let temp = files.join("code-0000000090-0000000092.sst.tmp");
    let foreign = files.join("backup.sst.bak");
    for path in [&orphan, &temp, &foreign] {
        std::fs::write(path, b"leftover").unwrap();
    }

    let db = StateDb::open(dir.path(), small_options()).unwrap();
    assert_eq!(db.last_block(), Some(11));
    drop(db);
    assert!(!orphan.exists(), "an unlisted strata file stayed");
    assert!(!temp.exists(), "an unfinished strata write stayed");
    assert!(foreign.exists(), "a file strata did not make was removed");
    for path in listed {
        assert!(
            path.exists(),
            "a listed file {} was removed",
            path.display()
        );
    }
}

#[test]
fn live_sizes_count_each_live_key_once_across_the_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let (alice, bob) = (Address::repeat_byte(0xa1), Address::repeat_byte(0xb0));
    let slot = |n: u8| alloy_primitives::B256::with_last_byte(n);
    let nonce = |n| Account {
        nonce: n,
        ..Account::default()
    };
    {
        let db = StateDb::open(dir.path(), small_options()).unwrap();
        let mut block = db.begin_block(0).unwrap();
        block.put_account(alice, &nonce(1));
        block.put_account(bob, &nonce(1));
        block.put_storage(alice, slot(1), alloy_primitives::U256::from(7));
        block.put_storage(alice, slot(2), alloy_primitives::U256::from(8));
        block.commit().unwrap();
        // Later blocks rewrite, delete and add; compaction moves the early
        // steps into files, so keys stand in files and in the db at once.
        for number in 1..6 {
            let mut block = db.begin_block(number).unwrap();
            block.put_account(alice, &nonce(number + 1));
            if number == 3 {
                block.put_storage(alice, slot(2), alloy_primitives::U256::ZERO);
            }
            block.commit().unwrap();
            db.compact().unwrap();
        }
        assert!(strata_files(dir.path()) > 0, "compaction made files");
    }
    let db = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    let sizes = db.live_sizes().unwrap();
    let of = |domain: strata_storage::Domain| *sizes.iter().find(|s| s.domain == domain).unwrap();
    let accounts = of(strata_storage::Domain::Account);
    assert_eq!((accounts.keys, accounts.key_bytes), (2, 40), "{accounts:?}");
    assert!(accounts.value_bytes > 0);
    let storage = of(strata_storage::Domain::Storage);
    // Slot 2 was zeroed (deleted): one live slot, keyed by address ‖ slot.
    assert_eq!((storage.keys, storage.key_bytes), (1, 52), "{storage:?}");
    assert_eq!(storage.value_bytes, 1, "the value 7 in one trimmed byte");
    assert_eq!(of(strata_storage::Domain::Code).keys, 0);
}
