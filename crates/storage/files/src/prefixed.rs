//! Format-2 data blocks: keys share their prefix with the previous key.
//!
//! A block is `entry* | restart(u32)* | restart_count(u32) | count(u32) |
//! checksum(u64)`. An entry is `shared | unshared | value_code` (LEB128
//! varints) then the `unshared` key bytes after the `shared` bytes the key
//! has in common with the previous key, then the value; `value_code` is 0
//! for a tombstone and `len + 1` for a value of `len` bytes. A *restart*
//! entry stores its key whole (`shared = 0`); the first entry of a block is
//! always one, so a block decodes on its own, and the restart offsets let a
//! lookup binary-search the restart keys and scan only from the nearest one.

use std::cmp::Ordering;
use std::ops::Range;

use super::format::{checksum, read_u32, read_u64};

/// Block trailer after the restart offsets: restart count (`u32`), entry
/// count (`u32`), checksum (`u64`).
pub(crate) const PREFIXED_TRAILER: usize = 16;

/// Smallest possible block: one 3-byte entry (empty key, tombstone), one
/// restart offset, the trailer.
pub(crate) const MIN_PREFIXED_BLOCK: usize = 3 + 4 + PREFIXED_TRAILER;

/// Largest encoded varint (a `u32`).
const MAX_VARINT: usize = 5;

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u32) -> usize {
    match v {
        0..0x80 => 1,
        0x80..0x4000 => 2,
        0x4000..0x20_0000 => 3,
        0x20_0000..0x1000_0000 => 4,
        _ => 5,
    }
}

