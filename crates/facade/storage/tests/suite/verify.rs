//! `verify` finds what the values do not imply — code that no longer hashes
//! to its account's code hash, a commitment record with a flipped storage
//! root or child reference while the root from the values is still right —
//! and `verify_datadir` changes no byte of the datadir.

use std::collections::BTreeMap;
use std::path::Path;

use alloy_primitives::{Address, B256, Bytes, U256};
use redb::{ReadableTable, TableDefinition};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::{
    Account, DB_FILE, Options, StateDb, VerifyOptions, VerifyReport, verify_datadir,
};
use strata_test_support::tree_contents;

const COMMITMENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("commitment");
/// The step prefix of every domain-table value.
const STEP_LEN: usize = 8;

fn options() -> Options {
    Options::default()
        .with_step_size(2)
        .with_keep_steps_in_db(1)
        .with_background_maintenance(false)
        .with_warmers(0)
}

fn contract(n: u8) -> Address {
    Address::with_last_byte(n)
}

fn code_of(n: u8) -> Bytes {
    Bytes::from(vec![0x60, n, 0x60, 0x00, 0x55])
}

/// 60 accounts, every third a contract with code and a few slots; four
/// blocks after genesis, then a compaction so both tiers hold values.
fn make_store(dir: &Path) {
    let mut alloc = GenesisAlloc::new();
    for n in 1..=60u8 {
        let mut account = GenesisAccount {
            nonce: u64::from(n),
            balance: U256::from(1000 + u64::from(n)),
            code: Bytes::new(),
            storage: BTreeMap::new(),
        };
        if n % 3 == 0 {
            account.code = code_of(n);
            for slot in 1..=4u8 {
                account
                    .storage
                    .insert(B256::with_last_byte(slot), U256::from(slot) * U256::from(n));
            }
        }
        alloc.insert(contract(n), account);
    }
    let db = StateDb::open(dir, options()).unwrap();
    db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
        .unwrap();
    for block in 1..=4u64 {
        let mut writer = db.begin_block(block).unwrap();
        for n in [3u8, 9, 30] {
            writer.put_storage(contract(n), B256::with_last_byte(9), U256::from(block));
        }
        writer.put_account(
            contract(7),
            &Account {
                nonce: 100 + block,
                ..Account::default()
            },
        );
        writer.commit().unwrap();
    }
    db.compact().unwrap();
}

fn assert_clean(report: &VerifyReport) {
    assert!(report.is_ok(), "{:#?}", report.problems);
    assert!(report.records_checked > 20, "{report:?}");
    assert_eq!(report.codes_checked, 20);
}

#[test]
fn verify_datadir_is_clean_on_a_sound_store_and_changes_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path());
    let before = tree_contents(dir.path());
    assert!(before.len() > 2, "files were collated: {before:?}");
    let report = verify_datadir(dir.path(), &Options::default(), &Default::default()).unwrap();
    assert_clean(&report);
    assert!(report.files_checked > 0);
    let timing = report.integrity.expect("redb's integrity check ran");
    assert_eq!(
        timing.db_bytes,
        std::fs::metadata(dir.path().join(DB_FILE)).unwrap().len()
    );
    assert_eq!(
        tree_contents(dir.path()),
        before,
        "verify changed the datadir"
    );
    // The library's verify on an open store agrees.
    let db = StateDb::open(dir.path(), options()).unwrap();
    assert_clean(&db.verify(&Default::default()).unwrap());
}

#[test]
fn code_that_no_longer_hashes_to_the_code_hash_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path());
    {
        // The library lets a caller put code without keeping the account's
        // code hash in step; verify must notice.
        let db = StateDb::open(dir.path(), options()).unwrap();
        let mut writer = db.begin_block(5).unwrap();
        writer.put_code(contract(12), Bytes::from_static(&[0xfe]).0);
        writer.commit().unwrap();
        let report = db.verify(&Default::default()).unwrap();
        assert_eq!(
            report.computed_root, report.stored_root,
            "code is not in the trie"
        );
        assert_code_problem(&report);
    }
    assert_code_problem(
        &verify_datadir(dir.path(), &Options::default(), &Default::default()).unwrap(),
    );
}

