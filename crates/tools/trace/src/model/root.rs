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
use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, Nibbles};
use rayon::prelude::*;

use super::shards::{SHARD_MIN_LEAVES, branch_hash, shard_range, sharded_root};
use super::storage::Storage;
use super::{Account, Codes, WorldState};

/// Tries with fewer leaves are built in one piece on the calling thread.
const SPLIT_MIN_LEAVES: usize = 256;

fn encode_value((hashed_slot, value): (B256, U256)) -> (B256, Vec<u8>) {
    let mut rlp = Vec::with_capacity(33);
    value.encode(&mut rlp);
    (hashed_slot, rlp)
}

impl Storage {
    /// The root of this storage trie (cached until the storage changes).
    fn refresh_root(&mut self) -> B256 {
        if let Some(root) = self.root {
            return root;
        }
        let sharded = self
            .shardable()
            .then(|| self.sorted_delta())
            .and_then(|delta| {
                let mut shards = std::mem::take(&mut self.shards);
                let this = &*self;
                let root = sharded_root(&mut shards, |shard| {
                    this.shard_leaves(shard, &delta)
                        .into_iter()
                        .map(encode_value)
                        .collect()
                });
                self.shards = shards;
                root
            });
        let root = sharded.unwrap_or_else(|| {
            let leaves: Vec<(B256, Vec<u8>)> =
                self.hashed_leaves().into_iter().map(encode_value).collect();
            trie_root(&leaves)
        });
        self.root = Some(root);
        root
    }
}

impl Account {
    /// The account leaf's RLP; the storage root must be fresh
    /// ([`Storage::refresh_root`]).
    fn leaf(&self, codes: &Codes) -> Vec<u8> {
        let storage_root = self.storage.as_deref().map_or(EMPTY_ROOT_HASH, |storage| {
            storage
                .root
                .expect("storage roots are refreshed before the account trie")
        });
        account_rlp(
            self.nonce,
            self.balance,
            storage_root,
            codes.get(self.code).0,
        )
    }
}

impl WorldState {
    /// The Ethereum state root of the whole state.
    pub fn state_root(&mut self) -> B256 {
        // Changed storage tries first, in parallel.
        let mut dirty: Vec<&mut Storage> = self
            .accounts
            .values_mut()
            .filter_map(|a| a.storage.as_deref_mut())
            .filter(|storage| storage.root.is_none())
            .collect();
        dirty.par_iter_mut().for_each(|storage| {
            storage.refresh_root();
        });
        let (accounts, codes) = (&self.accounts, &self.codes);
        let leaf = |(hashed, address): (&B256, &alloy_primitives::Address)| {
            Some((*hashed, accounts.get(address)?.leaf(codes)))
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
            .accounts()
            .map(|(address, a)| {
                let mut storage: Vec<(B256, Vec<u8>)> = a
                    .storage()
                    .map(|(slot, value)| (keccak256(slot), alloy_rlp::encode(value)))
                    .collect();
                storage.sort();
                let storage_root = one_piece_root(&storage);
                (
                    keccak256(address),
                    super::account_rlp(a.nonce(), a.balance(), storage_root, a.code_hash()),
                )
            })
            .collect();
        leaves.sort();
        one_piece_root(&leaves)
    }

    #[test]
    fn cached_sharded_roots_follow_random_updates() {
        use alloy_primitives::{Address, Bytes};

        use crate::AccountWrite;
        use crate::model::{NewAccount, WorldState};

        let n = super::SHARD_MIN_LEAVES + 1_000;
        let mut rng = StdRng::seed_from_u64(11);
        let big = Address::with_last_byte(0xbb);
        let slots: Vec<B256> = (0..n as u64).map(|i| B256::from(U256::from(i))).collect();
        let code = Bytes::from_static(&[0x60, 0x00]);
        // `big` starts with its slots (a base with a keccak index: sub-tries),
        // `grown` gets the same number through writes (built in one piece).
        let mut genesis = vec![NewAccount {
            address: big,
            code: code.clone(),
            storage: slots
                .iter()
                .map(|slot| (*slot, U256::from(rng.random_range(1..1_000u64))))
                .collect(),
            ..NewAccount::default()
        }];
        let addresses: Vec<Address> = (0..n)
            .map(|_| Address::from(rng.random::<[u8; 20]>()))
            .collect();
        genesis.extend(addresses.iter().map(|address| NewAccount {
            address: *address,
            balance: U256::from(rng.random::<u64>()),
            ..NewAccount::default()
        }));
        let mut state = WorldState::from_accounts(genesis);
        let grown = Address::with_last_byte(0xcc);
        let mut write = AccountWrite {
            code: Some(code),
            ..AccountWrite::default()
        };
        for slot in &slots {
            write
                .storage
                .insert(*slot, U256::from(rng.random_range(1..1_000u64)));
        }
        state.apply_write(&grown, &write);
        assert_eq!(state.state_root(), plain_root(&state), "initial");
        // The sharded path is really taken (not the one-piece fallback).
        let storage = state.accounts[&big].storage.as_deref().unwrap();
        assert!(storage.shardable());
        assert!(
            !state.accounts[&grown]
                .storage
                .as_deref()
                .unwrap()
                .shardable()
        );
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
            state.apply_write(&grown, &write);
            assert_eq!(state.state_root(), plain_root(&state), "round {round}");
        }
    }
}
