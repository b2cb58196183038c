//! Tail keys stored inline: nibble paths packed two per byte, so a probe
//! compares bytes in the entry itself instead of chasing a heap pointer.

use std::hash::{Hash, Hasher};

/// Inline capacity in bytes: 92 nibbles packed (a storage-trie path 28
/// levels below its account) or 46 raw bytes.
const INLINE: usize = 46;

/// A cache key. Its representation is a function of the key bytes alone
/// (packed if every byte is a nibble and it fits, else raw if it fits,
/// else on the heap), so equal keys always compare equal field by field.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum PathKey {
    /// `len` nibbles, two per byte, high nibble first; unused bytes zero.
    Packed { len: u8, bytes: [u8; INLINE] },
    /// `len` raw bytes; unused bytes zero.
    Raw { len: u8, bytes: [u8; INLINE] },
    /// Longer keys.
    Heap(Box<[u8]>),
}

impl PathKey {
    #[inline]
    pub(crate) fn new(key: &[u8]) -> Self {
        let mut bytes = [0u8; INLINE];
        if key.len() <= 2 * INLINE && key.iter().all(|&b| b < 16) {
            for (out, pair) in bytes.iter_mut().zip(key.chunks(2)) {
                *out = pair[0] << 4 | pair.get(1).copied().unwrap_or(0);
            }
            PathKey::Packed {
                len: key.len() as u8,
                bytes,
            }
        } else if key.len() <= INLINE {
            bytes[..key.len()].copy_from_slice(key);
            PathKey::Raw {
                len: key.len() as u8,
                bytes,
            }
        } else {
            PathKey::Heap(key.into())
        }
    }

    /// The original key's length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            PathKey::Packed { len, .. } | PathKey::Raw { len, .. } => usize::from(*len),
            PathKey::Heap(bytes) => bytes.len(),
        }
    }

    /// The stored bytes that distinguish this key (with its length).
    #[inline]
    fn significant(&self) -> &[u8] {
        match self {
            PathKey::Packed { len, bytes } => &bytes[..usize::from(*len).div_ceil(2)],
            PathKey::Raw { len, bytes } => &bytes[..usize::from(*len)],
            PathKey::Heap(bytes) => bytes,
        }
    }
}

impl Hash for PathKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        state.write(self.significant());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn representation_is_canonical_and_distinguishing() {
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![1, 0],
            vec![0x10],
            vec![15; 92],
            vec![15; 93],
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
        assert!(matches!(PathKey::new(&[15; 92]), PathKey::Packed { .. }));
        assert!(matches!(PathKey::new(&[15; 93]), PathKey::Heap(_)));
        assert!(matches!(PathKey::new(&[200; 46]), PathKey::Raw { .. }));
        assert_eq!(std::mem::size_of::<PathKey>(), 48);
    }
}
