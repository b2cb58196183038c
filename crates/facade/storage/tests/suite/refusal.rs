//! Refused commits: a block whose root is not the expected one leaves
//! nothing behind and the store usable; after a disk-full commit every
//! later refusal names the block and the first failure's cause.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use alloy_primitives::{Address, B256, U256};
use parking_lot::Mutex;
use strata_storage::files::MemFileSystem;
use strata_storage::files::fs::{Fault, FaultyFileSystem};
use strata_storage::{Account, Durability, Error, Options, Regime, StateDb};

use crate::model::small_options;

fn who(i: u64) -> Address {
    let mut bytes = [0u8; 20];
    bytes[12..].copy_from_slice(&i.to_be_bytes());
    Address::from(bytes)
}

/// Genesis-like block 0: 300 accounts, every tenth with 4 slots.
fn block_zero(db: &StateDb) {
    let mut writer = db.begin_block(0).unwrap();
    for i in 0..300u64 {
        writer.put_account(
            who(i),
            &Account {
                nonce: i,
                balance: U256::from(1_000 + i),
                ..Account::default()
            },
        );
        if i % 10 == 0 {
            for slot in 0..4u64 {
                writer.put_storage(
                    who(i),
                    B256::with_last_byte(slot as u8),
                    U256::from(i + slot + 1),
                );
            }
        }
    }
    writer.commit().unwrap();
}

/// The writes of block `number`; `variant` != 0 gives other writes (a bad block).
fn stage(writer: &mut strata_storage::BlockWriter, number: u64, variant: u64) {
    for i in (number * 7..300).step_by(13) {
        writer.put_account(
            who(i),
            &Account {
                nonce: i + number,
                balance: U256::from(5_000 + i * 3 + variant),
                ..Account::default()
            },
        );
        if i % 10 == 0 {
            writer.put_storage(
                who(i),
                B256::with_last_byte(1),
                U256::from(number * 100 + variant),
            );
        }
    }
    if variant != 0 {
        writer.put_account(who(301), &Account::default());
        writer.put_storage(who(301), B256::with_last_byte(9), U256::from(variant));
        writer.delete_account(who(20));
    }
}

fn options(warmers: usize) -> Options {
    small_options().with_warmers(warmers)
}

/// The roots of blocks 1..=3 with the right writes, from a separate store.
fn reference_roots() -> Vec<B256> {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(0)).unwrap();
    block_zero(&db);
    (1..=3)
        .map(|n| {
            let mut writer = db.begin_block(n).unwrap();
            stage(&mut writer, n, 0);
            writer.commit().unwrap().root
        })
        .collect()
}

#[test]
fn a_block_with_another_root_is_refused_and_leaves_nothing_behind() {
    let roots = reference_roots();
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(2)).unwrap();
    block_zero(&db);
    let root0 = db.root();
    let before = db.reader(Regime::Exec).account(&who(7)).unwrap();

    let mut bad = db.begin_block(1).unwrap();
    stage(&mut bad, 1, 77);
    bad.expect_root(roots[0]);
    let err = bad.commit().unwrap_err();
    let Error::BlockRootMismatch {
        block,
        expected,
        computed,
    } = err
    else {
        panic!("expected a root mismatch, got {err}");
    };
    assert_eq!((block, expected), (1, roots[0]));
    assert_ne!(computed, roots[0]);
    let message = err_text(&db, 1, 77, roots[0]);
    assert!(
        message.contains("block 1 refused") && message.contains(&roots[0].to_string()),
        "{message}"
    );

    // Nothing of the refused block is visible, and the store is not poisoned.
    assert_eq!(db.last_block(), Some(0));
    assert_eq!(db.root(), root0);
    assert_eq!(db.root_at(1).unwrap(), None);
    assert_eq!(db.reader(Regime::Exec).account(&who(7)).unwrap(), before);
    assert_eq!(db.reader(Regime::Exec).account(&who(301)).unwrap(), None);

    // The right block 1 commits, and later blocks reach the right roots
    // (a branch of the refused block left in the cache would change them).
    for n in 1..=3u64 {
        let mut writer = db.begin_block(n).unwrap();
        stage(&mut writer, n, 0);
        writer.expect_root(roots[n as usize - 1]);
        let info = writer.commit().unwrap();
        assert_eq!(info.root, roots[n as usize - 1], "block {n}");
    }
    drop(db);
    let db = StateDb::open(dir.path(), options(0)).unwrap();
    assert_eq!(db.root(), roots[2]);
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn storage_left_under_no_account_is_refused_and_leaves_nothing_behind() {
    let roots = reference_roots();
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(2)).unwrap();
    block_zero(&db);
    let root0 = db.root();
    let orphan = who(400);

    // A value under an address that never had an account; then one under an
    // account the same block deletes (a slot written to zero is no value).
    for delete_after in [false, true] {
        let mut bad = db.begin_block(1).unwrap();
        stage(&mut bad, 1, 0);
        if delete_after {
            bad.put_storage(who(30), B256::with_last_byte(2), U256::ZERO);
            bad.delete_account(who(30));
            bad.put_storage(who(30), B256::with_last_byte(5), U256::from(3));
        } else {
            bad.put_storage(orphan, B256::with_last_byte(5), U256::from(3));
        }
        let err = bad.commit().unwrap_err();
        let message = err.to_string();
        let address = if delete_after { who(30) } else { orphan };
        assert!(
            message.contains("block 1")
                && message.contains("has no account")
                && message.contains(&address.to_string()),
            "{message}"
        );
        assert!(!err.poisons(), "{message}");
        assert_eq!(db.last_block(), Some(0));
        assert_eq!(db.root(), root0);
        assert_eq!(
            db.reader(Regime::Exec)
                .storage(&orphan, &B256::with_last_byte(5))
                .unwrap(),
            U256::ZERO
        );
    }

    // The store takes the right blocks after the refusals.
    for n in 1..=3u64 {
        let mut writer = db.begin_block(n).unwrap();
        stage(&mut writer, n, 0);
        // A slot zeroed under no account is no value: allowed.
        writer.put_storage(orphan, B256::with_last_byte(6), U256::ZERO);
        writer.expect_root(roots[n as usize - 1]);
        assert_eq!(writer.commit().unwrap().root, roots[n as usize - 1]);
    }
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Refuses block `number` with `variant` writes again and returns the message.
fn err_text(db: &StateDb, number: u64, variant: u64, expected: B256) -> String {
    let mut writer = db.begin_block(number).unwrap();
    stage(&mut writer, number, variant);
    writer.expect_root(expected);
    writer.commit().unwrap_err().to_string()
}

