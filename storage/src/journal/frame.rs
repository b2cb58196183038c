//! One journal frame: a block's record, framed and checksummed, and the scan
//! that finds the whole frames of a segment and tells a torn tail (a crash
//! in the middle of an append) from corruption.
//!
//! ```text
//! magic u32 LE | payload length u32 LE | block u64 LE | payload | xxh3-64(block ‖ payload) u64 LE
//! ```

use std::ops::Range;

/// Marks the start of a frame ("SJR1").
pub(super) const MAGIC: u32 = 0x3152_4a53;
/// Bytes before the payload: magic, length, block.
pub(super) const HEADER: usize = 4 + 4 + 8;
/// Bytes after the payload: the checksum.
pub(super) const TRAILER: usize = 8;
/// The largest payload a frame may carry (a mainnet block's record is a few MB).
pub(super) const MAX_PAYLOAD: usize = 1 << 30;

/// Encodes one frame of `payload` for `block` into `out` (cleared first).
pub(super) fn encode(block: u64, payload: &[u8], out: &mut Vec<u8>) {
    debug_assert!(payload.len() <= MAX_PAYLOAD, "journal payload too large");
    out.clear();
    out.reserve(HEADER + payload.len() + TRAILER);
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(payload);
    let checksum = xxhash_rust::xxh3::xxh3_64(&out[8..]);
    out.extend_from_slice(&checksum.to_le_bytes());
}

/// A whole frame found by [`scan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Frame {
    /// The block the frame records.
    pub(super) block: u64,
    /// Where its payload lies in the scanned bytes.
    pub(super) payload: Range<usize>,
}

impl Frame {
    /// Where the frame ends (after its checksum) in the scanned bytes.
    pub(super) fn end(&self) -> usize {
        self.payload.end + TRAILER
    }
}

/// What [`scan`] found after the last whole frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tail {
    /// The bytes end exactly after the last whole frame.
    Clean,
    /// An append interrupted by a crash: from `offset` to the end, the bytes
    /// are an incomplete frame, a last frame that fails its checksum, or
    /// zeros a file system left after the last write.
    Torn {
        /// Where the torn frame starts (the length of the valid prefix).
        offset: usize,
    },
    /// A damaged frame with more bytes after it: not a crash, corruption.
    Corrupt {
        /// Where the damaged frame starts.
        offset: usize,
        /// What is wrong with it.
        what: &'static str,
    },
}

/// Every whole frame of `bytes`, in order, and what follows them.
pub(super) fn scan(bytes: &[u8]) -> (Vec<Frame>, Tail) {
    let (frames, stop) = scan_until_damage(bytes);
    let tail = match stop {
        None => Tail::Clean,
        Some((offset, damage)) => classify(bytes, offset, damage),
    };
    (frames, tail)
}

/// Every whole frame of `bytes`, in order, and the first damaged one: where
/// it starts and what is wrong, without guessing whether a crash left it.
pub(super) fn scan_until_damage(bytes: &[u8]) -> (Vec<Frame>, Option<(usize, Damage)>) {
    let mut frames = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        match frame_at(bytes, offset) {
            Ok(frame) => {
                offset = frame.end();
                frames.push(frame);
            }
            Err(damage) => return (frames, Some((offset, damage))),
        }
    }
    (frames, None)
}

/// Why a frame could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Damage {
    /// The bytes end before the frame does.
    Incomplete,
    /// The frame is wrong; `end` is where it ends when its length could be read.
    Wrong {
        end: Option<usize>,
        what: &'static str,
    },
}

impl Damage {
    /// What is wrong, for an error message.
    pub(super) fn describe(&self) -> &'static str {
        match self {
            Damage::Incomplete => "incomplete frame",
            Damage::Wrong { what, .. } => what,
        }
    }
}

