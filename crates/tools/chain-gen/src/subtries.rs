//! A trie's root, rebuilt each block from subtries kept between blocks:
//! the trie is cut at a fixed depth, each node there that is a branch is
//! hashed by a `HashBuilder` of its own and fed to the top's builder as
//! that hash (`add_branch`) until a leaf under it changes. A block's root
//! then costs the subtries it touched (hashed again, in parallel) and the
//! top, not the whole trie, and it is still alloy-trie that hashes every
//! node. The world keeps one for the account trie and one for each storage
//! trie of many slots.
//!
//! The node at a prefix the cut keeps as a hash is a branch, so its RLP is
//! at least 32 bytes (its parent refers to it by hash, as `add_branch`
//! says): two children or more, each a node of a keccak-keyed trie.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use alloy_primitives::B256;
use alloy_rlp::Encodable;
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles};
use rayon::prelude::*;

/// A leaf's value by its key (`None`: no longer in the trie).
pub(crate) type ValueOf<'a, K, V> = dyn Fn(&K) -> Option<V> + Sync + 'a;

/// The deepest cut: a prefix fits a `u32`.
const MAX_DEPTH: usize = 8;

/// The leaves under one prefix of the cut.
#[derive(Clone, Copy, Debug)]
enum Subtrie {
    /// None.
    Empty,
    /// The node at the prefix is a branch (its leaves differ in the next
    /// nibble), with this hash.
    Branch(B256),
    /// Its leaves share the next nibble too (the node at the prefix is a
    /// leaf or an extension): fed to the top's builder leaf by leaf.
    Leaves,
}

/// The subtries at the cut, by prefix; a prefix absent was touched since
/// its last hash.
#[derive(Debug)]
pub(crate) struct Subtries {
    depth: usize,
    known: HashMap<u32, Subtrie>,
}

impl Subtries {
    /// Subtries cut at `depth` nibbles (0: the whole trie rebuilt each
    /// time; at most 8).
    pub(crate) fn new(depth: usize) -> Self {
        Self {
            depth: depth.min(MAX_DEPTH),
            known: HashMap::new(),
        }
    }

    /// The cut for a trie of `leaves` leaves of which a block touches about
    /// a thousand: `16^depth` subtries about `sqrt(leaves × 1024)`, which
    /// balances the subtries fed to the top against the leaves of those a
    /// block touches.
    pub(crate) fn depth_for(leaves: usize) -> usize {
        let target = (leaves as u128).saturating_mul(1024);
        (1..=MAX_DEPTH)
            .take_while(|depth| 16u128.pow(2 * *depth as u32) <= target)
            .last()
            .unwrap_or(0)
    }

    /// The leaf at `hashed` changed (written, created or removed).
    pub(crate) fn touch(&mut self, hashed: &B256) {
        if self.depth > 0 {
            self.known.remove(&self.prefix(hashed));
        }
    }

    /// The root of the trie over `keys` (every leaf's key by its hashed
    /// key), `value_of` giving each one's value (`None`: no longer there).
    pub(crate) fn root<K: Sync, V: Encodable>(
        &mut self,
        keys: &BTreeMap<B256, K>,
        value_of: &ValueOf<'_, K, V>,
    ) -> B256 {
        if self.depth == 0 {
            return whole_root(leaves(keys.iter(), value_of));
        }
        let depth = self.depth;
        let count = 1u32 << (4 * depth);
        let touched: Vec<u32> = (0..count)
            .filter(|prefix| !self.known.contains_key(prefix))
            .collect();
        let hashed: Vec<(u32, Subtrie)> = touched
            .into_par_iter()
            .map(|prefix| (prefix, subtrie(depth, under(depth, keys, prefix), value_of)))
            .collect();
        self.known.extend(hashed);
        let mut builder = HashBuilder::default();
        let mut any = false;
        let mut value = Vec::with_capacity(110);
        for prefix in 0..count {
            match self.known[&prefix] {
                Subtrie::Empty => {}
                Subtrie::Branch(hash) => {
                    builder.add_branch(prefix_nibbles(prefix, depth), hash, false);
                    any = true;
                }
                Subtrie::Leaves => {
                    for (hashed, leaf) in leaves(under(depth, keys, prefix), value_of) {
                        value.clear();
                        leaf.encode(&mut value);
                        builder.add_leaf(Nibbles::unpack(hashed), &value);
                        any = true;
                    }
                }
            }
        }
        if any { builder.root() } else { EMPTY_ROOT_HASH }
    }

    fn prefix(&self, hashed: &B256) -> u32 {
        let head = u32::from_be_bytes(hashed[..4].try_into().expect("4 bytes"));
        head >> (32 - 4 * self.depth)
    }
}

/// The leaves among `entries` still there, with their values.
fn leaves<'a, K: 'a, V>(
    entries: impl Iterator<Item = (&'a B256, &'a K)>,
    value_of: &ValueOf<'_, K, V>,
) -> impl Iterator<Item = (B256, V)> {
    entries.filter_map(|(hashed, key)| Some((*hashed, value_of(key)?)))
}

/// The root of a whole trie over `leaves`, in ascending order of hashed key.
fn whole_root<V: Encodable>(leaves: impl Iterator<Item = (B256, V)>) -> B256 {
    let mut builder = HashBuilder::default();
    let mut value = Vec::with_capacity(110);
    let mut any = false;
    for (hashed, leaf) in leaves {
        value.clear();
        leaf.encode(&mut value);
        builder.add_leaf(Nibbles::unpack(hashed), &value);
        any = true;
    }
    if any { builder.root() } else { EMPTY_ROOT_HASH }
}

