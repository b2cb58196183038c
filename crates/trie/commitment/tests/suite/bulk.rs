//! Bulk builder: same root as HashBuilder, same records as incremental
//! inserts, input order enforced.

use alloy_primitives::{B256, U256, keccak256};
use rand::{SeedableRng, rngs::StdRng};
use strata_commitment::{
    BulkBuilder, CommitmentError, MemoryBranchStore, MemoryState, StorageTrieBuilder, TrieUpdate,
};

use crate::common::{bulk_store, commit, oracle_root, random_state, snapshot, sorted_accounts};

/// Building from scratch and inserting every key in one block from the empty
/// trie produce byte-identical records and the oracle root.
#[test]
fn bulk_records_equal_incremental_records() {
    for (seed, n) in [(1u64, 1u64), (2, 2), (3, 17), (4, 700), (5, 3000)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let state = random_state(&mut rng, n, 30);
        let (bulk, bulk_root) = bulk_store(&state, false);
        let mut inc = MemoryBranchStore::new();
        let update = TrieUpdate {
            accounts: state.accounts().map(|(a, _)| *a).collect(),
            storage: state
                .accounts()
                .flat_map(|(a, _)| state.slots(a).map(|(s, _)| (*a, *s)))
                .collect(),
            wiped: Vec::new(),
        };
        let inc_root = commit(&mut inc, &state, &update, 64);
        assert_eq!(bulk_root, oracle_root(&state), "n={n}");
        assert_eq!(inc_root, bulk_root, "n={n}");
        assert!(snapshot(&bulk) == snapshot(&inc), "n={n}: records differ");
    }
}

/// The streaming builder rejects keys out of order.
#[test]
fn bulk_rejects_unsorted_input() {
    let mut rng = StdRng::seed_from_u64(9);
    let state = random_state(&mut rng, 10, 0);
    let mut accounts = sorted_accounts(&state);
    accounts.swap(3, 4);
    let mut b = BulkBuilder::new(|_, _| {});
    let mut err = None;
    for a in &accounts {
        if let Err(e) = b.add_account(a.hashed_address, a.address, &a.leaf, std::iter::empty()) {
            err = Some(e);
            break;
        }
    }
    assert!(
        matches!(err, Some(CommitmentError::Unsorted { .. })),
        "{err:?}"
    );
    let r = strata_commitment::build_from_sorted(&accounts, true, |_, _| {});
    assert!(matches!(r, Err(CommitmentError::Unsorted { .. })));
    // Slots out of order.
    let a = &sorted_accounts(&state)[0];
    let mut slots = vec![
        (keccak256(B256::ZERO), B256::ZERO, U256::from(1)),
        (
            keccak256(B256::with_last_byte(1)),
            B256::with_last_byte(1),
            U256::from(2),
        ),
    ];
    slots.sort();
    slots.reverse();
    let mut b = BulkBuilder::new(|_, _| {});
    let r = b.add_account(a.hashed_address, a.address, &a.leaf, slots);
    assert!(matches!(r, Err(CommitmentError::Unsorted { .. })), "{r:?}");
}

/// Parallel and sequential bulk builds agree on the root and the records,
/// also when everything sits under one first nibble.
#[test]
fn parallel_bulk_matches_sequential() {
    let mut rng = StdRng::seed_from_u64(11);
    let state = random_state(&mut rng, 5000, 8);
    let (a, ra) = bulk_store(&state, false);
    let (b, rb) = bulk_store(&state, true);
    assert_eq!(ra, rb);
    assert!(snapshot(&a) == snapshot(&b));
    // A single-account state and a state confined to one first nibble.
    let mut one = MemoryState::new();
    let (addr, leaf) = state
        .accounts()
        .next()
        .map(|(a, l)| (*a, *l))
        .expect("an account");
    one.set_account(addr, leaf);
    assert_eq!(bulk_store(&one, true).1, oracle_root(&one));
    let mut narrow = MemoryState::new();
    for (a, l) in state.accounts() {
        if keccak256(a)[0] >> 4 == 7 {
            narrow.set_account(*a, *l);
        }
    }
    let (x, rx) = bulk_store(&narrow, true);
    let (y, ry) = bulk_store(&narrow, false);
    assert_eq!(rx, oracle_root(&narrow));
    assert_eq!(rx, ry);
    assert!(snapshot(&x) == snapshot(&y));
}

