//! Differential tests against alloy-trie's `HashBuilder`: random states and
//! sequences of random blocks, checked after every block; parallel vs
//! sequential walks; incremental records vs bulk-built records.

use proptest::prelude::*;
use rand::{SeedableRng, rngs::StdRng};
use strata_commitment::{EMPTY_ROOT, MemoryBranchStore, MemoryState, TrieUpdate};

use crate::common::{bulk_store, commit, oracle_root, random_block, random_state, snapshot};

/// Runs `blocks` random blocks from `state` (persisted in `store`), checking
/// the root against the oracle after each, and (when `check_records`) that the
/// incremental records equal a from-scratch bulk build of the same state.
fn run_blocks(
    seed: u64,
    mut state: MemoryState,
    mut store: MemoryBranchStore,
    universe: u64,
    blocks: usize,
    check_records: bool,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    for b in 0..blocks {
        let update = random_block(&mut rng, &mut state, universe);
        let root = commit(&mut store, &state, &update, 8);
        assert_eq!(
            root,
            oracle_root(&state),
            "seed {seed} block {b}: root differs from HashBuilder"
        );
        if check_records {
            let (bulk, bulk_root) = bulk_store(&state, false);
            assert_eq!(bulk_root, root, "seed {seed} block {b}: bulk root");
            assert!(
                snapshot(&bulk) == snapshot(&store),
                "seed {seed} block {b}: incremental records differ from bulk-built records"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// 100 random blocks from the empty trie over a small universe (dense
    /// collisions: deletes, collapses, re-creations), records checked too.
    #[test]
    fn blocks_from_empty_match_hash_builder(seed in any::<u64>(), universe in 2u64..60) {
        run_blocks(seed, MemoryState::new(), MemoryBranchStore::new(), universe, 100, true);
    }

    /// 100 random blocks on a bulk-built state of a few hundred accounts.
    #[test]
    fn blocks_on_bulk_state_match_hash_builder(seed in any::<u64>(), accounts in 1u64..400) {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
        let state = random_state(&mut rng, accounts, 20);
        let (store, root) = bulk_store(&state, seed % 2 == 0);
        prop_assert_eq!(root, oracle_root(&state));
        run_blocks(seed, state, store, accounts + 20, 100, false);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]

    /// Big random states (up to 10,000 accounts with storage): bulk build,
    /// sequential and parallel, equals the oracle; then a few blocks.
    #[test]
    fn big_states_match_hash_builder(seed in any::<u64>(), accounts in 1000u64..10_000) {
        let mut rng = StdRng::seed_from_u64(seed);
        let state = random_state(&mut rng, accounts, 40);
        let expected = oracle_root(&state);
        let (seq, seq_root) = bulk_store(&state, false);
        let (par, par_root) = bulk_store(&state, true);
        prop_assert_eq!(seq_root, expected);
        prop_assert_eq!(par_root, expected);
        prop_assert!(snapshot(&seq) == snapshot(&par), "parallel bulk build wrote different records");
        run_blocks(seed, state, seq, accounts + 100, 5, false);
    }

    /// The same blocks walked sequentially and in parallel give the same root
    /// and the same writes.
    #[test]
    fn parallel_and_sequential_agree(seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut state = random_state(&mut rng, 2000, 10);
        let (mut a, _) = bulk_store(&state, false);
        let (mut b, _) = bulk_store(&state, false);
        for _ in 0..10 {
            let mut update = TrieUpdate::default();
            for _ in 0..20 {
                let existed: Vec<bool> = (0..2200)
                    .map(|i| strata_commitment::StateSource::account(&state, &crate::common::address(i)).expect("memory").is_some())
                    .collect();
                let u = random_block(&mut rng, &mut state, 2200);
                // Merged blocks: an account deleted in one and re-created in a
                // later one lost its storage, so the merged update lists it.
                for (i, e) in existed.iter().enumerate() {
                    let a = crate::common::address(i as u64);
                    if *e && strata_commitment::StateSource::account(&state, &a).expect("memory").is_none() {
                        update.wiped.push(a);
                    }
                }
                update.accounts.extend(u.accounts);
                update.storage.extend(u.storage);
                update.wiped.extend(u.wiped);
            }
            let opts_seq = strata_commitment::ComputeOptions { parallel_threshold: usize::MAX };
            let opts_par = strata_commitment::ComputeOptions { parallel_threshold: 0 };
            let out_a = strata_commitment::compute_root(&update, &a, &state, &opts_seq).expect("sequential");
            let out_b = strata_commitment::compute_root(&update, &b, &state, &opts_par).expect("parallel");
            prop_assert_eq!(out_a.root, out_b.root);
            prop_assert_eq!(out_a.root, oracle_root(&state));
            prop_assert!(out_a.writes == out_b.writes, "writes differ");
            a.apply(&out_a.writes);
            b.apply(&out_b.writes);
        }
    }
}

/// Known root: the empty trie, through every entry point.
#[test]
fn empty_trie_root() {
    let store = MemoryBranchStore::new();
    let state = MemoryState::new();
    let out = strata_commitment::compute_root(
        &TrieUpdate::default(),
        &store,
        &state,
        &Default::default(),
    )
    .expect("empty");
    assert_eq!(out.root, EMPTY_ROOT);
    assert!(out.writes.is_empty());
    assert_eq!(EMPTY_ROOT, oracle_root(&state));
    assert_eq!(strata_commitment::RawTrie::new().root(), EMPTY_ROOT);
    assert_eq!(bulk_store(&state, false).1, EMPTY_ROOT);
    assert_eq!(bulk_store(&state, true).1, EMPTY_ROOT);
    assert_eq!(
        format!("{EMPTY_ROOT}"),
        "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
    );
}

/// Deleting every account returns to the empty root and an empty store.
#[test]
fn deleting_everything_empties_the_store() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut state = random_state(&mut rng, 300, 10);
    let (mut store, _) = bulk_store(&state, false);
    let addrs: Vec<_> = state.accounts().map(|(a, _)| *a).collect();
    for a in &addrs {
        state.remove_account(a);
    }
    let update = TrieUpdate {
        accounts: addrs,
        ..Default::default()
    };
    let root = commit(&mut store, &state, &update, 16);
    assert_eq!(root, EMPTY_ROOT);
    assert!(
        store.is_empty(),
        "{} records left after deleting all accounts",
        store.len()
    );
}
