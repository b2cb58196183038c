//! The per-file existence filter: a blocked Bloom filter. Each key sets
//! [`PROBES`] bits inside one 64-byte line chosen by its hash, so a lookup
//! touches a single cache line (the lines are 64-byte aligned in the file).
//! About [`BITS_PER_KEY`] bits per key give a false-positive rate near 1%.
//!
//! Region layout: `pad | bits (64 × lines) | probes(u32) | lines(u32) |
//! checksum(u64)`, where `pad` is 0..63 zero bytes that align the bits to a
//! multiple of 64 from the file start, and the checksum covers everything
//! before it.

use bytes::Bytes;

use super::format::{CHECKSUM_LEN, checksum, read_u32, read_u64};

/// Filter bits per key.
pub(crate) const BITS_PER_KEY: usize = 10;
/// Bits set (and tested) per key.
pub(crate) const PROBES: u32 = 7;
/// Bytes per filter line (one cache line).
pub(crate) const LINE_BYTES: usize = 64;
const LINE_BITS: u32 = (LINE_BYTES * 8) as u32;
/// Filter region trailer: probe count, line count, checksum.
pub(crate) const FILTER_TRAILER: usize = 4 + 4 + CHECKSUM_LEN;
/// Largest probe count a reader accepts.
pub(crate) const MAX_PROBES: u32 = 16;

/// The 64-bit xxh3 hash of a key, computed once per lookup and reused for
/// every file's filter (see [`crate::SortedFile::may_contain_hash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyHash(pub u64);

impl KeyHash {
    /// Hashes a key.
    #[inline]
    pub fn of(key: &[u8]) -> KeyHash {
        KeyHash(xxhash_rust::xxh3::xxh3_64(key))
    }

    /// The line index and the two values of the double hashing.
    #[inline]
    fn probe_plan(self, lines: u64) -> (usize, u32, u32) {
        let h = self.0;
        // Line choice uses the high bits of h·lines (a multiply-shift range
        // reduction); bit positions come from a re-mixed copy of the hash so
        // they do not correlate with the line.
        let line = ((u128::from(h) * u128::from(lines)) >> 64) as usize;
        let g = (h ^ (h >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let g = g ^ (g >> 29);
        (line, g as u32, ((g >> 32) as u32) | 1)
    }
}

/// Zero bytes placed before the bits of a filter region starting at
/// `offset`, so that the bits start at a multiple of [`LINE_BYTES`].
pub(crate) fn padding_at(offset: u64) -> usize {
    ((LINE_BYTES as u64 - offset % LINE_BYTES as u64) % LINE_BYTES as u64) as usize
}

/// Encodes the filter region, to be written at file offset `offset`, for a
/// set of key hashes.
pub(crate) fn build(hashes: &[u64], offset: u64) -> Vec<u8> {
    let mut builder = FilterBuilder::for_keys(hashes.len() as u64);
    for &h in hashes {
        builder.insert(KeyHash(h));
    }
    builder.finish(offset)
}

/// A filter sized for a number of keys known in advance, filled as the keys
/// arrive: 10 bits per key in memory instead of each key's 64-bit hash.
/// More keys than planned only raise the false-positive rate.
pub(crate) struct FilterBuilder {
    lines: usize,
    bits: Vec<u8>,
}

impl FilterBuilder {
    /// A filter with room for `keys` keys at [`BITS_PER_KEY`].
    pub(crate) fn for_keys(keys: u64) -> Self {
        let lines = (keys as usize)
            .saturating_mul(BITS_PER_KEY)
            .div_ceil(LINE_BYTES * 8)
            .max(1);
        Self {
            lines,
            bits: vec![0u8; lines * LINE_BYTES],
        }
    }

    /// Sets the bits of one key.
    pub(crate) fn insert(&mut self, hash: KeyHash) {
        let (line, h1, h2) = hash.probe_plan(self.lines as u64);
        let base = line * LINE_BYTES;
        for i in 0..PROBES {
            let bit = h1.wrapping_add(i.wrapping_mul(h2)) % LINE_BITS;
            self.bits[base + (bit / 8) as usize] |= 1 << (bit % 8);
        }
    }

    /// Encodes the region, to be written at file offset `offset`.
    pub(crate) fn finish(self, offset: u64) -> Vec<u8> {
        let pad = padding_at(offset);
        let mut out = Vec::with_capacity(pad + self.bits.len() + 16);
        out.resize(pad, 0);
        out.extend_from_slice(&self.bits);
        out.extend_from_slice(&PROBES.to_le_bytes());
        out.extend_from_slice(&(self.lines as u32).to_le_bytes());
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }
}

/// A filter read from a file (the bits are a slice of the file's map).
#[derive(Clone, Debug)]
pub(crate) struct Filter {
    bits: Bytes,
    lines: u64,
    probes: u32,
}

/// Why a filter region failed to decode.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FilterDefect {
    /// The region is too short for its trailer.
    Short,
    /// The stored checksum does not match; (expected, found).
    Checksum(u64, u64),
    /// The probe count is 0 or above [`MAX_PROBES`].
    Probes(u32),
    /// The region length does not match the line count.
    Length { lines: u32, len: usize },
    /// The alignment padding is not zero.
    Padding,
}

impl Filter {
    /// Decodes and checks the filter region `region` (a slice of the map),
    /// which starts at file offset `offset`.
    #[cfg(test)]
    pub(crate) fn decode(region: Bytes, offset: u64) -> Result<Filter, FilterDefect> {
        Self::decode_with(region, offset, checksum)
    }

