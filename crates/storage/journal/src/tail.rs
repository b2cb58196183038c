//! A read-only follower of a journal that another process appends to: each
//! call reads the bytes appended to the segments since the last one, with
//! plain file reads (`std::fs::File` and a seek), and never creates, rewrites
//! or deletes anything, so it works on a read-only mount.
//!
//! What the writer may do meanwhile, and what the tail makes of it:
//! * an append in progress leaves a damaged last frame in the newest segment
//!   (or a segment still without its header): by the writer's own torn-tail
//!   rule (`scan.rs`) the tail stops before it and reads it whole next time;
//! * a released segment disappears: the tail forgets it;
//! * a segment cut by [`super::Journal::truncate_after`] (or by the torn-tail
//!   rewrite of a reopen) is replaced by a shorter copy: the tail sees it
//!   shrink, or its last read frame change, and reads it again from the start.
//!
//! Each segment's header is checked when it is first read: another
//! datadir's segment is [`JournalError::Foreign`], one of the first journal
//! format [`JournalError::Legacy`] (a writer converts it).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::scan::{describe, is_torn};
use super::segment::{self, HeaderDamage, SegmentHeader};
use super::{
    JournalError, JournalRecord, JournalResult, frame, io_err, legacy, segment_first_block,
};
use strata_fs::file_name_of;
use strata_types::DatadirId;

/// How far one segment has been read.
#[derive(Clone, Debug)]
struct Cursor {
    /// The length of the whole frames read, from the segment's start.
    offset: u64,
    /// The checksum ending at `offset` (the last frame read), which tells a
    /// segment only appended to from one the writer replaced.
    last_checksum: Option<[u8; 8]>,
    /// The block the next frame must carry.
    next_block: u64,
}

impl Cursor {
    fn start(first_block: u64) -> Cursor {
        Cursor {
            offset: 0,
            last_checksum: None,
            next_block: first_block,
        }
    }
}

/// A read-only follower of the journal in a folder another process appends
/// to (what `ReadOnlyStateDb` in a second process uses to see blocks the
/// writer journaled but has not flushed yet).
///
/// [`JournalTail::read_after`] returns the whole records appended since the
/// previous call; it keeps a read offset per segment and never reads a byte
/// twice unless the writer replaced the segment.
#[derive(Debug)]
pub struct JournalTail {
    dir: PathBuf,
    /// The datadir the segments must belong to (`None`: it has no identity).
    id: Option<DatadirId>,
    /// Per segment, by its first block.
    cursors: BTreeMap<u64, Cursor>,
}

impl JournalTail {
    /// A follower of the journal of datadir `id` in `dir`. Does no I/O: the
    /// folder need not exist yet.
    pub fn new(dir: impl Into<PathBuf>, id: Option<DatadirId>) -> JournalTail {
        JournalTail {
            dir: dir.into(),
            id,
            cursors: BTreeMap::new(),
        }
    }

    /// Follows segments of datadir `id` from now on (read again from the
    /// start when it changed).
    pub fn set_identity(&mut self, id: Option<DatadirId>) {
        if self.id != id {
            self.id = id;
            self.cursors.clear();
        }
    }

    /// The folder of the followed journal.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Forgets every read offset: the next call reads the journal from the start.
    pub fn reset(&mut self) {
        self.cursors.clear();
    }

