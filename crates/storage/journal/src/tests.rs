//! The journal against the in-memory file system and its power-cut model.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_primitives::B256;

use super::*;
use strata_fs::{Fault, FaultyFileSystem, MemFileSystem, OsFileSystem, file_name_of};

const DIR: &str = "/d/journal";

fn payload(block: u64) -> Vec<u8> {
    (0..(block % 7) * 40 + 3)
        .map(|i| (i as u8) ^ (block as u8))
        .collect()
}

/// The datadir the tests' journals belong to.
pub(super) const ID: DatadirId = DatadirId([0x11; 16]);

/// The root the tests give block `block`.
pub(super) fn root(block: u64) -> B256 {
    B256::left_padding_from(&(block + 1).to_be_bytes())
}

/// The roots a test frame of `block` links: its parent's and its own.
pub(super) fn link(block: u64) -> Link {
    Link {
        parent: block.checked_sub(1).map_or(B256::ZERO, root),
        root: root(block),
    }
}

fn tip(flushed: Option<u64>) -> Option<Tip> {
    flushed.map(|block| Tip {
        block,
        root: root(block),
    })
}

fn open(fs: &MemFileSystem, flushed: Option<u64>, segment_bytes: u64) -> (Journal, Recovered) {
    Journal::open(Arc::new(fs.clone()), DIR, ID, tip(flushed), segment_bytes).expect("open journal")
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
            .append(block, link(block), &payload(block), true)
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
        .append(10, link(10), &payload(10), true)
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
            .append(block, link(block), &payload(block), true)
            .expect("append");
    }
    let before_last = journal.bytes();
    journal
        .append(4, link(4), &payload(4), true)
        .expect("append");
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
                Some(CutTail {
                    segment: path.clone(),
                    offset: before_last,
                    dropped,
                })
            );
        }
        // The tail is cut off durably; block 4 can be journaled again.
        assert_eq!(
            torn.contents(&path).map(|c| c.len() as u64),
            Some(before_last)
        );
        journal
            .append(4, link(4), &payload(4), true)
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
            .append(block, link(block), &payload(block), block % 3 == 2)
            .expect("append");
    }
    journal
        .append(6, link(6), &payload(6), false)
        .expect("append");
    let (_, recovered) = open(&fs.power_cut_image(), None, 1 << 20);
    assert_eq!(blocks_of(&recovered), (0..6).collect::<Vec<_>>());
}

#[test]
fn corruption_before_the_tail_is_refused_with_the_segment_and_offset() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 1 << 20);
    for block in 0..5 {
        journal
            .append(block, link(block), &payload(block), true)
            .expect("append");
    }
    drop(journal);
    let path = segments(&fs).remove(0);
    let before = fs.contents(&path);
    // The segment header is 48 bytes and block 0's frame 24 + 64 + 3 + 8:
    // the flip is in block 1's length.
    fs.patch(&path, 147 + 5, &[0xee]).expect("patch");
    let patched = fs.contents(&path);
    assert_ne!(before, patched);
    match Journal::open(Arc::new(fs.clone()), DIR, ID, None, 1 << 20) {
        Err(JournalError::Corrupt {
            path: p, offset, ..
        }) => {
            assert_eq!(p, path);
            assert_eq!(offset, 147);
        }
        other => panic!(
            "expected corruption, got {:?}",
            other.map(|(_, r)| r.records.len())
        ),
    }
    // Nothing was cut or removed.
    assert_eq!(fs.contents(&path), patched);
}

#[test]
fn segments_rotate_and_flushed_ones_are_released() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 200);
    for block in 0..20 {
        journal
            .append(block, link(block), &payload(block), true)
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
    journal
        .append(20, link(20), &payload(20), true)
        .expect("append");
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
            .append(block, link(block), &payload(block), true)
            .expect("append");
    }
    drop(journal);
    let all = segments(&fs);
    assert!(all.len() >= 3);
    fs.remove(&all[1]).expect("remove");
    assert!(matches!(
        Journal::open(Arc::new(fs.clone()), DIR, ID, None, 100),
        Err(JournalError::Gap { .. })
    ));
    // After the flushed block the journal must continue at flushed + 1.
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, Some(9), 1 << 20);
    assert!(matches!(
        journal.append(12, link(12), b"x", true),
        Err(JournalError::Gap {
            expected: 10,
            found: 12,
            ..
        })
    ));
}

