//! The block journal: each committed block as one framed, checksummed record
//! appended to a segment file — one sequential write (and one `fsync` when
//! the block must be durable) instead of random B-tree inserts.
//!
//! Segments are named by their first block (`journal-BLOCK.log`) and only
//! ever appended to by the handle that created them: a reopened journal
//! starts a new segment. [`Journal::open`] reads every segment, checks that
//! the blocks follow each other without a gap, cuts a torn tail (an append
//! a crash interrupted) off the last segment by a durable rewrite of its
//! whole frames, and refuses corruption anywhere else with the segment and
//! offset. Blocks at or below the caller's flushed block are skipped:
//! [`Journal::release_through`] deletes the segments they alone fill.
//!
//! For unwind (`unwind.rs`): [`Journal::read_blocks`] reads a range of
//! records back from the segments, [`Journal::truncate_after`] durably cuts
//! off every block after one, and [`Journal::discard_all`] deletes every
//! segment. [`JournalTail`] (`tail.rs`) follows a journal another process
//! appends to, read-only.
//!
//! `benches/benches/journal.rs` measured why this is a file and not a redb
//! table: the same 2.6 MB block made durable in 19.5 ms as a file append and
//! fdatasync vs 55.7 ms as one redb value vs 395 ms as today's B-tree
//! inserts (medians of 30 interleaved blocks, one run).

mod frame;
mod record;
mod tail;
mod unwind;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::files::fs::{FileSystem, WritableFile, file_name_of};

pub use record::{BlockRecord, Previous, RecordError, RecordWrite};
pub use tail::JournalTail;

/// Segment files are `journal-` + the first block, 20 digits, + `.log`.
const SEGMENT_PREFIX: &str = "journal-";
const SEGMENT_SUFFIX: &str = ".log";
/// A torn segment is rewritten under this suffix, then renamed over itself.
const REWRITE_SUFFIX: &str = ".log.rewrite";

/// What can go wrong with the journal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// An I/O operation on a journal file failed.
    #[error("journal {path}: {op}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The cause.
        source: io::Error,
    },
    /// A frame is damaged where a crash cannot have left it.
    #[error("journal segment {path} is corrupt at offset {offset}: {what}")]
    Corrupt {
        /// The segment.
        path: PathBuf,
        /// Where the damaged frame starts.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The segments skip a block, or a block is appended out of order.
    #[error("journal {path}: expected block {expected}, found block {found}")]
    Gap {
        /// The segment (or folder) where the gap shows.
        path: PathBuf,
        /// The block that should come next.
        expected: u64,
        /// The block found instead.
        found: u64,
    },
    /// An earlier append or sync failed: nothing more is appended.
    #[error("journal is closed after an earlier failure: {0}")]
    Failed(String),
}

/// Result alias of this module.
pub type JournalResult<T> = std::result::Result<T, JournalError>;

/// A block record recovered from the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalRecord {
    /// The block.
    pub block: u64,
    /// The record's bytes, as appended.
    pub payload: Bytes,
}

/// What [`Journal::open`] found.
#[derive(Clone, Debug, Default)]
pub struct Recovered {
    /// The records after the flushed block, in block order.
    pub records: Vec<JournalRecord>,
    /// The torn tail cut off the last segment, if a crash left one:
    /// (segment, offset, bytes dropped).
    pub torn_tail: Option<(PathBuf, u64, u64)>,
}

/// One segment file on disk.
#[derive(Clone, Debug)]
struct Segment {
    path: PathBuf,
    first_block: u64,
    /// The last whole block in it (None for an empty segment).
    last_block: Option<u64>,
    bytes: u64,
}

/// The open segment new blocks go to.
struct Active {
    file: Box<dyn WritableFile>,
    index: usize,
}

/// An append-only, segmented, checksummed log of block records.
pub struct Journal {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    segments: Vec<Segment>,
    active: Option<Active>,
    /// The block the next append must carry (None: any, for an empty journal).
    next_block: Option<u64>,
    /// A segment is closed (and the next append starts a new one) past this size.
    segment_bytes: u64,
    /// Set by a failed write or sync: the file's tail is unknown.
    failed: Option<String>,
    frame: Vec<u8>,
}