fn assert_code_problem(report: &VerifyReport) {
    let text = report.problems.join("\n");
    assert_eq!(report.problems.len(), 1, "{text}");
    assert!(
        text.contains(&format!(
            "account {}: its 1 bytes of code hash to",
            contract(12)
        )),
        "{text}"
    );
}

/// Where the first cell of a stored record value (step ‖ record) starts.
fn first_cell(value: &[u8]) -> Option<usize> {
    let record = value.get(STEP_LEN..)?;
    let at = match *record.first()? {
        1 => 1 + 2,
        3 => 1 + 1 + usize::from(*record.get(1)?) + 2,
        2 => 1,
        _ => return None,
    };
    Some(STEP_LEN + at)
}

/// Rewrites the first stored commitment record for which `edit` returns
/// true (after changing the value), straight in redb; returns its key.
fn corrupt_record(dir: &Path, edit: impl Fn(&mut Vec<u8>) -> bool) -> Vec<u8> {
    let db = redb::Database::create(dir.join(DB_FILE)).unwrap();
    let txn = db.begin_write().unwrap();
    let key = {
        let mut table = txn.open_table(COMMITMENT).unwrap();
        let found = table
            .iter()
            .unwrap()
            .map(|entry| {
                let (k, v) = entry.unwrap();
                (k.value().to_vec(), v.value().to_vec())
            })
            .filter(|(k, _)| k.as_slice() != b"\xffroot")
            .find_map(|(k, mut v)| edit(&mut v).then_some((k, v)));
        let (key, value) = found.expect("a record to corrupt");
        table.insert(key.as_slice(), value.as_slice()).unwrap();
        key
    };
    txn.commit().unwrap();
    key
}

fn assert_one_differing_record(report: &VerifyReport, key: &[u8]) {
    let text = report.problems.join("\n");
    assert_eq!(report.record_differences, 1, "{text}");
    assert_eq!(
        report.computed_root, report.stored_root,
        "the root from values is right"
    );
    assert!(
        text.contains("1 missing, 0 extra") || text.contains("0 missing, 0 extra, 1 differing"),
        "{text}"
    );
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    assert!(
        text.contains(&format!(
            "(key 0x{hex}) differs from the one the values imply"
        )),
        "{text}"
    );
}

#[test]
fn a_flipped_storage_root_in_a_commitment_record_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path());
    let key = corrupt_record(dir.path(), |value| {
        let Some(cell) = first_cell(value) else {
            return false;
        };
        // An account leaf: 0x01 hashed:[32] address:[20] storage_root:[32] ref.
        let storage_root = cell + 1 + 32 + 20;
        if value.get(cell) != Some(&1) || value.len() < storage_root + 32 {
            return false;
        }
        value[storage_root + 7] ^= 0x40;
        true
    });
    assert_one_differing_record(
        &verify_datadir(dir.path(), &Options::default(), &Default::default()).unwrap(),
        &key,
    );
    let db = StateDb::open(dir.path(), options()).unwrap();
    assert_one_differing_record(&db.verify(&Default::default()).unwrap(), &key);
}

#[test]
fn a_flipped_child_reference_in_a_commitment_record_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path());
    // The last byte of a branch record belongs to its last cell's node reference.
    let key = corrupt_record(dir.path(), |value| {
        if value.get(STEP_LEN) != Some(&1) {
            return false;
        }
        *value.last_mut().expect("a record") ^= 0x01;
        true
    });
    assert_one_differing_record(
        &verify_datadir(dir.path(), &Options::default(), &Default::default()).unwrap(),
        &key,
    );
}

