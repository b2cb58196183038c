//! The value cache, prefetch from a block access list, and the root
//! computed alongside execution: same answers and roots as the plain path,
//! reads served from the cache once loaded, a list that does not match the
//! block refused without harm.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;
use strata_storage::telemetry::Tier;
use strata_storage::{
    Account, AccountAccess, BlockAccessList, Domain, Error, Options, Regime, StateDb,
};

use crate::model::small_options;

fn who(n: u8) -> Address {
    Address::with_last_byte(n)
}

fn slot(n: u8) -> B256 {
    B256::with_last_byte(n)
}

/// Block 0: 40 accounts with 3 slots each (account 5 with code).
fn genesis(db: &StateDb) {
    let mut block = db.begin_block(0).unwrap();
    let code = alloy_primitives::Bytes::from_static(&[0x60, 0x00]);
    for n in 1..=40u8 {
        block.put_account(
            who(n),
            &Account {
                nonce: u64::from(n),
                balance: U256::from(1000 + u64::from(n)),
                code_hash: if n == 5 {
                    alloy_primitives::keccak256(&code)
                } else {
                    Account::default().code_hash
                },
            },
        );
        for s in 1..=3u8 {
            block.put_storage(
                who(n),
                slot(s),
                U256::from(u64::from(n) * 10 + u64::from(s)),
            );
        }
    }
    block.put_code(who(5), code.0);
    block.commit().unwrap();
}

/// A block touching accounts 1..=10: reads slot 1, writes slot 2, bumps the
/// balance of the even ones, destroys account 9, creates account 50.
fn list(number: u64) -> BlockAccessList {
    let mut accounts: Vec<AccountAccess> = (1..=10u8)
        .map(|n| AccountAccess {
            address: who(n),
            storage_reads: vec![slot(1)],
            storage_changes: vec![(slot(2), U256::from(number * 100 + u64::from(n)))],
            balance: (n % 2 == 0).then(|| U256::from(number + u64::from(n))),
            destroyed: n == 9,
            ..AccountAccess::default()
        })
        .collect();
    accounts.push(AccountAccess {
        address: who(50),
        nonce: Some(1),
        code: Some(alloy_primitives::Bytes::from_static(&[0x60, 0x01]).0),
        ..AccountAccess::default()
    });
    BlockAccessList { accounts }
}

fn options(warmers: usize) -> Options {
    small_options().with_warmers(warmers)
}

fn count(db: &StateDb, domain: Domain, tier: Tier, regime: Regime) -> u64 {
    db.metrics()
        .snapshot()
        .cell(domain, tier, regime)
        .map_or(0, |cell| cell.count)
}

#[test]
fn reads_after_a_commit_come_from_the_value_cache_and_misses_count_apart() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(0)).unwrap();
    genesis(&db);
    let reader = db.latest();
    // Written through by block 0's commit.
    assert_eq!(reader.account(&who(3)).unwrap().unwrap().nonce, 3);
    assert_eq!(reader.storage(&who(3), &slot(2)).unwrap(), U256::from(32));
    assert_eq!(
        count(&db, Domain::Account, Tier::ValueCache, Regime::Exec),
        1
    );
    assert_eq!(
        count(&db, Domain::Storage, Tier::ValueCache, Regime::Exec),
        1
    );
    // A key no tier holds is counted as absent, then its absence is cached.
    assert_eq!(reader.account(&who(99)).unwrap(), None);
    assert_eq!(count(&db, Domain::Account, Tier::Absent, Regime::Exec), 1);
    assert_eq!(reader.account(&who(99)).unwrap(), None);
    assert_eq!(
        count(&db, Domain::Account, Tier::ValueCache, Regime::Exec),
        2
    );
    let stats = db.value_cache_stats();
    assert!(stats.hits >= 3 && stats.misses >= 1, "{stats:?}");
}

#[test]
fn an_old_snapshot_and_an_unwound_state_never_see_newer_cached_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(0)).unwrap();
    genesis(&db);
    let old = db.latest();
    assert_eq!(old.storage(&who(1), &slot(2)).unwrap(), U256::from(12));
    for number in 1..=3 {
        let mut block = db.begin_block(number).unwrap();
        block.apply_access_list(&list(number)).unwrap();
        block.commit().unwrap();
    }
    // Block 3 wrote slot 2 of account 1 (written through to the cache).
    assert_eq!(
        db.latest().storage(&who(1), &slot(2)).unwrap(),
        U256::from(301)
    );
    assert_eq!(old.storage(&who(1), &slot(2)).unwrap(), U256::from(12));
    assert_eq!(old.account(&who(9)).unwrap().unwrap().nonce, 9);
    assert_eq!(
        db.reader_at(1, Regime::Exec)
            .unwrap()
            .storage(&who(1), &slot(2))
            .unwrap(),
        U256::from(101)
    );
    db.unwind_to(1).unwrap();
    assert_eq!(
        db.latest().storage(&who(1), &slot(2)).unwrap(),
        U256::from(101)
    );
    // Destroyed in block 1, then re-created by its slot write.
    assert_eq!(db.latest().account(&who(9)).unwrap().unwrap().nonce, 0);
    assert_eq!(db.latest().storage(&who(9), &slot(1)).unwrap(), U256::ZERO);
    // A new block 2 with other values: the cache follows it, not the old 2.
    let mut block = db.begin_block(2).unwrap();
    block.put_storage(who(1), slot(2), U256::from(7));
    block.commit().unwrap();
    assert_eq!(
        db.latest().storage(&who(1), &slot(2)).unwrap(),
        U256::from(7)
    );
}