impl Journal {
    /// Opens (creating) the journal in `dir`, recovering the records after
    /// `flushed` (every block when `None`). The next append must be the block
    /// after the last recovered one, or after `flushed` when none is left.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: impl Into<PathBuf>,
        flushed: Option<u64>,
        segment_bytes: u64,
    ) -> JournalResult<(Journal, Recovered)> {
        let dir = dir.into();
        fs.create_dir_all(&dir)
            .map_err(io_err(&dir, "create folder"))?;
        let mut journal = Journal {
            fs,
            dir,
            segments: Vec::new(),
            active: None,
            next_block: flushed.map(|b| b + 1),
            segment_bytes: segment_bytes.max(1),
            failed: None,
            frame: Vec::new(),
        };
        let recovered = journal.recover(flushed)?;
        Ok((journal, recovered))
    }

    fn recover(&mut self, flushed: Option<u64>) -> JournalResult<Recovered> {
        let mut names = Vec::new();
        for path in self
            .fs
            .list_dir(&self.dir)
            .map_err(io_err(&self.dir, "list"))?
        {
            let name = file_name_of(&path).unwrap_or_default();
            if name.ends_with(REWRITE_SUFFIX) {
                // A rewrite a crash interrupted: the original is still whole.
                self.fs
                    .remove(&path)
                    .map_err(io_err(&path, "remove an interrupted rewrite"))?;
            } else if let Some(first) = segment_first_block(name) {
                names.push((first, path));
            }
        }
        names.sort();
        let mut recovered = Recovered::default();
        let count = names.len();
        let mut expected: Option<u64> = None;
        for (index, (first_block, path)) in names.into_iter().enumerate() {
            let bytes = Bytes::from(self.fs.read(&path).map_err(io_err(&path, "read"))?);
            let (frames, tail) = frame::scan(&bytes);
            let mut valid_len = bytes.len();
            match tail {
                frame::Tail::Clean => {}
                frame::Tail::Corrupt { offset, what } => {
                    return Err(JournalError::Corrupt {
                        path,
                        offset: offset as u64,
                        what: what.to_owned(),
                    });
                }
                frame::Tail::Torn { offset } if index + 1 == count => {
                    recovered.torn_tail =
                        Some((path.clone(), offset as u64, (bytes.len() - offset) as u64));
                    valid_len = offset;
                }
                frame::Tail::Torn { offset } => {
                    // Only the last segment can end in an interrupted append.
                    return Err(JournalError::Corrupt {
                        path,
                        offset: offset as u64,
                        what: "damaged frame at the end of a segment that is not the last".into(),
                    });
                }
            }
            let mut last_block = None;
            for frame in &frames {
                let want = expected.unwrap_or(first_block);
                if frame.block != want {
                    return Err(JournalError::Gap {
                        path,
                        expected: want,
                        found: frame.block,
                    });
                }
                expected = Some(frame.block + 1);
                last_block = Some(frame.block);
                if flushed.is_none_or(|f| frame.block > f) {
                    recovered.records.push(JournalRecord {
                        block: frame.block,
                        payload: bytes.slice(frame.payload.clone()),
                    });
                }
            }
            if last_block.is_none() {
                // Nothing whole in it (a torn first append): it holds nothing.
                self.fs
                    .remove(&path)
                    .map_err(io_err(&path, "remove an empty segment"))?;
                self.fs
                    .sync_dir(&self.dir)
                    .map_err(io_err(&self.dir, "sync folder"))?;
                continue;
            }
            if valid_len < bytes.len() {
                self.rewrite_prefix(&path, &bytes[..valid_len])?;
            }
            self.segments.push(Segment {
                path,
                first_block,
                last_block,
                bytes: valid_len as u64,
            });
        }
        if let Some(last) = recovered.records.last() {
            self.next_block = Some(last.block + 1);
        } else if let (Some(next), Some(journal_next)) = (self.next_block, expected)
            && journal_next > next
        {
            // Every journaled block is flushed; keep counting after the journal.
            self.next_block = Some(journal_next);
        }
        if let (Some(flushed), Some(first)) = (flushed, recovered.records.first())
            && first.block != flushed + 1
        {
            return Err(JournalError::Gap {
                path: self.dir.clone(),
                expected: flushed + 1,
                found: first.block,
            });
        }
        Ok(recovered)
    }

    /// Durably replaces `path` with `prefix` (temp file, sync, rename, sync folder).
    fn rewrite_prefix(&self, path: &Path, prefix: &[u8]) -> JournalResult<()> {
        let temp = path.with_extension("log.rewrite");
        let mut file = self.fs.create(&temp).map_err(io_err(&temp, "create"))?;
        file.write_all(prefix).map_err(io_err(&temp, "write"))?;
        file.sync().map_err(io_err(&temp, "sync"))?;
        drop(file);
        self.fs
            .rename(&temp, path)
            .map_err(io_err(path, "rename"))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(io_err(&self.dir, "sync folder"))
    }

    /// Appends `block`'s record; with `durable` it is on disk when this
    /// returns, else it survives a crash of this process but not a power cut.
    /// Returns the bytes appended. After a failure every later append fails
    /// with the first cause.
    pub fn append(&mut self, block: u64, payload: &[u8], durable: bool) -> JournalResult<u64> {
        if let Some(cause) = &self.failed {
            return Err(JournalError::Failed(cause.clone()));
        }
        if let Some(expected) = self.next_block
            && block != expected
        {
            return Err(JournalError::Gap {
                path: self.dir.clone(),
                expected,
                found: block,
            });
        }
        let result = self.append_frame(block, payload, durable);
        if let Err(error) = &result {
            self.failed = Some(error.to_string());
        }
        result
    }

    fn append_frame(&mut self, block: u64, payload: &[u8], durable: bool) -> JournalResult<u64> {
        let full = self
            .active
            .as_ref()
            .is_some_and(|a| self.segments[a.index].bytes >= self.segment_bytes);
        if full {
            // A closed segment is made durable first, so a power cut never
            // keeps a newer segment beside a gap in an older one.
            let mut old = self.active.take().expect("checked above");
            let path = self.segments[old.index].path.clone();
            old.file.sync().map_err(io_err(&path, "sync"))?;
        }
        if self.active.is_none() {
            let path = self.dir.join(segment_name(block));
            let file = self.fs.create(&path).map_err(io_err(&path, "create"))?;
            self.fs
                .sync_dir(&self.dir)
                .map_err(io_err(&self.dir, "sync folder"))?;
            self.segments.push(Segment {
                path,
                first_block: block,
                last_block: None,
                bytes: 0,
            });
            self.active = Some(Active {
                file,
                index: self.segments.len() - 1,
            });
        }
        frame::encode(block, payload, &mut self.frame);
        let active = self.active.as_mut().expect("opened above");
        let segment = &mut self.segments[active.index];
        active
            .file
            .write_all(&self.frame)
            .map_err(io_err(&segment.path, "append"))?;
        if durable {
            active.file.sync().map_err(io_err(&segment.path, "sync"))?;
        } else {
            active
                .file
                .flush()
                .map_err(io_err(&segment.path, "flush"))?;
        }
        segment.bytes += self.frame.len() as u64;
        segment.last_block = Some(block);
        self.next_block = Some(block + 1);
        Ok(self.frame.len() as u64)
    }

    /// Makes every appended block durable.
    pub fn sync(&mut self) -> JournalResult<()> {
        if let Some(cause) = &self.failed {
            return Err(JournalError::Failed(cause.clone()));
        }
        if let Some(active) = self.active.as_mut() {
            let path = &self.segments[active.index].path;
            if let Err(error) = active.file.sync() {
                let error = io_err(path, "sync")(error);
                self.failed = Some(error.to_string());
                return Err(error);
            }
        }
        Ok(())
    }

    /// Deletes the oldest segments that hold only blocks at or below
    /// `flushed` (the caller made them durable elsewhere), oldest first, each
    /// removal synced before the next: a power cut leaves a journal without
    /// a hole. The open segment is kept.
    pub fn release_through(&mut self, flushed: u64) -> JournalResult<()> {
        let active = self.active.as_ref().map(|a| a.index);
        let releasable = self
            .segments
            .iter()
            .enumerate()
            .take_while(|(index, segment)| {
                Some(*index) != active && segment.last_block.is_some_and(|b| b <= flushed)
            })
            .count();
        for _ in 0..releasable {
            let path = self.segments[0].path.clone();
            self.remove_durably(&path, "remove a flushed segment")?;
            self.segments.remove(0);
            if let Some(active) = self.active.as_mut() {
                active.index -= 1;
            }
        }
        Ok(())
    }

    /// The blocks the journal holds, oldest and newest.
    pub fn blocks(&self) -> Option<(u64, u64)> {
        let first = self
            .segments
            .iter()
            .find(|s| s.last_block.is_some())?
            .first_block;
        let last = self.segments.iter().rev().find_map(|s| s.last_block)?;
        Some((first, last))
    }

    /// The bytes of every segment.
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }

    /// The folder of the segments.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn segment_name(first_block: u64) -> String {
    format!("{SEGMENT_PREFIX}{first_block:020}{SEGMENT_SUFFIX}")
}

/// The first block of a segment named by [`segment_name`].
pub(crate) fn segment_first_block(name: &str) -> Option<u64> {
    let digits = name
        .strip_prefix(SEGMENT_PREFIX)?
        .strip_suffix(SEGMENT_SUFFIX)?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Whether `name` is a file the journal makes (for the datadir's clean-up rules).
pub fn is_journal_file_name(name: &str) -> bool {
    segment_first_block(name).is_some()
        || name
            .strip_suffix(".rewrite")
            .is_some_and(|n| segment_first_block(n).is_some())
}

fn io_err(path: &Path, op: &'static str) -> impl FnOnce(io::Error) -> JournalError {
    let path = path.to_path_buf();
    move |source| JournalError::Io { path, op, source }
}

#[cfg(test)]
mod tests;
