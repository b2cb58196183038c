//! Cached sub-trie hashes for large tries. A trie over hashed keys is cut
//! at depth 3 into 4096 sub-tries (one per 3-nibble prefix); each one's
//! hash is computed with `alloy_trie::HashBuilder` over its keys without the
//! prefix and kept until a key under that prefix changes. The three levels
//! of branch nodes above them are encoded here. Only used when every node of
//! those levels is a branch with at least two children (in a large trie of
//! random hashed keys it is); otherwise the caller builds the trie in one
//! piece. Nodes three nibbles down encode to at least 32 bytes (a leaf there
//! keeps a 61-nibble path), so parents reference them by hash.

use std::collections::BTreeMap;
use std::ops::Bound;

use alloy_primitives::{B256, keccak256};
use alloy_rlp::{EMPTY_STRING_CODE, Encodable, Header};
use alloy_trie::{HashBuilder, Nibbles};
use rayon::prelude::*;

/// Nibbles above the cached sub-tries.
const DEPTH: usize = 3;
/// Number of sub-tries (16^DEPTH).
const SHARDS: usize = 1 << (4 * DEPTH);
/// Tries with fewer leaves are not cut (too few leaves per sub-trie to pay off).
pub(super) const SHARD_MIN_LEAVES: usize = 2 * SHARDS;

/// Known sub-trie hashes (`None` = known to be empty); a missing entry must
/// be recomputed.
#[derive(Debug, Clone, Default)]
pub(super) struct ShardCache {
    hashes: BTreeMap<u16, Option<B256>>,
}

impl ShardCache {
    /// Forget the sub-trie holding `hashed_key` (a key under it changed).
    pub(super) fn invalidate(&mut self, hashed_key: &B256) {
        self.hashes.remove(&shard_of(hashed_key));
    }
}

/// The 3-nibble prefix of a hashed key: its sub-trie.
pub(super) fn shard_of(key: &B256) -> u16 {
    (u16::from(key[0]) << 4) | u16::from(key[1] >> 4)
}

/// The key range of one sub-trie, for `BTreeMap::range`.
pub(super) fn shard_range(shard: u16) -> (Bound<B256>, Bound<B256>) {
    let start = |s: u16| {
        let mut key = B256::ZERO;
        key[0] = (s >> 4) as u8;
        key[1] = ((s & 0xf) as u8) << 4;
        key
    };
    let end = if usize::from(shard) + 1 == SHARDS {
        Bound::Unbounded
    } else {
        Bound::Excluded(start(shard + 1))
    };
    (Bound::Included(start(shard)), end)
}

/// The root of a trie whose sub-trie `s` holds the sorted leaves
/// `leaves_in(s)` (hashed key, RLP value), reusing cached sub-trie hashes.
/// `None` when the top levels are not all branches (build in one piece).
pub(super) fn sharded_root<V, F>(cache: &mut ShardCache, leaves_in: F) -> Option<B256>
where
    V: AsRef<[u8]>,
    F: Fn(u16) -> Vec<(B256, V)> + Sync,
{
    let missing: Vec<u16> = (0..SHARDS as u16)
        .filter(|s| !cache.hashes.contains_key(s))
        .collect();
    let computed: Vec<(u16, Option<B256>)> = missing
        .into_par_iter()
        .map(|shard| {
            let leaves = leaves_in(shard);
            let hash = (!leaves.is_empty()).then(|| {
                let mut builder = HashBuilder::default();
                for (key, value) in &leaves {
                    builder.add_leaf(Nibbles::unpack(key).slice(DEPTH..), value.as_ref());
                }
                builder.root()
            });
            (shard, hash)
        })
        .collect();
    cache.hashes.extend(computed);

    let mut level: Vec<Option<B256>> = cache.hashes.values().copied().collect();
    debug_assert_eq!(level.len(), SHARDS);
    while level.len() > 1 {
        let mut parents = Vec::with_capacity(level.len() / 16);
        for children in level.chunks(16) {
            parents.push(match children.iter().filter(|c| c.is_some()).count() {
                0 => None,
                1 => return None,
                _ => Some(branch_hash(children)),
            });
        }
        level = parents;
    }
    level[0]
}

/// keccak256 of a branch node whose children are all referenced by hash.
pub(super) fn branch_hash(children: &[Option<B256>]) -> B256 {
    let payload_length: usize = children
        .iter()
        .map(|c| if c.is_some() { 33 } else { 1 })
        .sum::<usize>()
        + 1;
    let mut node = Vec::with_capacity(payload_length + 3);
    Header {
        list: true,
        payload_length,
    }
    .encode(&mut node);
    for child in children {
        match child {
            Some(hash) => hash.encode(&mut node),
            None => node.push(EMPTY_STRING_CODE),
        }
    }
    node.push(EMPTY_STRING_CODE);
    keccak256(&node)
}