#[test]
fn prefetch_fills_the_value_cache_while_the_block_executes() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(4)).unwrap();
    genesis(&db);
    drop(db);
    // Reopened: the cache starts empty.
    let db = StateDb::open(dir.path(), options(4)).unwrap();
    let list = list(1);
    let mut block = db.begin_block(1).unwrap();
    block.prefetch(&list);
    // Wait (bounded) until the listed values are in: 11 accounts, 20 slots
    // and account 5's code are not needed, only what the list names.
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.value_cache_stats().inserts < 31 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = count(&db, Domain::Storage, Tier::ValueCache, Regime::Exec);
    for n in 1..=10u8 {
        assert_eq!(
            block.storage(&who(n), &slot(1)).unwrap(),
            U256::from(u64::from(n) * 10 + 1)
        );
    }
    assert_eq!(
        count(&db, Domain::Storage, Tier::ValueCache, Regime::Exec) - before,
        10,
        "every listed slot read is a value-cache hit"
    );
    block.apply_access_list(&list).unwrap();
    let info = block.commit().unwrap();
    assert!(info.prefetched > 0, "{info:?}");

    // The same block on a store without prefetch gives the same root.
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = StateDb::open(plain_dir.path(), options(0)).unwrap();
    genesis(&plain);
    let mut block = plain.begin_block(1).unwrap();
    block.apply_access_list(&list).unwrap();
    assert_eq!(block.commit().unwrap().root, info.root);
}

#[test]
fn the_root_computed_alongside_execution_is_the_commits_root() {
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = StateDb::open(plain_dir.path(), options(0)).unwrap();
    genesis(&plain);
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(2)).unwrap();
    genesis(&db);
    for number in 1..=4 {
        let list = Arc::new(list(number));
        let mut block = plain.begin_block(number).unwrap();
        block.apply_access_list(&list).unwrap();
        let expected = block.commit().unwrap().root;

        let mut block = db.begin_block(number).unwrap();
        block.prefetch(&list);
        block.root_alongside(list.clone()).unwrap();
        block.apply_access_list(&list).unwrap();
        let info = block.commit().unwrap();
        assert_eq!(info.root, expected, "block {number}");
        assert!(info.root_wait.is_some());
        assert_eq!(db.root(), expected);
    }
    assert_eq!(
        db.latest().storage(&who(2), &slot(2)).unwrap(),
        U256::from(402)
    );
    assert!(db.verify(&Default::default()).unwrap().is_ok());
}

/// A block whose root came from its list keeps its hash and header (set on
/// the writer, not in the list): BLOCKHASH and calls at the block read
/// them back.
#[test]
fn a_block_committed_with_its_lists_root_keeps_its_hash_and_header() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(0)).unwrap();
    genesis(&db);
    let list = Arc::new(list(1));
    let mut block = db.begin_block(1).unwrap();
    block.root_alongside(list.clone()).unwrap();
    block.apply_access_list(&list).unwrap();
    let hash = B256::repeat_byte(0xab);
    block.set_block_hash(hash);
    block.set_block_header(Bytes::from_static(b"the header's bytes"));
    block.commit().unwrap();
    let latest = db.latest();
    assert_eq!(latest.block_hash(1).unwrap(), Some(hash));
    assert_eq!(
        latest.block_header(1).unwrap().as_deref(),
        Some(b"the header's bytes".as_slice())
    );
}

#[test]
fn a_block_that_differs_from_its_list_is_refused_and_the_store_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(2)).unwrap();
    genesis(&db);
    let list = Arc::new(list(1));
    let mut block = db.begin_block(1).unwrap();
    block.root_alongside(list.clone()).unwrap();
    block.apply_access_list(&list).unwrap();
    block.put_storage(who(3), slot(3), U256::from(999));
    let error = block.commit().unwrap_err();
    assert!(
        matches!(
            &error,
            Error::AccessListMismatch {
                block: 1,
                domain: Domain::Storage,
                ..
            }
        ),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("not written") && message.contains("0x03e7"),
        "{message}"
    );
    assert_eq!(db.last_block(), Some(0), "nothing committed");

    // Not poisoned: the block is begun again and commits.
    let mut block = db.begin_block(1).unwrap();
    block.root_alongside(list.clone()).unwrap();
    block.apply_access_list(&list).unwrap();
    block.commit().unwrap();
    assert_eq!(db.last_block(), Some(1));

    // A write after `state_root` joined the list's root is still checked
    // at commit.
    let mut block = db.begin_block(2).unwrap();
    let list2 = Arc::new(self::list(2));
    block.root_alongside(list2.clone()).unwrap();
    block.apply_access_list(&list2).unwrap();
    block.state_root().unwrap();
    block.put_storage(who(4), slot(3), U256::from(1));
    let error = block.commit().unwrap_err();
    assert!(
        matches!(&error, Error::AccessListMismatch { block: 2, .. }),
        "{error}"
    );
    assert_eq!(db.last_block(), Some(1), "nothing committed");

    // A writer dropped with its prefetch and root thread running leaves
    // nothing behind.
    let mut block = db.begin_block(2).unwrap();
    block.prefetch(&list);
    block.root_alongside(list.clone()).unwrap();
    drop(block);
    let mut block = db.begin_block(2).unwrap();
    block.put_account(who(77), &Account::default());
    block.commit().unwrap();
    assert!(db.verify(&Default::default()).unwrap().is_ok());
}

#[test]
fn a_zero_capacity_value_cache_reads_the_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), (options(0)).with_value_cache_bytes(0)).unwrap();
    genesis(&db);
    assert_eq!(db.latest().account(&who(4)).unwrap().unwrap().nonce, 4);
    assert_eq!(
        count(&db, Domain::Account, Tier::ValueCache, Regime::Exec),
        0
    );
    assert_eq!(db.value_cache_stats().entries, 0);
}