#[test]
fn verify_in_a_tiny_sort_budget_spills_runs_agrees_and_leaves_no_scratch() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path());
    let scratch = tempfile::tempdir().unwrap();
    let tiny = VerifyOptions {
        sort_memory_bytes: 600,
        temp_dir: Some(scratch.path().to_path_buf()),
    };
    let whole = verify_datadir(dir.path(), &Options::default(), &Default::default()).unwrap();
    let spilled = verify_datadir(dir.path(), &Options::default(), &tiny).unwrap();
    assert_clean(&whole);
    assert_clean(&spilled);
    assert_eq!(whole.sort_runs, 0, "the default budget holds this state");
    assert!(spilled.sort_runs > 10, "runs: {}", spilled.sort_runs);
    let counts = |r: &VerifyReport| {
        (
            r.accounts,
            r.slots,
            r.codes_checked,
            r.records_checked,
            r.computed_root,
        )
    };
    assert_eq!(counts(&spilled), counts(&whole));
    assert_eq!(
        std::fs::read_dir(scratch.path()).unwrap().count(),
        0,
        "verify removed its scratch folder"
    );
    let db = StateDb::open(dir.path(), options()).unwrap();
    let open_spilled = db.verify(&tiny).unwrap();
    assert_clean(&open_spilled);
    assert_eq!(counts(&open_spilled), counts(&whole));
}

/// Inserts `value` (written at step 0) under `key` in redb's `table`.
fn insert_raw(dir: &Path, table: &str, key: &[u8], value: &[u8]) {
    let definition: TableDefinition<&[u8], &[u8]> = TableDefinition::new(table);
    let db = redb::Database::create(dir.join(DB_FILE)).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(definition).unwrap();
        let mut raw = vec![0u8; STEP_LEN];
        raw.extend_from_slice(value);
        table.insert(key, raw.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn storage_and_code_of_no_account_are_reported_and_left_out_of_the_trie() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path());
    let ghost = Address::repeat_byte(0x77);
    let mut slot_key = ghost.to_vec();
    slot_key.extend_from_slice(B256::with_last_byte(1).as_slice());
    insert_raw(dir.path(), "storage", &slot_key, &[0x2a]);
    insert_raw(dir.path(), "code", ghost.as_slice(), &[0x60, 0x00]);
    let report = verify_datadir(dir.path(), &Options::default(), &Default::default()).unwrap();
    let text = report.problems.join("\n");
    assert_eq!(report.problems.len(), 2, "{text}");
    assert!(
        text.contains(&format!("storage of {ghost} exists without its account")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "the code domain holds 2 bytes of code for 0x{} which has no account",
            alloy_primitives::hex::encode(ghost)
        )),
        "{text}"
    );
    assert_eq!(report.record_differences, 0, "{text}");
    assert_eq!(report.computed_root, report.stored_root);
}

#[test]
fn an_account_too_large_to_hold_is_sorted_on_its_own_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let mut alloc = GenesisAlloc::new();
    for n in 1..=20u8 {
        let storage = (1..=u64::from(n % 4))
            .map(|slot| (B256::from(U256::from(slot)), U256::from(slot + 7)))
            .collect();
        alloc.insert(
            contract(n),
            GenesisAccount {
                nonce: 1,
                balance: U256::from(n),
                code: Bytes::new(),
                storage,
            },
        );
    }
    let big = (0..3000u64)
        .map(|slot| (B256::from(U256::from(slot)), U256::from(slot * 3 + 1)))
        .collect();
    alloc.insert(
        contract(99),
        GenesisAccount {
            nonce: 1,
            balance: U256::ZERO,
            code: code_of(99),
            storage: big,
        },
    );
    let db = StateDb::open(dir.path(), options()).unwrap();
    db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
        .unwrap();
    let whole = db.verify(&Default::default()).unwrap();
    assert!(whole.is_ok(), "{:#?}", whole.problems);
    assert_eq!(whole.slots, 3000 + (1..=20u64).map(|n| n % 4).sum::<u64>());
    // 64 KiB: an account of more than ~58 slots goes through a sort of its
    // own, which spills; the small ones are built in memory.
    let scratch = tempfile::tempdir().unwrap();
    let small_budget = VerifyOptions {
        sort_memory_bytes: 64 << 10,
        temp_dir: Some(scratch.path().to_path_buf()),
    };
    let streamed = db.verify(&small_budget).unwrap();
    assert!(streamed.is_ok(), "{:#?}", streamed.problems);
    assert!(streamed.sort_runs > 5, "runs: {}", streamed.sort_runs);
    assert_eq!(
        (
            streamed.slots,
            streamed.records_checked,
            streamed.computed_root
        ),
        (whole.slots, whole.records_checked, whole.computed_root)
    );
}

