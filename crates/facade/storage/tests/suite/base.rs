//! A base — the redb tier as one stream and the files listed with it, what
//! a replica starts from — written beside a running writer, at any moment:
//! also while a flush is held between its transactions, when redb already
//! holds plain values of blocks after its head. The datadir built from it
//! holds exactly the state at the base's head and verifies.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use strata_storage::base::install_base;
use strata_storage::{
    Account, Options, PausePoint, PausePoints, ReadOnlyStateDb, Regime, StateDb, VerifyOptions,
    verify_datadir,
};

fn address(i: u64) -> Address {
    let mut a = [0u8; 20];
    a[12..].copy_from_slice(&i.to_be_bytes());
    Address::from(a)
}

/// Block `n` sets accounts n..n+8 (and so rewrites seven of the last block's).
fn commit(db: &StateDb, n: u64, model: &mut BTreeMap<Address, u64>) {
    let mut block = db.begin_block(n).unwrap();
    for i in n..n + 8 {
        let account = Account {
            nonce: n + 1,
            balance: U256::from(i * 1000 + n),
            code_hash: alloy_primitives::KECCAK256_EMPTY,
        };
        block.put_account(address(i), &account);
        model.insert(address(i), n + 1);
    }
    block.commit().unwrap();
}

#[test]
fn a_base_written_while_a_flush_is_held_between_its_transactions_holds_its_head() {
    let dir = tempfile::tempdir().unwrap();
    let points = Arc::new(PausePoints::new());
    let options = Options::default()
        .with_share_with_readers(true)
        .with_background_maintenance(false)
        .with_flush_batch_bytes(1 << 30)
        .with_memory_budget_bytes(2 << 30)
        .with_flush_txn_keys(5)
        .with_pause_points(Some(points.clone()));
    let db = Arc::new(StateDb::open(dir.path(), options).unwrap());
    let mut model = BTreeMap::new();
    for n in 0..3 {
        commit(&db, n, &mut model);
    }
    db.flush().unwrap();
    let at_head = model.clone();
    for n in 3..6 {
        commit(&db, n, &mut model);
    }
    points.arm(PausePoint::FlushPart);
    let flush = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    assert!(points.wait_reached(PausePoint::FlushPart, Duration::from_secs(20)));
    // redb now holds some of blocks 3..=5's values, its head still block 2.
    let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_eq!(follower.last_block().unwrap(), Some(5));
    let mut stream = Vec::new();
    let exported = follower.export_base(&mut stream).unwrap();
    points.release(PausePoint::FlushPart);
    flush.join().unwrap().unwrap();
    assert_eq!(exported.head.block, 2);
    assert!(exported.files.is_empty(), "nothing was collated");

    let copy = tempfile::tempdir().unwrap();
    install_base(copy.path(), &mut stream.as_slice()).unwrap();
    let report =
        verify_datadir(copy.path(), &Options::default(), &VerifyOptions::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let installed = StateDb::open(copy.path(), Options::default()).unwrap();
    assert_eq!(installed.last_block(), Some(2));
    assert_eq!(installed.root(), exported.head.root);
    let reader = installed.reader(Regime::Exec);
    for i in 0..20 {
        let found = reader.account(&address(i)).unwrap().map(|a| a.nonce);
        assert_eq!(
            found,
            at_head.get(&address(i)).copied(),
            "account {i} at block 2"
        );
    }
}
