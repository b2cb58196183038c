//! One account's storage in the model, compact enough for tens of millions
//! of slots: the slots it was created with as one sorted array (64 bytes a
//! slot, plus a 36-byte keccak index unless there are only a few), and the
//! changes since in a small map.

use std::collections::BTreeMap;

use alloy_primitives::{B256, U256, keccak256};

use super::shards::{SHARD_MIN_LEAVES, ShardCache, shard_of};

/// A smaller base is hashed again when its trie is rebuilt rather than
/// indexed (its slots cost 64 bytes each instead of 100).
const INDEX_MIN_SLOTS: usize = 64;

/// A write since the base: `(keccak256(slot), slot, value)`, zero = cleared.
pub(super) type HashedWrite = (B256, B256, U256);

/// The non-zero slots of one account.
#[derive(Debug, Clone, Default)]
pub(super) struct Storage {
    /// The slots the account was created with, sorted by slot, values non-zero.
    /// Never changed: a later write goes to `delta`, which shadows it.
    base: Box<[(B256, U256)]>,
    /// `(keccak256(slot), index in base)` sorted by hashed slot, for a base
    /// of at least [`INDEX_MIN_SLOTS`]: the trie's leaves (or one sub-trie's)
    /// without hashing every slot again after each change.
    hashed: Option<Box<[(B256, u32)]>>,
    /// Writes since the base: slot → (keccak256(slot), value; zero = cleared).
    delta: BTreeMap<B256, (B256, U256)>,
    /// Number of non-zero slots.
    len: usize,
    /// Cached storage root; `None` after a change.
    pub(super) root: Option<B256>,
    /// Cached sub-trie hashes of a large storage trie.
    pub(super) shards: ShardCache,
}

impl Storage {
    /// The storage of slots sorted by slot, each once, values non-zero.
    pub(super) fn from_sorted(base: Vec<(B256, U256)>) -> Self {
        debug_assert!(base.windows(2).all(|w| w[0].0 < w[1].0), "sorted, unique");
        debug_assert!(base.iter().all(|(_, value)| !value.is_zero()));
        let hashed = (base.len() >= INDEX_MIN_SLOTS).then(|| {
            let index = u32::try_from(base.len()).expect("fewer than 2^32 slots per account");
            let mut hashed: Vec<(B256, u32)> = base
                .iter()
                .zip(0..index)
                .map(|((slot, _), i)| (keccak256(slot), i))
                .collect();
            hashed.sort_unstable();
            hashed.into_boxed_slice()
        });
        Self {
            len: base.len(),
            base: base.into_boxed_slice(),
            hashed,
            delta: BTreeMap::new(),
            root: None,
            shards: ShardCache::default(),
        }
    }

    /// Number of non-zero slots.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The `index`-th slot (in slot order) the account was created with;
    /// it stays listed after a write clears it.
    pub(super) fn base_slot(&self, index: usize) -> Option<B256> {
        self.base.get(index).map(|(slot, _)| *slot)
    }

    fn base_value(&self, slot: &B256) -> U256 {
        self.base
            .binary_search_by(|(s, _)| s.cmp(slot))
            .map_or(U256::ZERO, |i| self.base[i].1)
    }

    /// A slot's value (zero when absent).
    pub(super) fn get(&self, slot: &B256) -> U256 {
        match self.delta.get(slot) {
            Some((_, value)) => *value,
            None => self.base_value(slot),
        }
    }

    /// Set a slot (zero clears it); forgets the root and the sub-trie holding it.
    pub(super) fn set(&mut self, slot: B256, value: U256) {
        let before = self.get(&slot);
        self.len = self.len + usize::from(!value.is_zero()) - usize::from(!before.is_zero());
        let hashed = keccak256(slot);
        if value.is_zero() && self.base_value(&slot).is_zero() {
            self.delta.remove(&slot);
        } else {
            self.delta.insert(slot, (hashed, value));
        }
        self.shards.invalidate(&hashed);
        self.root = None;
    }

