//! The journal as [`Op::Damage`](super::Op::Damage) sees it: the segments
//! in the datadir's `journal/` folder on the harness's `MemFileSystem`,
//! their frames (read with the frame layout of the format fuzzed, see
//! [`frames`]), the damage itself, and what the engine may do after it.
//!
//! The rule encoded (`storage/src/journal/frame.rs`, `mod.rs`): a segment
//! is a run of frames; only the last frame of the newest segment can be an
//! append a crash interrupted, so a flipped bit there may cost that one
//! block — the open cuts it as a torn tail. A cut of the newest segment
//! leaves exactly what a crash during the append of the frame it cuts into
//! (or starts at) leaves, and removing the newest segment whole what a
//! crash before its first frame landed leaves: nothing outside the segment
//! records how far it reached, so these may cost the blocks they remove.
//! Any other damage — a flip before the last frame (whole frames follow
//! it), anything in an older segment, a duplicate or a foreign segment —
//! must be refused by the open or leave the last block served.

use std::path::{Path, PathBuf};

use strata_storage::files::{FileSystem, MemFileSystem};

use super::decode::JournalDamage;

/// The journal's folder inside the datadir (`strata_storage`'s `JOURNAL_DIR`).
pub const JOURNAL_DIR: &str = "journal";

/// A segment of the journal's second format starts with a header:
/// magic "STRJSEG\n", version, reserved, datadir id, first block, check.
const SEGMENT_MAGIC: &[u8; 8] = b"STRJSEG\n";
/// Bytes of the segment header.
const SEGMENT_HEADER: usize = 8 + 4 + 4 + 16 + 8 + 8;
/// Frame magic of the second format ("SJR2").
const MAGIC: u32 = u32::from_le_bytes(*b"SJR2");
/// Bytes of a frame before its payload: magic, payload length, block,
/// header check, parent root, root.
const HEADER: usize = 4 + 4 + 8 + 8 + 32 + 32;
/// Bytes after a frame's payload: the frame check.
const TRAILER: usize = 8;

/// One whole frame of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Its first byte in the segment.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// The block it records.
    pub block: u64,
}

/// One segment file as found before the damage.
#[derive(Clone, Debug)]
pub struct Segment {
    /// Its path on the `MemFileSystem`.
    pub path: PathBuf,
    /// The first block its name carries.
    pub first_block: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Its whole frames, in order.
    pub frames: Vec<Frame>,
}

/// `journal-` + the first block in 20 digits + `.log`.
pub fn segment_name(first_block: u64) -> String {
    format!("journal-{first_block:020}.log")
}

fn first_block_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_prefix("journal-")?.strip_suffix(".log")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The segments in `dir` on `fs`, by first block.
pub fn segments(fs: &MemFileSystem, dir: &Path) -> Vec<Segment> {
    let mut found: Vec<Segment> = fs
        .list_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|path| {
            let first_block = first_block_of(&path)?;
            let bytes = fs.contents(&path)?;
            let frames = frames(&bytes);
            Some(Segment {
                path,
                first_block,
                bytes,
                frames,
            })
        })
        .collect();
    found.sort_by_key(|s| s.first_block);
    found
}

/// The whole frames of `bytes` after the segment header (`storage/src/
/// journal/frame.rs`, format 2), found by their headers (no check is
/// verified: these are the undamaged bytes); stops at the first that does
/// not fit.
pub fn frames(bytes: &[u8]) -> Vec<Frame> {
    let mut out = Vec::new();
    if !bytes.starts_with(SEGMENT_MAGIC) {
        return out;
    }
    let mut start = SEGMENT_HEADER;
    while let Some(header) = bytes.get(start..start + HEADER) {
        let word = |at: usize| {
            u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        if word(0) != MAGIC {
            break;
        }
        let end = start + HEADER + word(4) as usize + TRAILER;
        if end > bytes.len() {
            break;
        }
        let mut block = [0; 8];
        block.copy_from_slice(&header[8..16]);
        out.push(Frame {
            start,
            end,
            block: u64::from_le_bytes(block),
        });
        start = end;
    }
    out
}

/// When segment `index` is the newest and a cut at `offset` removes
/// whole or part frames of it: the first of their blocks. What is left is
/// byte for byte what a crash during that frame's append leaves (with
/// `Durability::EveryBlock` too: nothing outside the segment records how
/// far it reached), so the open may take it for a torn tail.
fn cut_in_newest(segments: &[Segment], index: usize, offset: usize) -> Option<u64> {
    if index + 1 != segments.len() {
        return None;
    }
    let frames = &segments[index].frames;
    frames.iter().find(|f| f.end > offset).map(|f| f.block)
}

/// What the open after the damage may serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowed {
    /// The oldest block it may open at (the model's last block when the
    /// damage must not cost any).
    pub oldest: u64,
    /// Whether it may open with no block at all (the damage may cost every
    /// block from genesis on, which redb does not hold yet).
    pub empty: bool,
    /// Whether the damage changed a byte at all (an input naming a
    /// segment when there is none changes nothing).
    pub changed: bool,
}

