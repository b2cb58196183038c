//! The account trie's root, rebuilt each block from subtries kept between
//! blocks: the trie is cut at a fixed depth, each node there that is a
//! branch is hashed by a `HashBuilder` of its own and fed to the top's
//! builder as that hash (`add_branch`) until an account under it changes.
//! A block's root then costs the subtries it touched (hashed again, in
//! parallel) and the top, not the whole state, and it is still alloy-trie
//! that hashes every node.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use alloy_primitives::{Address, B256};
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles, TrieAccount};
use rayon::prelude::*;

/// How to encode an account of the trie (`None`: no longer live).
pub(crate) type LeafOf<'a> = dyn Fn(&Address) -> Option<TrieAccount> + Sync + 'a;

/// The deepest cut: a prefix fits a `u32`.
const MAX_DEPTH: usize = 8;

/// The accounts under one prefix of the cut.
#[derive(Clone, Copy, Debug)]
enum Subtrie {
    /// None.
    Empty,
    /// The node at the prefix is a branch (its accounts differ in the next
    /// nibble), with this hash.
    Branch(B256),
    /// Its accounts share the next nibble too (the node at the prefix is
    /// a leaf or an extension): fed to the top's builder leaf by leaf.
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

    /// The cut for a state of `accounts` accounts touched by about a
    /// thousand accounts a block: `16^depth` subtries about
    /// `sqrt(accounts × 1024)`, which balances the subtries fed to the top
    /// against the leaves of those a block touches.
    pub(crate) fn depth_for(accounts: usize) -> usize {
        let target = (accounts as u128).saturating_mul(1024);
        (1..=MAX_DEPTH)
            .take_while(|depth| 16u128.pow(2 * *depth as u32) <= target)
            .last()
            .unwrap_or(0)
    }

    /// The account at `hashed` changed (written, created or destroyed).
    pub(crate) fn touch(&mut self, hashed: &B256) {
        if self.depth > 0 {
            self.known.remove(&self.prefix(hashed));
        }
    }

    /// The root of the trie over `accounts` (every live account by hashed
    /// address), `leaf` giving each one's fields.
    pub(crate) fn root(&mut self, accounts: &BTreeMap<B256, Address>, leaf: &LeafOf<'_>) -> B256 {
        if self.depth == 0 {
            return crate::root::state_root(leaves(accounts.iter(), leaf));
        }
        let count = 1u32 << (4 * self.depth);
        let touched: Vec<u32> = (0..count)
            .filter(|prefix| !self.known.contains_key(prefix))
            .collect();
        let depth = self.depth;
        let hashed: Vec<(u32, Subtrie)> = touched
            .into_par_iter()
            .map(|prefix| (prefix, subtrie(depth, under(depth, accounts, prefix), leaf)))
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
                    for (hashed, account) in leaves(under(depth, accounts, prefix), leaf) {
                        value.clear();
                        alloy_rlp::Encodable::encode(&account, &mut value);
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

/// The live accounts among `entries`, with their fields.
fn leaves<'a>(
    entries: impl Iterator<Item = (&'a B256, &'a Address)>,
    leaf: &LeafOf<'_>,
) -> impl Iterator<Item = (B256, TrieAccount)> {
    entries.filter_map(|(hashed, address)| Some((*hashed, leaf(address)?)))
}

/// The accounts whose hashed address starts with `prefix` (`depth` nibbles).
fn under(
    depth: usize,
    accounts: &BTreeMap<B256, Address>,
    prefix: u32,
) -> impl Iterator<Item = (&B256, &Address)> {
    let bits = 4 * depth as u32;
    let first = key_at(u64::from(prefix) << (32 - bits));
    let end = u64::from(prefix + 1) << (32 - bits);
    let upper = if end > u64::from(u32::MAX) {
        Bound::Unbounded
    } else {
        Bound::Excluded(key_at(end))
    };
    accounts.range((Bound::Included(first), upper))
}

/// The smallest hashed address whose first four bytes are `head`.
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
fn subtrie<'a>(
    depth: usize,
    entries: impl Iterator<Item = (&'a B256, &'a Address)>,
    leaf: &LeafOf<'_>,
) -> Subtrie {
    let live: Vec<(B256, TrieAccount)> = leaves(entries, leaf).collect();
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
    for (hashed, account) in live {
        value.clear();
        alloy_rlp::Encodable::encode(&account, &mut value);
        builder.add_leaf(Nibbles::unpack(hashed).slice(depth..), &value);
    }
    Subtrie::Branch(builder.root())
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{U256, keccak256};
    use alloy_trie::KECCAK_EMPTY;

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
            for cut in &mut cuts {
                assert_eq!(cut.root(&hashed, &leaf), whole, "depth {} round {round}", cut.depth);
            }
            // Change every 7th account, remove every 50th, add ten.
            let changed: Vec<Address> = hashed.values().step_by(7).copied().collect();
            for address in changed {
                *nonces.get_mut(&address).expect("live") += 1000;
                cuts.iter_mut().for_each(|cut| cut.touch(&keccak256(address)));
            }
            let gone: Vec<B256> = hashed.keys().step_by(50).copied().collect();
            for key in gone {
                let address = hashed.remove(&key).expect("live");
                nonces.remove(&address);
                cuts.iter_mut().for_each(|cut| cut.touch(&key));
            }
            for index in 0..10u64 {
                let address =
                    Address::from_slice(&keccak256((1_000_000 + round * 10 + index).to_be_bytes())[12..]);
                nonces.insert(address, 5);
                hashed.insert(keccak256(address), address);
                cuts.iter_mut().for_each(|cut| cut.touch(&keccak256(address)));
            }
        }
    }
}
