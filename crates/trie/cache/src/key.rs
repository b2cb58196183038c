//! Tail keys stored inline: nibble paths packed sixteen to a word, so a
//! probe compares words in the entry itself instead of chasing a heap
//! pointer, and hashes one word per sixteen nibbles.

use std::hash::{Hash, Hasher};

/// Inline capacity in 64-bit words of sixteen nibbles: 80 nibbles, a
/// storage-trie path 16 levels below its account (a storage trie would need
/// ~2^64 slots to be that deep along a keccak path).
const WORDS: usize = 5;

/// The longest key kept inline, in nibbles.
const INLINE_NIBBLES: usize = 16 * WORDS;

/// A cache key. Its representation is a function of the key bytes alone
/// (packed if every byte is a nibble and it fits, else on the heap), so
/// equal keys always compare equal field by field.
#[derive(Clone, Eq)]
pub(crate) enum PathKey {
    /// `len` nibbles: nibble `i` is bits `4·(i ^ 1)..` of byte `i / 2` of
    /// `words` read as little-endian bytes, i.e. two per byte, high nibble
    /// first. Unused nibbles and words are zero.
    Packed { len: u8, words: [u64; WORDS] },
    /// Longer keys, and keys with a byte that is not a nibble.
    Heap(Box<[u8]>),
}

impl PathKey {
    #[inline(always)]
    pub(crate) fn new(key: &[u8]) -> Self {
        if key.len() <= INLINE_NIBBLES
            && let Some(words) = pack(key)
        {
            return PathKey::Packed {
                len: key.len() as u8,
                words,
            };
        }
        PathKey::Heap(key.into())
    }

    /// The original key's length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            PathKey::Packed { len, .. } => usize::from(*len),
            PathKey::Heap(bytes) => bytes.len(),
        }
    }
}

impl PartialEq for PathKey {
    /// Word by word over the used words only: a derived comparison of the
    /// whole array is a `memcmp` call, and its wide loads stall on a key
    /// just written word by word.
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PathKey::Packed { len: a, words: x }, PathKey::Packed { len: b, words: y }) => {
                a == b
                    && x.iter()
                        .zip(y)
                        .take(usize::from(*a).div_ceil(16))
                        .all(|(x, y)| x == y)
            }
            (PathKey::Heap(x), PathKey::Heap(y)) => x == y,
            _ => false,
        }
    }
}

impl Hash for PathKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            PathKey::Packed { len, words } => {
                state.write_u8(*len);
                let used = usize::from(*len).div_ceil(16);
                for &word in words.iter().take(used) {
                    state.write_u64(word);
                }
            }
            PathKey::Heap(bytes) => {
                state.write_u8(u8::MAX);
                state.write(bytes);
            }
        }
    }
}

/// Packs `key` (at most [`INLINE_NIBBLES`] bytes) into words, or `None` when
/// some byte of it is not a nibble.
///
/// This runs on every tail lookup, so it reads the key with fixed-size loads
/// and builds each word at a fixed index (the loop unrolls and the words stay
/// in registers): a variable-length copy is a call into libc's `memmove`,
/// and narrow stores read back as a wide key stall the load.
#[inline(always)]
fn pack(key: &[u8]) -> Option<[u64; WORDS]> {
    debug_assert!(key.len() <= INLINE_NIBBLES);
    let mut words = [0u64; WORDS];
    let mut high_bits = 0u64;
    for (i, word) in words.iter_mut().enumerate() {
        let lo = load(key, 16 * i);
        let hi = load(key, 16 * i + 8);
        high_bits |= lo | hi;
        *word = u64::from(pack_word(lo)) | u64::from(pack_word(hi)) << 32;
        if key.len() <= 16 * (i + 1) {
            break;
        }
    }
    (high_bits & 0xF0F0_F0F0_F0F0_F0F0 == 0).then_some(words)
}

