//! The read-only scan of a journal folder: every segment read and checked
//! (header, identity, name, frames, block order, the chain of roots), and a
//! verdict — the records after the flushed block, the torn tail a writer
//! would cut, the segments of the first format it would convert, and every
//! problem found — without changing a byte. The writer's open applies the
//! verdict only when it holds no problem (`apply.rs`); `verify` reports its
//! problems; [`super::JournalTail`] follows the same torn-tail rule.
//!
//! The torn-tail rule: a damaged frame is an interrupted append only when it
//! is in the newest segment, nothing valid follows it (no later offset holds
//! a frame header that verifies), and the block its header names, when the
//! header verifies, is the next one expected and after redb's flushed head.
//! Zeros after the last frame (a file system's fill after a power cut) are a
//! torn tail too. Anything else is corruption.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy_primitives::B256;
use bytes::Bytes;

use super::frame::{self, Damage, Frame, Link};
use super::segment::{self, HeaderDamage, SegmentHeader};
use super::{
    CONVERT_SUFFIX, JournalError, JournalRecord, JournalResult, REWRITE_SUFFIX, io_err, legacy,
    segment_first_block,
};
use strata_fs::{FileSystem, file_name_of};
use strata_types::DatadirId;

/// A block and its root: what redb's head is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tip {
    /// The block.
    pub block: u64,
    /// Its state root.
    pub root: B256,
}

/// What the journal must agree with: the datadir it belongs to and the
/// block redb holds (the journal continues it).
#[derive(Clone, Copy, Debug)]
pub struct Expect {
    /// The datadir's identity (`None`: the datadir has none yet, as before
    /// the journal's second format: only segments of the first are read).
    pub id: Option<DatadirId>,
    /// redb's flushed head.
    pub flushed: Option<Tip>,
}

/// One segment as the scan found it, in this build's format.
#[derive(Clone, Debug)]
pub(super) struct ScannedSegment {
    pub(super) path: PathBuf,
    pub(super) first_block: u64,
    /// The segment's bytes in this format, without a torn tail (for a
    /// segment of the first format: its conversion).
    pub(super) bytes: Bytes,
    pub(super) frames: Vec<Frame>,
    /// Written in the first format: the writer replaces it by `bytes`.
    pub(super) legacy: bool,
}

impl ScannedSegment {
    pub(super) fn last_block(&self) -> Option<u64> {
        self.frames.last().map(|f| f.block)
    }
}

/// The bytes a writer would cut off the newest segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The segment.
    pub path: PathBuf,
    /// Where the cut starts (in the segment as it is on disk).
    pub offset: u64,
    /// The bytes from there to the end, kept aside before the cut.
    pub cut: Bytes,
    /// Whether no whole frame is left before it: the segment is removed.
    pub remove_segment: bool,
}

/// The verdict of a scan.
#[derive(Debug, Default)]
pub struct Scan {
    pub(super) segments: Vec<ScannedSegment>,
    pub(super) torn: Option<TornTail>,
    /// Temporary files of a rewrite a crash interrupted (the segment they
    /// were for is whole).
    pub(super) stale: Vec<PathBuf>,
    /// Every file name in the folder (to name kept-aside files uniquely).
    pub(super) names: BTreeSet<String>,
    /// The records after the flushed block, in block order.
    pub(super) records: Vec<JournalRecord>,
    /// Everything wrong, in the order found.
    pub problems: Vec<JournalError>,
}

impl Scan {
    /// The oldest and newest whole block of the journal.
    pub fn blocks(&self) -> Option<(u64, u64)> {
        let first = self.segments.iter().find_map(|s| s.frames.first())?.block;
        let last = self.segments.iter().rev().find_map(|s| s.last_block())?;
        Some((first, last))
    }

    /// The torn tail a writer would cut, if there is one.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn.as_ref()
    }

    /// Segments a writer would convert from the first format.
    pub fn legacy_segments(&self) -> impl Iterator<Item = &PathBuf> {
        self.segments.iter().filter(|s| s.legacy).map(|s| &s.path)
    }

    /// The records after the flushed block.
    pub fn records(&self) -> &[JournalRecord] {
        &self.records
    }

    /// Every whole frame, oldest first, with its segment and offset (for
    /// `verify`'s comparison with redb's roots and its decoding of records).
    pub fn frames(&self) -> impl Iterator<Item = ScannedFrame<'_>> {
        self.segments.iter().flat_map(|s| {
            s.frames.iter().map(move |f| ScannedFrame {
                path: &s.path,
                offset: f.start as u64,
                block: f.block,
                link: f.link,
                payload: s.bytes.slice(f.payload.clone()),
            })
        })
    }
}

