//! The journal's side of an unwind: reading blocks back from the segments,
//! durably cutting off every block after one, and dropping every segment.
//!
//! Crash safety rests on order: segments are removed one at a time, each
//! removal made durable before the next, and a shortened segment is
//! rewritten whole (temp file, sync, rename, sync folder). Whatever a power
//! cut interrupts, every segment on disk is whole or absent and the ones
//! left hold consecutive blocks, so [`Journal::open`] accepts them.

use std::path::Path;

use bytes::Bytes;

use super::segment::HEADER_LEN as SEGMENT_HEADER;
use super::{Journal, JournalError, JournalRecord, JournalResult, Segment, frame, io_err};

impl Journal {
    /// The records of blocks `from..=to`, in block order, read back from the
    /// segments on disk (appended blocks are read whether synced or not).
    /// Empty when `from > to`.
    ///
    /// A block the journal does not hold is [`JournalError::Gap`] naming the
    /// folder: `expected` is the first missing block and `found` the block
    /// the journal holds in its place — or, when `found < expected`, the
    /// newest block the journal has seen (it ends there). A damaged frame is
    /// [`JournalError::Corrupt`] with its segment and offset.
    pub fn read_blocks(&self, from: u64, to: u64) -> JournalResult<Vec<JournalRecord>> {
        let mut records = Vec::new();
        if from > to {
            return Ok(records);
        }
        let mut expected = from;
        for segment in &self.segments {
            let Some(last) = segment.last_block else {
                continue;
            };
            if last < expected {
                continue;
            }
            if segment.first_block > to {
                break;
            }
            if segment.first_block > expected {
                return Err(self.gap(expected, segment.first_block));
            }
            let (bytes, frames) = self.whole_frames(segment)?;
            let start = expected;
            for frame in frames.iter().filter(|f| f.block >= start && f.block <= to) {
                debug_assert_eq!(frame.block, expected, "whole_frames checks the order");
                records.push(JournalRecord {
                    block: frame.block,
                    link: frame.link,
                    payload: bytes.slice(frame.payload.clone()),
                });
                expected = frame.block + 1;
            }
            if expected > to {
                return Ok(records);
            }
        }
        let newest = self
            .blocks()
            .map(|(_, last)| last)
            .or_else(|| self.next_block.map(|n| n.saturating_sub(1)))
            .unwrap_or(expected.saturating_sub(1));
        Err(self.gap(expected, newest))
    }

    /// Durably removes every record of a block after `block` (for unwind)
    /// and closes the open segment: the next append must be `block + 1` and
    /// starts a new segment. Segments that begin after `block` are deleted,
    /// newest first; the one holding `block` is rewritten to end after its
    /// frame. When no record at or below `block` is left, every segment is
    /// removed.
    ///
    /// A crash part way leaves the journal's blocks from its oldest through
    /// some block between `block` and the old newest one, each segment whole
    /// or absent; calling this again after [`Journal::open`] finishes the cut.
    ///
    /// `block` must be below the block the next append expects (else
    /// [`JournalError::Gap`], nothing changed). After an earlier failure this
    /// refuses with [`JournalError::Failed`]; a failure here closes the
    /// journal like a failed append (reopen it to recover).
    pub fn truncate_after(&mut self, block: u64) -> JournalResult<()> {
        self.check_not_failed()?;
        if let Some(next) = self.next_block
            && block >= next
        {
            return Err(JournalError::Gap {
                path: self.dir.clone(),
                expected: next,
                found: block.saturating_add(1),
            });
        }
        let result = self.cut_after(block);
        self.fail_on(result)
    }

    /// Durably deletes every segment (the caller holds their blocks
    /// elsewhere) and closes the open segment; the next append must be
    /// `next_block`. Segments are removed oldest first, each removal durable
    /// before the next, so a crash part way leaves the newest segments, whole.
    /// Refuses after an earlier failure, and a failure here closes the
    /// journal, as [`Journal::truncate_after`] does.
    pub fn discard_all(&mut self, next_block: u64) -> JournalResult<()> {
        self.check_not_failed()?;
        // The segments are deleted: whatever the open one still buffers is moot.
        self.active = None;
        let result = (|| {
            while let Some(segment) = self.segments.first() {
                let path = segment.path.clone();
                self.remove_durably(&path, "remove a discarded segment")?;
                self.segments.remove(0);
            }
            Ok(())
        })();
        self.fail_on(result)?;
        self.next_block = Some(next_block);
        self.tip_root = None;
        Ok(())
    }

