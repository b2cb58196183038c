//! Small API behaviours: code by hash, block hashes, refused requests,
//! errors that say what and where.

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use strata_storage::{Account, Durability, Error, Options, ReadOnlyStateDb, Regime, StateDb};

use crate::model::small_options;

#[test]
fn code_is_found_by_hash_and_block_hashes_keep_a_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let code = Bytes::from_static(&[0x60, 0x01, 0x60, 0x00, 0x55]);
    let who = Address::with_last_byte(7);
    for number in 0..300u64 {
        let mut writer = db.begin_block(number).unwrap();
        writer.set_block_hash(keccak256(number.to_be_bytes()));
        if number == 3 {
            writer.put_code(who, code.0.clone());
            writer.put_account(
                who,
                &Account {
                    code_hash: keccak256(&code),
                    ..Account::default()
                },
            );
            assert_eq!(
                writer
                    .reader(Regime::Exec)
                    .code_by_hash(&keccak256(&code))
                    .unwrap(),
                Some(code.0.clone())
            );
        }
        writer.commit().unwrap();
    }
    let reader = db.reader(Regime::Exec);
    assert_eq!(
        reader.code_by_hash(&keccak256(&code)).unwrap(),
        Some(code.0.clone())
    );
    assert_eq!(reader.code_by_hash(&B256::ZERO).unwrap(), None);
    assert_eq!(
        reader.block_hash(299).unwrap(),
        Some(keccak256(299u64.to_be_bytes()))
    );
    assert_eq!(
        reader.block_hash(299 - 255).unwrap(),
        Some(keccak256(44u64.to_be_bytes()))
    );
    assert_eq!(
        reader.block_hash(299 - 256).unwrap(),
        None,
        "older than 256 blocks"
    );
}

#[test]
fn block_headers_travel_with_their_blocks_through_flush_reopen_followers_and_unwind() {
    let dir = tempfile::tempdir().unwrap();
    let shared = small_options().with_share_with_readers(true);
    let header = |number: u64| bytes::Bytes::from(format!("rlp header of block {number}"));
    let who = Address::with_last_byte(11);
    let db = StateDb::open(dir.path(), shared.clone()).unwrap();
    let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    for number in 0..300u64 {
        let mut writer = db.begin_block(number).unwrap();
        writer.set_block_hash(keccak256(number.to_be_bytes()));
        if number != 280 {
            writer.set_block_header(header(number));
        }
        writer.put_account(
            who,
            &Account {
                nonce: number,
                ..Account::default()
            },
        );
        writer.commit().unwrap();
        if number == 150 {
            db.flush().unwrap();
        }
    }
    let check = |reader: &strata_storage::StateReader, newest: u64| {
        assert_eq!(reader.block_header(newest).unwrap(), Some(header(newest)));
        assert_eq!(
            reader.block_header(newest - 255).unwrap(),
            Some(header(newest - 255))
        );
        assert_eq!(
            reader.block_header(newest - 256).unwrap(),
            None,
            "outside the window"
        );
        assert_eq!(reader.block_header(newest + 1).unwrap(), None, "not yet");
    };
    // Flushed (block 150) and in the memory tier (299).
    check(&db.reader(Regime::Exec), 299);
    assert_eq!(
        db.reader(Regime::Exec).block_header(150).unwrap(),
        Some(header(150))
    );
    // A block committed without a header has none.
    assert_eq!(db.reader(Regime::Exec).block_header(280).unwrap(), None);
    // At an older block: its own header, none of the blocks after it (the
    // window's far end stays the head's, as for block hashes).
    let early = db.reader_at(295, Regime::Exec).unwrap();
    assert_eq!(early.block_header(295).unwrap(), Some(header(295)));
    assert_eq!(early.block_header(296).unwrap(), None);
    // Another process's handle reads them from the journal and from redb.
    check(&wait_for_block(&follower, 299), 299);
    drop(follower);

    // An unwind takes the headers of the blocks it undoes with it, and
    // keeps the whole window below the block it returns to (hashes too:
    // the next block's BLOCKHASH reaches 256 blocks back).
    db.unwind_to(295).unwrap();
    let reader = db.reader(Regime::Exec);
    check(&reader, 295);
    assert_eq!(reader.block_header(296).unwrap(), None);
    assert_eq!(
        reader.block_hash(295 - 255).unwrap(),
        Some(keccak256((295u64 - 255).to_be_bytes()))
    );
    db.close().unwrap();

    // Reopened: the journal's records and redb give them back.
    let db = StateDb::open(dir.path(), shared).unwrap();
    check(&db.reader(Regime::Exec), 295);
    let mut writer = db.begin_block(296).unwrap();
    writer.set_block_header(header(296));
    writer.commit().unwrap();
    check(&db.reader(Regime::Exec), 296);
}