impl Allowed {
    /// Damage that may cost no block.
    fn none_lost(last: u64) -> Allowed {
        Allowed {
            oldest: last,
            empty: false,
            changed: true,
        }
    }

    /// Damage that may cost the blocks from `from` on.
    fn from_block(from: Option<u64>, last: u64) -> Allowed {
        match from {
            Some(from) if from <= last => Allowed {
                oldest: from.saturating_sub(1),
                empty: from == 0,
                changed: true,
            },
            _ => Allowed::none_lost(last),
        }
    }
}

/// Where the input's `frame` and `within` land in `segment` (`frame`
/// counts from the last frame back; one past the first frame is the
/// segment header, at 0).
fn offset_in(segment: &Segment, frame: u8, within: u16) -> Option<usize> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(segment.frames.iter().map(|f| f.start))
        .collect();
    let from = starts[starts.len() - 1 - usize::from(frame) % starts.len()];
    let room = segment.bytes.len().checked_sub(from).filter(|&r| r > 0)?;
    Some(from + usize::from(within) % room)
}

/// When `offset` of segment `index` is in the newest segment's last frame
/// (or after it): that frame's block, which a torn-tail cut may drop.
fn torn_tail_at(segments: &[Segment], index: usize, offset: usize) -> Option<u64> {
    if index + 1 != segments.len() {
        return None;
    }
    let last = segments[index].frames.last()?;
    (offset >= last.start).then_some(last.block)
}

