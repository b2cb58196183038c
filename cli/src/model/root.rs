//! The state root of the model, computed with `alloy_trie::HashBuilder`:
//! storage trie per account over keccak(slot) → RLP(value), account trie
//! over keccak(address) → RLP[nonce, balance, storageRoot, codeHash].
//!
//! There is no incremental trie here (the model stays simple enough to be
//! an oracle), but three caches make it fast enough for 100k-account
//! traces: storage roots and leaf encodings are kept per account until it
//! changes; large tries keep the hashes of their 4096 depth-3 sub-tries
//! until a key under one changes (`shards`); and mid-size tries are built as
//! 16 sub-tries on the rayon pool. Each shortcut is checked against the
//! one-piece HashBuilder root by the tests below.

use alloy_primitives::{B256, U256};
use alloy_rlp::{Encodable, Header};
use alloy_trie::{HashBuilder, Nibbles};
use rayon::prelude::*;

use super::shards::{SHARD_MIN_LEAVES, branch_hash, shard_range, sharded_root};
use super::{Account, WorldState};

/// Tries with fewer leaves are built in one piece on the calling thread.
const SPLIT_MIN_LEAVES: usize = 256;

impl Account {
    /// The root of this account's storage trie (cached until the storage changes).
    pub fn storage_root(&mut self) -> B256 {
        if let Some(root) = self.storage_root {
            return root;
        }
        let storage = &self.hashed_storage;
        let encode = |(hashed_slot, value): (&B256, &U256)| {
            let mut rlp = Vec::with_capacity(33);
            value.encode(&mut rlp);
            (*hashed_slot, rlp)
        };
        let sharded = (storage.len() >= SHARD_MIN_LEAVES)
            .then(|| {
                sharded_root(&mut self.shards, |shard| {
                    storage.range(shard_range(shard)).map(encode).collect()
                })
            })
            .flatten();
        let root =
            sharded.unwrap_or_else(|| trie_root(&storage.iter().map(encode).collect::<Vec<_>>()));
        self.storage_root = Some(root);
        root
    }

    /// The account leaf's RLP (cached until the account changes).
    fn refresh_leaf(&mut self) {
        if self.leaf.is_none() {
            let storage_root = self.storage_root();
            self.leaf = Some(account_rlp(
                self.nonce,
                self.balance,
                storage_root,
                self.code_hash,
            ));
        }
    }
}

impl WorldState {
    /// The Ethereum state root of the whole state.
    pub fn state_root(&mut self) -> B256 {
        // Changed accounts first: storage roots and leaf encodings, in parallel.
        let mut dirty: Vec<&mut Account> = self
            .accounts
            .values_mut()
            .filter(|a| a.leaf.is_none())
            .collect();
        dirty
            .par_iter_mut()
            .for_each(|account| account.refresh_leaf());
        let accounts = &self.accounts;
        let leaf = |(hashed, address): (&B256, &alloy_primitives::Address)| {
            Some((*hashed, accounts.get(address)?.leaf.as_deref()?))
        };
        if self.by_hash.len() >= SHARD_MIN_LEAVES {
            let by_hash = &self.by_hash;
            let leaves_in = |shard| {
                by_hash
                    .range(shard_range(shard))
                    .filter_map(leaf)
                    .collect::<Vec<_>>()
            };
            if let Some(root) = sharded_root(&mut self.shards, leaves_in) {
                return root;
            }
        }
        trie_root(&self.by_hash.iter().filter_map(leaf).collect::<Vec<_>>())
    }
}

/// RLP of an account leaf: `[nonce, balance, storageRoot, codeHash]`.
fn account_rlp(nonce: u64, balance: U256, storage_root: B256, code_hash: B256) -> Vec<u8> {
    let payload_length =
        nonce.length() + balance.length() + storage_root.length() + code_hash.length();
    let mut out = Vec::with_capacity(payload_length + 3);
    Header {
        list: true,
        payload_length,
    }
    .encode(&mut out);
    nonce.encode(&mut out);
    balance.encode(&mut out);
    storage_root.encode(&mut out);
    code_hash.encode(&mut out);
    out
}

/// Root of a secure trie over sorted (hashed key, RLP value) leaves.
fn trie_root<V: AsRef<[u8]> + Sync>(sorted: &[(B256, V)]) -> B256 {
    if sorted.len() < SPLIT_MIN_LEAVES {
        return one_piece_root(sorted);
    }
    split_root(sorted)
}

/// One HashBuilder over all leaves.
fn one_piece_root<V: AsRef<[u8]>>(sorted: &[(B256, V)]) -> B256 {
    let mut builder = HashBuilder::default();
    for (key, value) in sorted {
        builder.add_leaf(Nibbles::unpack(key), value.as_ref());
    }
    builder.root()
}