    /// [`Filter::decode`] with the checksum of the bits computed by
    /// `checksum_of` (the opener hashes them in chunks, letting each chunk's
    /// pages go once hashed).
    pub(crate) fn decode_with(
        region: Bytes,
        offset: u64,
        checksum_of: impl FnOnce(&[u8]) -> u64,
    ) -> Result<Filter, FilterDefect> {
        let body = region
            .len()
            .checked_sub(CHECKSUM_LEN)
            .filter(|_| region.len() >= FILTER_TRAILER)
            .ok_or(FilterDefect::Short)?;
        let expected = read_u64(&region, body).ok_or(FilterDefect::Short)?;
        let found = checksum_of(&region[..body]);
        if expected != found {
            return Err(FilterDefect::Checksum(expected, found));
        }
        let probes = read_u32(&region, body - 8).ok_or(FilterDefect::Short)?;
        let lines = read_u32(&region, body - 4).ok_or(FilterDefect::Short)?;
        if probes == 0 || probes > MAX_PROBES {
            return Err(FilterDefect::Probes(probes));
        }
        let pad = padding_at(offset);
        let bits_len = (lines as usize).checked_mul(LINE_BYTES);
        let expected_len = bits_len.and_then(|b| b.checked_add(pad + FILTER_TRAILER));
        if lines == 0 || expected_len != Some(region.len()) {
            return Err(FilterDefect::Length {
                lines,
                len: region.len(),
            });
        }
        if region[..pad].iter().any(|&b| b != 0) {
            return Err(FilterDefect::Padding);
        }
        Ok(Filter {
            bits: region.slice(pad..pad + lines as usize * LINE_BYTES),
            lines: u64::from(lines),
            probes,
        })
    }

    /// The line a key maps to, and its double-hashing values.
    #[inline]
    fn line(&self, hash: KeyHash) -> Option<(&[u8; LINE_BYTES], u32, u32)> {
        let (line, h1, h2) = hash.probe_plan(self.lines);
        let bytes = self.bits.get(line * LINE_BYTES..(line + 1) * LINE_BYTES)?;
        Some((bytes.try_into().ok()?, h1, h2))
    }

    /// Tests only the first of the key's bits: a cheap, branch-free first
    /// pass that brings the line into cache. `false` means certainly absent.
    #[inline]
    pub(crate) fn first_probe(&self, hash: KeyHash) -> bool {
        match self.line(hash) {
            Some((line, h1, _)) => {
                let bit = h1 % LINE_BITS;
                (line[(bit / 8) as usize] >> (bit % 8)) & 1 == 1
            }
            None => true,
        }
    }

    /// False means the key is certainly absent; true means it may be present.
    /// Branch-free over the probes.
    #[inline]
    pub(crate) fn may_contain(&self, hash: KeyHash) -> bool {
        let Some((line, h1, h2)) = self.line(hash) else {
            return true;
        };
        let mut all = 1u8;
        for i in 0..self.probes {
            let bit = h1.wrapping_add(i.wrapping_mul(h2)) % LINE_BITS;
            all &= line[(bit / 8) as usize] >> (bit % 8);
        }
        all & 1 == 1
    }

