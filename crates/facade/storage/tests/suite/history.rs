//! History (`Options::history`): a datadir that keeps it answers reads and
//! proofs at every kept block — through the history files below redb's head,
//! through the memory's undo data above — exactly as the model had the
//! state then, across flushes, collation into files, reopens, crashes and
//! unwinds; the retention is fixed at creation and bounds what is read.

use alloy_primitives::{Address, B256};
use proptest::prelude::*;
use strata_storage::{Error, HistoryRetention, Options, Regime, StateDb};

use crate::model::{
    ADDRESSES, SLOTS, Write, address, apply, commit_next_block, slot, small_options, write,
};
use crate::oracle::{Model, assert_proofs_match, assert_reads_match, model_root};

#[derive(Clone, Debug)]
enum Step {
    Block(Vec<Write>),
    Compact,
    Flush,
    Reopen,
    Crash,
    Unwind(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => prop::collection::vec(write(), 1..6).prop_map(Step::Block),
        1 => Just(Step::Compact),
        1 => Just(Step::Flush),
        1 => Just(Step::Reopen),
        1 => Just(Step::Crash),
        1 => (1..4u64).prop_map(Step::Unwind),
    ]
}

fn options(retention: HistoryRetention) -> Options {
    // An unwind window of 2 blocks: most reads go through the history.
    small_options()
        .with_unwind_depth(2)
        .with_history(Some(retention))
}

/// Reads and proofs at `block` equal the model's state after it.
fn assert_at(db: &StateDb, block: u64, then: &Model, context: &str) {
    let context = format!("{context}: at block {block}");
    let reader = db
        .reader_at(block, Regime::Exec)
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    assert_eq!(reader.block(), Some(block), "{context}");
    assert_eq!(reader.root(), model_root(then), "{context}: root");
    let addresses: Vec<Address> = (0..ADDRESSES).map(address).collect();
    let slots: Vec<B256> = (0..SLOTS).map(slot).collect();
    assert_reads_match(&reader, then, &addresses, &slots, &context);
    let prove = |a: &Address, s: &[B256]| db.proof_at(block, a, s);
    assert_proofs_match(&prove, then, &addresses, &slots, &context);
    assert_ranges_match(&reader, then, &context);
}

/// Range reads (`debug_accountRange`, `debug_storageRangeAt`) at the
/// reader's block list the model's accounts and non-zero slots then.
fn assert_ranges_match(reader: &strata_storage::StateReader, then: &Model, context: &str) {
    let accounts = reader
        .accounts(&Address::ZERO, usize::MAX)
        .unwrap_or_else(|e| panic!("{context}: accounts: {e}"));
    let expected: Vec<_> = then.iter().map(|(a, e)| (*a, e.account)).collect();
    assert_eq!(accounts, expected, "{context}: accounts");
    // From the second account on, two at a time: the start and the limit.
    if let Some((second, _)) = then.iter().nth(1) {
        let page = reader.accounts(second, 2).unwrap();
        assert_eq!(
            page,
            expected[1..expected.len().min(3)],
            "{context}: a page"
        );
    }
    for (address, entry) in then {
        let slots = reader
            .storage_range(address, &B256::ZERO, usize::MAX)
            .unwrap_or_else(|e| panic!("{context}: storage of {address}: {e}"));
        let expected: Vec<_> = entry
            .storage
            .iter()
            .filter(|(_, v)| !v.is_zero())
            .map(|(s, v)| (*s, *v))
            .collect();
        assert_eq!(slots, expected, "{context}: storage of {address}");
    }
}

fn assert_every_block(db: &StateDb, states: &[Model], context: &str) {
    for (block, then) in states.iter().enumerate() {
        assert_at(db, block as u64, then, context);
    }
}

