//! A zeroed 4 KiB page anywhere in `state.redb`: every read through a
//! read-only handle answers or returns an error; no panic escapes (redb's
//! own panics on such pages become `Error::Corrupt` naming the table).

use std::io::{Read, Seek, SeekFrom, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use alloy_primitives::{Address, B256, U256};
use strata_storage::{Account, DB_FILE, Error, Options, ReadOnlyStateDb, Regime, StateDb};

use crate::model::small_options;

const PAGE: usize = 4096;

fn who(i: u64) -> Address {
    Address::from_word(B256::from(U256::from(i * 7919 + 1)))
}

/// A closed datadir: 300 accounts with a slot each over 12 blocks, compacted.
fn datadir(dir: &Path) {
    let db = StateDb::open(dir, small_options()).unwrap();
    for number in 0..12u64 {
        let mut writer = db.begin_block(number).unwrap();
        for i in (number * 25)..(number + 1) * 25 {
            writer.put_account(
                who(i),
                &Account {
                    nonce: i + 1,
                    ..Account::default()
                },
            );
            writer.put_storage(who(i), B256::with_last_byte(1), U256::from(i));
        }
        writer.commit().unwrap();
    }
    db.compact().unwrap();
}

/// Every read `root`, `get` and `stats` make, through a read-only handle.
fn read_everything(dir: &Path) -> strata_storage::Result<()> {
    let db = ReadOnlyStateDb::open(dir, Options::default())?;
    db.root()?;
    db.stats()?;
    let reader = db.reader(Regime::Exec)?;
    for i in (0..300).step_by(7) {
        reader.account(&who(i))?;
        reader.storage(&who(i), &B256::with_last_byte(1))?;
        reader.code(&who(i))?;
    }
    Ok(())
}

fn write_at(file: &Path, offset: u64, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn no_zeroed_redb_page_makes_a_read_panic() {
    let dir = tempfile::tempdir().unwrap();
    datadir(dir.path());
    let file = dir.path().join(DB_FILE);
    let len = std::fs::metadata(&file).unwrap().len();
    let pages = len / PAGE as u64;
    let (mut answered, mut corrupt, mut other) = (0, 0, 0);
    for page in 0..pages {
        let offset = page * PAGE as u64;
        let mut original = vec![0u8; PAGE];
        let mut f = std::fs::File::open(&file).unwrap();
        f.seek(SeekFrom::Start(offset)).unwrap();
        f.read_exact(&mut original).unwrap();
        write_at(&file, offset, &[0u8; PAGE]);
        let outcome = catch_unwind(AssertUnwindSafe(|| read_everything(dir.path())));
        write_at(&file, offset, &original);
        match outcome {
            Err(_) => panic!("page {page}: a read panicked past the storage boundary"),
            Ok(Ok(())) => answered += 1,
            Ok(Err(Error::Corrupt { table, what })) => {
                assert!(!table.is_empty() && !what.is_empty());
                corrupt += 1;
            }
            Ok(Err(_)) => other += 1,
        }
    }
    eprintln!(
        "{pages} zeroed pages: {answered} answered, {corrupt} Error::Corrupt, {other} other errors, 0 panics"
    );
    assert!(
        corrupt > 0,
        "no page hit redb's panics: the test proves nothing"
    );
    // The untouched datadir still reads.
    read_everything(dir.path()).unwrap();
}