/// Does `damage` to the journal in `dir` on `fs`, whose segments before it
/// are `segments`; `last` is the model's last block, and `foreign` gives
/// the foreign store's segment of a block. Returns what the next open may
/// serve.
pub fn apply(
    fs: &MemFileSystem,
    dir: &Path,
    segments: &[Segment],
    damage: JournalDamage,
    last: u64,
    foreign: &mut dyn FnMut(u64) -> Vec<u8>,
) -> Allowed {
    let strict = Allowed::none_lost(last);
    let unchanged = Allowed {
        changed: false,
        ..strict
    };
    // Counted from the newest segment back.
    let pick = |segment: u8| {
        let n = segments.len();
        (n > 0).then(|| n - 1 - usize::from(segment) % n)
    };
    match damage {
        JournalDamage::Flip {
            segment,
            frame,
            within,
            bit,
        } => {
            let Some(index) = pick(segment) else {
                return unchanged;
            };
            let target = &segments[index];
            let Some(offset) = offset_in(target, frame, within) else {
                return unchanged;
            };
            let byte = target.bytes[offset] ^ (1 << (bit % 8));
            fs.patch(&target.path, offset, &[byte])
                .expect("patch a byte inside the segment");
            Allowed::from_block(torn_tail_at(segments, index, offset), last)
        }
        JournalDamage::Truncate {
            segment,
            frame,
            within,
        } => {
            let Some(index) = pick(segment) else {
                return unchanged;
            };
            let target = &segments[index];
            let Some(offset) = offset_in(target, frame, within) else {
                return unchanged;
            };
            fs.truncate(&target.path, offset)
                .expect("truncate inside the segment");
            Allowed::from_block(cut_in_newest(segments, index, offset), last)
        }
        JournalDamage::Delete { segment } => {
            let Some(index) = pick(segment) else {
                return unchanged;
            };
            let target = &segments[index];
            // Durably: a power cut later must not bring it back.
            fs.remove(&target.path).expect("remove a segment");
            fs.sync_dir(dir).expect("sync the journal folder");
            let newest = index + 1 == segments.len();
            Allowed::from_block(newest.then_some(target.first_block), last)
        }
        JournalDamage::Duplicate { segment, name } => {
            let Some(index) = pick(segment) else {
                return unchanged;
            };
            let target = &segments[index];
            let mut first = u64::from(name) % (last + 3);
            if first == target.first_block {
                first = (first + 1) % (last + 3);
            }
            fs.insert(&dir.join(segment_name(first)), target.bytes.clone());
            strict
        }
        JournalDamage::Foreign { over, segment } => {
            let block = match (over, pick(segment)) {
                (true, Some(index)) => segments[index].first_block,
                (true, None) => return unchanged,
                (false, _) => (u64::from(segment) % (last + 3)).max(1),
            };
            // `foreign` gives block 1's segment for genesis.
            fs.insert(&dir.join(segment_name(block)), foreign(block));
            strict
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(block: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_le_bytes().to_vec();
        out.extend((payload.len() as u32).to_le_bytes());
        out.extend(block.to_le_bytes());
        out.extend([0xaa; 8 + 64]);
        out.extend(payload);
        out.extend([0xcc; TRAILER]);
        out
    }

    fn segment(frames: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
        let mut out = SEGMENT_MAGIC.to_vec();
        out.resize(SEGMENT_HEADER, 0);
        out.extend(frames.into_iter().flatten());
        out
    }

    #[test]
    fn frames_are_found_by_their_headers() {
        let mut bytes = segment([frame(4, b"four"), frame(5, b"")]);
        let found = frames(&bytes);
        // 48 bytes of segment header, then 96 + 4 and 96 + 0.
        let want = vec![
            Frame {
                start: 48,
                end: 148,
                block: 4,
            },
            Frame {
                start: 148,
                end: 244,
                block: 5,
            },
        ];
        assert_eq!(found, want);
        bytes.truncate(243);
        assert_eq!(frames(&bytes).len(), 1);
        assert!(frames(&bytes[1..]).is_empty(), "no segment header");
    }

    #[test]
    fn only_the_newest_segments_last_frame_is_a_torn_tail() {
        let fs = MemFileSystem::new();
        let dir = Path::new("/d/journal");
        for (first, blocks) in [(1u64, 1..=3u64), (4, 4..=5)] {
            let bytes = segment(blocks.map(|b| frame(b, &[7; 10])));
            fs.insert(&dir.join(segment_name(first)), bytes);
        }
        let before = segments(&fs, dir);
        assert_eq!(before.len(), 2);
        assert_eq!(before[1].frames.len(), 2);
        let mut foreign = |_| Vec::new();
        // The newest segment's last frame (block 5), first byte: a torn tail.
        let flip = |segment, frame, within| JournalDamage::Flip {
            segment,
            frame,
            within,
            bit: 0,
        };
        let mut oldest = |damage| apply(&fs, dir, &before, damage, 5, &mut foreign).oldest;
        assert_eq!(oldest(flip(0, 0, 0)), 4);
        // Block 4's frame of the newest segment, and the older segment: none.
        assert_eq!(oldest(flip(0, 1, 3)), 5);
        assert_eq!(oldest(flip(1, 0, 33)), 5);
        // A cut of the newest segment may cost the frames it removes, a cut
        // of an older one none.
        let cut = |segment, frame, within| JournalDamage::Truncate {
            segment,
            frame,
            within,
        };
        assert_eq!(oldest(cut(0, 1, 5)), 3);
        assert_eq!(oldest(cut(0, 0, 0)), 4);
        assert_eq!(oldest(cut(1, 2, 0)), 5);
        // Removing the newest segment may cost its blocks, an older one none.
        assert_eq!(oldest(JournalDamage::Delete { segment: 2 }), 3);
        assert_eq!(oldest(JournalDamage::Delete { segment: 1 }), 5);
    }
}
