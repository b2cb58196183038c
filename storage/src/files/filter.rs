//! The per-file existence filter: a blocked Bloom filter. Each key sets
//! [`PROBES`] bits inside one 64-byte line chosen by its hash, so a lookup
//! touches a single cache line. About [`BITS_PER_KEY`] bits per key give a
//! false-positive rate near 1%.

use bytes::Bytes;

use super::format::{CHECKSUM_LEN, checksum, read_u32};

/// Filter bits per key.
pub(crate) const BITS_PER_KEY: usize = 10;
/// Bits set (and tested) per key.
pub(crate) const PROBES: u32 = 7;
/// Bytes per filter line (one cache line).
pub(crate) const LINE_BYTES: usize = 64;
const LINE_BITS: u32 = (LINE_BYTES * 8) as u32;
/// Filter region header: probe count (`u32`) and line count (`u32`).
pub(crate) const FILTER_HEADER: usize = 8;
/// Largest probe count a reader accepts.
pub(crate) const MAX_PROBES: u32 = 16;

/// The 64-bit xxh3 hash of a key, computed once per lookup and reused for
/// every file's filter (see [`crate::files::SortedFile::may_contain_hash`]).
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

/// Encodes the filter region for a set of key hashes: header, bit lines,
/// checksum.
pub(crate) fn build(hashes: &[u64]) -> Vec<u8> {
    let lines = (hashes.len() * BITS_PER_KEY)
        .div_ceil(LINE_BYTES * 8)
        .max(1);
    let mut bits = vec![0u8; lines * LINE_BYTES];
    for &h in hashes {
        let (line, h1, h2) = KeyHash(h).probe_plan(lines as u64);
        let base = line * LINE_BYTES;
        for i in 0..PROBES {
            let bit = h1.wrapping_add(i.wrapping_mul(h2)) % LINE_BITS;
            bits[base + (bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    let mut out = Vec::with_capacity(FILTER_HEADER + bits.len() + CHECKSUM_LEN);
    out.extend_from_slice(&PROBES.to_le_bytes());
    out.extend_from_slice(&(lines as u32).to_le_bytes());
    out.extend_from_slice(&bits);
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
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
    /// The region is too short for its header.
    Short,
    /// The stored checksum does not match; (expected, found).
    Checksum(u64, u64),
    /// The probe count is 0 or above [`MAX_PROBES`].
    Probes(u32),
    /// The region length does not match the line count.
    Length { lines: u32, len: usize },
}

impl Filter {
    /// Decodes and checks the filter region `region` (a slice of the map).
    pub(crate) fn decode(region: Bytes) -> Result<Filter, FilterDefect> {
        if region.len() < FILTER_HEADER + CHECKSUM_LEN {
            return Err(FilterDefect::Short);
        }
        let body = region.len() - CHECKSUM_LEN;
        let expected = super::format::read_u64(&region, body).ok_or(FilterDefect::Short)?;
        let found = checksum(&region[..body]);
        if expected != found {
            return Err(FilterDefect::Checksum(expected, found));
        }
        let probes = read_u32(&region, 0).ok_or(FilterDefect::Short)?;
        let lines = read_u32(&region, 4).ok_or(FilterDefect::Short)?;
        if probes == 0 || probes > MAX_PROBES {
            return Err(FilterDefect::Probes(probes));
        }
        let expected_len = (lines as usize)
            .checked_mul(LINE_BYTES)
            .and_then(|b| b.checked_add(FILTER_HEADER + CHECKSUM_LEN));
        if lines == 0 || expected_len != Some(region.len()) {
            return Err(FilterDefect::Length {
                lines,
                len: region.len(),
            });
        }
        Ok(Filter {
            bits: region.slice(FILTER_HEADER..body),
            lines: u64::from(lines),
            probes,
        })
    }

    /// False means the key is certainly absent; true means it may be present.
    ///
    /// Branch-free over the probes: when a lookup walks many files, the only
    /// branch per file is this answer (mostly "absent", well predicted), so
    /// the CPU can overlap the cache misses of several files' lines.
    #[inline]
    pub(crate) fn may_contain(&self, hash: KeyHash) -> bool {
        let (line, h1, h2) = hash.probe_plan(self.lines);
        let Some(line) = self
            .bits
            .get(line * LINE_BYTES..(line + 1) * LINE_BYTES)
            .and_then(|l| <&[u8; LINE_BYTES]>::try_from(l).ok())
        else {
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
        Filter::decode(Bytes::from(build(&hashes))).unwrap()
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
        let filter = Filter::decode(Bytes::from(build(&[]))).unwrap();
        assert_eq!(filter.size_bytes(), LINE_BYTES);
        assert!(!filter.may_contain(KeyHash::of(b"x")));
    }

    #[test]
    fn defects_are_reported() {
        let good = build(&[1, 2, 3]);
        assert_eq!(
            Filter::decode(Bytes::from(good[..10].to_vec())).unwrap_err(),
            FilterDefect::Short
        );
        let mut flipped = good.clone();
        flipped[20] ^= 1;
        assert!(matches!(
            Filter::decode(Bytes::from(flipped)).unwrap_err(),
            FilterDefect::Checksum(..)
        ));
        let mut bad_probes = good.clone();
        bad_probes[0..4].copy_from_slice(&0u32.to_le_bytes());
        let body = bad_probes.len() - 8;
        let sum = checksum(&bad_probes[..body]);
        bad_probes[body..].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(
            Filter::decode(Bytes::from(bad_probes)).unwrap_err(),
            FilterDefect::Probes(0)
        );
        let mut bad_lines = good;
        bad_lines[4..8].copy_from_slice(&2u32.to_le_bytes());
        let body = bad_lines.len() - 8;
        let sum = checksum(&bad_lines[..body]);
        bad_lines[body..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            Filter::decode(Bytes::from(bad_lines)).unwrap_err(),
            FilterDefect::Length { lines: 2, .. }
        ));
    }
}