/// The entries whose hashed key starts with `prefix` (`depth` nibbles).
fn under<K>(
    depth: usize,
    keys: &BTreeMap<B256, K>,
    prefix: u32,
) -> impl Iterator<Item = (&B256, &K)> {
    let bits = 4 * depth as u32;
    let first = key_at(u64::from(prefix) << (32 - bits));
    let end = u64::from(prefix + 1) << (32 - bits);
    let upper = if end > u64::from(u32::MAX) {
        Bound::Unbounded
    } else {
        Bound::Excluded(key_at(end))
    };
    keys.range((Bound::Included(first), upper))
}

/// The smallest hashed key whose first four bytes are `head`.
fn key_at(head: u64) -> B256 {
    let mut key = B256::ZERO;
    key[..4].copy_from_slice(&(head as u32).to_be_bytes());
    key
}

/// `prefix`'s `depth` nibbles.
fn prefix_nibbles(prefix: u32, depth: usize) -> Nibbles {
    let nibbles: Vec<u8> = (0..depth)
        .map(|index| ((prefix >> (4 * (depth - 1 - index))) & 0xf) as u8)
        .collect();
    Nibbles::from_nibbles(nibbles)
}

/// The subtrie of one prefix: hashed by a builder of its own over the keys
/// past the prefix when the node there is a branch.
fn subtrie<'a, K: 'a, V: Encodable>(
    depth: usize,
    entries: impl Iterator<Item = (&'a B256, &'a K)>,
    value_of: &ValueOf<'_, K, V>,
) -> Subtrie {
    let live: Vec<(B256, V)> = leaves(entries, value_of).collect();
    let next_nibble = |hashed: &B256| Nibbles::unpack(hashed).get(depth);
    match live.first() {
        None => return Subtrie::Empty,
        Some((first, _)) => {
            let first = next_nibble(first);
            if live.iter().all(|(hashed, _)| next_nibble(hashed) == first) {
                return Subtrie::Leaves;
            }
        }
    }
    let mut builder = HashBuilder::default();
    let mut value = Vec::with_capacity(110);
    for (hashed, leaf) in live {
        value.clear();
        leaf.encode(&mut value);
        builder.add_leaf(Nibbles::unpack(hashed).slice(depth..), &value);
    }
    Subtrie::Branch(builder.root())
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Address, U256, keccak256};
    use alloy_trie::{KECCAK_EMPTY, TrieAccount};

    use super::*;

    fn account(nonce: u64) -> TrieAccount {
        TrieAccount {
            nonce,
            balance: U256::from(nonce * 7),
            storage_root: EMPTY_ROOT_HASH,
            code_hash: KECCAK_EMPTY,
        }
    }

    #[test]
    fn the_cut_grows_with_the_state() {
        assert_eq!(Subtries::depth_for(0), 0);
        assert_eq!(Subtries::depth_for(200), 2);
        assert_eq!(Subtries::depth_for(100_000), 3);
        assert_eq!(Subtries::depth_for(1_000_000), 3);
        assert_eq!(Subtries::depth_for(10_000_000), 4);
    }

    /// Every cut gives the root of the whole trie, before and after
    /// accounts change, appear and disappear.
    #[test]
    fn every_cut_gives_the_whole_tries_root() {
        let mut nonces: HashMap<Address, u64> = HashMap::new();
        let mut hashed = BTreeMap::new();
        for index in 0..600u64 {
            let address = Address::from_slice(&keccak256(index.to_be_bytes())[12..]);
            nonces.insert(address, index + 1);
            hashed.insert(keccak256(address), address);
        }
        let mut cuts: Vec<Subtries> = (0..=4).map(Subtries::new).collect();
        for round in 0..4u64 {
            let leaf = |address: &Address| nonces.get(address).map(|nonce| account(*nonce));
            let whole = crate::root::state_root(leaves(hashed.iter(), &leaf));
            assert_eq!(whole_root(leaves(hashed.iter(), &leaf)), whole);
            for cut in &mut cuts {
                assert_eq!(
                    cut.root(&hashed, &leaf),
                    whole,
                    "depth {} round {round}",
                    cut.depth
                );
            }
            // Change every 7th account, remove every 50th, add ten.
            let changed: Vec<Address> = hashed.values().step_by(7).copied().collect();
            for address in changed {
                *nonces.get_mut(&address).expect("live") += 1000;
                cuts.iter_mut()
                    .for_each(|cut| cut.touch(&keccak256(address)));
            }
            let gone: Vec<B256> = hashed.keys().step_by(50).copied().collect();
            for key in gone {
                let address = hashed.remove(&key).expect("live");
                nonces.remove(&address);
                cuts.iter_mut().for_each(|cut| cut.touch(&key));
            }
            for index in 0..10u64 {
                let address = Address::from_slice(
                    &keccak256((1_000_000 + round * 10 + index).to_be_bytes())[12..],
                );
                nonces.insert(address, 5);
                hashed.insert(keccak256(address), address);
                cuts.iter_mut()
                    .for_each(|cut| cut.touch(&keccak256(address)));
            }
        }
    }
}