    /// Every whole record now in the journal with a block after `after`
    /// (every block when `None`), in block order, that an earlier call has
    /// not read. A record at or below `after` when read is passed over and
    /// not returned later; segments whose blocks all lie at or below `after`
    /// are not read at all. A missing folder holds no records.
    ///
    /// The records are not checked to start at `after + 1`: when the writer
    /// released the segment holding that block (it flushed it elsewhere) or
    /// cut it off (an unwind), the first record returned is a later one, or
    /// an earlier one after an unwind rewrote a segment. The caller compares
    /// the first block with what it expects and decides.
    ///
    /// A damaged frame at the end of the newest segment that the writer
    /// would cut as a torn tail (`scan.rs`: nothing valid after it, zeros,
    /// or the next block's frame not yet whole) is an append in progress:
    /// the records before it are returned and it is read next time. Any
    /// other damage, frames that skip a block, a foreign or misnamed segment
    /// are errors naming the segment and offset; the read offsets then stay
    /// where they were.
    pub fn read_after(&mut self, after: Option<u64>) -> JournalResult<Vec<JournalRecord>> {
        let segments = self.list()?;
        // Work on a copy: an error leaves the offsets where they were, so the
        // records read before it are not lost to the caller.
        let mut cursors = self.cursors.clone();
        cursors.retain(|first, _| segments.iter().any(|(f, _)| f == first));
        let mut records = Vec::new();
        for (index, (first, path)) in segments.iter().enumerate() {
            let next_first = segments.get(index + 1).map(|(f, _)| *f);
            if let (Some(after), Some(next_first)) = (after, next_first)
                && next_first.saturating_sub(1) <= after
            {
                // Its blocks end before the next segment's first one.
                continue;
            }
            let read = SegmentRead {
                path,
                newest: next_first.is_none(),
                after,
                id: self.id,
            };
            read.segment(*first, &mut cursors, &mut records)?;
        }
        self.cursors = cursors;
        Ok(records)
    }

    /// Where this tail stands: the newest segment read, how far, and the
    /// checksum it read last (`None` when unsure: nothing read yet, a frame
    /// not yet whole). [`TailMark::caught_up`] then tells, without this
    /// tail, whether the journal grew since.
    pub fn mark(&self) -> Option<TailMark> {
        let (first, cursor) = self.cursors.last_key_value()?;
        Some(TailMark {
            segment: self.dir.join(super::segment_name(*first)),
            offset: cursor.offset,
            checksum: cursor.last_checksum?,
            next_segment: self.dir.join(super::segment_name(cursor.next_block)),
        })
    }

    /// The segments in the folder, by first block.
    fn list(&self) -> JournalResult<Vec<(u64, PathBuf)>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io_err(&self.dir, "list")(error)),
        };
        let mut segments = Vec::new();
        for entry in entries {
            let path = entry.map_err(io_err(&self.dir, "list"))?.path();
            if let Some(first) = file_name_of(&path).and_then(segment_first_block) {
                segments.push((first, path));
            }
        }
        segments.sort();
        Ok(segments)
    }
}

/// One segment's read in one [`JournalTail::read_after`] call.
struct SegmentRead<'a> {
    path: &'a Path,
    /// Whether it is the newest segment (the one an append may be filling).
    newest: bool,
    after: Option<u64>,
    id: Option<DatadirId>,
}