/// One whole frame a scan found (see [`Scan::frames`]).
#[derive(Clone, Debug)]
pub struct ScannedFrame<'a> {
    /// Its segment.
    pub path: &'a PathBuf,
    /// Where it starts in the segment (this format's bytes).
    pub offset: u64,
    /// Its block.
    pub block: u64,
    /// The roots it links.
    pub link: Link,
    /// Its record's bytes.
    pub payload: Bytes,
}

/// Reads and checks every segment in `dir`, changing nothing. Only an I/O
/// failure is an error; damage is in [`Scan::problems`].
pub fn scan(fs: &Arc<dyn FileSystem>, dir: &Path, expect: Expect) -> JournalResult<Scan> {
    let mut scan = Scan::default();
    let mut named = Vec::new();
    let listing = match fs.list_dir(dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(io_err(dir, "list")(error)),
    };
    for path in listing {
        let name = file_name_of(&path).unwrap_or_default().to_owned();
        if name.ends_with(REWRITE_SUFFIX) || name.ends_with(CONVERT_SUFFIX) {
            scan.stale.push(path.clone());
        } else if let Some(first) = segment_first_block(&name) {
            named.push((first, path.clone()));
        }
        scan.names.insert(name);
    }
    named.sort();
    let mut chain = Chain::new(expect.flushed);
    let count = named.len();
    for (index, (first_block, path)) in named.into_iter().enumerate() {
        let bytes = Bytes::from(fs.read(&path).map_err(io_err(&path, "read"))?);
        let newest = index + 1 == count;
        let found = if legacy::is_legacy(&bytes) {
            convert(
                &path,
                first_block,
                &bytes,
                newest,
                expect,
                &mut chain,
                &mut scan,
            )
        } else {
            read_segment(
                &path,
                first_block,
                &bytes,
                newest,
                expect,
                &mut chain,
                &mut scan,
            )
        };
        if let Some(segment) = found {
            scan.segments.push(segment);
        }
    }
    if let (Some(flushed), Some(first)) = (expect.flushed, scan.records.first())
        && first.block != flushed.block + 1
    {
        scan.problems.push(JournalError::Gap {
            path: dir.to_path_buf(),
            expected: flushed.block + 1,
            found: first.block,
        });
    }
    Ok(scan)
}

/// Which kinds of problem a segment already reported (one of each is enough).
#[derive(Default)]
struct Reported {
    gap: bool,
    chain: bool,
    head_root: bool,
}

/// The block order and roots as the frames go by.
struct Chain {
    flushed: Option<Tip>,
    /// The block the next frame must carry, once one was read.
    expected: Option<u64>,
    /// The root of the frame before.
    root: Option<B256>,
}

impl Chain {
    fn new(flushed: Option<Tip>) -> Chain {
        Chain {
            flushed,
            expected: None,
            root: None,
        }
    }

    /// The root the next frame's parent must be, when one is known.
    fn parent_of(&self, block: u64) -> Option<B256> {
        match self.root {
            Some(root) => Some(root),
            None => self
                .flushed
                .filter(|f| f.block.checked_add(1) == Some(block))
                .map(|f| f.root),
        }
    }

    /// Checks `frame` of `path` against the frames before it, pushing what
    /// is wrong (at most one problem of each kind per segment: `reported`).
    fn follow(
        &mut self,
        path: &Path,
        frame: &Frame,
        reported: &mut Reported,
        problems: &mut Vec<JournalError>,
    ) {
        if let Some(expected) = self.expected
            && frame.block != expected
            && !std::mem::replace(&mut reported.gap, true)
        {
            problems.push(JournalError::Gap {
                path: path.to_path_buf(),
                expected,
                found: frame.block,
            });
        }
        if let Some(parent) = self.parent_of(frame.block)
            && frame.link.parent != parent
            && !std::mem::replace(&mut reported.chain, true)
        {
            problems.push(JournalError::Chain {
                path: path.to_path_buf(),
                offset: frame.start as u64,
                block: frame.block,
                expected: parent,
                found: frame.link.parent,
            });
        }
        if let Some(flushed) = self.flushed
            && frame.block == flushed.block
            && frame.link.root != flushed.root
            && !std::mem::replace(&mut reported.head_root, true)
        {
            problems.push(JournalError::HeadRoot {
                path: path.to_path_buf(),
                offset: frame.start as u64,
                block: frame.block,
                head: flushed.root,
                found: frame.link.root,
            });
        }
        self.expected = frame.block.checked_add(1);
        self.root = Some(frame.link.root);
    }