#[test]
fn the_chain_configuration_is_recorded_for_later_processes() {
    let dir = tempfile::tempdir().unwrap();
    let shared = small_options().with_share_with_readers(true);
    let db = StateDb::open(dir.path(), shared.clone()).unwrap();
    assert_eq!(db.chain_config().unwrap(), None);
    db.set_chain_config(br#"{"chainId":1}"#).unwrap();
    db.set_chain_config(br#"{"chainId":7}"#).unwrap();
    let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_eq!(
        follower.chain_config().unwrap().as_deref(),
        Some(&br#"{"chainId":7}"#[..])
    );
    db.close().unwrap();
    let db = StateDb::open(dir.path(), shared).unwrap();
    assert_eq!(
        db.chain_config().unwrap().as_deref(),
        Some(&br#"{"chainId":7}"#[..])
    );
}

#[test]
fn refused_requests_name_the_problem_and_leave_the_store_usable() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let err = db.begin_block(5).err().unwrap();
    assert!(
        matches!(
            err,
            Error::BlockOutOfOrder {
                expected: 0,
                found: 5
            }
        ),
        "{err}"
    );
    db.begin_block(0).unwrap().commit().unwrap();
    let err = db.unwind_to(7).unwrap_err();
    assert!(
        err.to_string().contains("cannot unwind to block 7"),
        "{err}"
    );
    let err = db
        .init_genesis(&Default::default(), strata_storage::GenesisName::Unnamed)
        .unwrap_err();
    assert!(matches!(err, Error::GenesisExists { last: 0 }), "{err}");
    // None of that poisoned the store.
    let mut writer = db.begin_block(1).unwrap();
    writer.put_account(Address::ZERO, &Default::default());
    writer.put_storage(Address::ZERO, B256::ZERO, U256::from(1));
    writer.commit().unwrap();
}

#[test]
fn a_second_open_of_the_same_datadir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _db = StateDb::open(dir.path(), small_options()).unwrap();
    let err = StateDb::open(dir.path(), small_options()).err().unwrap();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(err.to_string().contains("locked"), "{err}");
}

#[test]
fn an_unusable_datadir_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let err = StateDb::open(&file, small_options()).err().unwrap();
    assert!(err.to_string().contains("not-a-dir"), "{err}");
}

#[test]
fn verify_reports_a_damaged_file_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    for number in 0..12u64 {
        commit_nonce(&db, number, Address::with_last_byte(number as u8));
    }
    db.compact().unwrap();
    let clean = db.verify(&Default::default()).unwrap();
    assert!(clean.is_ok(), "{:?}", clean.problems);
    assert!(clean.files_checked > 0);
    assert_eq!(clean.computed_root, db.root());

    let victim = std::fs::read_dir(dir.path().join(strata_storage::FILES_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("account"))
        .expect("an account file");
    let mut bytes = std::fs::read(&victim).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0x40;
    std::fs::write(&victim, &bytes).unwrap();
    let damaged = db.verify(&Default::default()).unwrap();
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        damaged.problems.iter().any(|p| p.contains(&name)),
        "{:?}",
        damaged.problems
    );
}

#[test]
fn read_only_opens_are_refused_with_the_reason() {
    // No datadir at all.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let err = ReadOnlyStateDb::open(&missing, Options::default())
        .err()
        .expect("no datadir");
    assert!(matches!(err, Error::NotADatadir { .. }), "{err}");
    assert!(!missing.exists(), "a read-only open created the datadir");

    // A writer that keeps the datadir to itself.
    let exclusive = StateDb::open(dir.path(), Options::default()).unwrap();
    let err = ReadOnlyStateDb::open(dir.path(), Options::default())
        .err()
        .expect("exclusive writer");
    assert!(matches!(err, Error::NotShared { .. }), "{err}");
    assert!(err.to_string().contains("share_with_readers"), "{err}");
    drop(exclusive);

    // Sharing needs every commit durable.
    let err = StateDb::open(
        dir.path(),
        Options::default()
            .with_share_with_readers(true)
            .with_durability(Durability::EveryN(4)),
    )
    .err()
    .expect("EveryN with readers");
    assert!(matches!(err, Error::InvalidOptions(_)), "{err}");

    // A memory tier with no room, or less than one flush batch, would make
    // every commit wait for ever; a flush of zero keys per transaction
    // would never end.
    for (options, named) in [
        (
            Options::default()
                .with_memory_budget_bytes(0)
                .with_flush_batch_bytes(0),
            "memory_budget_bytes",
        ),
        (
            Options::default()
                .with_memory_budget_bytes(1 << 20)
                .with_flush_batch_bytes(2 << 20),
            "flush_batch_bytes",
        ),
        (Options::default().with_flush_txn_keys(0), "flush_txn_keys"),
    ] {
        let err = StateDb::open(dir.path(), options).err().expect(named);
        assert!(matches!(err, Error::InvalidOptions(_)), "{err}");
        assert!(err.to_string().contains(named), "{err}");
    }
}

