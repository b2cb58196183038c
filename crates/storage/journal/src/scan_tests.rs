//! The scan's rules on hand-made segments: what is a torn tail and what is
//! corruption, identity, names and the chain of roots; and that the writer's
//! open keeps aside exactly what it cuts and changes nothing when it refuses.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_primitives::B256;

use crate::frame::{self, Link};
use crate::scan::{Expect, Scan, Tip, scan};
use crate::segment::{self, SegmentHeader};
use crate::{Journal, JournalError, is_journal_file_name, segment_name};
use strata_fs::{FileSystem, MemFileSystem};
use strata_types::DatadirId;

const DIR: &str = "/d/journal";
const ID: DatadirId = DatadirId([0x5a; 16]);

fn root(block: u64) -> B256 {
    B256::left_padding_from(&(block + 1).to_be_bytes())
}

fn link(block: u64) -> Link {
    Link {
        parent: block.checked_sub(1).map_or(B256::ZERO, root),
        root: root(block),
    }
}

fn frame_of(block: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let payload: Vec<u8> = (0..20 + block * 3).map(|i| i as u8 ^ block as u8).collect();
    frame::encode(block, link(block), &payload, &mut out);
    out
}

/// A segment of `ID` holding `blocks`, and where each frame starts.
fn segment_of(blocks: std::ops::Range<u64>) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = SegmentHeader {
        id: ID,
        first_block: blocks.start,
    }
    .encode()
    .to_vec();
    let mut starts = Vec::new();
    for block in blocks {
        starts.push(bytes.len());
        bytes.extend_from_slice(&frame_of(block));
    }
    (bytes, starts)
}

fn path_of(first: u64) -> PathBuf {
    Path::new(DIR).join(segment_name(first))
}

fn scan_of(fs: &MemFileSystem, flushed: Option<u64>) -> Scan {
    let fs: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let expect = Expect {
        id: Some(ID),
        flushed: flushed.map(|block| Tip {
            block,
            root: root(block),
        }),
    };
    scan(&fs, Path::new(DIR), expect).expect("scan")
}

/// Two segments: blocks 0..4 and 4..8.
fn two_segments() -> (MemFileSystem, Vec<u8>, Vec<usize>) {
    let fs = MemFileSystem::new();
    fs.insert(&path_of(0), segment_of(0..4).0);
    let (last, starts) = segment_of(4..8);
    fs.insert(&path_of(4), last.clone());
    (fs, last, starts)
}

fn assert_corrupt_at(scan: &Scan, path: &Path, offset: usize, context: &str) {
    assert!(scan.torn_tail().is_none(), "{context}: nothing may be cut");
    match scan.problems.first() {
        Some(JournalError::Corrupt {
            path: p, offset: o, ..
        }) => {
            assert_eq!((p.as_path(), o), (path, &(offset as u64)), "{context}");
        }
        other => panic!("{context}: expected corruption, got {other:?}"),
    }
}

#[test]
fn a_clean_journal_has_no_problem_and_every_record() {
    let (fs, _, _) = two_segments();
    let scan = scan_of(&fs, None);
    assert!(scan.problems.is_empty(), "{:?}", scan.problems);
    assert_eq!(scan.blocks(), Some((0, 7)));
    assert_eq!(scan.records().len(), 8);
    let scan = scan_of(&fs, Some(5));
    assert_eq!(
        scan.records().iter().map(|r| r.block).collect::<Vec<_>>(),
        vec![6, 7]
    );
}

#[test]
fn any_flipped_bit_of_a_middle_frames_header_is_corruption_never_a_cut() {
    let (fs, last, starts) = two_segments();
    // Frames 4, 5 and 6 of the newest segment each have whole frames after them.
    for &start in &starts[..3] {
        for bit in 0..frame::HEADER * 8 {
            let mut bytes = last.clone();
            bytes[start + bit / 8] ^= 1 << (bit % 8);
            fs.insert(&path_of(4), bytes);
            let scan = scan_of(&fs, None);
            assert_corrupt_at(
                &scan,
                &path_of(4),
                start,
                &format!("frame at {start}, bit {bit}"),
            );
        }
    }
}

