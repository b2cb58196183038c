//! RLP encoding of Merkle-Patricia nodes (leaf, extension, branch) and node
//! references, shared by the hashed-key trie, the bulk builder and [`RawTrie`].
//!
//! [`RawTrie`]: crate::RawTrie

use alloy_primitives::{B256, U256, keccak256};

use crate::keccak_x4::{block_count, keccak256_x4};
use crate::nibbles::nibble;

/// Root of the empty trie: `keccak256(rlp(""))`.
pub const EMPTY_ROOT: B256 =
    alloy_primitives::b256!("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421");

/// Counts keccak256 invocations and the keccak-f permutations they cost
/// (136-byte rate: `len / 136 + 1` blocks per input).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeccakCount {
    pub(crate) calls: u64,
    pub(crate) blocks: u64,
}

impl KeccakCount {
    /// keccak256 of `data`, counted.
    #[inline]
    pub(crate) fn hash(&mut self, data: &[u8]) -> B256 {
        self.calls += 1;
        self.blocks += block_count(data.len()) as u64;
        keccak256(data)
    }

    /// keccak256 of one to four independent messages at once
    /// ([`keccak256_x4`]), each counted; digest `i` is that of `msgs[i]`.
    #[inline]
    pub(crate) fn hash_x4(&mut self, msgs: &[&[u8]]) -> [B256; 4] {
        for m in msgs {
            self.calls += 1;
            self.blocks += block_count(m.len()) as u64;
        }
        keccak256_x4(msgs)
    }

    /// Adds another counter.
    pub(crate) fn add(&mut self, o: &KeccakCount) {
        self.calls += o.calls;
        self.blocks += o.blocks;
    }
}

/// How a parent refers to a child node: its keccak hash when the child's RLP is
/// 32 bytes or longer, otherwise the child's RLP itself (embedded).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeRef {
    len: u8,
    bytes: [u8; 32],
}

impl std::fmt::Debug for NodeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.deferred_slot() {
            Some(slot) => write!(f, "NodeRef(deferred {slot})"),
            None => write!(
                f,
                "NodeRef(0x{})",
                alloy_primitives::hex::encode(self.as_slice())
            ),
        }
    }
}

impl NodeRef {
    /// The reference to a node whose RLP is `rlp`; hashes it when it is long.
    #[inline]
    pub(crate) fn of_rlp(rlp: &[u8], keccak: &mut KeccakCount) -> Self {
        if rlp.len() >= 32 {
            Self {
                len: 32,
                bytes: keccak.hash(rlp).0,
            }
        } else {
            let mut bytes = [0u8; 32];
            bytes[..rlp.len()].copy_from_slice(rlp);
            Self {
                len: rlp.len() as u8,
                bytes,
            }
        }
    }

    /// The reference to a node whose RLP (32 bytes or longer) hashed to `hash`.
    #[inline]
    pub(crate) fn hashed(hash: B256) -> Self {
        Self {
            len: 32,
            bytes: hash.0,
        }
    }

    /// A placeholder for a branch node whose hash is computed later, together
    /// with its siblings': its RLP waits in the walker's deferred slot `slot`
    /// (the bulk builder uses slot 0 and keeps the RLP in its `closed_rlp`).
    /// It must be resolved before it is encoded anywhere: [`NodeRef::as_slice`]
    /// refuses it.
    #[inline]
    pub(crate) fn deferred(slot: usize) -> Self {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&(slot as u64).to_le_bytes());
        Self { len: 0, bytes }
    }

    /// The deferred slot of a placeholder made by [`NodeRef::deferred`].
    #[inline]
    pub(crate) fn deferred_slot(&self) -> Option<usize> {
        (self.len == 0)
            .then(|| u64::from_le_bytes(self.bytes[..8].try_into().expect("8 bytes")) as usize)
    }

    /// Rebuilds a reference from its stored bytes (1..=32 of them).
    pub(crate) fn from_stored(stored: &[u8]) -> Option<Self> {
        if stored.is_empty() || stored.len() > 32 {
            return None;
        }
        let mut bytes = [0u8; 32];
        bytes[..stored.len()].copy_from_slice(stored);
        Some(Self {
            len: stored.len() as u8,
            bytes,
        })
    }

    /// The hash (32 bytes) or the embedded RLP (shorter).
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        debug_assert!(
            self.len != 0,
            "a deferred node reference was used unresolved"
        );
        &self.bytes[..self.len as usize]
    }

    /// How many bytes this reference takes inside a parent node's RLP.
    #[inline]
    pub(crate) fn encoded_len(&self) -> usize {
        if self.len == 32 {
            33
        } else {
            self.len as usize
        }
    }

    /// Appends this reference as it appears inside a parent node's RLP.
    #[inline]
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        if self.len == 32 {
            out.push(0xa0);
        }
        out.extend_from_slice(self.as_slice());
    }

    /// The hash of the referenced node: a trie root is always hashed, even
    /// when its RLP is shorter than 32 bytes.
    pub(crate) fn root_hash(&self, keccak: &mut KeccakCount) -> B256 {
        if self.len == 32 {
            B256::from(self.bytes)
        } else {
            keccak.hash(self.as_slice())
        }
    }
}

