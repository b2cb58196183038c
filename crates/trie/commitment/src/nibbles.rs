//! Nibble helpers and the compact encoding of nibble paths used as keys of the
//! commitment domain.

use alloy_primitives::B256;

use crate::error::CommitmentError;

/// The longest nibble path a record can have: 64 nibbles of `keccak(address)`
/// followed by 64 nibbles of `keccak(slot)`.
pub const MAX_PATH_NIBBLES: usize = 128;

/// Nibble `i` (0 = high half of byte 0) of a 32-byte hashed key.
#[inline(always)]
pub(crate) fn nibble(key: &B256, i: usize) -> u8 {
    let b = key.0[i >> 1];
    if i & 1 == 0 { b >> 4 } else { b & 0x0f }
}

/// Length of the common prefix of `a[from..]` and `b[from..]`, counted from 0
/// (so the result is an absolute nibble index, at least `from`, at most 64).
#[inline]
pub(crate) fn common_prefix(a: &B256, b: &B256, from: usize) -> usize {
    let mut i = from;
    // Odd start: compare one nibble to reach a byte boundary.
    if i & 1 == 1 && i < 64 {
        if nibble(a, i) != nibble(b, i) {
            return i;
        }
        i += 1;
    }
    let mut byte = i >> 1;
    while byte < 32 {
        let x = a.0[byte] ^ b.0[byte];
        if x != 0 {
            return byte * 2 + usize::from(x & 0xf0 == 0);
        }
        byte += 1;
    }
    64
}

/// Unpacks bytes into one nibble per byte, high half first.
pub fn unpack_nibbles(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(b >> 4);
        out.push(b & 0x0f);
    }
    out
}

/// Appends nibbles `from..to` of `key` to `out` (one nibble per byte).
#[inline]
pub(crate) fn push_key_nibbles(out: &mut Vec<u8>, key: &B256, from: usize, to: usize) {
    for i in from..to {
        out.push(nibble(key, i));
    }
}

/// The commitment-domain key of the record at nibble `path`.
///
/// Byte 0 is `0x00` for an even number of nibbles, or `0x10 | first nibble`
/// for an odd number; the remaining nibbles follow packed two per byte, high
/// half first. The first byte is therefore always below `0x20`, so no key
/// collides with the reserved `b"\xffroot"` key. The root path `[]` is `[0x00]`.
/// Nibbles must be in `0..=15` (higher bits are ignored).
pub fn record_key(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + path.len() / 2);
    let rest = if path.len() % 2 == 1 {
        out.push(0x10 | (path[0] & 0x0f));
        &path[1..]
    } else {
        out.push(0x00);
        path
    };
    for pair in rest.chunks_exact(2) {
        out.push(((pair[0] & 0x0f) << 4) | (pair[1] & 0x0f));
    }
    out
}

/// The nibble path encoded by a commitment-domain `key` (inverse of
/// [`record_key`]); errors on keys [`record_key`] cannot produce.
pub fn record_path(key: &[u8]) -> Result<Vec<u8>, CommitmentError> {
    let malformed = |what: String| CommitmentError::MalformedKey {
        key: alloy_primitives::hex::encode(key),
        what,
    };
    let Some((&flag, packed)) = key.split_first() else {
        return Err(malformed(
            "empty key (expected at least the flag byte)".into(),
        ));
    };
    let mut path = Vec::with_capacity(packed.len() * 2 + 1);
    match flag >> 4 {
        0 if flag == 0 => {}
        1 => path.push(flag & 0x0f),
        _ => {
            return Err(malformed(format!(
                "flag byte 0x{flag:02x} (expected 0x00 or 0x10..=0x1f)"
            )));
        }
    }
    for &b in packed {
        path.push(b >> 4);
        path.push(b & 0x0f);
    }
    if path.len() > MAX_PATH_NIBBLES {
        return Err(malformed(format!(
            "{} nibbles (at most {MAX_PATH_NIBBLES})",
            path.len()
        )));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_counts_nibbles() {
        let a = B256::repeat_byte(0x12);
        let mut b = a;
        assert_eq!(common_prefix(&a, &b, 0), 64);
        b.0[3] = 0x13;
        assert_eq!(common_prefix(&a, &b, 0), 7);
        assert_eq!(common_prefix(&a, &b, 5), 7);
        b.0[3] = 0x22;
        assert_eq!(common_prefix(&a, &b, 0), 6);
        assert_eq!(common_prefix(&a, &b, 6), 6);
        assert_eq!(common_prefix(&a, &b, 7), 64);
    }
}