/// redb storage in memory that fails every write once the disk is "full".
#[derive(Debug, Clone, Default)]
struct FillingDisk {
    bytes: Arc<Mutex<Vec<u8>>>,
    full: Arc<AtomicBool>,
    /// When set, the disk fills up after this many more successful fsyncs.
    syncs_left: Arc<Mutex<Option<u64>>>,
}

const NO_SPACE: &str = "no space left on device (injected)";

impl FillingDisk {
    fn refuse(&self) -> io::Result<()> {
        if self.full.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::StorageFull, NO_SPACE));
        }
        Ok(())
    }
}

impl redb::StorageBackend for FillingDisk {
    fn len(&self) -> io::Result<u64> {
        Ok(self.bytes.lock().len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let bytes = self.bytes.lock();
        let start = offset as usize;
        let slice = bytes
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        out.copy_from_slice(slice);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        if len > self.bytes.lock().len() as u64 {
            self.refuse()?;
        }
        self.bytes.lock().resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.refuse()?;
        let mut left = self.syncs_left.lock();
        match *left {
            Some(0) => {
                self.full.store(true, Ordering::SeqCst);
                self.refuse()
            }
            Some(n) => {
                *left = Some(n - 1);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.refuse()?;
        let mut bytes = self.bytes.lock();
        let end = offset as usize + data.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
}

#[test]
fn after_a_disk_full_commit_every_refusal_names_the_block_and_the_first_cause() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FillingDisk::default();
    let journal_disk = Arc::new(FaultyFileSystem::new(Arc::new(MemFileSystem::new())));
    let options = (options(1)).with_durability(Durability::EveryBlock);
    let db = StateDb::open_with_io(
        dir.path(),
        options,
        journal_disk.clone(),
        Some(disk.clone()),
    )
    .unwrap();
    block_zero(&db);
    for n in 1..=2 {
        let mut writer = db.begin_block(n).unwrap();
        stage(&mut writer, n, 0);
        writer.commit().unwrap();
    }
    // The block is made durable by the journal's fsync: that is what fails.
    disk.full.store(true, Ordering::SeqCst);
    journal_disk.inject(Fault::Sync);

    let mut writer = db.begin_block(3).unwrap();
    stage(&mut writer, 3, 0);
    let first = writer.commit().unwrap_err().to_string();
    assert!(
        first.contains("block 3") && first.contains(SYNC_FAILED),
        "the failed commit names the block and the cause: {first}"
    );

    // The disk has room again, but the store stays poisoned until reopened;
    // every refusal names the block and the first cause.
    disk.full.store(false, Ordering::SeqCst);
    journal_disk.clear();
    let second = db.begin_block(3).err().unwrap().to_string();
    assert!(
        second.contains("block 3") && second.contains(SYNC_FAILED) && second.contains("poisoned"),
        "{second}"
    );
    let third = db.compact().unwrap_err().to_string();
    assert!(third.contains(SYNC_FAILED), "{third}");
    assert_eq!(db.last_block(), Some(2));
}

/// What the journal's injected fsync failure says.
const SYNC_FAILED: &str = "injected sync failure";

#[test]
fn a_disk_full_flush_poisons_the_store_and_names_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FillingDisk::default();
    // Nothing is flushed before the test asks.
    let options = (options(1))
        .with_flush_batch_bytes(u64::MAX)
        .with_memory_budget_bytes(u64::MAX);
    let db = StateDb::open_with_io(
        dir.path(),
        options,
        Arc::new(MemFileSystem::new()),
        Some(disk.clone()),
    )
    .unwrap();
    block_zero(&db);
    for n in 1..=2 {
        let mut writer = db.begin_block(n).unwrap();
        stage(&mut writer, n, 0);
        writer.commit().unwrap();
    }
    disk.full.store(true, Ordering::SeqCst);
    let first = db.flush().unwrap_err().to_string();
    assert!(first.contains(NO_SPACE), "{first}");
    disk.full.store(false, Ordering::SeqCst);
    let second = db.begin_block(3).err().unwrap().to_string();
    assert!(
        second.contains(NO_SPACE) && second.contains("poisoned"),
        "{second}"
    );
    // The committed blocks are still what readers see.
    assert_eq!(db.last_block(), Some(2));
}

/// `close()` returns the final flush's failure (a drop could only log it),
/// and the blocks it could not flush are replayed from the journal by the
/// next open.
#[test]
fn close_reports_a_failed_final_flush_and_the_journal_keeps_the_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FillingDisk::default();
    let journal = Arc::new(MemFileSystem::new());
    // Nothing is flushed before the close.
    let options = (options(1))
        .with_flush_batch_bytes(u64::MAX)
        .with_memory_budget_bytes(u64::MAX);
    let db = StateDb::open_with_io(
        dir.path(),
        options.clone(),
        journal.clone(),
        Some(disk.clone()),
    )
    .unwrap();
    block_zero(&db);
    for n in 1..=2 {
        let mut writer = db.begin_block(n).unwrap();
        stage(&mut writer, n, 0);
        writer.commit().unwrap();
    }
    let root = db.root();
    disk.full.store(true, Ordering::SeqCst);
    let error = db.close().unwrap_err().to_string();
    assert!(error.contains(NO_SPACE), "{error}");

    disk.full.store(false, Ordering::SeqCst);
    let db = StateDb::open_with_io(dir.path(), options, journal, Some(disk)).unwrap();
    assert_eq!((db.last_block(), db.root()), (Some(2), root));
    db.close().unwrap();
}

/// Every account and the staged slot of every tenth, as `db` reads them.
fn state_of(db: &StateDb) -> Vec<(Option<Account>, U256)> {
    let reader = db.reader(Regime::Exec);
    (0..302u64)
        .map(|i| {
            let account = reader.account(&who(i)).unwrap();
            let slot = reader.storage(&who(i), &B256::with_last_byte(1)).unwrap();
            (account, slot)
        })
        .collect()
}

#[test]
fn a_flush_cut_between_its_transactions_loses_nothing() {
    let reference = {
        let dir = tempfile::tempdir().unwrap();
        let db = StateDb::open(dir.path(), options(0)).unwrap();
        block_zero(&db);
        for n in 1..=3 {
            let mut writer = db.begin_block(n).unwrap();
            stage(&mut writer, n, 0);
            writer.commit().unwrap();
        }
        (db.root(), state_of(&db))
    };
    let options = options(0)
        .with_flush_batch_bytes(u64::MAX)
        .with_memory_budget_bytes(u64::MAX)
        // Several redb transactions per flush.
        .with_flush_txn_keys(16);
    let mut cuts = 0;
    for syncs in 0.. {
        let dir = tempfile::tempdir().unwrap();
        let disk = FillingDisk::default();
        let journal = Arc::new(MemFileSystem::new());
        let open = || {
            StateDb::open_with_io(
                dir.path(),
                options.clone(),
                journal.clone(),
                Some(disk.clone()),
            )
            .unwrap()
        };
        let db = open();
        block_zero(&db);
        db.flush().unwrap();
        for n in 1..=3 {
            let mut writer = db.begin_block(n).unwrap();
            stage(&mut writer, n, 0);
            writer.commit().unwrap();
        }
        *disk.syncs_left.lock() = Some(syncs);
        match db.flush() {
            Ok(_) => break,
            Err(e) => assert!(e.to_string().contains(NO_SPACE), "{e}"),
        }
        cuts += 1;
        db.abandon();
        *disk.syncs_left.lock() = None;
        disk.full.store(false, Ordering::SeqCst);

        // Reopened, the store replays the journal over the partly flushed
        // keys and reads exactly what it committed, before and after a
        // complete flush.
        let db = open();
        assert_eq!(db.last_block(), Some(3), "cut after {syncs} fsyncs");
        assert_eq!(db.root(), reference.0, "cut after {syncs} fsyncs");
        assert_eq!(state_of(&db), reference.1, "cut after {syncs} fsyncs");
        assert!(
            db.verify(&Default::default()).unwrap().is_ok(),
            "cut after {syncs} fsyncs"
        );
        db.flush().unwrap();
        assert_eq!(state_of(&db), reference.1, "cut after {syncs} fsyncs");
        assert!(
            db.verify(&Default::default()).unwrap().is_ok(),
            "cut after {syncs} fsyncs"
        );
        drop(db);
        let db = open();
        assert_eq!(state_of(&db), reference.1, "cut after {syncs} fsyncs");
    }
    // The flush needed several transactions, and each was cut once.
    assert!(cuts >= 3, "only {cuts} cut points");
}
