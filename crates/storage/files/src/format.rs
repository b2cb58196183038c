//! Byte-level constants and the footer of the sorted-file format
//! (documented in `book/src/reference/formats/sorted-files.md`). All integers are little-endian.

use strata_types::Domain;

use super::meta::{domain_from_id, domain_id};

/// Last 8 bytes of every sorted file.
pub(crate) const MAGIC: [u8; 8] = *b"STRATSST";

/// The format version this build writes; it also reads version 1 (see
/// `layout.rs`).
pub const FORMAT_VERSION: u32 = 2;

/// Size of the fixed footer at the end of the file.
pub(crate) const FOOTER_LEN: usize = 88;

/// Offset inside the footer of the whole-file checksum; the checksum covers
/// every byte of the file before it.
pub(crate) const FOOTER_CHECKSUM_AT: usize = 72;

/// Where each field of the footer starts (`book/src/reference/formats/sorted-files.md`, "Footer"):
/// the offsets the encoder, the decoder and the opener's error messages
/// share.
pub(crate) mod footer_at {
    /// `version: u32`.
    pub(crate) const VERSION: usize = 0;
    /// `domain id: u8`, then 3 reserved bytes.
    pub(crate) const DOMAIN: usize = 4;
    /// The first reserved run (3 bytes).
    pub(crate) const RESERVED_A: std::ops::Range<usize> = 5..8;
    /// `from step: u64`.
    pub(crate) const FROM_STEP: usize = 8;
    /// `to step: u64`.
    pub(crate) const TO_STEP: usize = 16;
    /// `entry count: u64`.
    pub(crate) const ENTRY_COUNT: usize = 24;
    /// `block count: u32`, then 4 reserved bytes.
    pub(crate) const BLOCK_COUNT: usize = 32;
    /// The second reserved run (4 bytes).
    pub(crate) const RESERVED_B: std::ops::Range<usize> = 36..40;
    /// `index offset: u64`.
    pub(crate) const INDEX_OFFSET: usize = 40;
    /// `index length: u64`.
    pub(crate) const INDEX_LEN: usize = 48;
    /// `filter offset: u64`.
    pub(crate) const FILTER_OFFSET: usize = 56;
    /// `filter length: u64`.
    pub(crate) const FILTER_LEN: usize = 64;
    /// `whole-file checksum: u64` (= [`super::FOOTER_CHECKSUM_AT`]).
    pub(crate) const CHECKSUM: usize = super::FOOTER_CHECKSUM_AT;
    /// The magic, the file's last 8 bytes.
    pub(crate) const MAGIC: usize = CHECKSUM + 8;
}

/// Data blocks are closed once adding the next entry would pass this size.
pub(crate) const BLOCK_TARGET: usize = 4096;

/// Largest key accepted (the key length is stored in a `u16`).
pub const MAX_KEY_LEN: usize = u16::MAX as usize;

/// Largest value accepted.
pub const MAX_VALUE_LEN: usize = 1 << 30;

/// Stored in an entry's value length to mark a tombstone.
pub(crate) const TOMBSTONE_LEN: u32 = u32::MAX;

/// Entry header: key length (`u16`) and value length (`u32`).
pub(crate) const ENTRY_HEADER: usize = 6;

/// Block trailer: entry count (`u32`) and checksum (`u64`).
pub(crate) const BLOCK_TRAILER: usize = 12;

/// Fixed part of an index entry: block offset (`u64`), block length
/// (`u32`), entry count (`u32`), first-key length (`u16`).
pub(crate) const INDEX_ENTRY_HEADER: usize = 18;

/// Size of a region checksum (`u64`).
pub(crate) const CHECKSUM_LEN: usize = 8;

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) version: u32,
    pub(crate) domain_id: u8,
    pub(crate) from_step: u64,
    pub(crate) to_step: u64,
    pub(crate) entry_count: u64,
    pub(crate) block_count: u32,
    pub(crate) index_offset: u64,
    pub(crate) index_len: u64,
    pub(crate) filter_offset: u64,
    pub(crate) filter_len: u64,
    pub(crate) checksum: u64,
}