#[test]
fn a_cut_at_every_offset_of_the_last_frame_is_a_torn_tail() {
    let (fs, last, starts) = two_segments();
    let last_start = starts[3];
    for cut in last_start + 1..last.len() {
        fs.insert(&path_of(4), last[..cut].to_vec());
        let scan = scan_of(&fs, Some(2));
        assert!(
            scan.problems.is_empty(),
            "cut at {cut}: {:?}",
            scan.problems
        );
        let torn = scan.torn_tail().expect("torn");
        assert_eq!(torn.offset, last_start as u64, "cut at {cut}");
        assert_eq!(torn.cut.as_ref(), &last[last_start..cut], "cut at {cut}");
        assert!(!torn.remove_segment);
        assert_eq!(scan.blocks(), Some((0, 6)), "cut at {cut}");
    }
}

#[test]
fn zeros_after_the_last_frame_are_a_torn_tail() {
    let (fs, mut last, _) = two_segments();
    let end = last.len();
    last.extend_from_slice(&[0; 4096]);
    fs.insert(&path_of(4), last);
    let scan = scan_of(&fs, None);
    assert!(scan.problems.is_empty(), "{:?}", scan.problems);
    assert_eq!(scan.torn_tail().map(|t| t.offset), Some(end as u64));
    assert_eq!(scan.blocks(), Some((0, 7)));
}

#[test]
fn a_valid_frame_after_damage_is_corruption() {
    let (fs, mut last, starts) = two_segments();
    // A payload byte of block 6: its header verifies, block 7 follows whole.
    last[starts[2] + frame::HEADER + frame::ROOTS + 1] ^= 0x10;
    fs.insert(&path_of(4), last.clone());
    assert_corrupt_at(
        &scan_of(&fs, None),
        &path_of(4),
        starts[2],
        "payload of block 6",
    );
    // Junk after a damaged last frame, with a frame header hidden in it.
    let (_, mut clean, _) = two_segments();
    let damaged_last = starts[3];
    clean[damaged_last + frame::HEADER + 2] ^= 1;
    clean.extend_from_slice(&[0xee; 10]);
    clean.extend_from_slice(&frame_of(8));
    fs.insert(&path_of(4), clean);
    assert_corrupt_at(
        &scan_of(&fs, None),
        &path_of(4),
        damaged_last,
        "a frame after the last",
    );
}

#[test]
fn damage_in_an_older_segment_is_corruption_even_at_its_end() {
    let (fs, _, _) = two_segments();
    let (older, starts) = segment_of(0..4);
    fs.insert(&path_of(0), older[..older.len() - 3].to_vec());
    assert_corrupt_at(
        &scan_of(&fs, None),
        &path_of(0),
        starts[3],
        "older segment cut",
    );
}

#[test]
fn a_torn_frame_of_a_flushed_block_is_corruption() {
    let (fs, last, starts) = two_segments();
    // Block 7's frame cut short, but redb already holds block 7.
    fs.insert(&path_of(4), last[..last.len() - 1].to_vec());
    assert_corrupt_at(
        &scan_of(&fs, Some(7)),
        &path_of(4),
        starts[3],
        "flushed block",
    );
    // With redb at block 6 it is an interrupted append.
    assert!(scan_of(&fs, Some(6)).torn_tail().is_some());
}

#[test]
fn a_newest_segment_without_a_whole_frame_is_removed_as_torn() {
    let (fs, _, _) = two_segments();
    let (newer, _) = segment_of(8..9);
    for cut in 0..newer.len() {
        fs.insert(&path_of(8), newer[..cut].to_vec());
        let scan = scan_of(&fs, None);
        assert!(
            scan.problems.is_empty(),
            "cut at {cut}: {:?}",
            scan.problems
        );
        let torn = scan.torn_tail().expect("torn");
        assert!(torn.remove_segment, "cut at {cut}");
        assert_eq!(scan.blocks(), Some((0, 7)), "cut at {cut}");
    }
}

#[test]
fn a_segment_of_another_datadir_is_refused_naming_both_identities() {
    let (fs, _, _) = two_segments();
    let mut foreign = segment_of(4..8).0;
    foreign[16..32].copy_from_slice(&[0x77; 16]);
    // Re-seal the header, as the other datadir's writer did.
    let check = xxhash_rust::xxh3::xxh3_64(&foreign[..40]);
    foreign[40..48].copy_from_slice(&check.to_le_bytes());
    fs.insert(&path_of(4), foreign);
    let scan = scan_of(&fs, None);
    let text = scan.problems.first().expect("a problem").to_string();
    assert!(
        matches!(scan.problems[0], JournalError::Foreign { .. }),
        "{text}"
    );
    assert!(
        text.contains(&"77".repeat(16)) && text.contains(&"5a".repeat(16)),
        "{text}"
    );
}