impl SegmentRead<'_> {
    /// Reads the bytes appended to the segment since its cursor, pushing the
    /// records after `after` to `out`.
    fn segment(
        &self,
        first: u64,
        cursors: &mut BTreeMap<u64, Cursor>,
        out: &mut Vec<JournalRecord>,
    ) -> JournalResult<()> {
        let path = self.path;
        let mut file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                // The writer released it since the listing.
                cursors.remove(&first);
                return Ok(());
            }
            Err(error) => return Err(io_err(path, "open")(error)),
        };
        let cursor = cursors.entry(first).or_insert_with(|| Cursor::start(first));
        if !self.unchanged(&mut file, cursor)? {
            *cursor = Cursor::start(first);
        }
        file.seek(SeekFrom::Start(cursor.offset))
            .map_err(io_err(path, "seek"))?;
        let mut buffer = Vec::new();
        file.read_to_end(&mut buffer)
            .map_err(io_err(path, "read"))?;
        let bytes = Bytes::from(buffer);
        let mut read = cursor.clone();
        let mut from = 0;
        if cursor.offset == 0 {
            match self.header(first, &bytes)? {
                Some(()) => from = segment::HEADER_LEN,
                // Being created: nothing to read yet.
                None => return Ok(()),
            }
            read.offset = segment::HEADER_LEN as u64;
        }
        let (frames, damage) = frame::scan(&bytes, from);
        for found in &frames {
            if found.block != read.next_block {
                return Err(JournalError::Gap {
                    path: path.to_path_buf(),
                    expected: read.next_block,
                    found: found.block,
                });
            }
            if self.after.is_none_or(|after| found.block > after) {
                out.push(JournalRecord {
                    block: found.block,
                    link: found.link,
                    payload: bytes.slice(found.payload.clone()),
                });
            }
            let end = found.end();
            read.next_block = found.block.saturating_add(1);
            read.last_checksum = bytes[end - frame::TRAILER..end].try_into().ok();
            read.offset = cursor.offset + end as u64;
        }
        if let Some((offset, damage)) = damage {
            let after = self.after;
            let expected = Some(read.next_block);
            let in_progress = is_torn(&bytes, offset, &damage, self.newest, expected, |b| {
                after.is_none_or(|a| b > a)
            });
            if !in_progress {
                return Err(JournalError::Corrupt {
                    path: path.to_path_buf(),
                    offset: cursor.offset + offset as u64,
                    what: describe(&bytes, offset, &damage, self.newest),
                });
            }
        }
        *cursor = read;
        Ok(())
    }

    /// Checks the header at the start of a segment's `bytes`: `None` while
    /// the newest segment is still being created (header short or zeros).
    fn header(&self, first: u64, bytes: &[u8]) -> JournalResult<Option<()>> {
        let path = self.path;
        let corrupt = |what: String| JournalError::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            what,
        };
        if legacy::is_legacy(bytes) {
            return Err(JournalError::Legacy {
                path: path.to_path_buf(),
            });
        }
        let header = match SegmentHeader::decode(bytes) {
            Ok(header) => header,
            Err(HeaderDamage::Short) if self.newest => return Ok(None),
            Err(HeaderDamage::Wrong(_)) if self.newest && bytes.iter().all(|&b| b == 0) => {
                return Ok(None);
            }
            Err(HeaderDamage::Short) => {
                return Err(corrupt("segment shorter than its header".into()));
            }
            Err(HeaderDamage::Wrong(what)) => return Err(corrupt(what)),
        };
        if Some(header.id) != self.id {
            return Err(JournalError::Foreign {
                path: path.to_path_buf(),
                found: header.id,
                expected: self.id,
            });
        }
        if header.first_block != first {
            return Err(corrupt(format!(
                "the segment header says it starts at block {}, its name block {first}",
                header.first_block
            )));
        }
        Ok(Some(()))
    }

    /// Whether the segment still holds what the cursor read: it is not
    /// shorter than the offset and the last frame read ends in the same checksum.
    fn unchanged(&self, file: &mut File, cursor: &Cursor) -> JournalResult<bool> {
        let path = self.path;
        let len = file.metadata().map_err(io_err(path, "stat"))?.len();
        if len < cursor.offset {
            return Ok(false);
        }
        let Some(expected) = cursor.last_checksum else {
            return Ok(true);
        };
        let at = cursor.offset - frame::TRAILER as u64;
        file.seek(SeekFrom::Start(at))
            .map_err(io_err(path, "seek"))?;
        let mut stored = [0u8; frame::TRAILER];
        match file.read_exact(&mut stored) {
            Ok(()) => Ok(stored == expected),
            // Cut shorter since the length was read.
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
            Err(error) => Err(io_err(path, "read")(error)),
        }
    }
}

#[cfg(test)]
#[path = "tail_tests.rs"]
mod tests;

/// Where a [`JournalTail`] stood after a read ([`JournalTail::mark`]).
#[derive(Clone, Debug)]
pub struct TailMark {
    segment: PathBuf,
    offset: u64,
    checksum: [u8; frame::TRAILER],
    next_segment: PathBuf,
}

impl TailMark {
    /// Whether the journal holds nothing the tail had not read when it made
    /// this mark, judged without reading any frame: its newest segment is
    /// as long as what was read and still ends in the checksum read last,
    /// and no segment starts at the block after it. An append grows the
    /// segment, a new segment has that name, and an unwind's cut changes
    /// the segment's length or its last frame. `false` on any error.
    pub fn caught_up(&self) -> bool {
        let read_back = || -> io::Result<bool> {
            let mut file = File::open(&self.segment)?;
            if file.metadata()?.len() != self.offset {
                return Ok(false);
            }
            file.seek(SeekFrom::Start(self.offset - frame::TRAILER as u64))?;
            let mut stored = [0u8; frame::TRAILER];
            file.read_exact(&mut stored)?;
            Ok(stored == self.checksum)
        };
        read_back().unwrap_or(false) && !self.next_segment.exists()
    }
}