impl Footer {
    /// Encodes everything before the checksum (the first
    /// [`FOOTER_CHECKSUM_AT`] bytes).
    pub(crate) fn encode_fields(&self) -> [u8; FOOTER_CHECKSUM_AT] {
        let mut out = [0u8; FOOTER_CHECKSUM_AT];
        let mut put = |at: usize, bytes: &[u8]| out[at..at + bytes.len()].copy_from_slice(bytes);
        put(footer_at::VERSION, &self.version.to_le_bytes());
        put(footer_at::DOMAIN, &[self.domain_id]);
        // RESERVED_A and RESERVED_B stay zero.
        put(footer_at::FROM_STEP, &self.from_step.to_le_bytes());
        put(footer_at::TO_STEP, &self.to_step.to_le_bytes());
        put(footer_at::ENTRY_COUNT, &self.entry_count.to_le_bytes());
        put(footer_at::BLOCK_COUNT, &self.block_count.to_le_bytes());
        put(footer_at::INDEX_OFFSET, &self.index_offset.to_le_bytes());
        put(footer_at::INDEX_LEN, &self.index_len.to_le_bytes());
        put(footer_at::FILTER_OFFSET, &self.filter_offset.to_le_bytes());
        put(footer_at::FILTER_LEN, &self.filter_len.to_le_bytes());
        out
    }

    /// The checksum and magic that close the file.
    pub(crate) fn encode_tail(&self) -> [u8; FOOTER_LEN - FOOTER_CHECKSUM_AT] {
        const MAGIC_IN_TAIL: usize = footer_at::MAGIC - footer_at::CHECKSUM;
        let mut out = [0u8; FOOTER_LEN - FOOTER_CHECKSUM_AT];
        out[..MAGIC_IN_TAIL].copy_from_slice(&self.checksum.to_le_bytes());
        out[MAGIC_IN_TAIL..].copy_from_slice(&MAGIC);
        out
    }

    /// Decodes a footer; `bytes` must be exactly [`FOOTER_LEN`] long. Only
    /// the layout is decoded here, the values are checked by the opener.
    pub(crate) fn decode(bytes: &[u8; FOOTER_LEN]) -> Footer {
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |at: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[at..at + 4]);
            u32::from_le_bytes(b)
        };
        Footer {
            version: u32_at(footer_at::VERSION),
            domain_id: bytes[footer_at::DOMAIN],
            from_step: u64_at(footer_at::FROM_STEP),
            to_step: u64_at(footer_at::TO_STEP),
            entry_count: u64_at(footer_at::ENTRY_COUNT),
            block_count: u32_at(footer_at::BLOCK_COUNT),
            index_offset: u64_at(footer_at::INDEX_OFFSET),
            index_len: u64_at(footer_at::INDEX_LEN),
            filter_offset: u64_at(footer_at::FILTER_OFFSET),
            filter_len: u64_at(footer_at::FILTER_LEN),
            checksum: u64_at(footer_at::CHECKSUM),
        }
    }

    /// Whether the reserved bytes of an encoded footer are zero.
    pub(crate) fn reserved_are_zero(bytes: &[u8; FOOTER_LEN]) -> bool {
        bytes[footer_at::RESERVED_A].iter().all(|b| *b == 0)
            && bytes[footer_at::RESERVED_B].iter().all(|b| *b == 0)
    }

    pub(crate) fn domain(&self) -> Option<Domain> {
        domain_from_id(self.domain_id)
    }

    pub(crate) fn domain_id_of(domain: Domain) -> u8 {
        domain_id(domain)
    }
}

/// Reads a little-endian `u16` at `at`, if in bounds.
#[inline]
pub(crate) fn read_u16(buf: &[u8], at: usize) -> Option<u16> {
    let b = buf.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// Reads a little-endian `u32` at `at`, if in bounds.
#[inline]
pub(crate) fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian `u64` at `at`, if in bounds.
#[inline]
pub(crate) fn read_u64(buf: &[u8], at: usize) -> Option<u64> {
    let b = buf.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// The 64-bit checksum used for blocks, regions and the whole file.
#[inline]
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trips() {
        let f = Footer {
            version: FORMAT_VERSION,
            domain_id: 3,
            from_step: 5,
            to_step: 9,
            entry_count: 1234,
            block_count: 17,
            index_offset: 100,
            index_len: 200,
            filter_offset: 300,
            filter_len: 400,
            checksum: 0xdead_beef,
        };
        let mut bytes = [0u8; FOOTER_LEN];
        bytes[..FOOTER_CHECKSUM_AT].copy_from_slice(&f.encode_fields());
        bytes[FOOTER_CHECKSUM_AT..].copy_from_slice(&f.encode_tail());
        assert_eq!(Footer::decode(&bytes), f);
        assert!(Footer::reserved_are_zero(&bytes));
        assert_eq!(bytes[FOOTER_LEN - 8..], MAGIC);
    }

    #[test]
    fn readers_refuse_out_of_bounds() {
        let buf = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(read_u16(&buf, 6), Some(0x0807));
        assert_eq!(read_u16(&buf, 7), None);
        assert_eq!(read_u32(&buf, 5), None);
        assert_eq!(read_u64(&buf, 0), Some(0x0807_0605_0403_0201));
        assert_eq!(read_u64(&buf, 1), None);
        assert_eq!(read_u64(&buf, usize::MAX), None);
    }
}
