//! The tail against a writer on the real file system, in the same process.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::segment;
use crate::tests::{ID, link};
use crate::{Journal, segment_name};
use strata_fs::OsFileSystem;
use strata_types::DatadirId;

fn payload(block: u64, generation: u8) -> Vec<u8> {
    (0..(block % 5) * 30 + 4)
        .map(|i| (i as u8) ^ (block as u8) ^ generation)
        .collect()
}

fn writer(dir: &Path, segment_bytes: u64) -> Journal {
    Journal::open(Arc::new(OsFileSystem), dir, ID, None, segment_bytes)
        .expect("open journal")
        .0
}

fn append(journal: &mut Journal, blocks: std::ops::Range<u64>, generation: u8) {
    for block in blocks {
        journal
            .append(block, link(block), &payload(block, generation), false)
            .expect("append");
    }
}

fn blocks(records: &[JournalRecord]) -> Vec<u64> {
    records.iter().map(|r| r.block).collect()
}

fn assert_payloads(records: &[JournalRecord], generation: u8) {
    for record in records {
        assert_eq!(
            record.payload.as_ref(),
            payload(record.block, generation).as_slice(),
            "block {}",
            record.block
        );
    }
}

fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .collect();
    out.sort();
    out
}

/// Every file's name and bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    segment_files(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect()
}

fn frame_of(block: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::encode(block, link(block), payload, &mut out);
    out
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open for append");
    file.write_all(bytes).expect("append");
}

#[test]
fn a_tail_reads_what_the_writer_appends_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = writer(dir.path(), 300);
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    assert!(tail.read_after(None).expect("read").is_empty());
    append(&mut journal, 0..5, 0);
    let first = tail.read_after(None).expect("read");
    assert_eq!(blocks(&first), (0..5).collect::<Vec<_>>());
    assert_payloads(&first, 0);
    assert!(tail.read_after(Some(4)).expect("read").is_empty());
    // More blocks, across rotated segments.
    append(&mut journal, 5..20, 0);
    assert!(segment_files(dir.path()).len() > 2);
    let more = tail.read_after(Some(4)).expect("read");
    assert_eq!(blocks(&more), (5..20).collect::<Vec<_>>());
    assert_payloads(&more, 0);
    // Records at or below `after` are passed over.
    append(&mut journal, 20..24, 0);
    assert_eq!(
        blocks(&tail.read_after(Some(21)).expect("read")),
        vec![22, 23]
    );
    // A fresh tail skips the segments wholly at or below `after`.
    let mut late = JournalTail::new(dir.path(), Some(ID));
    assert_eq!(
        blocks(&late.read_after(Some(17)).expect("read")),
        (18..24).collect::<Vec<_>>()
    );
    let first_segment = segment_files(dir.path()).remove(0);
    assert!(!late.cursors.contains_key(&0), "{first_segment:?} was read");
}

#[test]
fn an_append_in_progress_is_returned_once_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = writer(dir.path(), 1 << 20);
    append(&mut journal, 0..3, 0);
    drop(journal);
    let path = segment_files(dir.path()).remove(0);
    let frame = frame_of(3, &payload(3, 0));
    for split in [1, frame::HEADER - 1, frame::HEADER + 2, frame.len() - 1] {
        let dir = tempfile::tempdir().expect("tempdir");
        let segment = dir.path().join(path.file_name().expect("name"));
        std::fs::copy(&path, &segment).expect("copy");
        let mut tail = JournalTail::new(dir.path(), Some(ID));
        append_raw(&segment, &frame[..split]);
        assert_eq!(
            blocks(&tail.read_after(None).expect("first half")),
            vec![0, 1, 2],
            "split at {split}"
        );
        assert!(tail.read_after(None).expect("still half").is_empty());
        append_raw(&segment, &frame[split..]);
        let rest = tail.read_after(None).expect("second half");
        assert_eq!(blocks(&rest), vec![3], "split at {split}");
        assert_payloads(&rest, 0);
    }
}

