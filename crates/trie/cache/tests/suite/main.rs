//! strata-cache integration tests, one binary made of modules.

mod behaviour;
mod concurrency;
mod model;
mod warmup;

use bytes::Bytes;

/// A distinct value for `n`, `len` bytes long.
pub(crate) fn value(n: u32, len: usize) -> Bytes {
    let mut bytes = vec![(n % 251) as u8; len];
    bytes[..4.min(len)].copy_from_slice(&n.to_be_bytes()[..4.min(len)]);
    Bytes::from(bytes)
}

/// A tail (non-pinned) nibble path for `n`: 6 nibbles.
pub(crate) fn tail_key(n: u32) -> Vec<u8> {
    (0..6).map(|i| ((n >> (4 * i)) & 0xf) as u8).collect()
}