#[test]
fn a_read_only_handle_opens_a_closed_datadir_and_sees_reopened_writers() {
    let dir = tempfile::tempdir().unwrap();
    let shared = small_options().with_share_with_readers(true);
    let who = Address::with_last_byte(9);
    let write = |db: &StateDb, number: u64| commit_nonce(db, number, who);
    let db = StateDb::open(dir.path(), shared.clone()).unwrap();
    write(&db, 0);
    drop(db);

    // No writer: the committed state is readable.
    let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_eq!(follower.last_block().unwrap(), Some(0));
    // A writer comes back while the handle stays open; its commits show.
    let db = StateDb::open(dir.path(), shared).unwrap();
    let info = write(&db, 1);
    let reader = wait_for_block(&follower, 1);
    assert_eq!(reader.root(), info.root);
    assert_eq!(reader.account(&who).unwrap().map(|a| a.nonce), Some(1));
}

/// The follower's reader once it shows `block` (it polls every millisecond).
fn wait_for_block(follower: &ReadOnlyStateDb, block: u64) -> strata_storage::StateReader {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let reader = follower.reader(Regime::Exec).unwrap();
        if reader.block() == Some(block) {
            return reader;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the handle never showed block {block} (at {:?})",
            reader.block()
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A file the follower cannot verify is an error naming it; readers keep
/// the last whole snapshot (never a manifest without its files).
#[test]
fn a_read_only_handle_reports_a_damaged_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let shared = small_options().with_share_with_readers(true);
    let db = StateDb::open(dir.path(), shared).unwrap();
    let write = |number: u64| commit_nonce(&db, number, Address::with_last_byte(number as u8));
    for number in 0..4u64 {
        write(number);
    }
    // The follower thread stays out of the way: this test refreshes by hand.
    let manual = Options::default().with_follow_interval(std::time::Duration::from_secs(3600));
    let follower = ReadOnlyStateDb::open(dir.path(), manual.clone()).unwrap();
    assert_eq!(follower.last_block().unwrap(), Some(3));
    let files_dir = dir.path().join(strata_storage::FILES_DIR);
    let listed = |dir: &std::path::Path| -> std::collections::BTreeSet<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| entries.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    let before = listed(&files_dir);
    for number in 4..12u64 {
        write(number);
    }
    db.compact().unwrap();
    let victim = listed(&files_dir)
        .difference(&before)
        .find(|p| p.to_string_lossy().contains("account"))
        .cloned()
        .expect("compaction wrote a new account file");
    let mut bytes = std::fs::read(&victim).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&victim, &bytes).unwrap();

    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    let error = follower.refresh().expect_err("a damaged file was accepted");
    assert!(matches!(error, Error::File(_)), "{error}");
    assert!(error.to_string().contains(&name), "{error}");
    let reader = follower.reader(Regime::Exec).unwrap();
    assert_eq!(reader.block(), Some(3));
    assert_eq!(
        reader
            .account(&Address::with_last_byte(3))
            .unwrap()
            .map(|a| a.nonce),
        Some(3)
    );
}

/// Commits block `number`, which sets the nonce of `who` to `number`.
fn commit_nonce(db: &StateDb, number: u64, who: Address) -> strata_storage::CommitInfo {
    let mut writer = db.begin_block(number).unwrap();
    writer.put_account(
        who,
        &Account {
            nonce: number,
            ..Account::default()
        },
    );
    writer.commit().unwrap()
}

