//! The header each segment starts with: which journal format it holds,
//! which datadir wrote it and the block it starts at, checksummed, so a
//! segment copied from another datadir, or renamed, is refused.
//!
//! ```text
//! magic [8] "STRJSEG\n" | version u32 LE (2) | reserved u32 (0) | datadir id [16]
//! | first block u64 LE | xxh3-64 of the 40 bytes before u64 LE
//! ```

use strata_types::datadir::DatadirId;
use xxhash_rust::xxh3::xxh3_64;

/// Marks the start of a segment.
const MAGIC: [u8; 8] = *b"STRJSEG\n";
/// The journal format a segment of this build holds (1 had no header).
pub(super) const VERSION: u32 = 2;
/// Bytes of the header.
pub(super) const HEADER_LEN: usize = 8 + 4 + 4 + 16 + 8 + 8;
const CHECKED: usize = HEADER_LEN - 8;

/// What a segment header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SegmentHeader {
    pub(super) id: DatadirId,
    pub(super) first_block: u64,
}

/// Why a segment header could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum HeaderDamage {
    /// Fewer bytes than a header.
    Short,
    /// The bytes are not a header of this journal format.
    Wrong(String),
}

impl SegmentHeader {
    /// The header's bytes.
    pub(super) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[16..32].copy_from_slice(&self.id.0);
        out[32..40].copy_from_slice(&self.first_block.to_le_bytes());
        let check = xxh3_64(&out[..CHECKED]);
        out[CHECKED..].copy_from_slice(&check.to_le_bytes());
        out
    }

    /// Reads the header at the start of `bytes`.
    pub(super) fn decode(bytes: &[u8]) -> Result<SegmentHeader, HeaderDamage> {
        let Some(header) = bytes.get(..HEADER_LEN) else {
            return Err(HeaderDamage::Short);
        };
        let wrong = |what: String| Err(HeaderDamage::Wrong(what));
        if header[..8] != MAGIC {
            return wrong("no segment magic".into());
        }
        let mut check = [0u8; 8];
        check.copy_from_slice(&header[CHECKED..]);
        if xxh3_64(&header[..CHECKED]) != u64::from_le_bytes(check) {
            return wrong("segment header checksum mismatch".into());
        }
        let mut word = [0u8; 4];
        word.copy_from_slice(&header[8..12]);
        let version = u32::from_le_bytes(word);
        if version != VERSION {
            return wrong(format!(
                "journal format {version}, this build reads {VERSION}"
            ));
        }
        if header[12..16] != [0; 4] {
            return wrong("reserved header bytes are not zero".into());
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&header[16..32]);
        let mut block = [0u8; 8];
        block.copy_from_slice(&header[32..40]);
        Ok(SegmentHeader {
            id: DatadirId(id),
            first_block: u64::from_le_bytes(block),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_and_any_flipped_bit_is_refused() {
        let header = SegmentHeader {
            id: DatadirId([7; 16]),
            first_block: 42,
        };
        let bytes = header.encode();
        assert_eq!(SegmentHeader::decode(&bytes), Ok(header));
        for bit in 0..HEADER_LEN * 8 {
            let mut flipped = bytes;
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(
                matches!(SegmentHeader::decode(&flipped), Err(HeaderDamage::Wrong(_))),
                "bit {bit}"
            );
        }
        assert_eq!(
            SegmentHeader::decode(&bytes[..HEADER_LEN - 1]),
            Err(HeaderDamage::Short)
        );
    }
}
