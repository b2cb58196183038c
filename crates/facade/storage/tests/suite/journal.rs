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
    small_options()
        .with_flush_batch_bytes(u64::MAX)
        .with_memory_budget_bytes(u64::MAX)
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
    let report = db.verify(&Default::default()).unwrap();
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
    let report = db.verify(&Default::default()).unwrap();
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
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// Commits `block` with writes that depend on `salt` (another chain's block
/// of the same number when `salt` differs).
fn commit_salted(db: &StateDb, block: u64, salt: u64) -> B256 {
    let mut writer = db.begin_block(block).unwrap();
    writer.put_account(
        who(block),
        &Account {
            nonce: block + 1 + salt * 1000,
            ..Account::default()
        },
    );
    writer.commit().unwrap().root
}

/// Every file of the journal folder with its bytes.
fn journal_files(datadir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    segments(datadir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Where each frame of a segment (format 2) starts, read from the headers.
fn frame_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 48;
    while at + 24 <= bytes.len() {
        starts.push(at);
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        at += 24 + 64 + len + 8;
    }
    starts
}

fn open_error(datadir: &Path, options: Options) -> Error {
    match StateDb::open(datadir, options) {
        Err(error) => error,
        Ok(_) => panic!("the datadir opened"),
    }
}

#[test]
fn a_flipped_length_in_a_middle_frame_is_refused_by_every_open_and_nothing_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let options = unflushed_options().with_journal_segment_bytes(1 << 20);
    let db = StateDb::open(dir.path(), options.clone()).unwrap();
    for block in 0..6 {
        commit(&db, block);
    }
    db.abandon();
    let segment = segments(dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    let starts = frame_starts(&bytes);
    assert_eq!(starts.len(), 6);
    // B1: the high byte of block 3's payload length (lenflip.py).
    bytes[starts[3] + 7] ^= 1;
    std::fs::write(&segment, &bytes).unwrap();
    let before = journal_files(dir.path());

    let error = open_error(dir.path(), options.clone());
    let text = error.to_string();
    assert!(matches!(error, Error::Journal(_)), "{text}");
    let name = segment.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        text.contains(&name) && text.contains(&format!("offset {}", starts[3])),
        "{text}"
    );
    assert_eq!(
        journal_files(dir.path()),
        before,
        "a refused open changed the journal"
    );
    // A read-only open does not show the blocks before the damage as the head.
    let read_only =
        strata_storage::ReadOnlyStateDb::open(dir.path(), options).and_then(|db| db.last_block());
    assert!(read_only.is_err(), "read-only open: {read_only:?}");
    assert_eq!(journal_files(dir.path()), before);
}

#[test]
fn a_journal_that_ends_before_the_flushed_head_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    for block in 0..3 {
        commit(&db, block);
    }
    db.abandon();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    for block in 3..6 {
        commit(&db, block);
    }
    db.flush().unwrap();
    drop(db);
    let all = segments(dir.path());
    assert_eq!(all.len(), 2, "{all:?}");
    // The newest segment lost (a partial copy, a deleted file).
    std::fs::remove_file(&all[1]).unwrap();
    let before = journal_files(dir.path());
    let error = open_error(dir.path(), unflushed_options());
    let text = error.to_string();
    assert!(
        matches!(
            error,
            Error::JournalBehindHead {
                last: 2,
                head: 5,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("move the journal folder aside"), "{text}");
    // B2: nothing deleted.
    assert_eq!(journal_files(dir.path()), before);
}

#[test]
fn a_segment_of_another_datadir_is_refused_naming_both_identities() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (dir, salt) in [(&a, 0), (&b, 1)] {
        let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
        for block in 0..3 {
            commit_salted(&db, block, salt);
        }
        db.abandon();
        let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
        for block in 3..5 {
            commit_salted(&db, block, salt);
        }
        db.abandon();
    }
    // B4: the other chain's segment of blocks 3..5 over this one's.
    let theirs = segments(b.path()).pop().unwrap();
    let ours = segments(a.path()).pop().unwrap();
    assert_eq!(theirs.file_name(), ours.file_name());
    std::fs::copy(&theirs, &ours).unwrap();
    let error = open_error(a.path(), unflushed_options());
    let text = error.to_string();
    assert!(text.contains("belongs to datadir"), "{text}");
    let ids: Vec<&str> = text
        .split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 32)
        .collect();
    assert_eq!(ids.len(), 2, "{text}");
    assert_ne!(ids[0], ids[1], "{text}");
}