/// A reorg to a sibling block with the same state root (the same writes)
/// still reaches the follower: it compares the head block's hash too.
#[test]
fn a_read_only_handle_sees_a_same_root_sibling_block() {
    let dir = tempfile::tempdir().unwrap();
    let shared = small_options().with_share_with_readers(true);
    let db = StateDb::open(dir.path(), shared).unwrap();
    let who = Address::with_last_byte(5);
    let block_one = |hash: B256| {
        let mut writer = db.begin_block(1).unwrap();
        writer.put_account(
            who,
            &Account {
                nonce: 1,
                ..Account::default()
            },
        );
        writer.set_block_hash(hash);
        writer.commit().unwrap().root
    };
    commit_nonce(&db, 0, who);
    let first = block_one(B256::repeat_byte(0xa1));
    let manual = Options::default().with_follow_interval(std::time::Duration::from_secs(3600));
    let follower = ReadOnlyStateDb::open(dir.path(), manual.clone()).unwrap();
    let hash_seen = || {
        follower
            .reader(Regime::Exec)
            .unwrap()
            .block_hash(1)
            .unwrap()
    };
    assert_eq!(hash_seen(), Some(B256::repeat_byte(0xa1)));

    db.unwind_to(0).unwrap();
    let second = block_one(B256::repeat_byte(0xb2));
    assert_eq!(first, second, "the sibling has the same state root");
    assert_eq!(follower.refresh().unwrap(), Some(1));
    assert_eq!(hash_seen(), Some(B256::repeat_byte(0xb2)));
}

/// A reader at a recent block shows that block: its state, its root, only
/// the block hashes up to it; outside the window the error names the
/// blocks that can be read.
#[test]
fn a_reader_at_a_recent_block_sees_that_block_whole() {
    let dir = tempfile::tempdir().unwrap();
    let options = small_options().with_unwind_depth(3);
    let db = StateDb::open(dir.path(), options.clone()).unwrap();
    let who = Address::with_last_byte(9);
    let mut roots = Vec::new();
    for number in 0..=6u64 {
        let mut writer = db.begin_block(number).unwrap();
        writer.put_account(
            who,
            &Account {
                nonce: number,
                ..Account::default()
            },
        );
        writer.set_block_hash(B256::with_last_byte(number as u8 + 1));
        roots.push(writer.commit().unwrap().root);
        if number == 4 {
            db.flush().unwrap();
        }
    }
    for block in 3..=6u64 {
        let reader = db.reader_at(block, Regime::Exec).unwrap();
        assert_eq!(reader.block(), Some(block));
        assert_eq!(reader.root(), roots[block as usize]);
        assert_eq!(reader.account(&who).unwrap().unwrap().nonce, block);
        assert_eq!(
            reader.block_hash(block).unwrap(),
            Some(B256::with_last_byte(block as u8 + 1))
        );
        assert_eq!(reader.block_hash(block + 1).unwrap(), None, "a later hash");
    }
    for block in [2, 7] {
        let err = db.reader_at(block, Regime::Exec).err().unwrap();
        assert!(matches!(err, Error::StateNotRetained { .. }), "{err}");
        assert!(err.to_string().contains("blocks 3..=6"), "{err}");
    }
    // Proofs: at the last block, not at an older one.
    let reader = db.reader_at(4, Regime::Exec).unwrap();
    let err = reader.proof(&who, &[]).err().unwrap();
    assert!(matches!(err, Error::ProofUnavailable(_)), "{err}");
    assert!(db.latest().proof(&who, &[]).unwrap().account.is_some());

    // After a reopen the window is read back from the journal.
    drop(db);
    let db = StateDb::open(dir.path(), options.clone()).unwrap();
    let reader = db.reader_at(3, Regime::Exec).unwrap();
    assert_eq!(reader.account(&who).unwrap().unwrap().nonce, 3);
    assert_eq!(reader.root(), roots[3]);
    assert_eq!(db.stats().unwrap().memory.history_blocks, 4);

    // A read-only handle reads the same blocks back from the journal.
    drop(db);
    let follower = ReadOnlyStateDb::open(dir.path(), options).unwrap();
    for block in 3..=6u64 {
        let reader = follower.reader_at(block, Regime::Exec).unwrap();
        assert_eq!(reader.account(&who).unwrap().unwrap().nonce, block);
        assert_eq!(reader.root(), roots[block as usize]);
    }
    let err = follower.reader_at(2, Regime::Exec).err().unwrap();
    assert!(err.to_string().contains("blocks 3..=6"), "{err}");
    assert!(matches!(err, Error::StateNotRetained { .. }), "{err}");
}

