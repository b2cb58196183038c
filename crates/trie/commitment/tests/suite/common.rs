//! Shared helpers: the alloy-trie `HashBuilder` oracle, random states and
//! random blocks over a `MemoryState` model.

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_trie::{HashBuilder, Nibbles, TrieAccount};
use rand::{Rng, rngs::StdRng};
use strata_commitment::{
    AccountLeaf, ComputeOptions, MemoryBranchStore, MemoryState, SortedAccount, TrieUpdate,
    build_from_sorted, compute_root,
};

/// RLP of a storage value, as the oracle encodes it (trimmed big-endian string).
pub(crate) fn oracle_slot_rlp(v: &U256) -> Vec<u8> {
    let be = v.to_be_bytes::<32>();
    let first = be.iter().position(|&b| b != 0).unwrap_or(32);
    alloy_rlp::encode(&be[first..])
}

/// The storage root of an account's slots by `HashBuilder`.
pub(crate) fn oracle_storage_root(state: &MemoryState, address: &Address) -> B256 {
    let mut slots: Vec<(B256, Vec<u8>)> = state
        .slots(address)
        .map(|(s, v)| (keccak256(s), oracle_slot_rlp(v)))
        .collect();
    slots.sort();
    let mut hb = HashBuilder::default();
    for (k, v) in &slots {
        hb.add_leaf(Nibbles::unpack(k), v);
    }
    hb.root()
}

/// The whole state root by `HashBuilder`.
pub(crate) fn oracle_root(state: &MemoryState) -> B256 {
    let mut leaves: Vec<(B256, Vec<u8>)> = state
        .accounts()
        .map(|(a, l)| {
            let acct = TrieAccount {
                nonce: l.nonce,
                balance: l.balance,
                storage_root: oracle_storage_root(state, a),
                code_hash: l.code_hash,
            };
            (keccak256(a), alloy_rlp::encode(acct))
        })
        .collect();
    leaves.sort();
    let mut hb = HashBuilder::default();
    for (k, v) in &leaves {
        hb.add_leaf(Nibbles::unpack(k), v);
    }
    hb.root()
}

/// The state as sorted bulk-builder input.
pub(crate) fn sorted_accounts(state: &MemoryState) -> Vec<SortedAccount> {
    let mut out: Vec<SortedAccount> = state
        .accounts()
        .map(|(a, l)| {
            let mut storage: Vec<(B256, B256, U256)> = state
                .slots(a)
                .map(|(s, v)| (keccak256(s), *s, *v))
                .collect();
            storage.sort();
            SortedAccount {
                hashed_address: keccak256(a),
                address: *a,
                leaf: *l,
                storage,
            }
        })
        .collect();
    out.sort_by_key(|x| x.hashed_address);
    out
}

/// Bulk-builds `state` into a fresh store; returns the store and the root.
pub(crate) fn bulk_store(state: &MemoryState, parallel: bool) -> (MemoryBranchStore, B256) {
    let mut store = MemoryBranchStore::new();
    let root = build_from_sorted(&sorted_accounts(state), parallel, |p, r| store.insert(p, r))
        .expect("bulk build");
    (store, root)
}

/// Sorted (path, record) pairs of a store, for comparing two stores.
pub(crate) fn snapshot(store: &MemoryBranchStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = store.iter().map(|(p, r)| (p.clone(), r.to_vec())).collect();
    v.sort();
    v
}

/// A random account leaf.
pub(crate) fn random_leaf(rng: &mut StdRng) -> AccountLeaf {
    AccountLeaf {
        nonce: if rng.random_bool(0.3) {
            0
        } else {
            rng.random_range(0..1_000_000)
        },
        balance: if rng.random_bool(0.2) {
            U256::ZERO
        } else {
            U256::from(rng.random::<u128>())
        },
        code_hash: if rng.random_bool(0.7) {
            alloy_trie::KECCAK_EMPTY
        } else {
            B256::from(rng.random::<[u8; 32]>())
        },
    }
}

