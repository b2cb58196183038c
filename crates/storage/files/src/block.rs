//! Format-1 data blocks (read for files written before format 2; written
//! only by tests and the benches' baseline): building them, and finding
//! entries inside one.
//!
//! A block is `entry* | offset(u32)* | count(u32) | checksum(u64)`, where an
//! entry is `key_len(u16) | value_len(u32) | key | value` and a value length
//! of [`TOMBSTONE_LEN`] marks a tombstone (no value bytes). The offset array
//! lets a lookup binary-search the keys of a block.

use std::cmp::Ordering;
use std::ops::Range;

use super::format::{BLOCK_TRAILER, ENTRY_HEADER, TOMBSTONE_LEN, checksum, read_u16, read_u32};

/// Accumulates the entries of one block.
#[derive(Debug, Default)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    offsets: Vec<u32>,
    first_key: Vec<u8>,
}

/// Encoded size of one entry (header, key, value) plus its offset slot.
pub(crate) fn entry_cost(key: &[u8], value: Option<&[u8]>) -> usize {
    ENTRY_HEADER + key.len() + value.map_or(0, <[u8]>::len) + 4
}

impl BlockBuilder {
    pub(crate) fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The encoded size of the block if it were finished now.
    pub(crate) fn encoded_len(&self) -> usize {
        self.buf.len() + 4 * self.offsets.len() + BLOCK_TRAILER
    }

    pub(crate) fn first_key(&self) -> &[u8] {
        &self.first_key
    }

    pub(crate) fn entry_count(&self) -> u32 {
        self.offsets.len() as u32
    }

    /// The key of the last entry added, if any (decoded from the buffer).
    fn last_key(&self) -> Option<&[u8]> {
        let at = *self.offsets.last()? as usize;
        let key_len = read_u16(&self.buf, at)? as usize;
        self.buf.get(at + ENTRY_HEADER..at + ENTRY_HEADER + key_len)
    }

    /// Appends an entry. The caller keeps keys sorted and sizes in range
    /// (key ≤ `u16::MAX`, value < `u32::MAX`, block < 4 GiB).
    pub(crate) fn add(&mut self, key: &[u8], value: Option<&[u8]>) {
        debug_assert!(
            self.last_key().is_none_or(|prev| prev < key),
            "block keys must be strictly increasing: {:02x?} then {key:02x?}",
            self.last_key()
        );
        debug_assert!(
            key.len() <= usize::from(u16::MAX),
            "a {}-byte key does not fit a block entry's u16 length",
            key.len()
        );
        debug_assert!(
            value.is_none_or(|v| (v.len() as u64) < u64::from(TOMBSTONE_LEN)),
            "a value must be shorter than the tombstone marker"
        );
        debug_assert!(
            self.encoded_len() + entry_cost(key, value) <= u32::MAX as usize,
            "a block must stay below 4 GiB for its u32 offsets"
        );
        if self.offsets.is_empty() {
            self.first_key.clear();
            self.first_key.extend_from_slice(key);
        }
        self.offsets.push(self.buf.len() as u32);
        self.buf
            .extend_from_slice(&(key.len() as u16).to_le_bytes());
        let value_len = value.map_or(TOMBSTONE_LEN, |v| v.len() as u32);
        self.buf.extend_from_slice(&value_len.to_le_bytes());
        self.buf.extend_from_slice(key);
        if let Some(v) = value {
            self.buf.extend_from_slice(v);
        }
    }

    /// Appends the offset array, count and checksum to `out` and resets the
    /// builder for the next block (keeping its allocations).
    pub(crate) fn finish_into(&mut self, out: &mut Vec<u8>) {
        debug_assert!(!self.is_empty(), "an empty block is never written");
        let start = out.len();
        out.extend_from_slice(&self.buf);
        for off in &self.offsets {
            out.extend_from_slice(&off.to_le_bytes());
        }
        out.extend_from_slice(&(self.offsets.len() as u32).to_le_bytes());
        let sum = checksum(&out[start..]);
        out.extend_from_slice(&sum.to_le_bytes());
        debug_assert_eq!(
            out.len() - start,
            self.encoded_len(),
            "a finished block has the size encoded_len promised"
        );
        self.buf.clear();
        self.offsets.clear();
    }
}

/// Where an entry's key and value lie inside its block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawEntry {
    pub(crate) key: Range<usize>,
    /// `None` for a tombstone.
    pub(crate) value: Option<Range<usize>>,
}

/// A read-only view of one block (its bytes, trailer included).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockView<'a> {
    block: &'a [u8],
    count: usize,
    offsets_at: usize,
}