#[test]
fn bytes_already_read_are_not_read_again_until_a_reset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = writer(dir.path(), 1 << 20);
    append(&mut journal, 0..4, 0);
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    assert_eq!(tail.read_after(None).expect("read").len(), 4);
    // Rot a payload byte of block 1, in place: the tail does not look back.
    let path = segment_files(dir.path()).remove(0);
    let mut bytes = std::fs::read(&path).expect("read");
    let block_1 = segment::HEADER_LEN + frame_of(0, &payload(0, 0)).len();
    bytes[block_1 + frame::HEADER] ^= 0x55;
    std::fs::write(&path, &bytes).expect("write");
    append(&mut journal, 4..6, 0);
    assert_eq!(blocks(&tail.read_after(Some(3)).expect("read")), vec![4, 5]);
    tail.reset();
    match tail.read_after(None) {
        Err(JournalError::Corrupt {
            path: p, offset, ..
        }) => assert_eq!((p, offset), (path, block_1 as u64)),
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn released_segments_are_forgotten_and_cut_ones_are_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = writer(dir.path(), 300);
    append(&mut journal, 0..20, 0);
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    assert_eq!(tail.read_after(None).expect("read").len(), 20);
    let before = tail.cursors.len();
    journal.release_through(9).expect("release");
    assert!(tail.read_after(Some(19)).expect("read").is_empty());
    assert!(tail.cursors.len() < before);
    let (first, _) = journal.blocks().expect("blocks");

    // Cut inside a segment: it is rewritten shorter and read again from 0.
    journal.truncate_after(15).expect("truncate");
    let again = tail.read_after(None).expect("read");
    let holding_first = *blocks(&again).first().expect("re-read");
    assert!(holding_first >= first && holding_first <= 15);
    assert_eq!(blocks(&again), (holding_first..=15).collect::<Vec<_>>());
    // New blocks after the cut, with other payloads.
    append(&mut journal, 16..19, 1);
    let new = tail.read_after(Some(15)).expect("read");
    assert_eq!(blocks(&new), vec![16, 17, 18]);
    assert_payloads(&new, 1);
}

#[test]
fn a_segment_replaced_under_the_same_name_is_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    // One block per segment: a cut after block 2 deletes `journal-3`, and
    // the next append recreates it, longer.
    let mut journal = writer(dir.path(), 1);
    append(&mut journal, 0..5, 0);
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    assert_eq!(tail.read_after(None).expect("read").len(), 5);
    journal.truncate_after(2).expect("truncate");
    journal
        .append(3, link(3), &[7; 500], false)
        .expect("append a longer block 3");
    let name = dir.path().join(segment_name(3));
    assert!(std::fs::metadata(&name).expect("segment 3").len() > 200);
    let new = tail.read_after(Some(2)).expect("read");
    assert_eq!(blocks(&new), vec![3]);
    assert_eq!(new[0].payload.as_ref(), &[7; 500]);
}

/// A segment of the tests' datadir starting at `first` holding `frames`.
fn segment_with(first: u64, frames: &[u8]) -> Vec<u8> {
    let mut out = segment::SegmentHeader {
        id: ID,
        first_block: first,
    }
    .encode()
    .to_vec();
    out.extend_from_slice(frames);
    out
}