    /// The non-zero slots in slot order.
    pub(super) fn iter(&self) -> StorageIter<'_> {
        StorageIter {
            base: self.base.iter().peekable(),
            delta: self.delta.iter().peekable(),
            left: self.len,
        }
    }

    /// The writes since the base sorted by hashed slot.
    pub(super) fn sorted_delta(&self) -> Vec<HashedWrite> {
        let mut delta: Vec<HashedWrite> = self
            .delta
            .iter()
            .map(|(slot, (hashed, value))| (*hashed, *slot, *value))
            .collect();
        delta.sort_unstable_by_key(|(hashed, _, _)| *hashed);
        delta
    }

    /// The sorted `(hashed slot, value)` leaves of the whole trie.
    pub(super) fn hashed_leaves(&self) -> Vec<(B256, U256)> {
        match &self.hashed {
            Some(hashed) => self.merge(hashed, &self.sorted_delta()),
            None => {
                let mut leaves: Vec<(B256, U256)> = self
                    .iter()
                    .map(|(slot, value)| (keccak256(slot), value))
                    .collect();
                leaves.sort_unstable_by_key(|(hashed, _)| *hashed);
                leaves
            }
        }
    }

    /// True when the trie can be built from cached sub-tries: large, with a
    /// keccak index ([`Self::shard_leaves`] needs it).
    pub(super) fn shardable(&self) -> bool {
        self.hashed.is_some() && self.len >= SHARD_MIN_LEAVES
    }

    /// The sorted `(hashed slot, value)` leaves of sub-trie `shard`, given
    /// the [`Self::sorted_delta`]; the storage must be [`Self::shardable`].
    pub(super) fn shard_leaves(
        &self,
        shard: u16,
        sorted_delta: &[HashedWrite],
    ) -> Vec<(B256, U256)> {
        let hashed = self.hashed.as_deref().unwrap_or_default();
        let in_shard = |h: &B256| shard_of(h).cmp(&shard);
        let base = range_of(hashed, |(h, _)| in_shard(h));
        let delta = range_of(sorted_delta, |(h, _, _)| in_shard(h));
        self.merge(&hashed[base], &sorted_delta[delta])
    }

    /// The leaves of the base entries `hashed` that no write shadows,
    /// merged with the non-zero `writes` (both sorted by hashed slot).
    fn merge(&self, hashed: &[(B256, u32)], writes: &[HashedWrite]) -> Vec<(B256, U256)> {
        let mut leaves = Vec::with_capacity(hashed.len() + writes.len());
        let mut writes = writes
            .iter()
            .filter(|(_, _, value)| !value.is_zero())
            .peekable();
        for (h, i) in hashed {
            let (slot, value) = self.base[*i as usize];
            if self.delta.contains_key(&slot) {
                continue;
            }
            while let Some((write_hash, _, write_value)) = writes.next_if(|(w, _, _)| w < h) {
                leaves.push((*write_hash, *write_value));
            }
            leaves.push((*h, value));
        }
        leaves.extend(writes.map(|(h, _, value)| (*h, *value)));
        debug_assert!(leaves.windows(2).all(|w| w[0].0 < w[1].0));
        leaves
    }
}

/// The index range of the elements of `sorted` that `order` finds `Equal`
/// (it must be `Less`, then `Equal`, then `Greater` along the slice).
fn range_of<T>(sorted: &[T], order: impl Fn(&T) -> std::cmp::Ordering) -> std::ops::Range<usize> {
    let start = sorted.partition_point(|x| order(x).is_lt());
    let end = start + sorted[start..].partition_point(|x| order(x).is_eq());
    start..end
}