#[test]
fn a_torn_tail_that_cannot_be_kept_aside_is_kept_once_at_the_next_open() {
    let mem = MemFileSystem::new();
    let (mut journal, _) = open(&mem, None, 1 << 20);
    for block in 0..3 {
        journal
            .append(block, link(block), &payload(block), true)
            .expect("append");
    }
    let before_last = journal.bytes();
    drop(journal);
    let path = segments(&mem).remove(0);
    let image = mem.contents(&path).expect("segment");
    mem.insert(&path, image[..before_last as usize - 5].to_vec());
    // A full disk: the copy's write fails, the open fails, nothing is cut.
    let faulty = Arc::new(FaultyFileSystem::new(Arc::new(mem.clone())));
    faulty.inject(Fault::WriteAfter(3));
    assert!(Journal::open(faulty.clone(), DIR, ID, None, 1 << 20).is_err());
    faulty.clear();
    let (_, recovered) = Journal::open(faulty, DIR, ID, None, 1 << 20).expect("open with room");
    assert_eq!(blocks_of(&recovered), vec![0, 1]);
    let kept: Vec<String> = mem
        .list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter_map(|path| file_name_of(&path).map(str::to_owned))
        .filter(|name| name.contains(".torn-"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(!kept[0].ends_with("-2"), "{kept:?}");
}

#[test]
fn a_failed_sync_closes_the_journal_with_its_first_cause() {
    let mem = MemFileSystem::new();
    let faulty = Arc::new(FaultyFileSystem::new(Arc::new(mem.clone())));
    let (mut journal, _) = Journal::open(faulty.clone(), DIR, ID, None, 1 << 20).expect("open");
    journal.append(0, link(0), b"zero", true).expect("append");
    faulty.inject(Fault::Sync);
    let first = journal
        .append(1, link(1), b"one", true)
        .expect_err("sync fails");
    faulty.clear();
    let later = journal
        .append(2, link(2), b"two", true)
        .expect_err("closed");
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
    assert!(is_journal_file_name(
        "journal-00000000000000000042.log.convert"
    ));
    assert!(is_journal_file_name(
        "journal-00000000000000000042.log.torn-4096"
    ));
    assert!(is_journal_file_name(
        "journal-00000000000000000042.log.torn-4096-2"
    ));
    assert!(!is_journal_file_name(
        "journal-00000000000000000042.log.torn-"
    ));
    assert!(!is_journal_file_name("journal-42.log"));
    assert!(!is_journal_file_name("notes.txt"));
    assert_eq!(segment_first_block(&segment_name(u64::MAX)), Some(u64::MAX));
}

/// Appends blocks `0..count`, all durable, in segments of `segment_bytes`.
fn journal_with(fs: &MemFileSystem, count: u64, segment_bytes: u64) -> Journal {
    let (mut journal, _) = open(fs, None, segment_bytes);
    for block in 0..count {
        journal
            .append(block, link(block), &payload(block), true)
            .expect("append");
    }
    journal
}

fn assert_payloads(records: &[JournalRecord]) {
    for record in records {
        assert_eq!(
            record.payload.as_ref(),
            payload(record.block).as_slice(),
            "block {}",
            record.block
        );
    }
}

#[test]
fn read_blocks_returns_the_range_across_segments_and_names_a_missing_block() {
    let fs = MemFileSystem::new();
    let mut journal = journal_with(&fs, 20, 200);
    assert!(segments(&fs).len() > 3);
    let records = journal.read_blocks(3, 15).expect("read");
    assert_eq!(
        records.iter().map(|r| r.block).collect::<Vec<_>>(),
        (3..=15).collect::<Vec<_>>()
    );
    assert_payloads(&records);
    assert_eq!(journal.read_blocks(19, 19).expect("read")[0].block, 19);
    assert!(journal.read_blocks(5, 4).expect("empty range").is_empty());
    // Past the newest block: the first missing block and the newest held one.
    match journal.read_blocks(17, 25) {
        Err(JournalError::Gap {
            path,
            expected,
            found,
        }) => {
            assert_eq!(path, Path::new(DIR));
            assert_eq!((expected, found), (20, 19));
        }
        other => panic!("expected a gap, got {other:?}"),
    }
    // Released blocks are missing at the front.
    journal.release_through(11).expect("release");
    let (first, _) = journal.blocks().expect("blocks");
    assert!(first > 0);
    assert!(matches!(
        journal.read_blocks(0, 15),
        Err(JournalError::Gap { expected: 0, found, .. }) if found == first
    ));
    assert_eq!(
        journal.read_blocks(first, 19).expect("read").len() as u64,
        20 - first
    );
}

#[test]
fn read_blocks_sees_unsynced_appends_on_the_real_file_system() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut journal, _) =
        Journal::open(Arc::new(OsFileSystem), dir.path(), ID, None, 1 << 20).expect("open");
    for block in 0..6 {
        journal
            .append(block, link(block), &payload(block), false)
            .expect("append");
    }
    let records = journal.read_blocks(0, 5).expect("read");
    assert_eq!(records.len(), 6);
    assert_payloads(&records);
}

