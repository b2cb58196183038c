//! A read-only follower of a journal that another process appends to: each
//! call reads the bytes appended to the segments since the last one, with
//! plain file reads (`std::fs::File` and a seek), and never creates, rewrites
//! or deletes anything, so it works on a read-only mount.
//!
//! What the writer may do meanwhile, and what the tail makes of it:
//! * an append in progress leaves an incomplete frame at the end of the
//!   newest segment: the tail stops before it and reads it whole next time;
//! * a released segment disappears: the tail forgets it;
//! * a segment cut by [`super::Journal::truncate_after`] (or by the torn-tail
//!   rewrite of a reopen) is replaced by a shorter copy: the tail sees it
//!   shrink, or its last read frame change, and reads it again from the start.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::{JournalError, JournalRecord, JournalResult, frame, io_err, segment_first_block};
use crate::files::fs::file_name_of;

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
    /// Per segment, by its first block.
    cursors: BTreeMap<u64, Cursor>,
}

impl JournalTail {
    /// A follower of the journal in `dir`. Does no I/O: the folder need not
    /// exist yet.
    pub fn new(dir: impl Into<PathBuf>) -> JournalTail {
        JournalTail {
            dir: dir.into(),
            cursors: BTreeMap::new(),
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
    /// An incomplete frame at the end of the newest segment is an append in
    /// progress: the records before it are returned and it is read next
    /// time. A frame that is whole but fails its check, frames that skip a
    /// block, or an incomplete frame at the end of an older segment are
    /// [`JournalError::Corrupt`] / [`JournalError::Gap`] naming the segment
    /// and offset; the read offsets then stay where they were.
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
            };
            read.segment(*first, &mut cursors, &mut records)?;
        }
        self.cursors = cursors;
        Ok(records)
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
        let (frames, damage) = frame::scan_until_damage(&bytes);
        let mut read = cursor.clone();
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
                    payload: bytes.slice(found.payload.clone()),
                });
            }
            let end = found.end();
            read.next_block = found.block.saturating_add(1);
            read.last_checksum = bytes[end - frame::TRAILER..end].try_into().ok();
            read.offset = cursor.offset + end as u64;
        }
        match damage {
            None => {}
            Some((_, frame::Damage::Incomplete)) if self.newest => {
                // An append in progress: read it whole next time.
            }
            Some((offset, damage)) => {
                let what = match damage {
                    frame::Damage::Incomplete => {
                        "incomplete frame at the end of a segment that is not the newest"
                    }
                    wrong => wrong.describe(),
                };
                return Err(JournalError::Corrupt {
                    path: path.to_path_buf(),
                    offset: cursor.offset + offset as u64,
                    what: what.to_owned(),
                });
            }
        }
        *cursor = read;
        Ok(())
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