/// Reads a varint at `*at` (before `end`), advancing `*at`; `None` if it
/// runs past `end` or past 5 bytes, or overflows a `u32`.
#[inline]
fn get_varint(buf: &[u8], at: &mut usize, end: usize) -> Option<u32> {
    let mut v = 0u32;
    for i in 0..MAX_VARINT {
        if *at >= end {
            return None;
        }
        let b = *buf.get(*at)?;
        *at += 1;
        let bits = u32::from(b & 0x7f);
        if i == MAX_VARINT - 1 && bits > 0x0f {
            return None;
        }
        v |= bits << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Accumulates the entries of one format-2 block.
#[derive(Debug)]
pub(crate) struct PrefixedBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    count: u32,
    /// Entries between restarts; `u32::MAX` restarts only at the block start.
    interval: u32,
    since_restart: u32,
    first_key: Vec<u8>,
    last_key: Vec<u8>,
}

impl PrefixedBuilder {
    pub(crate) fn new(interval: u32) -> Self {
        PrefixedBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            count: 0,
            interval: interval.max(1),
            since_restart: 0,
            first_key: Vec::new(),
            last_key: Vec::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub(crate) fn entry_count(&self) -> u32 {
        self.count
    }

    pub(crate) fn first_key(&self) -> &[u8] {
        &self.first_key
    }

    /// The encoded size of the block if it were finished now.
    pub(crate) fn encoded_len(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + PREFIXED_TRAILER
    }

    fn next_is_restart(&self) -> bool {
        self.count == 0 || self.since_restart >= self.interval
    }

    /// What adding the entry would add to [`PrefixedBuilder::encoded_len`].
    pub(crate) fn cost(&self, key: &[u8], value: Option<&[u8]>) -> usize {
        let shared = if self.next_is_restart() {
            0
        } else {
            common_prefix(&self.last_key, key)
        };
        let unshared = key.len() - shared;
        let code = value.map_or(0, |v| v.len() as u32 + 1);
        varint_len(shared as u32)
            + varint_len(unshared as u32)
            + varint_len(code)
            + unshared
            + value.map_or(0, <[u8]>::len)
            + if self.next_is_restart() { 4 } else { 0 }
    }

    /// Appends an entry. The caller keeps keys strictly increasing and
    /// sizes in range (key ≤ `u16::MAX`, value ≤ 2^30).
    pub(crate) fn add(&mut self, key: &[u8], value: Option<&[u8]>) {
        debug_assert!(
            self.count == 0 || self.last_key.as_slice() < key,
            "block keys must be strictly increasing: {:02x?} then {key:02x?}",
            self.last_key
        );
        debug_assert!(
            value.is_none_or(|v| v.len() < u32::MAX as usize),
            "a value length must fit the value code"
        );
        let shared = if self.next_is_restart() {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            0
        } else {
            common_prefix(&self.last_key, key)
        };
        if self.count == 0 {
            self.first_key.clear();
            self.first_key.extend_from_slice(key);
        }
        put_varint(&mut self.buf, shared as u32);
        put_varint(&mut self.buf, (key.len() - shared) as u32);
        put_varint(&mut self.buf, value.map_or(0, |v| v.len() as u32 + 1));
        self.buf.extend_from_slice(&key[shared..]);
        if let Some(v) = value {
            self.buf.extend_from_slice(v);
        }
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.count += 1;
        self.since_restart += 1;
    }

    /// Appends the restarts, counts and checksum to `out` and resets the
    /// builder for the next block (keeping its allocations).
    pub(crate) fn finish_into(&mut self, out: &mut Vec<u8>) {
        debug_assert!(!self.is_empty(), "an empty block is never written");
        let expected = self.encoded_len();
        let start = out.len();
        out.extend_from_slice(&self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        let sum = checksum(&out[start..]);
        out.extend_from_slice(&sum.to_le_bytes());
        debug_assert_eq!(
            out.len() - start,
            expected,
            "a finished block has the size encoded_len promised"
        );
        self.buf.clear();
        self.restarts.clear();
        self.count = 0;
        self.since_restart = 0;
        self.last_key.clear();
    }
}

/// One decoded entry header: the key is the previous key's first `shared`
/// bytes followed by `suffix`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub(crate) shared: usize,
    pub(crate) suffix: Range<usize>,
    /// `None` for a tombstone.
    pub(crate) value: Option<Range<usize>>,
    /// Offset of the next entry.
    pub(crate) end: usize,
}

/// A read-only view of one format-2 block (its bytes, trailer included).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PrefixedView<'a> {
    block: &'a [u8],
    count: usize,
    restarts: usize,
    restarts_at: usize,
}

impl<'a> PrefixedView<'a> {
    /// Reads the trailer; `None` if it does not fit the block.
    #[inline]
    pub(crate) fn new(block: &'a [u8]) -> Option<Self> {
        let trailer = block.len().checked_sub(PREFIXED_TRAILER)?;
        let restarts = read_u32(block, trailer)? as usize;
        let count = read_u32(block, trailer + 4)? as usize;
        let restarts_at = trailer.checked_sub(restarts.checked_mul(4)?)?;
        Some(PrefixedView {
            block,
            count,
            restarts,
            restarts_at,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    pub(crate) fn restart_count(&self) -> usize {
        self.restarts
    }

    /// Byte offset of the restart array (end of the entries).
    pub(crate) fn entries_end(&self) -> usize {
        self.restarts_at
    }

    /// The stored checksum and the checksum of the bytes it covers.
    pub(crate) fn checksums(&self) -> (u64, u64) {
        let at = self.block.len() - 8;
        (
            read_u64(self.block, at).unwrap_or(0),
            checksum(&self.block[..at]),
        )
    }

    /// The stored offset of restart `r`.
    #[inline]
    pub(crate) fn restart(&self, r: usize) -> Option<usize> {
        if r >= self.restarts {
            return None;
        }
        read_u32(self.block, self.restarts_at + 4 * r).map(|o| o as usize)
    }

    /// Decodes the entry at `at`; `None` if any part of it lies outside the
    /// entries or a length is out of range.
    #[inline]
    pub(crate) fn decode_at(&self, at: usize) -> Option<Decoded> {
        let end = self.restarts_at;
        let mut p = at;
        let shared = get_varint(self.block, &mut p, end)? as usize;
        let unshared = get_varint(self.block, &mut p, end)? as usize;
        let code = get_varint(self.block, &mut p, end)?;
        let suffix_end = p.checked_add(unshared)?;
        let (value, next) = match code.checked_sub(1) {
            None => (None, suffix_end),
            Some(len) => {
                let value_end = suffix_end.checked_add(len as usize)?;
                (Some(suffix_end..value_end), value_end)
            }
        };
        if next > end {
            return None;
        }
        Some(Decoded {
            shared,
            suffix: p..suffix_end,
            value,
            end: next,
        })
    }

    /// The key of a restart entry (stored whole); `None` if malformed.
    #[inline]
    fn restart_key(&self, r: usize) -> Option<&'a [u8]> {
        let d = self.decode_at(self.restart(r)?)?;
        (d.shared == 0).then(|| &self.block[d.suffix])
    }

    /// Finds `key`: `Ok(Some(entry))` if present, `Ok(None)` if absent,
    /// `Err(())` if the block is malformed. A binary search over the restart
    /// keys, then a scan up to the next restart that compares only the bytes
    /// that differ from the previous key.
    #[inline]
    pub(crate) fn search(&self, key: &[u8]) -> Result<Option<Decoded>, ()> {
        let (mut lo, mut hi) = (0usize, self.restarts);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.restart_key(mid).ok_or(())? <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let Some(r) = lo.checked_sub(1) else {
            return Ok(None);
        };
        let mut at = self.restart(r).ok_or(())?;
        let stop = match self.restart(r + 1) {
            Some(next) => next,
            None => self.restarts_at,
        };
        // `matched`: bytes the previous key has in common with `key` (the
        // previous key is < `key`); the first entry is a restart.
        let mut matched = 0usize;
        let mut first = true;
        while at < stop {
            let d = self.decode_at(at).ok_or(())?;
            if !first {
                match d.shared.cmp(&matched) {
                    // Agrees with the previous key past where that one fell
                    // below `key`: still below.
                    Ordering::Greater => {
                        at = d.end;
                        continue;
                    }
                    // Differs from the previous key before `matched`, upward.
                    Ordering::Less => return Ok(None),
                    Ordering::Equal => {}
                }
            }
            first = false;
            let suffix = &self.block[d.suffix.clone()];
            let rest = key.get(matched..).ok_or(())?;
            let c = common_prefix(suffix, rest);
            match (c == suffix.len(), c == rest.len()) {
                (true, true) => return Ok(Some(d)),
                (false, true) => return Ok(None),
                (true, false) => {}
                (false, false) if suffix[c] > rest[c] => return Ok(None),
                (false, false) => {}
            }
            matched += c;
            at = d.end;
        }
        Ok(None)
    }

    /// The offset of the first entry whose key is ≥ `key`, and the key of
    /// the entry before it (the prefix the next decode shares from), or the
    /// end of the entries. `None` if the block is malformed.
    pub(crate) fn seek(&self, key: &[u8], prev: &mut Vec<u8>) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.restarts);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.restart_key(mid)? <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        prev.clear();
        let mut at = match lo.checked_sub(1) {
            Some(r) => self.restart(r)?,
            None => return Some(0),
        };
        while at < self.restarts_at {
            let d = self.decode_at(at)?;
            let head = prev.get(..d.shared)?;
            let suffix = &self.block[d.suffix.clone()];
            if compare_split(head, suffix, key) != Ordering::Less {
                return Some(at);
            }
            prev.truncate(d.shared);
            prev.extend_from_slice(suffix);
            at = d.end;
        }
        Some(at)
    }
}

/// Compares `head ‖ tail` with `key` without joining them.
fn compare_split(head: &[u8], tail: &[u8], key: &[u8]) -> Ordering {
    let n = head.len().min(key.len());
    match head[..n].cmp(&key[..n]) {
        Ordering::Equal if head.len() > key.len() => Ordering::Greater,
        Ordering::Equal => tail.cmp(&key[head.len()..]),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(interval: u32, entries: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<u8> {
        let mut b = PrefixedBuilder::new(interval);
        let mut expected = b.encoded_len();
        for (k, v) in entries {
            expected += b.cost(k, v.as_deref());
            b.add(k, v.as_deref());
            assert_eq!(b.encoded_len(), expected);
        }
        let mut out = Vec::new();
        b.finish_into(&mut out);
        assert_eq!(out.len(), expected);
        assert!(b.is_empty());
        out
    }

    fn sample() -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        (0..60u32)
            .map(|i| {
                let mut key = vec![0xaa; 20];
                key.extend_from_slice(&(i * 2 * 977).to_be_bytes());
                if i % 9 == 4 {
                    key.push(1);
                }
                ((key), (i % 5 != 0).then(|| vec![i as u8; i as usize % 7]))
            })
            .collect()
    }

    #[test]
    fn varints_round_trip() {
        for v in [
            0u32,
            1,
            127,
            128,
            16_383,
            16_384,
            1 << 21,
            1 << 28,
            u32::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            let mut at = 0;
            assert_eq!(get_varint(&out, &mut at, out.len()), Some(v));
            assert_eq!(at, out.len());
            let mut at = 0;
            assert_eq!(get_varint(&out, &mut at, out.len() - 1), None);
        }
        let mut at = 0;
        assert_eq!(get_varint(&[0xff; 6], &mut at, 6), None);
        let mut at = 0;
        assert_eq!(
            get_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f], &mut at, 5),
            None
        );
    }

    #[test]
    fn entries_round_trip_and_search_finds_them() {
        let entries = sample();
        for interval in [1, 4, 16, u32::MAX] {
            let block = build(interval, &entries);
            let view = PrefixedView::new(&block).unwrap();
            assert_eq!(view.len(), entries.len());
            let (stored, computed) = view.checksums();
            assert_eq!(stored, computed);
            let mut key = Vec::new();
            let mut at = 0;
            for (k, v) in &entries {
                let d = view.decode_at(at).unwrap();
                key.truncate(d.shared);
                key.extend_from_slice(&block[d.suffix.clone()]);
                assert_eq!(&key, k);
                assert_eq!(d.value.clone().map(|r| block[r].to_vec()), *v);
                assert_eq!(view.search(k), Ok(Some(d.clone())), "interval {interval}");
                let mut prev = Vec::new();
                assert_eq!(view.seek(k, &mut prev), Some(at));
                let mut above = k.clone();
                above.push(0);
                assert_eq!(view.search(&above), Ok(None));
                assert_eq!(view.seek(&above, &mut prev), Some(d.end));
                assert_eq!(&prev, k);
                let mut below = k.clone();
                let last = below.last_mut().unwrap();
                *last = last.wrapping_sub(1);
                if !entries.iter().any(|(e, _)| *e == below) {
                    assert_eq!(view.search(&below), Ok(None));
                }
                at = d.end;
            }
            assert_eq!(at, view.entries_end());
            assert_eq!(view.search(&[]), Ok(None));
            assert_eq!(view.search(&[0xff; 30]), Ok(None));
            let mut prev = Vec::new();
            assert_eq!(view.seek(&[0xff], &mut prev), Some(view.entries_end()));
        }
    }

    #[test]
    fn prefixes_are_shared() {
        let entries = sample();
        let whole: usize = entries.iter().map(|(k, _)| k.len()).sum();
        let block = build(u32::MAX, &entries);
        assert!(
            block.len() < whole,
            "{} bytes for {whole} key bytes",
            block.len()
        );
        assert_eq!(PrefixedView::new(&block).unwrap().restart_count(), 1);
        let block = build(16, &entries);
        assert_eq!(PrefixedView::new(&block).unwrap().restart_count(), 4);
    }

    #[test]
    fn malformed_blocks_give_errors_not_panics() {
        assert!(PrefixedView::new(&[0; 15]).is_none());
        let mut huge = vec![0u8; 16];
        huge[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(PrefixedView::new(&huge).is_none());
        let entries = sample();
        let block = build(16, &entries);
        // Every single-byte change must give an answer or an error.
        for at in 0..block.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = block.clone();
                bad[at] ^= flip;
                if let Some(view) = PrefixedView::new(&bad) {
                    for (k, _) in &entries {
                        let _ = view.search(k);
                        let _ = view.seek(k, &mut Vec::new());
                    }
                }
            }
        }
    }
}