    /// Size of the bit array in bytes.
    pub(crate) fn size_bytes(&self) -> usize {
        self.bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter_for(keys: impl Iterator<Item = Vec<u8>>) -> Filter {
        let hashes: Vec<u64> = keys.map(|k| KeyHash::of(&k).0).collect();
        Filter::decode(Bytes::from(build(&hashes, 0)), 0).unwrap()
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let n = 100_000u64;
        let filter = filter_for((0..n).map(|i| i.to_be_bytes().to_vec()));
        assert_eq!(
            filter.size_bytes(),
            (n as usize * BITS_PER_KEY).div_ceil(512) * 64
        );
        for i in 0..n {
            assert!(
                filter.may_contain(KeyHash::of(&i.to_be_bytes())),
                "false negative {i}"
            );
        }
        let probes = 200_000u64;
        let false_positives = (n..n + probes)
            .filter(|i| filter.may_contain(KeyHash::of(&i.to_be_bytes())))
            .count();
        let rate = false_positives as f64 / probes as f64;
        // A classic Bloom filter with 10 bits/key and 7 probes gives 0.82%;
        // confining the probes to one cache line costs a little.
        assert!(rate < 0.02, "false-positive rate {rate}");
        assert!(rate > 0.001, "suspiciously low false-positive rate {rate}");
    }

    #[test]
    fn structured_keys_do_not_hurt_the_rate() {
        // Storage-like keys: few addresses, sequential slots.
        let key = |addr: u64, slot: u64| {
            let mut k = vec![0u8; 52];
            k[12..20].copy_from_slice(&addr.to_be_bytes());
            k[44..52].copy_from_slice(&slot.to_be_bytes());
            k
        };
        let filter = filter_for((0..50u64).flat_map(|a| (0..1000u64).map(move |s| key(a, s))));
        let fp = (50..250u64)
            .flat_map(|a| (0..500u64).map(move |s| key(a, s)))
            .filter(|k| filter.may_contain(KeyHash::of(k)))
            .count();
        let rate = fp as f64 / 100_000.0;
        assert!(rate < 0.02, "false-positive rate {rate}");
    }

    #[test]
    fn empty_filter_has_one_line_and_rejects_everything() {
        let filter = Filter::decode(Bytes::from(build(&[], 0)), 0).unwrap();
        assert_eq!(filter.size_bytes(), LINE_BYTES);
        assert!(!filter.may_contain(KeyHash::of(b"x")));
    }

    #[test]
    fn bits_are_aligned_after_padding() {
        for offset in [0u64, 1, 63, 64, 100, 4095] {
            let region = build(&[1, 2, 3], offset);
            let pad = padding_at(offset);
            assert_eq!((offset + pad as u64) % 64, 0);
            assert_eq!(region.len(), pad + LINE_BYTES + FILTER_TRAILER);
            let filter = Filter::decode(Bytes::from(region.clone()), offset).unwrap();
            assert!(filter.may_contain(KeyHash(1)));
            if pad > 0 {
                // Decoded at the wrong offset the layout does not add up.
                assert!(Filter::decode(Bytes::from(region), offset + 1).is_err());
            }
        }
    }

    /// Rewrites the checksum after a deliberate edit.
    fn resealed(mut region: Vec<u8>) -> Bytes {
        let body = region.len() - CHECKSUM_LEN;
        let sum = checksum(&region[..body]);
        region[body..].copy_from_slice(&sum.to_le_bytes());
        Bytes::from(region)
    }

    #[test]
    fn defects_are_reported() {
        let offset = 10;
        let good = build(&[1, 2, 3], offset);
        let trailer = good.len() - FILTER_TRAILER;
        assert_eq!(
            Filter::decode(Bytes::from(good[..10].to_vec()), offset).unwrap_err(),
            FilterDefect::Short
        );
        let mut flipped = good.clone();
        flipped[60] ^= 1;
        assert!(matches!(
            Filter::decode(Bytes::from(flipped), offset).unwrap_err(),
            FilterDefect::Checksum(..)
        ));
        let mut bad_probes = good.clone();
        bad_probes[trailer..trailer + 4].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            Filter::decode(resealed(bad_probes), offset).unwrap_err(),
            FilterDefect::Probes(0)
        );
        let mut bad_lines = good.clone();
        bad_lines[trailer + 4..trailer + 8].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(
            Filter::decode(resealed(bad_lines), offset).unwrap_err(),
            FilterDefect::Length { lines: 2, .. }
        ));
        let mut bad_pad = good;
        bad_pad[0] = 1;
        assert_eq!(
            Filter::decode(resealed(bad_pad), offset).unwrap_err(),
            FilterDefect::Padding
        );
    }
}