/// A flushed datadir whose journal holds blocks 0..12 in several segments
/// (a new segment per open), the newest segment's blocks unflushed.
fn journaled_store(dir: &Path) -> Vec<std::path::PathBuf> {
    let options = options().with_unwind_depth(64);
    for round in 0..4u64 {
        let db = StateDb::open(dir, options.clone()).unwrap();
        for block in round * 3..round * 3 + 3 {
            let mut writer = db.begin_block(block).unwrap();
            writer.put_account(
                contract(block as u8 + 1),
                &Account {
                    nonce: block + 1,
                    ..Account::default()
                },
            );
            writer.commit().unwrap();
        }
        if round < 3 {
            db.flush().unwrap();
            drop(db);
        } else {
            db.abandon();
        }
    }
    let mut segments: Vec<_> = std::fs::read_dir(dir.join(strata_storage::JOURNAL_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    assert_eq!(segments.len(), 4, "{segments:?}");
    segments
}

fn assert_problem_names(report: &VerifyReport, what: &[&str]) {
    assert!(
        report
            .problems
            .iter()
            .any(|p| what.iter().all(|w| p.contains(w))),
        "no problem naming {what:?}: {:?}",
        report.problems
    );
}

#[test]
fn a_damaged_flushed_segment_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let segments = journaled_store(dir.path());
    let report = verify_datadir(dir.path(), &options(), &Default::default()).unwrap();
    assert!(report.is_ok() && report.notes.is_empty(), "{report:?}");
    // B3: a byte of the oldest segment, which holds only flushed blocks.
    let mut bytes = std::fs::read(&segments[0]).unwrap();
    bytes[100] ^= 0x04;
    std::fs::write(&segments[0], &bytes).unwrap();
    let report = verify_datadir(dir.path(), &options(), &Default::default()).unwrap();
    let name = segments[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_problem_names(&report, &[&name, "corrupt at offset"]);
    // And the writer refuses it: verify said what the writer says.
    assert!(StateDb::open(dir.path(), options()).is_err());
}

#[test]
fn a_missing_middle_segment_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let segments = journaled_store(dir.path());
    std::fs::remove_file(&segments[1]).unwrap();
    let report = verify_datadir(dir.path(), &options(), &Default::default()).unwrap();
    assert_problem_names(&report, &["expected block 3, found block 6"]);
    assert!(StateDb::open(dir.path(), options()).is_err());
}

#[test]
fn a_segment_copied_under_an_earlier_name_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let segments = journaled_store(dir.path());
    // The segment of blocks 6..9 copied in as if it began at block 4.
    let earlier = segments[1].with_file_name("journal-00000000000000000004.log");
    std::fs::copy(&segments[2], &earlier).unwrap();
    let report = verify_datadir(dir.path(), &options(), &Default::default()).unwrap();
    assert_problem_names(
        &report,
        &["journal-00000000000000000004.log", "its name block 4"],
    );
    assert!(StateDb::open(dir.path(), options()).is_err());
}

#[test]
fn a_torn_tail_is_a_note_and_verify_is_ok() {
    let dir = tempfile::tempdir().unwrap();
    let segments = journaled_store(dir.path());
    let newest = segments.last().unwrap();
    let mut bytes = std::fs::read(newest).unwrap();
    let len = bytes.len();
    bytes.truncate(len - 10);
    std::fs::write(newest, &bytes).unwrap();
    let report = verify_datadir(dir.path(), &options(), &Default::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(
        report.notes.iter().any(|n| n.contains("torn tail")),
        "{:?}",
        report.notes
    );
    assert!(report.journal_frames >= 11, "{}", report.journal_frames);
    // verify: ok means a writer opens it.
    let db = StateDb::open(dir.path(), options()).unwrap();
    assert_eq!(db.last_block(), Some(10));
}
