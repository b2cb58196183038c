//! The head of a store: the last committed block and its root.

use alloy_primitives::B256;

/// Length of [`Head::encode`]'s bytes: `block: u64 BE ‖ root`.
pub const HEAD_LEN: usize = 8 + 32;

/// The last committed block and its root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// The block number.
    pub block: u64,
    /// The state root after the block.
    pub root: B256,
}

impl Head {
    /// `block: u64 BE ‖ root`: the encoding of the head in the metadata
    /// and of the reserved root record of the commitment domain.
    pub fn encode(&self) -> [u8; HEAD_LEN] {
        let mut raw = [0u8; HEAD_LEN];
        raw[..8].copy_from_slice(&self.block.to_be_bytes());
        raw[8..].copy_from_slice(self.root.as_slice());
        raw
    }

    /// Reads [`Head::encode`]'s bytes back; `None` unless `raw` is
    /// [`HEAD_LEN`] bytes long.
    pub fn decode(raw: &[u8]) -> Option<Head> {
        let (block, root) = raw.split_first_chunk::<8>()?;
        (root.len() == 32).then(|| Head {
            block: u64::from_be_bytes(*block),
            root: B256::from_slice(root),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_is_the_block_big_endian_then_the_root() {
        let head = Head {
            block: 0x0102,
            root: B256::repeat_byte(0xab),
        };
        let raw = head.encode();
        assert_eq!(&raw[..8], &[0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(&raw[8..], &[0xab; 32]);
        assert_eq!(Head::decode(&raw), Some(head));
        assert_eq!(Head::decode(&raw[..39]), None);
    }
}