    /// Whether `block` is after redb's flushed head.
    fn after_flushed(&self, block: u64) -> bool {
        self.flushed.is_none_or(|f| block > f.block)
    }
}

/// Whether the damaged frame at `offset` of `bytes` is a torn append (the
/// rule in this module's documentation). `expected` is the block the next
/// frame must carry, when known.
pub(super) fn is_torn(
    bytes: &[u8],
    offset: usize,
    damage: &Damage,
    newest: bool,
    expected: Option<u64>,
    after_flushed: impl Fn(u64) -> bool,
) -> bool {
    if !newest {
        return false;
    }
    if bytes[offset.min(bytes.len())..].iter().all(|&b| b == 0) {
        return true;
    }
    if frame::next_header_after(bytes, offset).is_some() {
        return false;
    }
    match damage.block() {
        None => true,
        Some(block) => after_flushed(block) && expected.is_none_or(|e| e == block),
    }
}

/// What a damaged frame is, for an error: what is wrong, and where the
/// next valid frame starts when there is one.
pub(super) fn describe(bytes: &[u8], offset: usize, damage: &Damage, newest: bool) -> String {
    let what = damage.describe();
    match frame::next_header_after(bytes, offset) {
        Some(next) => format!("{what}; a valid frame follows at offset {next}"),
        None if !newest => format!("{what} at the end of a segment that is not the newest"),
        None => match damage.block() {
            Some(block) => format!(
                "{what} of block {block}, which is not the next block after the flushed head"
            ),
            None => what.to_owned(),
        },
    }
}

fn corrupt(path: &Path, offset: usize, what: impl Into<String>) -> JournalError {
    JournalError::Corrupt {
        path: path.to_path_buf(),
        offset: offset as u64,
        what: what.into(),
    }
}

/// Checks one segment of this format.
/// Follows `frames` of the segment `path` (its bytes `bytes`) along the
/// chain, and keeps the records of the blocks after the flushed head.
fn follow_frames(path: &Path, frames: &[Frame], bytes: &Bytes, chain: &mut Chain, scan: &mut Scan) {
    let mut reported = Reported::default();
    for found in frames {
        chain.follow(path, found, &mut reported, &mut scan.problems);
        if chain.after_flushed(found.block) {
            scan.records.push(JournalRecord {
                block: found.block,
                link: found.link,
                payload: bytes.slice(found.payload.clone()),
            });
        }
    }
}