#[test]
fn a_clones_segment_whose_parent_root_does_not_chain_is_refused() {
    let a = tempfile::tempdir().unwrap();
    let db = StateDb::open(a.path(), unflushed_options()).unwrap();
    for block in 0..3 {
        commit(&db, block);
    }
    db.abandon();
    let b = tempfile::tempdir().unwrap();
    copy_tree(a.path(), b.path());
    // Two clones of one datadir go their own ways from block 3.
    for (dir, salt) in [(&a, 0), (&b, 1)] {
        let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
        for block in 3..5 {
            commit_salted(&db, block, salt);
        }
        db.abandon();
        let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
        commit_salted(&db, 5, salt);
        db.abandon();
    }
    let theirs = segments(b.path()).pop().unwrap();
    let ours = segments(a.path()).pop().unwrap();
    assert_eq!(theirs.file_name(), ours.file_name());
    std::fs::copy(&theirs, &ours).unwrap();
    let before = journal_files(a.path());
    let error = open_error(a.path(), unflushed_options());
    let text = error.to_string();
    assert!(text.contains("block 5 follows root"), "{text}");
    assert_eq!(journal_files(a.path()), before);
    // A read-only open refuses to serve the mixture too.
    let read_only = strata_storage::ReadOnlyStateDb::open(a.path(), unflushed_options())
        .and_then(|db| db.root());
    assert!(read_only.is_err(), "read-only open: {read_only:?}");
}

#[test]
fn a_torn_tail_is_kept_aside_and_a_reader_sees_the_block_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    let roots: Vec<B256> = (0..4).map(|b| commit(&db, b)).collect();
    db.abandon();
    let segment = segments(dir.path()).pop().unwrap();
    let bytes = std::fs::read(&segment).unwrap();
    let last = *frame_starts(&bytes).last().unwrap();
    // A power cut: the last frame half written, then the file system's zeros.
    let mut torn = bytes[..last + 40].to_vec();
    torn.extend_from_slice(&[0; 300]);
    std::fs::write(&segment, &torn).unwrap();
    // J05/J12: a reader accepts what a writer would repair.
    let reader = strata_storage::ReadOnlyStateDb::open(dir.path(), unflushed_options()).unwrap();
    assert_eq!(reader.last_block().unwrap(), Some(2));
    assert_eq!(reader.root().unwrap(), roots[2]);
    drop(reader);
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    assert_at(&db, 2, roots[2], "after the cut");
    drop(db);
    let kept = dir.path().join(JOURNAL_DIR).join(format!(
        "{}.torn-{last}",
        segment.file_name().unwrap().to_string_lossy()
    ));
    assert_eq!(std::fs::read(&kept).unwrap(), torn[last..].to_vec());
    assert_eq!(std::fs::read(&segment).unwrap(), bytes[..last].to_vec());
}

/// A segment of this format rewritten in the first journal format (no
/// segment header; `magic "SJR1" | len | block | payload | xxh3(block ‖ payload)`),
/// as an earlier release wrote it.
fn in_first_format(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for start in frame_starts(bytes) {
        let len = u32::from_le_bytes(bytes[start + 4..start + 8].try_into().unwrap()) as usize;
        let block = &bytes[start + 8..start + 16];
        let payload = &bytes[start + 24 + 64..start + 24 + 64 + len];
        let mut frame = Vec::new();
        frame.extend_from_slice(b"SJR1");
        frame.extend_from_slice(&(len as u32).to_le_bytes());
        frame.extend_from_slice(block);
        frame.extend_from_slice(payload);
        let checksum = xxhash_rust::xxh3::xxh3_64(&frame[8..]);
        frame.extend_from_slice(&checksum.to_le_bytes());
        out.extend_from_slice(&frame);
    }
    out
}

/// Makes `datadir` look as an earlier release left it: every segment in the
/// first journal format and no identity in the metadata.
fn make_first_format(datadir: &Path) {
    for segment in segments(datadir) {
        let bytes = std::fs::read(&segment).unwrap();
        std::fs::write(&segment, in_first_format(&bytes)).unwrap();
    }
    let db = redb::Database::open(datadir.join(strata_storage::DB_FILE)).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let meta: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
        let mut table = txn.open_table(meta).unwrap();
        assert!(table.remove("datadir_id").unwrap().is_some());
    }
    txn.commit().unwrap();
}