/// The non-zero slots of a [`Storage`] in slot order: the base merged with
/// the writes since, a write winning.
#[derive(Debug, Clone)]
pub struct StorageIter<'a> {
    base: std::iter::Peekable<std::slice::Iter<'a, (B256, U256)>>,
    delta: std::iter::Peekable<std::collections::btree_map::Iter<'a, B256, (B256, U256)>>,
    left: usize,
}

/// The writes of no account (what an account without storage iterates).
static NO_WRITES: BTreeMap<B256, (B256, U256)> = BTreeMap::new();

impl StorageIter<'_> {
    /// The slots of an account without storage: none.
    pub(super) fn empty() -> Self {
        StorageIter {
            base: [].iter().peekable(),
            delta: NO_WRITES.iter().peekable(),
            left: 0,
        }
    }
}

impl Iterator for StorageIter<'_> {
    type Item = (B256, U256);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let next = match (self.base.peek(), self.delta.peek()) {
                (None, None) => return None,
                (Some(&&(slot, value)), None) => {
                    self.base.next();
                    (slot, value)
                }
                (None, Some(&(slot, &(_, value)))) => {
                    let slot = *slot;
                    self.delta.next();
                    (slot, value)
                }
                (Some(&&(base_slot, base_value)), Some(&(slot, &(_, value)))) => {
                    let slot = *slot;
                    if base_slot < slot {
                        self.base.next();
                        (base_slot, base_value)
                    } else {
                        if base_slot == slot {
                            self.base.next();
                        }
                        self.delta.next();
                        (slot, value)
                    }
                }
            };
            if !next.1.is_zero() {
                self.left -= 1;
                return Some(next);
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for StorageIter<'_> {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use alloy_primitives::{B256, U256, keccak256};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::{SHARD_MIN_LEAVES, Storage};

    /// Base + writes read, iterate and give hashed leaves like a plain map.
    #[test]
    fn storage_follows_a_plain_map() {
        let mut rng = StdRng::seed_from_u64(5);
        for base_len in [0, 3, 40, 200, SHARD_MIN_LEAVES + 10] {
            let mut plain = BTreeMap::new();
            for _ in 0..base_len {
                plain.insert(
                    B256::from(U256::from(rng.random_range(0..4 * base_len as u64 + 8))),
                    U256::from(rng.random_range(1..100u64)),
                );
            }
            let mut storage = Storage::from_sorted(plain.clone().into_iter().collect());
            let keys: Vec<B256> = plain.keys().copied().collect();
            for round in 0..3 {
                for _ in 0..300 {
                    let slot = if !keys.is_empty() && rng.random_bool(0.5) {
                        keys[rng.random_range(0..keys.len())]
                    } else {
                        B256::from(U256::from(rng.random_range(0..8 * base_len as u64 + 8)))
                    };
                    let value = U256::from(rng.random_range(0..3u64));
                    storage.set(slot, value);
                    if value.is_zero() {
                        plain.remove(&slot);
                    } else {
                        plain.insert(slot, value);
                    }
                }
                let listed: Vec<(B256, U256)> = storage.iter().collect();
                let expected: Vec<(B256, U256)> = plain.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(listed, expected, "base {base_len}, round {round}");
                assert_eq!(storage.len(), plain.len());
                assert_eq!(storage.iter().len(), plain.len());
                let mut hashed: Vec<(B256, U256)> =
                    plain.iter().map(|(k, v)| (keccak256(k), *v)).collect();
                hashed.sort();
                assert_eq!(storage.hashed_leaves(), hashed);
                if storage.shardable() {
                    let delta = storage.sorted_delta();
                    let sharded: Vec<(B256, U256)> = (0..4096u16)
                        .flat_map(|s| storage.shard_leaves(s, &delta))
                        .collect();
                    assert_eq!(sharded, hashed);
                }
                for slot in keys.iter().take(50) {
                    assert_eq!(
                        storage.get(slot),
                        plain.get(slot).copied().unwrap_or_default()
                    );
                }
            }
        }
    }
}