/// 16 sub-tries, one per first nibble, built in parallel; the root is the
/// branch node over their hashes. Valid when at least two first nibbles
/// occur (otherwise the root is not a branch: fall back to one piece). Every
/// node one nibble below the root of a trie over 32-byte hashed keys encodes
/// to at least 32 bytes (a leaf there keeps a 63-nibble path), so the root
/// branch references all its children by hash.
fn split_root<V: AsRef<[u8]> + Sync>(sorted: &[(B256, V)]) -> B256 {
    let mut bounds = [0usize; 17];
    for nibble in 0..16u8 {
        let start = bounds[nibble as usize];
        let len = sorted[start..].partition_point(|(key, _)| key[0] >> 4 == nibble);
        bounds[nibble as usize + 1] = start + len;
    }
    debug_assert_eq!(bounds[16], sorted.len());
    let present = (0..16).filter(|&n| bounds[n + 1] > bounds[n]).count();
    if present < 2 {
        return one_piece_root(sorted);
    }
    let children: Vec<Option<B256>> = (0..16)
        .into_par_iter()
        .map(|nibble| {
            let part = &sorted[bounds[nibble]..bounds[nibble + 1]];
            (!part.is_empty()).then(|| {
                let mut builder = HashBuilder::default();
                for (key, value) in part {
                    builder.add_leaf(Nibbles::unpack(key).slice(1..), value.as_ref());
                }
                builder.root()
            })
        })
        .collect();
    branch_hash(&children)
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{B256, U256, keccak256};
    use alloy_rlp::Encodable;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::{one_piece_root, split_root};

    fn leaves(count: usize, rng: &mut StdRng, first_nibble: Option<u8>) -> Vec<(B256, Vec<u8>)> {
        let mut out: Vec<(B256, Vec<u8>)> = (0..count)
            .map(|i| {
                let mut key = keccak256((i as u64 + rng.random::<u64>()).to_be_bytes());
                if let Some(n) = first_nibble {
                    key[0] = (n << 4) | (key[0] & 0x0f);
                }
                let mut value = Vec::new();
                U256::from(rng.random_range(1..u64::MAX)).encode(&mut value);
                (key, value)
            })
            .collect();
        out.sort_by_key(|leaf| leaf.0);
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    #[test]
    fn split_root_equals_one_piece_root() {
        let mut rng = StdRng::seed_from_u64(3);
        for count in [0, 1, 2, 3, 15, 16, 17, 100, 1_000, 5_000] {
            let set = leaves(count, &mut rng, None);
            assert_eq!(split_root(&set), one_piece_root(&set), "{count} leaves");
        }
        // Only one first nibble (the root is an extension, not a branch),
        // and exactly two.
        let same = leaves(500, &mut rng, Some(7));
        assert_eq!(split_root(&same), one_piece_root(&same));
        let mut two = leaves(300, &mut rng, Some(0));
        two.extend(leaves(1, &mut rng, Some(15)));
        assert_eq!(split_root(&two), one_piece_root(&two));
    }

    /// The root recomputed from scratch, one HashBuilder per trie, no caches.
    fn plain_root(state: &super::WorldState) -> B256 {
        let mut leaves: Vec<(B256, Vec<u8>)> = state
            .accounts
            .values()
            .map(|a| {
                let storage: Vec<(B256, Vec<u8>)> = a
                    .storage
                    .iter()
                    .map(|(slot, value)| (keccak256(slot), alloy_rlp::encode(value)))
                    .collect();
                let mut storage = storage;
                storage.sort();
                let storage_root = one_piece_root(&storage);
                (
                    a.hashed_address,
                    super::account_rlp(a.nonce, a.balance, storage_root, a.code_hash),
                )
            })
            .collect();
        leaves.sort();
        one_piece_root(&leaves)
    }

    #[test]
    fn cached_sharded_roots_follow_random_updates() {
        use alloy_primitives::{Address, Bytes};

        use crate::model::WorldState;
        use crate::trace::AccountWrite;

        let n = super::SHARD_MIN_LEAVES + 1_000;
        let mut rng = StdRng::seed_from_u64(11);
        let mut state = WorldState::new();
        let big = Address::with_last_byte(0xbb);
        let slots: Vec<B256> = (0..n as u64).map(|i| B256::from(U256::from(i))).collect();
        let mut write = AccountWrite {
            code: Some(Bytes::from_static(&[0x60, 0x00])),
            ..AccountWrite::default()
        };
        for slot in &slots {
            write
                .storage
                .insert(*slot, U256::from(rng.random_range(1..1_000u64)));
        }
        state.apply_write(&big, &write);
        let addresses: Vec<Address> = (0..n)
            .map(|_| Address::from(rng.random::<[u8; 20]>()))
            .collect();
        for address in &addresses {
            state.apply_write(
                address,
                &AccountWrite {
                    balance: Some(U256::from(rng.random::<u64>())),
                    ..AccountWrite::default()
                },
            );
        }
        assert_eq!(state.state_root(), plain_root(&state), "initial");
        // The sharded path is really taken (not the one-piece fallback).
        let account = state.accounts.get_mut(&big).unwrap();
        let storage = account.hashed_storage.clone();
        let sharded = crate::model::shards::sharded_root(&mut Default::default(), |s| {
            storage
                .range(crate::model::shards::shard_range(s))
                .map(|(k, v)| (*k, alloy_rlp::encode(v)))
                .collect()
        });
        assert_eq!(sharded, Some(account.storage_root()));
        for round in 0..3 {
            // Balance changes, deletions, creations, slot changes and clears.
            for _ in 0..200 {
                let address = addresses[rng.random_range(0..addresses.len())];
                let write = if rng.random_bool(0.2) {
                    AccountWrite {
                        deleted: true,
                        ..AccountWrite::default()
                    }
                } else {
                    AccountWrite {
                        nonce: Some(rng.random_range(0..5)),
                        ..AccountWrite::default()
                    }
                };
                state.apply_write(&address, &write);
            }
            for _ in 0..50 {
                let address = Address::from(rng.random::<[u8; 20]>());
                state.apply_write(
                    &address,
                    &AccountWrite {
                        balance: Some(U256::from(1)),
                        ..AccountWrite::default()
                    },
                );
            }
            let mut write = AccountWrite::default();
            for _ in 0..300 {
                let value = if rng.random_bool(0.3) {
                    U256::ZERO
                } else {
                    U256::from(rng.random::<u32>())
                };
                write
                    .storage
                    .insert(slots[rng.random_range(0..slots.len())], value);
            }
            state.apply_write(&big, &write);
            assert_eq!(state.state_root(), plain_root(&state), "round {round}");
        }
    }
}