/// Appends an RLP header for a payload of `len` bytes; `base` is 0x80 for a
/// string and 0xc0 for a list.
#[inline]
fn put_header(out: &mut Vec<u8>, base: u8, len: usize) {
    if len < 56 {
        out.push(base + len as u8);
    } else {
        let be = (len as u64).to_be_bytes();
        let skip = (len as u64).leading_zeros() as usize / 8;
        out.push(base + 55 + (8 - skip) as u8);
        out.extend_from_slice(&be[skip..]);
    }
}

/// Length of an RLP header for a payload of `len` bytes.
#[inline]
fn header_len(len: usize) -> usize {
    if len < 56 {
        1
    } else {
        1 + 8 - (len as u64).leading_zeros() as usize / 8
    }
}

/// Encoded length of `bytes` as an RLP string.
#[inline]
fn string_len(bytes: &[u8]) -> usize {
    if bytes.len() == 1 && bytes[0] < 0x80 {
        1
    } else {
        header_len(bytes.len()) + bytes.len()
    }
}

/// Appends `bytes` as an RLP string.
#[inline]
fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() == 1 && bytes[0] < 0x80 {
        out.push(bytes[0]);
    } else {
        put_header(out, 0x80, bytes.len());
        out.extend_from_slice(bytes);
    }
}

/// Hex-prefix ("compact") encoding of a nibble slice (one nibble per byte).
pub(crate) fn compact_nibbles(nibbles: &[u8], leaf: bool, out: &mut Vec<u8>) {
    let flag = if leaf { 0x20 } else { 0x00 };
    let rest = if nibbles.len() % 2 == 1 {
        out.push(flag | 0x10 | nibbles[0]);
        &nibbles[1..]
    } else {
        out.push(flag);
        nibbles
    };
    for pair in rest.chunks_exact(2) {
        out.push((pair[0] << 4) | pair[1]);
    }
}

/// Hex-prefix encoding of the leaf path made of nibbles `from..64` of `key`.
#[inline]
pub(crate) fn compact_key_suffix(key: &B256, from: usize, out: &mut Vec<u8>) {
    if from % 2 == 1 {
        out.push(0x30 | nibble(key, from));
        out.extend_from_slice(&key.0[from / 2 + 1..]);
    } else {
        out.push(0x20);
        out.extend_from_slice(&key.0[from / 2..]);
    }
}

/// Appends the leaf node `[compact_path, value]`, where `compact_path` is
/// already hex-prefix encoded and `value` is the leaf's value bytes.
pub(crate) fn encode_leaf(compact_path: &[u8], value: &[u8], out: &mut Vec<u8>) {
    put_header(out, 0xc0, string_len(compact_path) + string_len(value));
    put_string(out, compact_path);
    put_string(out, value);
}