fn run(steps: Vec<Step>) {
    let dir = tempfile::tempdir().unwrap();
    let open = || StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    let mut db = open();
    // states[i] is the model after block i.
    let mut states: Vec<Model> = Vec::new();
    let mut model = Model::new();
    db.begin_block(0).unwrap().commit().unwrap();
    states.push(model.clone());
    for (i, step) in steps.into_iter().enumerate() {
        let context = format!("step {i} ({step:?})");
        match step {
            Step::Block(writes) => {
                commit_next_block(&db, &mut model, &writes);
                states.push(model.clone());
            }
            Step::Compact => {
                db.compact().unwrap();
            }
            Step::Flush => {
                db.flush().unwrap();
            }
            Step::Reopen => {
                drop(db);
                db = open();
            }
            Step::Crash => {
                db.abandon();
                db = open();
            }
            Step::Unwind(back) => {
                let last = db.last_block().unwrap();
                let oldest = db.oldest_unwindable().unwrap().unwrap();
                let target = last.saturating_sub(back).max(oldest);
                db.unwind_to(target).unwrap();
                states.truncate(target as usize + 1);
                model = states.last().unwrap().clone();
            }
        }
        let last = db.last_block().unwrap();
        if last >= 3 {
            // A block well below the unwind window, and the one below redb's head.
            assert_at(&db, last / 2, &states[last as usize / 2], &context);
        }
    }
    assert_every_block(&db, &states, "after the steps");
    db.compact().unwrap();
    assert_every_block(&db, &states, "after a compaction");
    drop(db);
    let db = open();
    assert_every_block(&db, &states, "after a reopen");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_kept_block_reads_and_proves_as_it_was(
        steps in prop::collection::vec(step(), 8..40)
    ) {
        run(steps);
    }
}

/// A fixed chain of 40 blocks, flushed every few: reads at every block.
#[test]
fn a_full_history_serves_every_block_of_a_long_chain() {
    let steps: Vec<Step> = (0..40u8)
        .flat_map(|i| {
            let writes = vec![
                Write::Account {
                    who: usize::from(i) % ADDRESSES,
                    nonce: u64::from(i),
                    balance: u64::from(i) * 7,
                },
                Write::Slot {
                    who: usize::from(i * 3) % ADDRESSES,
                    slot: usize::from(i) % SLOTS,
                    value: u64::from(i % 4),
                },
            ];
            let mut steps = vec![Step::Block(writes)];
            if i % 7 == 6 {
                steps.push(Step::Flush);
            }
            if i % 13 == 12 {
                steps.push(Step::Compact);
            }
            if i == 20 {
                steps.push(Step::Block(vec![Write::Delete { who: 2 }]));
            }
            steps
        })
        .collect();
    run(steps);
}

/// Commits blocks `0..blocks` (each but the first an account and a slot
/// written), flushing after those `flush_after` names; the model after
/// each.
fn commit_chain(db: &StateDb, blocks: u64, flush_after: impl Fn(u64) -> bool) -> Vec<Model> {
    let mut model = Model::new();
    let mut states = Vec::new();
    for block in 0..blocks {
        let mut writer = db.begin_block(block).unwrap();
        if block > 0 {
            let who = block as usize % ADDRESSES;
            let account = Write::Account {
                who,
                nonce: block,
                balance: block * 3,
            };
            let slot = Write::Slot {
                who: (who + 3) % ADDRESSES,
                slot: block as usize % SLOTS,
                value: block % 3,
            };
            apply(&mut writer, &mut model, &account);
            apply(&mut writer, &mut model, &slot);
        }
        writer.commit().unwrap();
        states.push(model.clone());
        if flush_after(block) {
            db.flush().unwrap();
        }
    }
    states
}

/// A retention of N blocks keeps N blocks below the last one; older
/// blocks are refused naming the range. The retention is the datadir's:
/// an open asking for another is refused, one that does not say opens it.
#[test]
fn a_retention_bounds_the_blocks_read_and_is_fixed_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Blocks(10))).unwrap();
    let states = commit_chain(&db, 30, |block| block % 4 == 3);
    db.flush().unwrap();
    for block in 20..30u64 {
        assert_at(&db, block, &states[block as usize], "retention 10");
    }
    match db.reader_at(19, Regime::Exec) {
        Err(Error::StateNotRetained { oldest, last, .. }) => assert_eq!((oldest, last), (20, 29)),
        other => panic!("block 19 outside a retention of 10: {other:?}"),
    }
    drop(db);
    let refused = StateDb::open(dir.path(), options(HistoryRetention::Full)).err();
    assert!(
        matches!(
            refused,
            Some(Error::HistoryRetentionMismatch {
                recorded: HistoryRetention::Blocks(10),
                requested: HistoryRetention::Full,
                ..
            })
        ),
        "{refused:?}"
    );
    let db = StateDb::open(dir.path(), small_options().with_unwind_depth(2)).unwrap();
    assert_at(&db, 22, &states[22], "reopened without a setting");
}