    fn cut_after(&mut self, block: u64) -> JournalResult<()> {
        // Read the segment that keeps `block` first: damage there stops the
        // cut before anything changed.
        let holding = self
            .segments
            .iter()
            .position(|s| s.first_block <= block && s.last_block.is_some_and(|l| l >= block));
        let mut kept_root = None;
        let prefix = match holding {
            Some(index) => {
                let segment = &self.segments[index];
                let (bytes, frames) = self.whole_frames(segment)?;
                let kept = frames.iter().find(|f| f.block == block).ok_or_else(|| {
                    JournalError::Corrupt {
                        path: segment.path.clone(),
                        offset: bytes.len() as u64,
                        what: format!("segment ends before block {block}"),
                    }
                })?;
                kept_root = Some(kept.link.root);
                Some((index, bytes.slice(..kept.end())))
            }
            None => None,
        };
        if let Some(active) = self.active.take() {
            let index = active.index;
            let segment = &self.segments[index];
            let kept_whole = segment.first_block <= block
                && prefix
                    .as_ref()
                    .is_none_or(|(i, p)| *i != index || p.len() as u64 == segment.bytes);
            if kept_whole {
                // A closed segment is durable before a newer one can exist.
                let mut file = active.file;
                file.sync().map_err(io_err(&segment.path, "sync"))?;
            }
        }
        while let Some(segment) = self.segments.last()
            && segment.first_block > block
        {
            let path = segment.path.clone();
            self.remove_durably(&path, "remove a segment after the unwind block")?;
            self.segments.pop();
        }
        if let Some((index, prefix)) = prefix
            && (prefix.len() as u64) < self.segments[index].bytes
        {
            let path = self.segments[index].path.clone();
            self.rewrite_prefix(&path, &prefix)?;
            let segment = &mut self.segments[index];
            segment.bytes = prefix.len() as u64;
            segment.last_block = Some(block);
        }
        self.next_block = Some(block.saturating_add(1));
        // With no frame of `block` left, the caller's next append names its root.
        self.tip_root = kept_root;
        Ok(())
    }

    /// The bytes of `segment` the journal wrote and their frames, checked
    /// whole and consecutive from the segment's first block.
    fn whole_frames(&self, segment: &Segment) -> JournalResult<(Bytes, Vec<frame::Frame>)> {
        let path = &segment.path;
        let mut bytes = Bytes::from(self.fs.read(path).map_err(io_err(path, "read"))?);
        if (bytes.len() as u64) < segment.bytes {
            return Err(JournalError::Corrupt {
                path: path.clone(),
                offset: bytes.len() as u64,
                what: format!(
                    "segment ends before the {} bytes the journal wrote",
                    segment.bytes
                ),
            });
        }
        bytes.truncate(segment.bytes as usize);
        let (frames, damage) = frame::scan(&bytes, SEGMENT_HEADER);
        if let Some((offset, damage)) = damage {
            return Err(JournalError::Corrupt {
                path: path.clone(),
                offset: offset as u64,
                what: damage.describe().to_owned(),
            });
        }
        for (frame, expected) in frames.iter().zip(segment.first_block..) {
            if frame.block != expected {
                return Err(JournalError::Gap {
                    path: path.clone(),
                    expected,
                    found: frame.block,
                });
            }
        }
        Ok((bytes, frames))
    }

    fn gap(&self, expected: u64, found: u64) -> JournalError {
        JournalError::Gap {
            path: self.dir.clone(),
            expected,
            found,
        }
    }

    /// Removes `path` and makes the removal durable before returning.
    pub(super) fn remove_durably(&self, path: &Path, op: &'static str) -> JournalResult<()> {
        self.fs.remove(path).map_err(io_err(path, op))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(io_err(&self.dir, "sync folder"))
    }

    fn check_not_failed(&self) -> JournalResult<()> {
        match &self.failed {
            Some(cause) => Err(JournalError::Failed(cause.clone())),
            None => Ok(()),
        }
    }

    /// Closes the journal with `result`'s error, if it is one.
    fn fail_on(&mut self, result: JournalResult<()>) -> JournalResult<()> {
        if let Err(error) = &result {
            self.failed = Some(error.to_string());
        }
        result
    }
}
