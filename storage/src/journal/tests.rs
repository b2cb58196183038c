//! The journal against the in-memory file system and its power-cut model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::files::fs::{Fault, FaultyFileSystem, MemFileSystem};

const DIR: &str = "/d/journal";

fn payload(block: u64) -> Vec<u8> {
    (0..(block % 7) * 40 + 3)
        .map(|i| (i as u8) ^ (block as u8))
        .collect()
}

fn open(fs: &MemFileSystem, flushed: Option<u64>, segment_bytes: u64) -> (Journal, Recovered) {
    Journal::open(Arc::new(fs.clone()), DIR, flushed, segment_bytes).expect("open journal")
}

fn blocks_of(recovered: &Recovered) -> Vec<u64> {
    recovered.records.iter().map(|r| r.block).collect()
}

fn segments(fs: &MemFileSystem) -> Vec<PathBuf> {
    fs.list_dir(Path::new(DIR)).expect("list")
}

#[test]
fn appended_blocks_come_back_after_a_reopen() {
    let fs = MemFileSystem::new();
    let (mut journal, recovered) = open(&fs, None, 1 << 20);
    assert!(recovered.records.is_empty());
    for block in 0..10 {
        journal
            .append(block, &payload(block), true)
            .expect("append");
    }
    assert_eq!(journal.blocks(), Some((0, 9)));
    drop(journal);
    let (mut journal, recovered) = open(&fs, None, 1 << 20);
    assert_eq!(blocks_of(&recovered), (0..10).collect::<Vec<_>>());
    for record in &recovered.records {
        assert_eq!(record.payload.as_ref(), payload(record.block).as_slice());
    }
    // A reopened journal continues in a new segment.
    journal
        .append(10, &payload(10), true)
        .expect("append after reopen");
    assert_eq!(segments(&fs).len(), 2);
    let (_, recovered) = open(&fs, Some(4), 1 << 20);
    assert_eq!(blocks_of(&recovered), (5..11).collect::<Vec<_>>());
}

#[test]
fn a_torn_last_record_at_every_byte_opens_to_the_previous_block() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 1 << 20);
    for block in 0..4 {
        journal
            .append(block, &payload(block), true)
            .expect("append");
    }
    let before_last = journal.bytes();
    journal.append(4, &payload(4), true).expect("append");
    let whole = journal.bytes();
    drop(journal);
    let path = segments(&fs).remove(0);
    let image = fs.contents(&path).expect("segment");
    for cut in before_last..whole {
        let torn = MemFileSystem::new();
        torn.insert(&path, image[..cut as usize].to_vec());
        let (mut journal, recovered) = open(&torn, None, 1 << 20);
        assert_eq!(blocks_of(&recovered), vec![0, 1, 2, 3], "cut at {cut}");
        let dropped = cut - before_last;
        if dropped > 0 {
            assert_eq!(
                recovered.torn_tail,
                Some((path.clone(), before_last, dropped))
            );
        }
        // The tail is cut off durably; block 4 can be journaled again.
        assert_eq!(
            torn.contents(&path).map(|c| c.len() as u64),
            Some(before_last)
        );
        journal
            .append(4, &payload(4), true)
            .expect("append after recovery");
        drop(journal);
        let (_, again) = open(&torn.power_cut_image(), None, 1 << 20);
        assert_eq!(blocks_of(&again), vec![0, 1, 2, 3, 4], "cut at {cut}");
    }
}

#[test]
fn a_power_cut_keeps_the_durable_blocks_only() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 1 << 20);
    for block in 0..6 {
        // Every third block durable, like Durability::EveryN(3).
        journal
            .append(block, &payload(block), block % 3 == 2)
            .expect("append");
    }
    journal.append(6, &payload(6), false).expect("append");
    let (_, recovered) = open(&fs.power_cut_image(), None, 1 << 20);
    assert_eq!(blocks_of(&recovered), (0..6).collect::<Vec<_>>());
}

#[test]
fn corruption_before_the_tail_is_refused_with_the_segment_and_offset() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 1 << 20);
    for block in 0..5 {
        journal
            .append(block, &payload(block), true)
            .expect("append");
    }
    drop(journal);
    let path = segments(&fs).remove(0);
    fs.patch(&path, 30, &[0xee]).expect("patch");
    match Journal::open(Arc::new(fs.clone()), DIR, None, 1 << 20) {
        Err(JournalError::Corrupt {
            path: p, offset, ..
        }) => {
            assert_eq!(p, path);
            // Block 0's frame is 16 + 3 + 8 bytes; the flip is in block 1's.
            assert_eq!(offset, 27);
        }
        other => panic!(
            "expected corruption, got {:?}",
            other.map(|(_, r)| r.records.len())
        ),
    }
    // Nothing was cut or removed.
    assert!(fs.contents(&path).is_some());
}

#[test]
fn segments_rotate_and_flushed_ones_are_released() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 200);
    for block in 0..20 {
        journal
            .append(block, &payload(block), true)
            .expect("append");
    }
    let count = segments(&fs).len();
    assert!(count > 3, "{count} segments");
    journal.release_through(11).expect("release");
    let (first, last) = journal.blocks().expect("blocks");
    assert!(first <= 12 && first > 0, "first {first}");
    assert_eq!(last, 19);
    assert!(segments(&fs).len() < count);
    // Later appends still go on, and a reopen after the flushed block sees them all.
    journal.append(20, &payload(20), true).expect("append");
    drop(journal);
    let (_, recovered) = open(&fs, Some(11), 200);
    assert_eq!(blocks_of(&recovered), (12..21).collect::<Vec<_>>());
}

#[test]
fn a_missing_segment_is_a_gap() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 100);
    for block in 0..12 {
        journal
            .append(block, &payload(block), true)
            .expect("append");
    }
    drop(journal);
    let all = segments(&fs);
    assert!(all.len() >= 3);
    fs.remove(&all[1]).expect("remove");
    assert!(matches!(
        Journal::open(Arc::new(fs.clone()), DIR, None, 100),
        Err(JournalError::Gap { .. })
    ));
    // After the flushed block the journal must continue at flushed + 1.
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, Some(9), 1 << 20);
    assert!(matches!(
        journal.append(12, b"x", true),
        Err(JournalError::Gap {
            expected: 10,
            found: 12,
            ..
        })
    ));
}

#[test]
fn a_failed_sync_closes_the_journal_with_its_first_cause() {
    let mem = MemFileSystem::new();
    let faulty = Arc::new(FaultyFileSystem::new(Arc::new(mem.clone())));
    let (mut journal, _) = Journal::open(faulty.clone(), DIR, None, 1 << 20).expect("open");
    journal.append(0, b"zero", true).expect("append");
    faulty.inject(Fault::Sync);
    let first = journal.append(1, b"one", true).expect_err("sync fails");
    faulty.clear();
    let later = journal.append(2, b"two", true).expect_err("closed");
    assert!(later.to_string().contains(&first.to_string()), "{later}");
    let (_, recovered) = open(&mem.power_cut_image(), None, 1 << 20);
    assert_eq!(blocks_of(&recovered), vec![0]);
}

#[test]
fn only_journal_names_are_journal_files() {
    assert!(is_journal_file_name(&segment_name(42)));
    assert!(is_journal_file_name(
        "journal-00000000000000000042.log.rewrite"
    ));
    assert!(!is_journal_file_name("journal-42.log"));
    assert!(!is_journal_file_name("notes.txt"));
    assert_eq!(segment_first_block(&segment_name(u64::MAX)), Some(u64::MAX));
}