fn frame_at(bytes: &[u8], offset: usize) -> Result<Frame, Damage> {
    let rest = &bytes[offset..];
    if rest.len() < HEADER {
        return Err(Damage::Incomplete);
    }
    let word = |range: Range<usize>| u32::from_le_bytes(rest[range].try_into().expect("4 bytes"));
    let magic = word(0..4);
    let len = word(4..8) as usize;
    if magic != MAGIC {
        return Err(Damage::Wrong {
            end: None,
            what: "no frame magic",
        });
    }
    if len > MAX_PAYLOAD {
        return Err(Damage::Wrong {
            end: None,
            what: "frame length out of range",
        });
    }
    let end = HEADER + len + TRAILER;
    if rest.len() < end {
        return Err(Damage::Incomplete);
    }
    let stored = u64::from_le_bytes(rest[end - TRAILER..end].try_into().expect("8 bytes"));
    if xxhash_rust::xxh3::xxh3_64(&rest[8..end - TRAILER]) != stored {
        return Err(Damage::Wrong {
            end: Some(offset + end),
            what: "checksum mismatch",
        });
    }
    let block = u64::from_le_bytes(rest[8..16].try_into().expect("8 bytes"));
    Ok(Frame {
        block,
        payload: offset + HEADER..offset + HEADER + len,
    })
}

/// A damaged frame is a torn append when nothing written after it survives:
/// its bytes end early, it is the last frame, or only zeros (a file system's
/// fill of a size extended before the data landed) follow it.
fn classify(bytes: &[u8], offset: usize, damage: Damage) -> Tail {
    let zeros_from = |from: usize| bytes[from.min(bytes.len())..].iter().all(|&b| b == 0);
    match damage {
        Damage::Incomplete => Tail::Torn { offset },
        Damage::Wrong { end: Some(end), .. } if zeros_from(end) => Tail::Torn { offset },
        Damage::Wrong { .. } if zeros_from(offset) => Tail::Torn { offset },
        Damage::Wrong { what, .. } => Tail::Corrupt { offset, what },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(blocks: &[(u64, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut frame = Vec::new();
        for (block, payload) in blocks {
            encode(*block, payload, &mut frame);
            out.extend_from_slice(&frame);
        }
        out
    }

    #[test]
    fn whole_frames_scan_clean() {
        let bytes = frames(&[(7, b"seven"), (8, b""), (9, &[0xab; 300])]);
        let (found, tail) = scan(&bytes);
        assert_eq!(tail, Tail::Clean);
        assert_eq!(
            found.iter().map(|f| f.block).collect::<Vec<_>>(),
            vec![7, 8, 9]
        );
        assert_eq!(&bytes[found[0].payload.clone()], b"seven");
        assert_eq!(bytes[found[2].payload.clone()].len(), 300);
    }

    #[test]
    fn a_cut_anywhere_in_the_last_frame_is_a_torn_tail() {
        let bytes = frames(&[(1, b"first"), (2, &[5; 64])]);
        let last_start = HEADER + 5 + TRAILER;
        for cut in last_start + 1..bytes.len() {
            let (found, tail) = scan(&bytes[..cut]);
            assert_eq!(found.len(), 1, "cut at {cut}");
            assert_eq!(tail, Tail::Torn { offset: last_start }, "cut at {cut}");
        }
    }

    #[test]
    fn zeros_after_the_last_frame_are_a_torn_tail() {
        let mut bytes = frames(&[(1, b"first")]);
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 4096]);
        assert_eq!(scan(&bytes).1, Tail::Torn { offset: end });
    }

    #[test]
    fn a_flipped_byte_before_the_last_frame_is_corruption() {
        let mut bytes = frames(&[(1, b"first"), (2, b"second")]);
        bytes[HEADER + 2] ^= 0x40;
        let (found, tail) = scan(&bytes);
        assert!(found.is_empty());
        assert_eq!(
            tail,
            Tail::Corrupt {
                offset: 0,
                what: "checksum mismatch"
            }
        );
    }

    #[test]
    fn a_flipped_magic_before_more_frames_is_corruption() {
        let mut bytes = frames(&[(1, b"first"), (2, b"second"), (3, b"third")]);
        let second = HEADER + 5 + TRAILER;
        bytes[second] ^= 0xff;
        let (found, tail) = scan(&bytes);
        assert_eq!(found.len(), 1);
        assert_eq!(
            tail,
            Tail::Corrupt {
                offset: second,
                what: "no frame magic"
            }
        );
    }

    #[test]
    fn a_flipped_byte_in_the_last_frame_is_indistinguishable_from_a_torn_append() {
        let mut bytes = frames(&[(1, b"first"), (2, b"second")]);
        let last = bytes.len() - TRAILER - 1;
        bytes[last] ^= 1;
        let (found, tail) = scan(&bytes);
        assert_eq!(found.len(), 1);
        assert!(matches!(tail, Tail::Torn { .. }));
    }
}
