//! Proofs (`eth_getProof`) from the stored records against alloy-trie: the
//! nodes are byte for byte the ones its `HashBuilder` retains for the same
//! keys, and its `verify_proof` accepts them against the root, for present
//! and absent accounts and slots, after a bulk build and after incremental
//! blocks.

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_trie::proof::{ProofRetainer, verify_proof};
use alloy_trie::{HashBuilder, Nibbles, TrieAccount};
use rand::{Rng, SeedableRng, rngs::StdRng};
use strata_commitment::{MemoryBranchStore, MemoryState, compute_root, prove};

use crate::common::{
    address, bulk_store, oracle_slot_rlp, oracle_storage_root, random_block, random_state, slot,
};

/// `HashBuilder`'s proof nodes for each of `targets` over `leaves`.
fn oracle_proofs(leaves: &mut [(B256, Vec<u8>)], targets: &[B256]) -> (B256, Vec<Vec<Bytes>>) {
    leaves.sort();
    let retainer = ProofRetainer::from_iter(targets.iter().map(|t| Nibbles::unpack(t)));
    let mut builder = HashBuilder::default().with_proof_retainer(retainer);
    for (key, value) in leaves.iter() {
        builder.add_leaf(Nibbles::unpack(key), value);
    }
    let root = builder.root();
    let nodes = builder.take_proof_nodes();
    let proofs = targets
        .iter()
        .map(|t| {
            nodes
                .matching_nodes_sorted(&Nibbles::unpack(t))
                .into_iter()
                .map(|(_, node)| node)
                .collect()
        })
        .collect();
    (root, proofs)
}

fn account_rlp(state: &MemoryState, address: &Address) -> Option<Vec<u8>> {
    let leaf = state.accounts().find(|(a, _)| *a == address)?.1;
    Some(alloy_rlp::encode(TrieAccount {
        nonce: leaf.nonce,
        balance: leaf.balance,
        storage_root: oracle_storage_root(state, address),
        code_hash: leaf.code_hash,
    }))
}

/// Proves `addresses` (with `slots` each) from `store` and checks every
/// proof against the oracle's nodes and `verify_proof`.
fn check_proofs(
    store: &MemoryBranchStore,
    state: &MemoryState,
    root: B256,
    addresses: &[Address],
    slots: &[B256],
) -> usize {
    let mut leaves: Vec<(B256, Vec<u8>)> = state
        .accounts()
        .map(|(a, _)| (keccak256(a), account_rlp(state, a).unwrap()))
        .collect();
    let targets: Vec<B256> = addresses.iter().map(keccak256).collect();
    let (oracle_root, oracle) = oracle_proofs(&mut leaves, &targets);
    assert_eq!(root, oracle_root);
    let mut nodes = 0;
    for (address, expected) in addresses.iter().zip(&oracle) {
        let proof = prove(store, state, address, slots).unwrap();
        let value = account_rlp(state, address);
        assert_eq!(proof.account.is_some(), value.is_some(), "{address}");
        assert_eq!(&proof.proof, expected, "account proof of {address}");
        verify_proof(
            root,
            Nibbles::unpack(keccak256(address)),
            value,
            &proof.proof,
        )
        .unwrap_or_else(|e| panic!("account proof of {address}: {e}"));
        nodes += proof.proof.len();

        let storage_root = oracle_storage_root(state, address);
        assert_eq!(
            proof.storage_root, storage_root,
            "storage root of {address}"
        );
        let mut slot_leaves: Vec<(B256, Vec<u8>)> = state
            .slots(address)
            .map(|(s, v)| (keccak256(s), oracle_slot_rlp(v)))
            .collect();
        let slot_targets: Vec<B256> = slots.iter().map(keccak256).collect();
        let (_, slot_oracle) = oracle_proofs(&mut slot_leaves, &slot_targets);
        for (slot_proof, expected) in proof.storage.iter().zip(&slot_oracle) {
            let value = state
                .slots(address)
                .find(|(s, _)| **s == slot_proof.slot)
                .map(|(_, v)| *v)
                .unwrap_or_default();
            assert_eq!(slot_proof.value, value);
            if storage_root != alloy_trie::EMPTY_ROOT_HASH {
                assert_eq!(
                    &slot_proof.proof, expected,
                    "slot {} of {address}",
                    slot_proof.slot
                );
            } else {
                assert!(slot_proof.proof.is_empty());
            }
            let expected_value = (!value.is_zero()).then(|| oracle_slot_rlp(&value));
            verify_proof(
                storage_root,
                Nibbles::unpack(keccak256(slot_proof.slot)),
                expected_value,
                &slot_proof.proof,
            )
            .unwrap_or_else(|e| panic!("slot {} of {address}: {e}", slot_proof.slot));
            nodes += slot_proof.proof.len();
        }
    }
    nodes
}

/// Present and absent accounts, each with a present and an absent slot.
fn targets(rng: &mut StdRng, state: &MemoryState, universe: u64) -> (Vec<Address>, Vec<B256>) {
    let mut addresses: Vec<Address> = (0..24)
        .map(|_| address(rng.random_range(0..universe * 2)))
        .collect();
    // Accounts with storage, so storage proofs reach leaves.
    addresses.extend(
        state
            .accounts()
            .map(|(a, _)| *a)
            .filter(|a| state.slots(a).next().is_some())
            .take(8),
    );
    let slots = vec![
        slot(rng.random_range(0..8)),
        slot(rng.random_range(0..16)),
        slot(1_000_000),
    ];
    (addresses, slots)
}

#[test]
fn proofs_after_a_bulk_build_match_alloy_trie() {
    for (seed, accounts) in [(1u64, 1), (2, 40), (3, 600), (4, 3_000)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let state = random_state(&mut rng, accounts, 8);
        let (store, root) = bulk_store(&state, false);
        let (addresses, slots) = targets(&mut rng, &state, accounts);
        let nodes = check_proofs(&store, &state, root, &addresses, &slots);
        assert!(nodes > 0, "seed {seed}: no node proven");
    }
}

#[test]
fn proofs_after_incremental_blocks_match_alloy_trie() {
    let mut rng = StdRng::seed_from_u64(9);
    let universe = 400;
    let mut state = random_state(&mut rng, universe, 6);
    let (mut store, _) = bulk_store(&state, false);
    for _ in 0..12 {
        let update = random_block(&mut rng, &mut state, universe);
        let out = compute_root(&update, &store, &state, &Default::default()).unwrap();
        store.apply(&out.writes);
        let (addresses, slots) = targets(&mut rng, &state, universe);
        check_proofs(&store, &state, out.root, &addresses, &slots);
    }
}

#[test]
fn an_empty_trie_proves_absence_with_no_nodes() {
    let store = MemoryBranchStore::new();
    let state = MemoryState::new();
    let proof = prove(&store, &state, &address(7), &[slot(1)]).unwrap();
    assert!(proof.proof.is_empty() && proof.account.is_none());
    assert_eq!(proof.storage[0].value, U256::ZERO);
    verify_proof(
        alloy_trie::EMPTY_ROOT_HASH,
        Nibbles::unpack(keccak256(address(7))),
        None,
        &proof.proof,
    )
    .unwrap();
}
