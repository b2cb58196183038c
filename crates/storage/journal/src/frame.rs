//! One journal frame: a block's record, framed and checksummed so that every
//! byte deciding what the frame means is covered before it is trusted.
//!
//! ```text
//! magic u32 LE "SJR2" | length u32 LE | block u64 LE | header check u64 LE
//! | parent root [32] | root [32] | payload (length bytes) | frame check u64 LE
//! header check = xxh3-64(magic ‖ length ‖ block)
//! frame check  = xxh3-64(length ‖ block ‖ parent root ‖ root ‖ payload)
//! ```
//!
//! The header check lets a reader trust the length and the block before it
//! reads the payload, and lets the scan look past a damaged frame for any
//! later frame (a header that verifies): a flipped length can no longer make
//! the rest of a segment look like an interrupted append.

use std::ops::Range;

use alloy_primitives::B256;
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

/// Marks the start of a frame ("SJR2").
pub(super) const MAGIC: u32 = u32::from_le_bytes(*b"SJR2");
/// Bytes of the checked header: magic, length, block, header check.
pub(super) const HEADER: usize = 4 + 4 + 8 + 8;
/// Bytes of the two roots after the header.
pub(super) const ROOTS: usize = 32 + 32;
/// Bytes after the payload: the frame check.
pub(super) const TRAILER: usize = 8;
/// The largest payload a frame may carry (a mainnet block's record is a few MB).
pub(super) const MAX_PAYLOAD: usize = 1 << 30;

/// Where the fields of the header lie.
const LEN_AT: Range<usize> = 4..8;
const BLOCK_AT: Range<usize> = 8..16;
const CHECK_AT: Range<usize> = 16..24;

/// The roots a frame links: the state before its block and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// The root of the block before (zero for block 0, which has none).
    pub parent: B256,
    /// The root after the block.
    pub root: B256,
}

/// Encodes one frame of `payload` for `block` into `out` (cleared first).
pub(super) fn encode(block: u64, link: Link, payload: &[u8], out: &mut Vec<u8>) {
    debug_assert!(payload.len() <= MAX_PAYLOAD, "journal payload too large");
    out.clear();
    out.reserve(HEADER + ROOTS + payload.len() + TRAILER);
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    let header_check = xxh3_64(&out[..CHECK_AT.start]);
    out.extend_from_slice(&header_check.to_le_bytes());
    out.extend_from_slice(link.parent.as_slice());
    out.extend_from_slice(link.root.as_slice());
    out.extend_from_slice(payload);
    let check = frame_check(out);
    out.extend_from_slice(&check.to_le_bytes());
}

/// The frame check of a frame's bytes up to (not including) its trailer.
fn frame_check(frame: &[u8]) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(&frame[LEN_AT.start..BLOCK_AT.end]);
    hasher.update(&frame[HEADER..]);
    hasher.digest()
}

/// A whole frame found by [`scan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Frame {
    /// Where the frame starts in the scanned bytes.
    pub(super) start: usize,
    /// The block the frame records.
    pub(super) block: u64,
    /// The roots it links.
    pub(super) link: Link,
    /// Where its payload lies in the scanned bytes.
    pub(super) payload: Range<usize>,
}

impl Frame {
    /// Where the frame ends (after its check) in the scanned bytes.
    pub(super) fn end(&self) -> usize {
        self.payload.end + TRAILER
    }
}

/// A header that verified: the length and block a frame claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) len: usize,
    pub(super) block: u64,
}

/// Why a frame could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Damage {
    /// Fewer bytes than a header are left.
    ShortHeader,
    /// The header does not verify (magic, check or length out of range).
    BadHeader(&'static str),
    /// The header verifies, but the bytes end before the frame does.
    Incomplete(Header),
    /// The header verifies, but the frame check does not.
    Checksum(Header),
}

impl Damage {
    /// What is wrong, for an error message.
    pub(super) fn describe(&self) -> &'static str {
        match self {
            Damage::ShortHeader => "incomplete frame header",
            Damage::BadHeader(what) => what,
            Damage::Incomplete(_) => "incomplete frame",
            Damage::Checksum(_) => "checksum mismatch",
        }
    }

    /// The block of the damaged frame, when its header verified.
    pub(super) fn block(&self) -> Option<u64> {
        match self {
            Damage::Incomplete(header) | Damage::Checksum(header) => Some(header.block),
            Damage::ShortHeader | Damage::BadHeader(_) => None,
        }
    }
}

/// The header at `offset`, if one verifies there.
pub(super) fn header_at(bytes: &[u8], offset: usize) -> Result<Header, Damage> {
    let Some(header) = bytes.get(offset..offset.saturating_add(HEADER)) else {
        return Err(Damage::ShortHeader);
    };
    let u32_at = |range: Range<usize>| {
        let mut word = [0u8; 4];
        word.copy_from_slice(&header[range]);
        u32::from_le_bytes(word)
    };
    let u64_at = |range: Range<usize>| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&header[range]);
        u64::from_le_bytes(word)
    };
    if u32_at(0..4) != MAGIC {
        return Err(Damage::BadHeader("no frame magic"));
    }
    if xxh3_64(&header[..CHECK_AT.start]) != u64_at(CHECK_AT) {
        return Err(Damage::BadHeader("frame header checksum mismatch"));
    }
    let len = u32_at(LEN_AT) as usize;
    if len > MAX_PAYLOAD {
        return Err(Damage::BadHeader("frame length out of range"));
    }
    Ok(Header {
        len,
        block: u64_at(BLOCK_AT),
    })
}

/// The whole frame at `offset`, or why there is none.
pub(super) fn frame_at(bytes: &[u8], offset: usize) -> Result<Frame, Damage> {
    let header = header_at(bytes, offset)?;
    let end = offset + HEADER + ROOTS + header.len + TRAILER;
    let Some(frame) = bytes.get(offset..end) else {
        return Err(Damage::Incomplete(header));
    };
    let body = frame.len() - TRAILER;
    let mut stored = [0u8; TRAILER];
    stored.copy_from_slice(&frame[body..]);
    if frame_check(&frame[..body]) != u64::from_le_bytes(stored) {
        return Err(Damage::Checksum(header));
    }
    let root_at = offset + HEADER;
    Ok(Frame {
        start: offset,
        block: header.block,
        link: Link {
            parent: B256::from_slice(&bytes[root_at..root_at + 32]),
            root: B256::from_slice(&bytes[root_at + 32..root_at + ROOTS]),
        },
        payload: root_at + ROOTS..end - TRAILER,
    })
}

/// Every whole frame of `bytes` from `from`, in order, and the first damaged
/// one: where it starts and what is wrong, without deciding whether a crash
/// left it (that is [`super::scan`]'s rule).
pub(super) fn scan(bytes: &[u8], from: usize) -> (Vec<Frame>, Option<(usize, Damage)>) {
    let mut frames = Vec::new();
    let mut offset = from;
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

/// The first offset after `from` where a frame header verifies: proof that
/// something was written after a damaged frame, so it is not a torn append.
pub(super) fn next_header_after(bytes: &[u8], from: usize) -> Option<usize> {
    let magic = MAGIC.to_le_bytes();
    let start = from.checked_add(1)?;
    let last = bytes.len().checked_sub(HEADER)?;
    (start..=last).find(|&at| bytes[at..at + 4] == magic && header_at(bytes, at).is_ok())
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
