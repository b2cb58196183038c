//! Segments of the first journal format (no segment header; frames whose
//! length lay outside their checksum), read only to convert them:
//!
//! ```text
//! magic u32 LE "SJR1" | payload length u32 LE | block u64 LE | payload | xxh3-64(block ‖ payload) u64 LE
//! ```
//!
//! A frame's root is read from its record (`version u8 | block u64 | root [32]`,
//! [`super::record`]); the parent root is the root of the frame before.

use std::ops::Range;

use alloy_primitives::B256;

/// The first bytes of a segment of the first format.
pub(super) const MAGIC: [u8; 4] = *b"SJR1";
const HEADER: usize = 4 + 4 + 8;
const TRAILER: usize = 8;
/// Where a record keeps its root.
const ROOT_IN_RECORD: Range<usize> = 9..41;

/// Whether `bytes` look like a segment of the first format.
pub(super) fn is_legacy(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// A whole frame of the first format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LegacyFrame {
    pub(super) start: usize,
    pub(super) block: u64,
    pub(super) root: B256,
    pub(super) payload: Range<usize>,
}

impl LegacyFrame {
    pub(super) fn end(&self) -> usize {
        self.payload.end + TRAILER
    }
}

/// The whole frame at `offset`, if one is there and checks.
fn frame_at(bytes: &[u8], offset: usize) -> Option<LegacyFrame> {
    let header = bytes.get(offset..offset.checked_add(HEADER)?)?;
    if header[..4] != MAGIC {
        return None;
    }
    let mut word = [0u8; 4];
    word.copy_from_slice(&header[4..8]);
    let len = u32::from_le_bytes(word) as usize;
    let end = offset.checked_add(HEADER + len + TRAILER)?;
    let frame = bytes.get(offset..end)?;
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&frame[frame.len() - TRAILER..]);
    if xxhash_rust::xxh3::xxh3_64(&frame[8..frame.len() - TRAILER]) != u64::from_le_bytes(stored) {
        return None;
    }
    let mut block = [0u8; 8];
    block.copy_from_slice(&header[8..16]);
    let payload = offset + HEADER..end - TRAILER;
    let root =
        bytes.get(payload.start + ROOT_IN_RECORD.start..payload.start + ROOT_IN_RECORD.end)?;
    Some(LegacyFrame {
        start: offset,
        block: u64::from_le_bytes(block),
        root: B256::from_slice(root),
        payload,
    })
}

/// Every whole frame of a segment of the first format, and the offset of
/// the first damaged one with whether anything whole follows it (a frame
/// that checks, found by trying every later offset).
pub(super) fn scan(bytes: &[u8]) -> (Vec<LegacyFrame>, Option<(usize, bool)>) {
    let mut frames = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        match frame_at(bytes, offset) {
            Some(frame) => {
                offset = frame.end();
                frames.push(frame);
            }
            None => {
                let later = (offset + 1..bytes.len()).any(|at| frame_at(bytes, at).is_some());
                return (frames, Some((offset, later)));
            }
        }
    }
    (frames, None)
}

/// Encodes one frame of the first format (what earlier releases wrote).
#[cfg(test)]
pub(super) fn encode(block: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(payload);
    let checksum = xxhash_rust::xxh3::xxh3_64(&out[8..]);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}