#[test]
fn what_a_writer_would_cut_is_an_append_in_progress_and_damage_before_more_is_corrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = writer(dir.path(), 1 << 20);
    append(&mut journal, 0..3, 0);
    drop(journal);
    let path = segment_files(dir.path()).remove(0);
    let end = std::fs::metadata(&path).expect("len").len();
    let whole = std::fs::read(&path).expect("read");

    // Zeros after the last frame (a power cut's fill): the writer cuts them.
    append_raw(&path, &[0; 512]);
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    assert_eq!(
        blocks(&tail.read_after(None).expect("zeros")),
        vec![0, 1, 2]
    );

    // A whole last frame that fails its checksum, with nothing after it:
    // a torn append the writer would cut, not corruption (J05, J12).
    std::fs::write(&path, &whole).expect("restore");
    let mut bad = frame_of(3, &payload(3, 0));
    let last = bad.len() - 1;
    bad[last] ^= 1;
    append_raw(&path, &bad);
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    assert_eq!(blocks(&tail.read_after(None).expect("torn")), vec![0, 1, 2]);

    // A valid frame after it: the damage is corruption, named where it is.
    append_raw(&path, &frame_of(4, &payload(4, 0)));
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    match tail.read_after(None) {
        Err(JournalError::Corrupt {
            path: p,
            offset,
            what,
        }) => {
            assert_eq!((p, offset), (path.clone(), end));
            assert!(
                what.contains("checksum mismatch") && what.contains("follows"),
                "{what}"
            );
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    // The offsets stay: the error repeats, with the blocks before it unread.
    assert!(tail.cursors.is_empty());

    // An incomplete frame in a segment that is not the newest.
    std::fs::write(&path, &whole[..end as usize - 5]).expect("cut");
    std::fs::write(
        dir.path().join(segment_name(3)),
        segment_with(3, &frame_of(3, &payload(3, 0))),
    )
    .expect("newer segment");
    let last_start = end - frame_of(2, &payload(2, 0)).len() as u64;
    match tail.read_after(None) {
        Err(JournalError::Corrupt {
            path: p,
            offset,
            what,
        }) => {
            assert_eq!((p, offset), (path.clone(), last_start));
            assert!(what.contains("not the newest"), "{what}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn a_segment_of_another_datadir_or_the_first_format_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = writer(dir.path(), 1 << 20);
    append(&mut journal, 0..3, 0);
    drop(journal);
    let mut tail = JournalTail::new(dir.path(), Some(DatadirId([0x22; 16])));
    let error = tail.read_after(None).expect_err("foreign");
    assert!(matches!(error, JournalError::Foreign { .. }), "{error}");
    let path = segment_files(dir.path()).remove(0);
    std::fs::write(&path, crate::legacy::encode(0, &payload(0, 0))).expect("old");
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    let error = tail.read_after(None).expect_err("first format");
    assert!(matches!(error, JournalError::Legacy { .. }), "{error}");
    assert!(error.to_string().contains("convert"), "{error}");
}

#[test]
fn a_tail_changes_no_byte_and_creates_nothing() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("journal");
    let mut tail = JournalTail::new(&dir, Some(ID));
    assert!(tail.read_after(None).expect("missing folder").is_empty());
    assert!(!dir.exists(), "the tail created the folder");

    let mut journal = writer(&dir, 300);
    append(&mut journal, 0..10, 0);
    drop(journal);
    // What a crashed writer leaves: a torn last append and an interrupted
    // rewrite, both of which the writer's open would clean up.
    let newest = segment_files(&dir).pop().expect("segments");
    append_raw(&newest, &frame_of(10, &payload(10, 0))[..9]);
    std::fs::write(dir.join(format!("{}.rewrite", segment_name(0))), b"partial")
        .expect("rewrite leftover");
    let before = tree(&dir);
    let records = tail.read_after(None).expect("read");
    assert_eq!(blocks(&records), (0..10).collect::<Vec<_>>());
    tail.read_after(Some(9)).expect("read again");
    tail.reset();
    tail.read_after(Some(3)).expect("read after a reset");
    assert_eq!(tree(&dir), before);
}

#[test]
fn a_tail_racing_a_writer_thread_sees_every_block_once_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    let big = |block: u64| vec![block as u8; (block as usize % 4) * 150_000 + 10];
    let writer_thread = std::thread::spawn(move || {
        let mut journal = writer(&path, 1 << 20);
        for block in 0..40 {
            journal
                .append(block, link(block), &big(block), false)
                .expect("append");
        }
    });
    let mut tail = JournalTail::new(dir.path(), Some(ID));
    let mut seen = Vec::new();
    let mut calls = 0;
    while seen.len() < 40 {
        let after = seen.last().map(|r: &JournalRecord| r.block);
        seen.extend(tail.read_after(after).expect("read while appending"));
        calls += 1;
        assert!(calls < 1_000_000, "the tail never caught up");
    }
    writer_thread.join().expect("writer");
    assert_eq!(blocks(&seen), (0..40).collect::<Vec<_>>());
    for record in &seen {
        assert_eq!(record.payload.as_ref(), big(record.block).as_slice());
    }
    assert!(tail.read_after(Some(39)).expect("read").is_empty());
}