#[test]
fn a_datadir_of_the_first_journal_format_is_converted_by_a_writer_and_explained_to_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    let mut roots: Vec<B256> = (0..3).map(|b| commit(&db, b)).collect();
    db.flush().unwrap();
    db.abandon();
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    roots.extend((3..6).map(|b| commit(&db, b)));
    db.abandon();
    make_first_format(dir.path());
    let old = journal_files(dir.path());
    assert_eq!(old.len(), 2);

    // A reader cannot convert: it says how, and changes nothing.
    let error = strata_storage::ReadOnlyStateDb::open(dir.path(), unflushed_options())
        .and_then(|db| db.last_block())
        .expect_err("a reader of the first format");
    assert!(error.to_string().contains("convert"), "{error}");
    assert_eq!(journal_files(dir.path()), old);

    // A writer converts every segment in place and replays the blocks.
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    assert_at(&db, 5, roots[5], "converted");
    assert_eq!(db.unwind_to(1).unwrap(), roots[1]);
    assert_at(&db, 1, roots[1], "unwound through converted segments");
    let root = commit(&db, 2);
    db.abandon();
    for (path, bytes) in journal_files(dir.path()) {
        assert!(
            !bytes.starts_with(b"SJR1"),
            "{path:?} still in the first format"
        );
    }
    let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
    assert_at(&db, 2, root, "reopened after the conversion");
    drop(db);
    let report =
        strata_storage::verify_datadir(dir.path(), &unflushed_options(), &Default::default())
            .unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn a_clones_flushed_segment_is_refused_by_reads_at_a_block_verify_and_the_writer() {
    let a = tempfile::tempdir().unwrap();
    let db = StateDb::open(a.path(), unflushed_options()).unwrap();
    for block in 0..3 {
        commit(&db, block);
    }
    db.abandon();
    let b = tempfile::tempdir().unwrap();
    copy_tree(a.path(), b.path());
    for (dir, salt) in [(&a, 0), (&b, 1)] {
        let db = StateDb::open(dir.path(), unflushed_options()).unwrap();
        for block in 3..6 {
            commit_salted(&db, block, salt);
        }
        db.flush().unwrap();
        drop(db);
    }
    let db = StateDb::open(a.path(), unflushed_options()).unwrap();
    for block in 6..8 {
        commit(&db, block);
    }
    db.flush().unwrap();
    drop(db);
    // B5: the other clone's flushed blocks 3..6 in place of ours.
    let name = "journal-00000000000000000003.log";
    let ours = a.path().join(JOURNAL_DIR).join(name);
    std::fs::copy(b.path().join(JOURNAL_DIR).join(name), &ours).unwrap();
    let reader = strata_storage::ReadOnlyStateDb::open(a.path(), unflushed_options()).unwrap();
    // (Before: served from the clone's undo data.) Block 4 itself is within
    // the window, so the refusal is the broken chain, not the window.
    assert!(reader.reader_at(6, Regime::Exec).is_ok());
    match reader.reader_at(4, Regime::Exec) {
        Err(Error::CorruptJournalRecord { block: 6, what }) => {
            assert!(what.contains("follows root"), "{what}")
        }
        Err(other) => panic!("another refusal: {other}"),
        Ok(_) => panic!("a read at block 4 was served from the clone's undo data"),
    }
    drop(reader);
    let report =
        strata_storage::verify_datadir(a.path(), &unflushed_options(), &Default::default())
            .unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains(name) && p.contains("roots table")),
        "{:?}",
        report.problems
    );
    let error = open_error(a.path(), unflushed_options());
    assert!(error.to_string().contains("follows root"), "{error}");
}

#[test]
fn a_reader_wider_than_its_writer_refuses_blocks_the_writer_no_longer_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(
        dir.path(),
        small_options()
            .with_unwind_depth(4)
            .with_share_with_readers(true),
    )
    .unwrap();
    let mut roots = Vec::new();
    for block in 0..40 {
        roots.push(commit(&db, block));
        if block % 7 == 6 {
            db.flush().unwrap();
        }
        if block % 13 == 12 {
            db.compact().unwrap();
        }
    }
    // Beside the writer, then after it closed: every block is served with
    // its root or refused as not retained, never rebuilt wrong.
    let check = |context: &str| {
        let reader = strata_storage::ReadOnlyStateDb::open(
            dir.path(),
            small_options().with_unwind_depth(64),
        )
        .unwrap();
        let mut served = 0;
        for block in 0..40u64 {
            match reader.reader_at(block, Regime::Exec) {
                Ok(at) => {
                    assert_eq!(at.root(), roots[block as usize], "{context}: block {block}");
                    served += 1;
                }
                Err(Error::StateNotRetained { .. }) => {}
                Err(other) => panic!("{context}: block {block}: {other}"),
            }
        }
        assert!(served >= 4, "{context}: only {served} blocks served");
    };
    check("beside the writer");
    drop(db);
    check("after the writer closed");
}