/// Storage tries built apart (in reverse account order, as an importer on
/// several threads might) and accounts added with their storage roots give
/// the same records and root as the one-pass build.
#[test]
fn storage_tries_built_apart_match_the_one_pass_build() {
    let mut rng = StdRng::seed_from_u64(12);
    let state = random_state(&mut rng, 800, 12);
    let (whole, whole_root) = bulk_store(&state, false);
    let accounts = sorted_accounts(&state);
    let mut apart = MemoryBranchStore::new();
    let mut tries = StorageTrieBuilder::new();
    let mut roots = vec![B256::ZERO; accounts.len()];
    for (i, a) in accounts.iter().enumerate().rev() {
        roots[i] = tries
            .build(
                a.hashed_address,
                a.address,
                a.storage.iter().copied(),
                |p, r| apart.insert(p, r),
            )
            .expect("storage trie");
    }
    let mut records = Vec::new();
    let mut b = BulkBuilder::new(|p, r| records.push((p, r)));
    for (a, root) in accounts.iter().zip(&roots) {
        b.add_account_with_storage_root(a.hashed_address, a.address, &a.leaf, *root)
            .expect("account");
    }
    let root = b.finish().expect("finish");
    for (p, r) in records {
        apart.insert(p, r);
    }
    assert_eq!(root, whole_root);
    assert!(snapshot(&apart) == snapshot(&whole), "records differ");
}

/// Keys chosen so the storage trie has extensions below branches (a lone
/// branch under a shared nibble run), sibling branches without extensions
/// (whose hashes the builder computes together), leaves beside branches and
/// a root extension: the root equals alloy-trie's `HashBuilder` on the same
/// leaves.
#[test]
fn storage_trie_with_extensions_and_sibling_branches_matches_hash_builder() {
    let prefixes: [&[u8]; 12] = [
        &[0x10],
        &[0x23, 0x40],
        &[0x23, 0x41],
        &[0x23, 0x45, 0x60],
        &[0x23, 0x45, 0x61],
        &[0x50],
        &[0x51],
        &[0x52, 0x00],
        &[0x52, 0x01],
        &[0x9a, 0xbc, 0xde],
        &[0x9a, 0xbc, 0xdf],
        &[0xf0],
    ];
    // The same shapes once at the root and once under a shared first byte
    // (an extension above the root branch).
    for lead in [None, Some(0x77u8)] {
        let mut leaves: Vec<(B256, U256)> = Vec::new();
        for (i, prefix) in prefixes.iter().enumerate() {
            let mut key = [0x5au8; 32];
            let at = usize::from(lead.is_some());
            if let Some(l) = lead {
                key[0] = l;
            }
            key[at..at + prefix.len()].copy_from_slice(prefix);
            leaves.push((B256::from(key), U256::from(1_000 + i as u64)));
        }
        leaves.sort();
        let mut hb = alloy_trie::HashBuilder::default();
        for (k, v) in &leaves {
            hb.add_leaf(alloy_trie::Nibbles::unpack(k), &alloy_rlp::encode(v));
        }
        let root = StorageTrieBuilder::new()
            .build(
                B256::repeat_byte(1),
                Default::default(),
                leaves.iter().map(|(k, v)| (*k, *k, *v)),
                |_, _| {},
            )
            .expect("storage trie");
        assert_eq!(root, hb.root(), "lead {lead:?}");
    }
}

/// A storage-trie builder whose build stopped on unsorted input builds the
/// next trie as a fresh one would: nothing queued by the failed build leaks
/// into it.
#[test]
fn a_builder_reused_after_an_error_gives_the_fresh_root() {
    let key = |b: u8| B256::repeat_byte(b);
    let slots = |keys: &[u8]| -> Vec<(B256, B256, U256)> {
        keys.iter()
            .map(|&b| (key(b), key(b), U256::from(u64::from(b) + 1)))
            .collect()
    };
    let build = |tries: &mut StorageTrieBuilder, keys: &[u8]| {
        tries.build(key(9), Default::default(), slots(keys), |_, _| {})
    };
    let mut reused = StorageTrieBuilder::new();
    let failed = build(&mut reused, &[0x11, 0x22, 0x33, 0x05]);
    assert!(
        matches!(failed, Err(CommitmentError::Unsorted { .. })),
        "{failed:?}"
    );
    let after = build(&mut reused, &[0x44, 0x55, 0x66, 0x77]).expect("sorted");
    let fresh = build(&mut StorageTrieBuilder::new(), &[0x44, 0x55, 0x66, 0x77]).expect("sorted");
    assert_eq!(after, fresh);
}