#[test]
fn a_segment_under_another_name_is_refused() {
    let fs = MemFileSystem::new();
    fs.insert(&path_of(0), segment_of(0..4).0);
    // A copy of the segment of blocks 4..8 named as if it began at block 2.
    fs.insert(&path_of(2), segment_of(4..8).0);
    let scan = scan_of(&fs, None);
    assert_corrupt_at(&scan, &path_of(2), 0, "misnamed");
}

#[test]
fn a_frame_that_does_not_chain_to_the_root_before_is_refused() {
    let (fs, _, _) = two_segments();
    // Blocks 4..8 of another state: same numbers, other roots.
    let mut other = SegmentHeader {
        id: ID,
        first_block: 4,
    }
    .encode()
    .to_vec();
    let mut buffer = Vec::new();
    for block in 4..8 {
        let foreign = Link {
            parent: B256::repeat_byte(block as u8),
            root: B256::repeat_byte(block as u8 + 1),
        };
        frame::encode(block, foreign, b"other", &mut buffer);
        other.extend_from_slice(&buffer);
    }
    fs.insert(&path_of(4), other);
    let found = scan_of(&fs, None);
    assert!(
        matches!(
            found.problems.first(),
            Some(JournalError::Chain { block: 4, .. })
        ),
        "{:?}",
        found.problems
    );
    // The first block after redb's head must follow redb's head root.
    let fs = MemFileSystem::new();
    fs.insert(&path_of(4), segment_of(4..8).0);
    let expect = Expect {
        id: Some(ID),
        flushed: Some(Tip {
            block: 3,
            root: B256::repeat_byte(0xcc),
        }),
    };
    let dynfs: Arc<dyn FileSystem> = Arc::new(fs);
    let found = scan(&dynfs, Path::new(DIR), expect).expect("scan");
    assert!(
        matches!(
            found.problems.first(),
            Some(JournalError::Chain { block: 4, .. })
        ),
        "{:?}",
        found.problems
    );
}

#[test]
fn the_writer_keeps_aside_exactly_the_cut_bytes() {
    let (fs, last, starts) = two_segments();
    let mut torn = last[..starts[3] + 9].to_vec();
    torn.extend_from_slice(&[0; 100]);
    fs.insert(&path_of(4), torn.clone());
    let dynfs: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let (journal, recovered) = Journal::open(dynfs, DIR, ID, None, 1 << 20).expect("open");
    assert_eq!(journal.blocks(), Some((0, 6)));
    let kept = recovered.kept_aside.expect("kept aside");
    assert_eq!(
        kept.file_name().and_then(|n| n.to_str()),
        Some(format!("{}.torn-{}", segment_name(4), starts[3]).as_str())
    );
    assert_eq!(
        fs.contents(&kept).expect("kept file"),
        torn[starts[3]..].to_vec()
    );
    assert_eq!(
        fs.contents(&path_of(4)).expect("segment"),
        last[..starts[3]].to_vec()
    );
    assert!(is_journal_file_name(
        kept.file_name().and_then(|n| n.to_str()).unwrap_or("")
    ));
    // The kept file survives the next open, which does not take it for a segment.
    let dynfs: Arc<dyn FileSystem> = Arc::new(fs.clone());
    drop(journal);
    let (journal, recovered) = Journal::open(dynfs, DIR, ID, None, 1 << 20).expect("reopen");
    assert_eq!(journal.blocks(), Some((0, 6)));
    assert!(recovered.torn_tail.is_none());
    assert!(fs.contents(&kept).is_some());
}

#[test]
fn a_refused_open_changes_no_byte() {
    let fs = MemFileSystem::new();
    fs.insert(&path_of(0), segment_of(0..4).0);
    // An emptied middle segment (finding J19) and a later one.
    fs.insert(&path_of(4), segment_of(4..4).0);
    fs.insert(&path_of(8), segment_of(8..10).0);
    let before: Vec<_> = fs
        .list_dir(Path::new(DIR))
        .expect("list")
        .into_iter()
        .map(|p| (p.clone(), fs.contents(&p)))
        .collect();
    let dynfs: Arc<dyn FileSystem> = Arc::new(fs.clone());
    assert!(Journal::open(dynfs, DIR, ID, None, 1 << 20).is_err());
    let after: Vec<_> = fs
        .list_dir(Path::new(DIR))
        .expect("list")
        .into_iter()
        .map(|p| (p.clone(), fs.contents(&p)))
        .collect();
    assert_eq!(before, after);
    assert_eq!(segment::HEADER_LEN, 48);
}