impl<'a> BlockView<'a> {
    /// Reads the trailer; `None` if it does not fit the block.
    #[inline]
    pub(crate) fn new(block: &'a [u8]) -> Option<Self> {
        let count_at = block.len().checked_sub(BLOCK_TRAILER)?;
        let count = read_u32(block, count_at)? as usize;
        let offsets_at = count_at.checked_sub(count.checked_mul(4)?)?;
        Some(BlockView {
            block,
            count,
            offsets_at,
        })
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Byte offset of the offset array (end of the entries).
    pub(crate) fn entries_end(&self) -> usize {
        self.offsets_at
    }

    /// The stored checksum and the checksum of the bytes it covers.
    pub(crate) fn checksums(&self) -> (u64, u64) {
        let at = self.block.len() - 8;
        let stored = super::format::read_u64(self.block, at).unwrap_or(0);
        (stored, checksum(&self.block[..at]))
    }

    /// The stored start offset of entry `i`.
    #[inline]
    pub(crate) fn entry_offset(&self, i: usize) -> Option<usize> {
        read_u32(self.block, self.offsets_at + 4 * i).map(|o| o as usize)
    }

    /// Decodes entry `i`; `None` if any part of it is out of bounds.
    #[inline]
    pub(crate) fn entry(&self, i: usize) -> Option<RawEntry> {
        if i >= self.count {
            return None;
        }
        let decoded = self.decode_at(self.entry_offset(i)?)?;
        Some(RawEntry {
            key: decoded.suffix,
            value: decoded.value,
        })
    }

    /// Decodes the entry starting at byte `at` (entries are back to back,
    /// which `open` checks); `None` if any part of it is out of bounds.
    #[inline]
    pub(crate) fn decode_at(&self, at: usize) -> Option<super::prefixed::Decoded> {
        let key_len = read_u16(self.block, at)? as usize;
        let value_len = read_u32(self.block, at.checked_add(2)?)?;
        let key_start = at.checked_add(ENTRY_HEADER)?;
        let key_end = key_start.checked_add(key_len)?;
        let (value, end) = if value_len == TOMBSTONE_LEN {
            (None, key_end)
        } else {
            let value_end = key_end.checked_add(value_len as usize)?;
            (Some(key_end..value_end), value_end)
        };
        if end > self.offsets_at {
            return None;
        }
        Some(super::prefixed::Decoded {
            shared: 0,
            suffix: key_start..key_end,
            value,
            end,
        })
    }

    /// The key of entry `i`.
    #[inline]
    fn key(&self, i: usize) -> Option<&'a [u8]> {
        let off = self.entry_offset(i)?;
        let key_len = read_u16(self.block, off)? as usize;
        let start = off.checked_add(ENTRY_HEADER)?;
        let end = start.checked_add(key_len)?;
        if end > self.offsets_at {
            return None;
        }
        self.block.get(start..end)
    }

    /// Binary search: `Ok(i)` if entry `i` has `key`, `Err(i)` with the
    /// insertion point otherwise; `None` if the block is malformed.
    #[inline]
    pub(crate) fn search(&self, key: &[u8]) -> Option<Result<usize, usize>> {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid)?.cmp(key) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(Ok(mid)),
            }
        }
        Some(Err(lo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(entries: &[(&[u8], Option<&[u8]>)]) -> Vec<u8> {
        let mut b = BlockBuilder::default();
        for (k, v) in entries {
            b.add(k, *v);
        }
        let expected = b.encoded_len();
        let mut out = Vec::new();
        b.finish_into(&mut out);
        assert_eq!(out.len(), expected);
        assert!(b.is_empty());
        out
    }

    #[test]
    fn entries_round_trip_and_search_finds_them() {
        let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..50u32)
            .map(|i| {
                let v = (i % 5 != 0).then(|| vec![i as u8; i as usize % 7]);
                ((i * 2).to_be_bytes().to_vec(), v)
            })
            .collect();
        let refs: Vec<(&[u8], Option<&[u8]>)> = entries
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        let block = build(&refs);
        let view = BlockView::new(&block).unwrap();
        assert_eq!(view.len(), 50);
        let (stored, computed) = view.checksums();
        assert_eq!(stored, computed);
        for (i, (k, v)) in entries.iter().enumerate() {
            let e = view.entry(i).unwrap();
            assert_eq!(&block[e.key.clone()], k.as_slice());
            assert_eq!(e.value.map(|r| block[r].to_vec()), *v);
            assert_eq!(view.search(k), Some(Ok(i)));
            let odd = (i as u32 * 2 + 1).to_be_bytes();
            assert_eq!(view.search(&odd), Some(Err(i + 1)));
        }
        assert_eq!(view.search(&[]), Some(Err(0)));
        assert_eq!(view.entry(50), None);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "block keys must be strictly increasing")]
    fn out_of_order_keys_trip_the_debug_assertion() {
        build(&[(b"b", Some(b"x")), (b"a", None)]);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "block keys must be strictly increasing")]
    fn a_repeated_key_trips_the_debug_assertion() {
        build(&[(b"a", Some(b"x")), (b"a", None)]);
    }

    #[test]
    fn malformed_blocks_give_none_not_panics() {
        assert!(BlockView::new(&[0; 11]).is_none());
        let mut huge_count = vec![0u8; 12];
        huge_count[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(BlockView::new(&huge_count).is_none());
        let mut block = build(&[(b"a", Some(b"x")), (b"b", None)]);
        // Point the second entry's offset past the entries.
        let at = BlockView::new(&block).unwrap().entries_end() + 4;
        block[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
        let view = BlockView::new(&block).unwrap();
        assert_eq!(view.entry(1), None);
        assert_eq!(view.search(b"b"), None);
    }
}