/// Appends the leaf node for the hashed `key` seen from nibble `from`, with
/// `value`, without an intermediate buffer.
#[inline]
pub(crate) fn encode_key_leaf(key: &B256, from: usize, value: &[u8], out: &mut Vec<u8>) {
    // Compact path: 1 flag byte + the packed remaining nibbles.
    let path_len = 1 + (64 - from) / 2;
    let path_enc = if path_len == 1 {
        1 // a lone flag byte (0x20 or 0x3n) is below 0x80: a one-byte string
    } else {
        header_len(path_len) + path_len
    };
    put_header(out, 0xc0, path_enc + string_len(value));
    if path_enc != 1 {
        put_header(out, 0x80, path_len);
    }
    compact_key_suffix(key, from, out);
    put_string(out, value);
}

/// Appends the extension node `[compact(ext), child]`.
pub(crate) fn encode_extension(ext: &[u8], child: &NodeRef, out: &mut Vec<u8>) {
    // The compact path is a flag byte plus the packed nibbles; a lone flag
    // byte (0x00 or 0x1n) is below 0x80, so it encodes as itself.
    let path_len = 1 + ext.len() / 2;
    let path_enc = if path_len == 1 {
        1
    } else {
        header_len(path_len) + path_len
    };
    put_header(out, 0xc0, path_enc + child.encoded_len());
    if path_len > 1 {
        put_header(out, 0x80, path_len);
    }
    compact_nibbles(ext, false, out);
    child.encode_into(out);
}

/// Appends the branch node with `children` (absent = empty) and an optional
/// value (the 17th item; `None` encodes as the empty string).
pub(crate) fn encode_branch(
    children: &[Option<NodeRef>; 16],
    value: Option<&[u8]>,
    out: &mut Vec<u8>,
) {
    let mut payload = value.map_or(1, string_len);
    for c in children {
        payload += c.as_ref().map_or(1, NodeRef::encoded_len);
    }
    put_header(out, 0xc0, payload);
    for c in children {
        match c {
            Some(r) => r.encode_into(out),
            None => out.push(0x80),
        }
    }
    match value {
        Some(v) => put_string(out, v),
        None => out.push(0x80),
    }
}

/// Appends a big-endian integer (leading zero bytes already trimmed by the
/// caller's slice) as an RLP string.
#[inline]
fn put_uint_bytes(be: &[u8], out: &mut Vec<u8>) {
    let first = be.iter().position(|&b| b != 0).unwrap_or(be.len());
    put_string(out, &be[first..]);
}

#[inline]
fn uint_len(be: &[u8]) -> usize {
    let first = be.iter().position(|&b| b != 0).unwrap_or(be.len());
    string_len(&be[first..])
}

/// Appends the RLP of an account `[nonce, balance, storage_root, code_hash]`.
pub(crate) fn encode_account(
    nonce: u64,
    balance: &U256,
    storage_root: &B256,
    code_hash: &B256,
    out: &mut Vec<u8>,
) {
    let nonce = nonce.to_be_bytes();
    let balance = balance.to_be_bytes::<32>();
    let payload = uint_len(&nonce) + uint_len(&balance) + 66;
    put_header(out, 0xc0, payload);
    put_uint_bytes(&nonce, out);
    put_uint_bytes(&balance, out);
    out.push(0xa0);
    out.extend_from_slice(storage_root.as_slice());
    out.push(0xa0);
    out.extend_from_slice(code_hash.as_slice());
}

/// Appends the RLP of a storage value (big-endian, leading zeros trimmed).
pub(crate) fn encode_storage_value(value: &U256, out: &mut Vec<u8>) {
    put_uint_bytes(&value.to_be_bytes::<32>(), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_leaf_matches_generic_leaf() {
        let key = keccak256(b"x");
        for from in [0usize, 1, 2, 5, 62, 63, 64] {
            let mut nib = Vec::new();
            crate::nibbles::push_key_nibbles(&mut nib, &key, from, 64);
            let mut compact = Vec::new();
            compact_nibbles(&nib, true, &mut compact);
            let mut a = Vec::new();
            encode_leaf(&compact, b"value", &mut a);
            let mut b = Vec::new();
            encode_key_leaf(&key, from, b"value", &mut b);
            assert_eq!(a, b, "from {from}");
        }
    }

    #[test]
    fn long_headers() {
        let mut out = Vec::new();
        put_header(&mut out, 0xc0, 532);
        assert_eq!(out, vec![0xf9, 0x02, 0x14]);
        assert_eq!(header_len(532), 3);
    }
}
