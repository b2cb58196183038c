//! `verify` finds what the values do not imply — code that no longer hashes
//! to its account's code hash, a commitment record with a flipped storage
//! root or child reference while the root from the values is still right —
//! and `verify_datadir` changes no byte of the datadir.

use std::collections::BTreeMap;
use std::path::Path;

use alloy_primitives::{Address, B256, Bytes, U256};
use redb::{ReadableTable, TableDefinition};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::{Account, DB_FILE, Options, StateDb, VerifyReport, verify_datadir};
use strata_test_support::tree_contents;

const COMMITMENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("commitment");
/// The step prefix of every domain-table value.
const STEP_LEN: usize = 8;

fn options() -> Options {
    Options {
        step_size: 2,
        keep_steps_in_db: 1,
        background_maintenance: false,
        warmers: 0,
        ..Options::default()
    }
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
    db.init_genesis(&alloc).unwrap();
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
    let report = verify_datadir(dir.path(), &Options::default()).unwrap();
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
    assert_clean(&db.verify().unwrap());
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
        let report = db.verify().unwrap();
        assert_eq!(
            report.computed_root, report.stored_root,
            "code is not in the trie"
        );
        assert_code_problem(&report);
    }
    assert_code_problem(&verify_datadir(dir.path(), &Options::default()).unwrap());
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
        &verify_datadir(dir.path(), &Options::default()).unwrap(),
        &key,
    );
    let db = StateDb::open(dir.path(), options()).unwrap();
    assert_one_differing_record(&db.verify().unwrap(), &key);
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
        &verify_datadir(dir.path(), &Options::default()).unwrap(),
        &key,
    );
}