/// The history files' names in the datadir's history folder, sorted.
fn history_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(strata_storage::HISTORY_DIR))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The history files a datadir's stats count, over all domains.
fn counted_files(db: &StateDb) -> u64 {
    let stats = db.history_stats().unwrap().expect("history kept");
    stats.domains.iter().map(|d| d.files).sum()
}

/// Each flush adds a history file per domain; maintenance merges those
/// no unwind can reach, so a long chain keeps a few files per domain
/// (spans growing toward the past), every block still read as it was,
/// and no file the manifest no longer lists stays on disk.
#[test]
fn flushes_add_history_files_that_maintenance_merges() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    let states = commit_chain(&db, 97, |block| block % 3 == 2);
    db.flush().unwrap();
    let flushes = 97 / 3 + 1;
    let before = counted_files(&db);
    assert!(before > 0);
    db.compact().unwrap();
    let after = counted_files(&db);
    assert!(
        after < before && after <= 4 * 8,
        "{before} files before maintenance, {after} after ({flushes} flushes)"
    );
    assert_eq!(history_files(dir.path()).len() as u64, after);
    assert_every_block(&db, &states, "after merging history files");
    drop(db);
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    assert_every_block(&db, &states, "reopened");
}

/// A retention of N blocks drops whole history files once every block
/// they hold is at or below the oldest kept block (and deletes them).
#[test]
fn a_retention_drops_whole_history_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Blocks(10))).unwrap();
    let states = commit_chain(&db, 80, |block| block % 4 == 3);
    db.flush().unwrap();
    let names = history_files(dir.path());
    assert_eq!(names.len() as u64, counted_files(&db));
    for name in &names {
        // `domain-FROM-TO.sst`: every file holds a block after 70, the
        // oldest block a retention of 10 keeps below block 79 (a read at
        // 70 needs the changes after it).
        let to: u64 = name
            .trim_end_matches(".sst")
            .rsplit('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(to > 71, "{name} is older than the retention: {names:?}");
    }
    for block in 70..80u64 {
        assert_at(&db, block, &states[block as usize], "retention 10");
    }
}

/// An unwind into flushed blocks rewrites the history files that hold
/// the unwound blocks' changes without them: blocks committed again in
/// their place read as the new ones, the older blocks as before.
#[test]
fn an_unwind_rewrites_the_unwound_blocks_history_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    // One flush of blocks 0..=9: one history file per domain holds 8 and 9.
    let mut states = commit_chain(&db, 10, |block| block == 9);
    let before = history_files(dir.path());
    db.unwind_to(7).unwrap();
    let after = history_files(dir.path());
    assert_ne!(
        before, after,
        "the files holding blocks 8 and 9 are rewritten"
    );
    assert!(
        after.iter().all(|name| name.ends_with("-0000000008.sst")),
        "every file now ends at block 7: {after:?}"
    );
    states.truncate(8);
    let mut model = states.last().unwrap().clone();
    for i in 0..4u64 {
        let writes = [Write::Account {
            who: (i as usize + 1) % ADDRESSES,
            nonce: 1_000 + i,
            balance: 77 + i,
        }];
        commit_next_block(&db, &mut model, &writes);
        states.push(model.clone());
    }
    db.flush().unwrap();
    assert_every_block(&db, &states, "after the unwind and new blocks");
    drop(db);
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    assert_every_block(&db, &states, "reopened");
}