/// `catch_up` shows every block the writer committed before the call,
/// without the follower thread: across journal segments, and after an
/// unwind that rewrote the newest segment to the same length.
#[test]
fn a_read_only_handle_catches_up_with_every_committed_block() {
    let dir = tempfile::tempdir().unwrap();
    let shared = small_options().with_share_with_readers(true);
    let db = StateDb::open(dir.path(), shared).unwrap();
    let who = Address::with_last_byte(9);
    commit_nonce(&db, 0, who);
    let manual = Options::default().with_follow_interval(std::time::Duration::from_secs(3600));
    let follower = ReadOnlyStateDb::open(dir.path(), manual).unwrap();
    assert_eq!(follower.catch_up().unwrap(), Some(0));
    let segments = || {
        std::fs::read_dir(dir.path().join("journal"))
            .unwrap()
            .count()
    };
    let first_segments = segments();
    for number in 1..40u64 {
        commit_nonce(&db, number, Address::with_last_byte(number as u8));
        assert_eq!(
            follower.last_block().unwrap(),
            Some(number - 1),
            "not followed yet"
        );
        assert_eq!(follower.catch_up().unwrap(), Some(number));
        assert_eq!(follower.root().unwrap(), db.root());
        // Nothing new: the snapshot stays.
        assert_eq!(follower.catch_up().unwrap(), Some(number));
    }
    assert!(segments() > first_segments, "the journal rolled over");

    // An unwind and a sibling block with the same writes: a frame of the
    // same length in the rewritten segment.
    let sibling = |hash: B256| {
        let mut writer = db.begin_block(39).unwrap();
        writer.put_account(
            Address::with_last_byte(39),
            &Account {
                nonce: 39,
                ..Account::default()
            },
        );
        writer.set_block_hash(hash);
        writer.commit().unwrap();
    };
    db.unwind_to(38).unwrap();
    sibling(B256::repeat_byte(0xa1));
    assert_eq!(follower.catch_up().unwrap(), Some(39));
    let hash_seen = || {
        follower
            .reader(Regime::Exec)
            .unwrap()
            .block_hash(39)
            .unwrap()
    };
    assert_eq!(hash_seen(), Some(B256::repeat_byte(0xa1)));
    db.unwind_to(38).unwrap();
    sibling(B256::repeat_byte(0xb2));
    assert_eq!(follower.catch_up().unwrap(), Some(39));
    assert_eq!(hash_seen(), Some(B256::repeat_byte(0xb2)));
}

/// One read path over either store: [`strata_storage::StateRead`] gives the
/// writer and a follower in another handle the same answers at the head
/// and at an older block of the window.
#[test]
fn the_writer_and_a_follower_answer_through_one_read_trait() {
    use strata_storage::StateRead;

    /// What a client asks, over any store.
    fn ask(
        store: &impl StateRead,
        address: &Address,
    ) -> (Option<u64>, B256, Vec<Option<u64>>, B256) {
        let head = store.last_block().unwrap();
        let nonces = (0..=head.unwrap())
            .map(|block| {
                let reader = store.reader_at(block, Regime::Exec).unwrap();
                reader.account(address).unwrap().map(|a| a.nonce)
            })
            .collect();
        let proof = store.proof_at(head.unwrap() - 1, address, &[]).unwrap();
        (head, store.root().unwrap(), nonces, proof.storage_root)
    }

    let dir = tempfile::tempdir().unwrap();
    let options = Options::default().with_share_with_readers(true);
    let db = StateDb::open(dir.path(), options).unwrap();
    let address = Address::repeat_byte(0x42);
    for block in 0..4u64 {
        let mut writer = db.begin_block(block).unwrap();
        let account = Account {
            nonce: block + 1,
            ..Account::default()
        };
        writer.put_account(address, &account);
        writer.put_storage(
            address,
            B256::with_last_byte(block as u8),
            U256::from(block + 7),
        );
        writer.commit().unwrap();
    }
    let follower = ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    let from_writer = ask(&db, &address);
    assert_eq!(from_writer.0, Some(3));
    assert_eq!(from_writer.2, vec![Some(1), Some(2), Some(3), Some(4)]);
    assert_eq!(ask(&follower, &address), from_writer);
}

/// `request_flush` returns at once and the background flusher moves every
/// committed block into redb; with background maintenance off it flushes
/// before it returns.
#[test]
fn a_requested_flush_moves_every_committed_block_down() {
    for background in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        // Batches far larger than these blocks: nothing flushes by itself.
        let options = Options::default().with_background_maintenance(background);
        let db = StateDb::open(dir.path(), options).unwrap();
        for number in 0..20u64 {
            let mut writer = db.begin_block(number).unwrap();
            writer.put_account(
                Address::with_last_byte(number as u8),
                &Account {
                    nonce: number,
                    ..Account::default()
                },
            );
            writer.commit().unwrap();
        }
        let before = db.flush_stats().blocks;
        assert_eq!(before, 0, "a flush before the request");
        db.request_flush().unwrap();
        let started = std::time::Instant::now();
        while db.flush_stats().blocks < 20 {
            assert!(
                background && started.elapsed() < std::time::Duration::from_secs(30),
                "{} of 20 blocks flushed (background {background})",
                db.flush_stats().blocks
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(db.flush().unwrap(), 0, "nothing left to flush");
    }
}