#[test]
fn read_blocks_names_a_damaged_frame_with_segment_and_offset() {
    let fs = MemFileSystem::new();
    let journal = journal_with(&fs, 5, 1 << 20);
    let path = segments(&fs).remove(0);
    // After the 48-byte segment header, block 0's frame is 99 bytes; flip
    // a payload byte of block 1.
    fs.patch(&path, 147 + 24 + 64 + 1, &[0xee]).expect("patch");
    match journal.read_blocks(0, 4) {
        Err(JournalError::Corrupt {
            path: p, offset, ..
        }) => assert_eq!((p, offset), (path, 147)),
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn truncate_after_cuts_the_later_blocks_and_the_next_append_follows() {
    let fs = MemFileSystem::new();
    let mut journal = journal_with(&fs, 20, 200);
    let before = segments(&fs).len();
    journal.truncate_after(12).expect("truncate");
    assert_eq!(journal.blocks(), Some((0, 12)));
    assert!(segments(&fs).len() < before);
    assert_payloads(&journal.read_blocks(0, 12).expect("read"));
    assert!(matches!(
        journal.append(14, link(14), b"x", true),
        Err(JournalError::Gap {
            expected: 13,
            found: 14,
            ..
        })
    ));
    journal
        .append(13, link(13), b"new thirteen", true)
        .expect("append");
    assert!(segments(&fs).contains(&Path::new(DIR).join(segment_name(13))));
    // The cut is on disk, whole: a power cut now reopens to 0..=13.
    let (_, recovered) = open(&fs.power_cut_image(), None, 200);
    assert_eq!(blocks_of(&recovered), (0..=13).collect::<Vec<_>>());
    assert!(recovered.torn_tail.is_none());
    assert_payloads(&recovered.records[..13]);
    assert_eq!(recovered.records[13].payload.as_ref(), b"new thirteen");
}

#[test]
fn truncate_after_the_last_block_of_a_segment_keeps_it_whole() {
    let fs = MemFileSystem::new();
    let mut journal = journal_with(&fs, 20, 200);
    let second = segments(&fs).remove(1);
    let first_of_second =
        segment_first_block(file_name_of(&second).expect("name")).expect("segment name");
    let last_of_first = first_of_second - 1;
    let first_path = segments(&fs).remove(0);
    let first_bytes = fs.contents(&first_path).expect("first segment");
    journal.truncate_after(last_of_first).expect("truncate");
    assert_eq!(segments(&fs), vec![first_path.clone()]);
    assert_eq!(fs.contents(&first_path), Some(first_bytes));
    journal
        .append(
            first_of_second,
            link(first_of_second),
            &payload(first_of_second),
            true,
        )
        .expect("append");
    let (_, recovered) = open(&fs.power_cut_image(), None, 200);
    assert_eq!(
        blocks_of(&recovered),
        (0..=first_of_second).collect::<Vec<_>>()
    );
}

#[test]
fn truncate_after_before_the_oldest_block_removes_every_segment() {
    let fs = MemFileSystem::new();
    let mut journal = journal_with(&fs, 20, 200);
    journal.release_through(11).expect("release");
    let (first, _) = journal.blocks().expect("blocks");
    journal.truncate_after(first - 1).expect("truncate");
    assert!(segments(&fs).is_empty());
    assert_eq!(journal.blocks(), None);
    assert!(matches!(
        journal.append(first + 1, link(first + 1), b"x", true),
        Err(JournalError::Gap { expected, .. }) if expected == first
    ));
    journal
        .append(first, link(first), b"again", true)
        .expect("append");
    assert_eq!(journal.blocks(), Some((first, first)));
}

#[test]
fn truncate_after_a_block_not_appended_yet_changes_nothing() {
    let fs = MemFileSystem::new();
    let mut journal = journal_with(&fs, 5, 1 << 20);
    let image = segments(&fs)
        .iter()
        .map(|p| fs.contents(p))
        .collect::<Vec<_>>();
    assert!(matches!(
        journal.truncate_after(5),
        Err(JournalError::Gap {
            expected: 5,
            found: 6,
            ..
        })
    ));
    let after = segments(&fs)
        .iter()
        .map(|p| fs.contents(p))
        .collect::<Vec<_>>();
    assert_eq!(image, after);
    // Not a failure: the journal goes on, and cutting after the newest block is allowed.
    journal
        .append(5, link(5), &payload(5), true)
        .expect("append");
    journal
        .truncate_after(5)
        .expect("truncate after the newest");
    journal
        .append(6, link(6), &payload(6), true)
        .expect("append");
    assert_eq!(journal.blocks(), Some((0, 6)));
}

#[test]
fn discard_all_deletes_every_segment_and_sets_the_next_block() {
    let fs = MemFileSystem::new();
    let mut journal = journal_with(&fs, 20, 200);
    journal.discard_all(40).expect("discard");
    assert!(segments(&fs).is_empty());
    assert!(
        fs.power_cut_image()
            .list_dir(Path::new(DIR))
            .expect("list")
            .is_empty()
    );
    assert!(matches!(
        journal.append(20, link(20), b"x", true),
        Err(JournalError::Gap {
            expected: 40,
            found: 20,
            ..
        })
    ));
    journal
        .append(40, link(40), &payload(40), true)
        .expect("append");
    journal
        .append(41, link(41), &payload(41), true)
        .expect("append");
    drop(journal);
    let (_, recovered) = open(&fs, Some(39), 200);
    assert_eq!(blocks_of(&recovered), vec![40, 41]);
}

/// A file system that records the image a power cut would leave after
/// every operation that changes something.
#[derive(Debug, Clone)]
struct Recording {
    mem: MemFileSystem,
    images: Arc<std::sync::Mutex<Vec<MemFileSystem>>>,
}

impl Recording {
    fn new(mem: &MemFileSystem) -> Recording {
        Recording {
            mem: mem.clone(),
            images: Arc::default(),
        }
    }

    fn record(&self) {
        let image = self.mem.power_cut_image();
        self.images.lock().expect("images").push(image);
    }

    fn images(&self) -> Vec<MemFileSystem> {
        self.images.lock().expect("images").clone()
    }
}

struct RecordingFile {
    inner: Box<dyn WritableFile>,
    fs: Recording,
}

impl WritableFile for RecordingFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)?;
        self.fs.record();
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()?;
        self.fs.record();
        Ok(())
    }
}