/// Rewrites a closed datadir's history files into redb's tables of the
/// first history build (what a datadir that build wrote holds: whole
/// values, each read back at the block before its change) and lists no
/// history file any more.
fn into_the_first_layout(dir: &std::path::Path) {
    use redb::{ReadableDatabase, TableDefinition};
    use strata_storage::files::{FileValue, OsFileSystem, SortedFile};
    // (domain, entry key, the whole value before its block) of every entry.
    let mut legacy: Vec<(usize, Vec<u8>, Option<bytes::Bytes>)> = Vec::new();
    let history = dir.join(strata_storage::HISTORY_DIR);
    {
        let db = StateDb::open(dir, options(HistoryRetention::Full)).unwrap();
        for (domain, name) in history_files(dir).iter().map(|name| {
            let domain = strata_storage::Domain::ALL
                .iter()
                .position(|d| name.starts_with(&format!("{}-", d.name())))
                .unwrap();
            (domain, name)
        }) {
            let opened = SortedFile::open(&OsFileSystem, &history.join(name)).unwrap();
            for entry in opened.iter() {
                let (raw, value) = entry.unwrap();
                let (len_and_key, block) = raw.split_at(raw.len() - 8);
                let number = u64::from_be_bytes(block.try_into().unwrap());
                // Nothing is before block 0.
                let whole = number.checked_sub(1).and_then(|before| {
                    db.reader_at(before, Regime::Exec)
                        .unwrap()
                        .get_latest(strata_storage::Domain::ALL[domain], &len_and_key[2..])
                        .unwrap()
                });
                assert_eq!(whole.is_none(), matches!(value, FileValue::Tombstone));
                legacy.push((domain, raw.to_vec(), whole));
            }
        }
    }
    let index_table: TableDefinition<&[u8], &[u8]> = TableDefinition::new("history_index");
    let changes_table: TableDefinition<&[u8], &[u8]> = TableDefinition::new("history_changes");
    let meta_table: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
    let redb = redb::Database::open(dir.join(strata_storage::DB_FILE)).unwrap();
    let mut manifest: serde_json::Value = {
        let read = redb.begin_read().unwrap();
        let meta = read.open_table(meta_table).unwrap();
        serde_json::from_slice(meta.get("manifest").unwrap().unwrap().value()).unwrap()
    };
    let txn = redb.begin_write().unwrap();
    {
        let mut index = txn.open_table(index_table).unwrap();
        let mut changes = txn.open_table(changes_table).unwrap();
        for (domain, raw, whole) in &legacy {
            let (len_and_key, block) = raw.split_at(raw.len() - 8);
            let key = &len_and_key[2..];
            let previous = match whole {
                Some(v) => [&[1u8][..], v].concat(),
                None => vec![0],
            };
            let index_key = [&[*domain as u8][..], raw].concat();
            let change_key = [block, &[*domain as u8][..], key].concat();
            let (inline, changed) = if *domain == 3 {
                (Vec::new(), previous)
            } else {
                (previous, Vec::new())
            };
            index
                .insert(index_key.as_slice(), inline.as_slice())
                .unwrap();
            changes
                .insert(change_key.as_slice(), changed.as_slice())
                .unwrap();
        }
        manifest.as_object_mut().unwrap().remove("history");
        let mut meta = txn.open_table(meta_table).unwrap();
        meta.insert(
            "manifest",
            serde_json::to_vec(&manifest).unwrap().as_slice(),
        )
        .unwrap();
    }
    txn.commit().unwrap();
    for name in history_files(dir) {
        std::fs::remove_file(history.join(name)).unwrap();
    }
}

/// A datadir whose history an earlier build kept in redb's tables: a
/// reader in another process refuses reads through it (never the value of
/// another block), and a writer's open moves it into history files,
/// after which every block reads as it was.
#[test]
fn history_kept_in_redb_by_an_earlier_build_moves_into_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    let states = commit_chain(&db, 30, |block| block % 6 == 5);
    db.flush().unwrap();
    drop(db);
    into_the_first_layout(dir.path());
    assert!(history_files(dir.path()).is_empty());
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    match follower.reader_at(5, Regime::Exec) {
        Err(Error::LegacyHistory) => {}
        Err(other) => panic!("block 5 through the first layout: {other}"),
        Ok(reader) => panic!(
            "block 5 read through the first layout (root {})",
            reader.root()
        ),
    }
    drop(follower);
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    assert!(!history_files(dir.path()).is_empty(), "moved into files");
    assert_every_block(&db, &states, "after the move");
    drop(db);
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    let reader = follower.reader_at(5, Regime::Exec).unwrap();
    assert_eq!(reader.root(), model_root(&states[5]));
}