/// A random non-zero storage value of varied width.
pub(crate) fn random_value(rng: &mut StdRng) -> U256 {
    match rng.random_range(0..3) {
        0 => U256::from(rng.random_range(1u64..256)),
        1 => U256::from(rng.random::<u64>() | 1),
        _ => U256::from_be_bytes(rng.random::<[u8; 32]>()) | U256::from(1),
    }
}

/// Address number `i` of the test universe.
pub(crate) fn address(i: u64) -> Address {
    let mut a = [0u8; 20];
    a[12..].copy_from_slice(&i.to_be_bytes());
    Address::from(a)
}

/// Slot number `i`.
pub(crate) fn slot(i: u64) -> B256 {
    B256::from(U256::from(i))
}

/// A random state of `accounts` accounts, each with up to `max_slots` slots.
pub(crate) fn random_state(rng: &mut StdRng, accounts: u64, max_slots: u64) -> MemoryState {
    let mut s = MemoryState::new();
    for i in 0..accounts {
        let a = address(i);
        s.set_account(a, random_leaf(rng));
        if max_slots > 0 && rng.random_bool(0.3) {
            for _ in 0..rng.random_range(1..=max_slots) {
                s.set_storage(
                    a,
                    slot(rng.random_range(0..max_slots * 2)),
                    random_value(rng),
                );
            }
        }
    }
    s
}

/// Applies one random block to `state` over a universe of `universe`
/// addresses and returns the keys it touched.
pub(crate) fn random_block(rng: &mut StdRng, state: &mut MemoryState, universe: u64) -> TrieUpdate {
    let mut u = TrieUpdate::default();
    // Accounts deleted earlier in this block without being listed as wiped:
    // re-creating one must list it (its old storage is gone).
    let mut deleted_unlisted: Vec<Address> = Vec::new();
    let storage_only = rng.random_bool(0.15);
    for _ in 0..rng.random_range(1..25) {
        let a = address(rng.random_range(0..universe));
        let exists = strata_commitment::StateSource::account(state, &a)
            .expect("memory")
            .is_some();
        let op = if storage_only {
            3
        } else {
            rng.random_range(0..10)
        };
        match op {
            // Create or update the account.
            0..=2 => {
                state.set_account(a, random_leaf(rng));
                u.accounts.push(a);
                if deleted_unlisted.contains(&a) {
                    u.wiped.push(a);
                }
            }
            // Delete the account with its storage (listed as wiped or not).
            3 if exists && !storage_only => {
                state.remove_account(&a);
                u.accounts.push(a);
                if rng.random_bool(0.5) {
                    u.wiped.push(a);
                } else {
                    deleted_unlisted.push(a);
                }
            }
            // Slot writes and deletes on an existing account.
            3..=7 if exists => {
                for _ in 0..rng.random_range(1..8) {
                    let s = slot(rng.random_range(0..30));
                    let v = if rng.random_bool(0.3) {
                        U256::ZERO
                    } else {
                        random_value(rng)
                    };
                    state.set_storage(a, s, v);
                    u.storage.push((a, s));
                }
            }
            // Selfdestruct and re-create in the same block, with new slots.
            8 if exists => {
                state.wipe_storage(&a);
                state.set_account(a, random_leaf(rng));
                u.wiped.push(a);
                u.accounts.push(a);
                for _ in 0..rng.random_range(0..5) {
                    let s = slot(rng.random_range(0..30));
                    state.set_storage(a, s, random_value(rng));
                    u.storage.push((a, s));
                }
            }
            // A touch that changes nothing (duplicates allowed).
            _ => {
                u.accounts.push(a);
                u.storage.push((a, slot(rng.random_range(0..30))));
            }
        }
    }
    u
}

/// Runs `compute_root` and applies its writes; returns the root.
pub(crate) fn commit(
    store: &mut MemoryBranchStore,
    state: &MemoryState,
    update: &TrieUpdate,
    threshold: usize,
) -> B256 {
    let out = compute_root(
        update,
        store,
        state,
        &ComputeOptions {
            parallel_threshold: threshold,
        },
    )
    .expect("compute_root");
    store.apply(&out.writes);
    out.root
}