impl FileSystem for Recording {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let inner = self.mem.create(path)?;
        self.record();
        Ok(Box::new(RecordingFile {
            inner,
            fs: self.clone(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.mem.rename(from, to)?;
        self.record();
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.mem.sync_dir(dir)?;
        self.record();
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.mem.remove(path)?;
        self.record();
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.mem.create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.mem.list_dir(dir)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.mem.read(path)
    }

    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        self.mem.map(path)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.mem.file_len(path)
    }
}

#[test]
fn a_power_cut_at_every_step_of_truncate_after_leaves_whole_consecutive_segments() {
    for cut_after in [0, 7, 12, 17, 19] {
        let mem = MemFileSystem::new();
        let recording = Recording::new(&mem);
        let (mut journal, _) =
            Journal::open(Arc::new(recording.clone()), DIR, ID, None, 200).expect("open");
        for block in 0..20 {
            journal
                .append(block, link(block), &payload(block), true)
                .expect("append");
        }
        recording.images.lock().expect("images").clear();
        journal.truncate_after(cut_after).expect("truncate");
        let images = recording.images();
        assert!(!images.is_empty());
        for (step, image) in images.iter().enumerate() {
            let (_, recovered) = open(image, None, 200);
            let blocks = blocks_of(&recovered);
            let newest = *blocks.last().expect("block 0 always stays");
            assert_eq!(blocks, (0..=newest).collect::<Vec<_>>(), "step {step}");
            assert!(
                (cut_after..20).contains(&newest),
                "cut after {cut_after}, step {step}: newest {newest}"
            );
            assert!(recovered.torn_tail.is_none(), "step {step}");
            assert_payloads(&recovered.records);
        }
        let (_, last) = open(images.last().expect("images"), None, 200);
        assert_eq!(
            blocks_of(&last),
            (0..=cut_after).collect::<Vec<_>>(),
            "cut after {cut_after}"
        );
    }
}

#[test]
fn a_power_cut_at_every_step_of_discard_all_leaves_the_newest_segments_whole() {
    let mem = MemFileSystem::new();
    let recording = Recording::new(&mem);
    let (mut journal, _) =
        Journal::open(Arc::new(recording.clone()), DIR, ID, None, 200).expect("open");
    for block in 0..20 {
        journal
            .append(block, link(block), &payload(block), true)
            .expect("append");
    }
    recording.images.lock().expect("images").clear();
    journal.discard_all(20).expect("discard");
    let images = recording.images();
    let last = images.last().expect("images");
    assert!(last.list_dir(Path::new(DIR)).expect("list").is_empty());
    for (step, image) in images.iter().enumerate() {
        // Everything is flushed: whatever is left opens with nothing to recover.
        let (mut journal, recovered) = open(image, Some(19), 200);
        assert!(recovered.records.is_empty(), "step {step}");
        if let Some((first, last)) = journal.blocks() {
            assert_eq!(last, 19, "step {step}: a suffix of the blocks");
            assert_payloads(&journal.read_blocks(first, last).expect("read"));
        }
        journal.append(20, link(20), b"next", true).expect("append");
    }
}

#[test]
fn a_failed_rename_in_truncate_after_closes_the_journal_and_a_reopen_finishes_the_cut() {
    let mem = MemFileSystem::new();
    let faulty = Arc::new(FaultyFileSystem::new(Arc::new(mem.clone())));
    // One segment: block 12 is inside it, so the cut rewrites it.
    let (mut journal, _) = Journal::open(faulty.clone(), DIR, ID, None, 1 << 20).expect("open");
    for block in 0..20 {
        journal
            .append(block, link(block), &payload(block), true)
            .expect("append");
    }
    faulty.inject(Fault::Rename);
    let first = journal.truncate_after(12).expect_err("rename fails");
    assert!(first.to_string().contains("rename"), "{first}");
    faulty.clear();
    let later = journal
        .append(13, link(13), b"x", true)
        .expect_err("closed");
    assert!(later.to_string().contains(&first.to_string()), "{later}");
    assert!(matches!(
        journal.truncate_after(12),
        Err(JournalError::Failed(_))
    ));
    drop(journal);
    // The segment is still whole, with every block.
    let (mut journal, recovered) = open(&mem, None, 1 << 20);
    assert_eq!(blocks_of(&recovered), (0..20).collect::<Vec<_>>());
    journal.truncate_after(12).expect("truncate again");
    journal.append(13, link(13), b"x", true).expect("append");
    let (_, recovered) = open(&mem.power_cut_image(), None, 1 << 20);
    assert_eq!(blocks_of(&recovered), (0..=13).collect::<Vec<_>>());
}

#[test]
fn truncate_after_the_newest_unsynced_block_makes_the_kept_segment_durable() {
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 1 << 20);
    for block in 0..5 {
        journal
            .append(block, link(block), &payload(block), false)
            .expect("append");
    }
    // Block 4 is the newest: the open segment is closed whole, not rewritten.
    journal.truncate_after(4).expect("truncate");
    journal
        .append(5, link(5), &payload(5), true)
        .expect("append");
    let (_, recovered) = open(&fs.power_cut_image(), None, 1 << 20);
    assert_eq!(blocks_of(&recovered), (0..=5).collect::<Vec<_>>());

    // Cut inside unsynced blocks: the rewritten prefix is durable.
    let fs = MemFileSystem::new();
    let (mut journal, _) = open(&fs, None, 1 << 20);
    for block in 0..5 {
        journal
            .append(block, link(block), &payload(block), false)
            .expect("append");
    }
    journal.truncate_after(2).expect("truncate");
    let (_, recovered) = open(&fs.power_cut_image(), None, 1 << 20);
    assert_eq!(blocks_of(&recovered), vec![0, 1, 2]);
    assert_payloads(&recovered.records);
}
