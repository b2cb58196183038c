//! Hashing work: a block re-hashes only what changed.

use alloy_primitives::{Address, KECCAK256_EMPTY, U256};
use strata_commitment::{
    AccountLeaf, ComputeOptions, MemoryBranchStore, MemoryState, TrieUpdate, compute_root,
};

/// Touching keys whose values did not change re-hashes their leaves (the
/// old values are not stored) but no branch above them, and writes nothing.
#[test]
fn unchanged_keys_rehash_no_branch() {
    let mut state = MemoryState::new();
    let mut store = MemoryBranchStore::new();
    let accounts: Vec<Address> = (0..300u64)
        .map(|i| Address::left_padding_from(&i.to_be_bytes()))
        .collect();
    for (i, a) in accounts.iter().enumerate() {
        let leaf = AccountLeaf {
            nonce: i as u64,
            balance: U256::from(i),
            code_hash: KECCAK256_EMPTY,
        };
        state.set_account(*a, leaf);
    }
    let update = TrieUpdate {
        accounts: accounts.clone(),
        storage: vec![],
        wiped: vec![],
    };
    let opts = ComputeOptions::default();
    let first = compute_root(&update, &store, &state, &opts).expect("first block");
    store.apply(&first.writes);

    let again = compute_root(&update, &store, &state, &opts).expect("same block again");
    assert_eq!(again.root, first.root);
    assert!(again.writes.is_empty(), "{} writes", again.writes.len());
    let keys = accounts.len() as u64;
    // One key hash and one leaf hash per account, nothing for the branches.
    assert_eq!(again.stats.keccak_calls, 2 * keys, "{:?}", again.stats);
    assert!(first.stats.keccak_calls > 2 * keys, "{:?}", first.stats);
}