/// Bytes `at..at + 8` of `key` as a little-endian word, zero past its end.
#[inline(always)]
fn load(key: &[u8], at: usize) -> u64 {
    match key.get(at..) {
        Some(rest) if rest.len() >= 8 => {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&rest[..8]);
            u64::from_le_bytes(bytes)
        }
        Some(rest) if !rest.is_empty() => load_short(rest),
        _ => 0,
    }
}

/// The 1–7 bytes of `rest` as a little-endian word, zero above them, read
/// with two overlapping loads of the largest power-of-two size that fits.
#[inline(always)]
fn load_short(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    if n >= 4 {
        // Bytes 0..4 and n-4..n; the overlap holds the same bytes in both.
        u64::from(le_u32(&rest[..4])) | u64::from(le_u32(&rest[n - 4..])) << (8 * (n - 4))
    } else if n >= 2 {
        u64::from(le_u16(&rest[..2])) | u64::from(le_u16(&rest[n - 2..])) << (8 * (n - 2))
    } else {
        u64::from(rest[0])
    }
}

#[inline]
fn le_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(bytes);
    u32::from_le_bytes(word)
}

#[inline]
fn le_u16(bytes: &[u8]) -> u16 {
    let mut word = [0u8; 2];
    word.copy_from_slice(bytes);
    u16::from_le_bytes(word)
}

/// Eight nibbles, one per byte of `word` (little-endian), to four packed
/// bytes: byte j of the result is `nibble[2j] << 4 | nibble[2j + 1]`. Only
/// meaningful when every byte of `word` is below 16.
#[inline]
fn pack_word(word: u64) -> u32 {
    // Each 16-bit lane now holds its packed byte in its low half.
    let pairs = ((word << 4) | (word >> 8)) & 0x00FF_00FF_00FF_00FF;
    // Two bytes per 32-bit lane, then four in the low word.
    let quads = (pairs | (pairs >> 8)) & 0x0000_FFFF_0000_FFFF;
    (quads | (quads >> 16)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-at-a-time packing [`pack`] replaces, as little-endian words.
    fn pack_reference(key: &[u8]) -> Option<[u64; WORDS]> {
        if key.len() > INLINE_NIBBLES || key.iter().any(|&b| b >= 16) {
            return None;
        }
        let mut bytes = [0u8; 8 * WORDS];
        for (out, pair) in bytes.iter_mut().zip(key.chunks(2)) {
            *out = pair[0] << 4 | pair.get(1).copied().unwrap_or(0);
        }
        let mut words = [0u64; WORDS];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(chunk);
            *word = u64::from_le_bytes(le);
        }
        Some(words)
    }

    #[test]
    fn pack_matches_the_byte_at_a_time_reference() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in 0..=INLINE_NIBBLES {
            for round in 0..64 {
                let mut key: Vec<u8> = (0..len).map(|_| (next() % 16) as u8).collect();
                if round % 4 == 3 && len > 0 {
                    // One byte that is not a nibble, anywhere.
                    let at = next() as usize % len;
                    key[at] = 16 + (next() % 240) as u8;
                }
                assert_eq!(pack(&key), pack_reference(&key), "{key:?}");
            }
        }
    }

    #[test]
    fn representation_is_canonical_and_distinguishing() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![1, 0],
            vec![0x10],
            vec![15; 16],
            vec![15; 17],
            vec![15; 80],
            vec![15; 81],
            vec![200; 46],
            vec![200; 47],
            vec![1, 2, 3],
            vec![1, 2, 3, 0],
        ];
        for (i, a) in keys.iter().enumerate() {
            assert_eq!(PathKey::new(a).len(), a.len());
            for (j, b) in keys.iter().enumerate() {
                assert_eq!(PathKey::new(a) == PathKey::new(b), i == j, "{a:?} vs {b:?}");
            }
        }
        assert!(matches!(PathKey::new(&[15; 80]), PathKey::Packed { .. }));
        assert!(matches!(PathKey::new(&[15; 81]), PathKey::Heap(_)));
        assert!(matches!(PathKey::new(&[200; 2]), PathKey::Heap(_)));
        assert_eq!(std::mem::size_of::<PathKey>(), 48);
    }
}