fn read_segment(
    path: &Path,
    first_block: u64,
    bytes: &Bytes,
    newest: bool,
    expect: Expect,
    chain: &mut Chain,
    scan: &mut Scan,
) -> Option<ScannedSegment> {
    let whole_torn = |scan: &mut Scan, offset: usize| {
        scan.torn = Some(TornTail {
            path: path.to_path_buf(),
            offset: offset as u64,
            cut: bytes.slice(offset..),
            remove_segment: true,
        });
    };
    let header = match SegmentHeader::decode(bytes) {
        Ok(header) => header,
        Err(HeaderDamage::Short) if newest => {
            whole_torn(scan, 0);
            return None;
        }
        Err(HeaderDamage::Wrong(_)) if newest && bytes.iter().all(|&b| b == 0) => {
            whole_torn(scan, 0);
            return None;
        }
        Err(HeaderDamage::Short) => {
            scan.problems
                .push(corrupt(path, 0, "segment shorter than its header"));
            return None;
        }
        Err(HeaderDamage::Wrong(what)) => {
            scan.problems.push(corrupt(path, 0, what));
            return None;
        }
    };
    if Some(header.id) != expect.id {
        scan.problems.push(JournalError::Foreign {
            path: path.to_path_buf(),
            found: header.id,
            expected: expect.id,
        });
        // Its blocks say nothing about this datadir's: start the order afresh.
        *chain = Chain::new(chain.flushed);
        return None;
    }
    if header.first_block != first_block {
        scan.problems.push(corrupt(
            path,
            0,
            format!(
                "the segment header says it starts at block {}, its name block {first_block}",
                header.first_block
            ),
        ));
        return None;
    }
    let (frames, damage) = frame::scan(bytes, segment::HEADER_LEN);
    let mut valid_len = bytes.len();
    if let Some((offset, damage)) = damage {
        let expected = frames
            .last()
            .map(|f| f.block + 1)
            .or(chain.expected)
            .or(Some(first_block));
        if is_torn(bytes, offset, &damage, newest, expected, |b| {
            chain.after_flushed(b)
        }) {
            scan.torn = Some(TornTail {
                path: path.to_path_buf(),
                offset: offset as u64,
                cut: bytes.slice(offset..),
                remove_segment: frames.is_empty(),
            });
            valid_len = offset;
        } else {
            scan.problems.push(corrupt(
                path,
                offset,
                describe(bytes, offset, &damage, newest),
            ));
            return None;
        }
    }
    if frames.is_empty() {
        if newest {
            // Created, but its first append never landed: it holds no block.
            scan.torn.get_or_insert_with(|| TornTail {
                path: path.to_path_buf(),
                offset: segment::HEADER_LEN as u64,
                cut: Bytes::new(),
                remove_segment: true,
            });
        } else {
            scan.problems.push(corrupt(
                path,
                segment::HEADER_LEN,
                "segment holds no frame but is not the newest",
            ));
        }
        return None;
    }
    if frames[0].block != first_block {
        scan.problems.push(corrupt(
            path,
            frames[0].start,
            format!(
                "first frame is block {}, the segment starts at block {first_block}",
                frames[0].block
            ),
        ));
        return None;
    }
    follow_frames(path, &frames, bytes, chain, scan);
    Some(ScannedSegment {
        path: path.to_path_buf(),
        first_block,
        bytes: bytes.slice(..valid_len),
        frames,
        legacy: false,
    })
}

/// Reads a segment of the first format and converts it, in memory, to this
/// one (each frame's parent root is the root of the frame before; the
/// oldest frame's is redb's head root when it follows the head, else zero:
/// not known). Without a datadir identity it is refused with how to convert.
fn convert(
    path: &Path,
    first_block: u64,
    bytes: &Bytes,
    newest: bool,
    expect: Expect,
    chain: &mut Chain,
    scan: &mut Scan,
) -> Option<ScannedSegment> {
    let Some(id) = expect.id else {
        scan.problems.push(JournalError::Legacy {
            path: path.to_path_buf(),
        });
        return None;
    };
    let (old, damage) = legacy::scan(bytes);
    if let Some((offset, later)) = damage {
        if newest && !later {
            scan.torn = Some(TornTail {
                path: path.to_path_buf(),
                offset: offset as u64,
                cut: bytes.slice(offset..),
                remove_segment: old.is_empty(),
            });
        } else {
            let what = if later {
                "damaged frame (first journal format); a valid frame follows"
            } else {
                "damaged frame (first journal format) at the end of a segment that is not the newest"
            };
            scan.problems.push(corrupt(path, offset, what));
            return None;
        }
    }
    if old.is_empty() {
        return None;
    }
    let mut out = SegmentHeader { id, first_block }.encode().to_vec();
    let mut buffer = Vec::new();
    let mut previous = None;
    for found in &old {
        let parent = previous
            .or_else(|| chain.parent_of(found.block))
            .unwrap_or(B256::ZERO);
        let link = Link {
            parent,
            root: found.root,
        };
        frame::encode(
            found.block,
            link,
            &bytes[found.payload.clone()],
            &mut buffer,
        );
        out.extend_from_slice(&buffer);
        previous = Some(found.root);
    }
    let converted = Bytes::from(out);
    let (frames, damage) = frame::scan(&converted, segment::HEADER_LEN);
    debug_assert!(
        damage.is_none() && frames.len() == old.len(),
        "a conversion reads back"
    );
    let first = frames.first()?;
    if first.block != first_block {
        scan.problems.push(corrupt(
            path,
            old[0].start,
            format!(
                "first frame is block {}, the segment starts at block {first_block}",
                first.block
            ),
        ));
        return None;
    }
    follow_frames(path, &frames, &converted, chain, scan);
    Some(ScannedSegment {
        path: path.to_path_buf(),
        first_block,
        bytes: converted,
        frames,
        legacy: true,
    })
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