/// Without history a datadir reads the unwind window only, as before.
#[test]
fn without_history_only_the_unwind_window_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options().with_unwind_depth(2)).unwrap();
    for block in 0..10u64 {
        db.begin_block(block).unwrap().commit().unwrap();
        db.flush().unwrap();
    }
    assert!(db.reader_at(8, Regime::Exec).is_ok());
    assert!(matches!(
        db.reader_at(3, Regime::Exec),
        Err(Error::StateNotRetained { oldest: 7, .. })
    ));
}

/// A reader in another process (`ReadOnlyStateDb`, what `strata serve`
/// opens) reads and proves every kept block as the writer does: below
/// redb's head through the history, above it from the journal.
#[test]
fn a_follower_reads_every_kept_block_through_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(
        dir.path(),
        options(HistoryRetention::Full).with_share_with_readers(true),
    )
    .unwrap();
    let states = commit_chain(&db, 24, |block| block == 15);
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_eq!(follower.last_block().unwrap(), Some(23));
    let addresses: Vec<Address> = (0..ADDRESSES).map(address).collect();
    let slots: Vec<B256> = (0..SLOTS).map(slot).collect();
    for (block, then) in states.iter().enumerate().take(23) {
        let block = block as u64;
        let context = format!("follower at block {block}");
        let reader = follower
            .reader_at(block, Regime::Exec)
            .unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(reader.root(), model_root(then), "{context}");
        assert_reads_match(&reader, then, &addresses, &slots, &context);
        let prove = |a: &Address, s: &[B256]| follower.proof_at(block, a, s);
        assert_proofs_match(&prove, then, &addresses, &slots, &context);
    }
}

/// `verify` checks the history files: clean after a chain, and a history
/// file with a byte changed is a problem that names it.
#[test]
fn verify_checks_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), options(HistoryRetention::Full)).unwrap();
    commit_chain(&db, 20, |block| block % 5 == 4);
    db.flush().unwrap();
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(report.history_checked > 0, "{report:?}");
    // Blocks 0..=19 flushed with history from block 0: block 9's root
    // derived again from the history's values.
    assert_eq!(report.history_rebuilt, Some(9), "{report:?}");
    drop(db);
    let history = dir.path().join(strata_storage::HISTORY_DIR);
    let mut files: Vec<_> = std::fs::read_dir(&history)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "a flushed chain leaves history files");
    let victim = &files[0];
    let mut bytes = std::fs::read(victim).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(victim, bytes).unwrap();
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    let report =
        strata_storage::verify_datadir(dir.path(), &Options::default(), &Default::default())
            .unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains(&name)),
        "{name}: {:?}",
        report.problems
    );
}

/// A datadir that keeps history finds a block by its hash among every
/// kept block (what `strata serve` resolves a `blockHash` parameter by),
/// not only the last 256; an unwind forgets the unwound blocks' hashes.
#[test]
fn every_kept_block_is_found_by_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(
        dir.path(),
        options(HistoryRetention::Full).with_share_with_readers(true),
    )
    .unwrap();
    let hash = |block: u64| B256::from(alloy_primitives::U256::from(block + 1_000));
    for block in 0..300u64 {
        let mut writer = db.begin_block(block).unwrap();
        writer.set_block_hash(hash(block));
        writer.commit().unwrap();
        if block % 50 == 49 {
            db.flush().unwrap();
        }
    }
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    for block in [0, 5, 43, 250, 299] {
        assert_eq!(follower.block_number(&hash(block)).unwrap(), Some(block));
    }
    assert_eq!(follower.block_number(&hash(300)).unwrap(), None);
    drop(follower);
    db.unwind_to(298).unwrap();
    let follower = strata_storage::ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap();
    assert_eq!(follower.block_number(&hash(299)).unwrap(), None);
    assert_eq!(follower.block_number(&hash(298)).unwrap(), Some(298));
}
