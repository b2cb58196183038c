//! Read accounting: an untouched subtree is never read; warm_path reads what
//! compute_root reads.

use std::sync::Mutex;

use alloy_primitives::keccak256;
use bytes::Bytes;
use rand::{SeedableRng, rngs::StdRng};
use strata_commitment::{
    BranchSource, ComputeOptions, MemoryBranchStore, SourceError, TrieUpdate, compute_root,
    unpack_nibbles, warm_path, warm_top_levels,
};

use crate::common::{address, bulk_store, random_state, slot};

/// A branch source that logs every path it is asked for.
struct Recording<'a> {
    inner: &'a MemoryBranchStore,
    log: Mutex<Vec<Vec<u8>>>,
}

impl BranchSource for Recording<'_> {
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        self.log.lock().expect("log").push(path.to_vec());
        self.inner.branch(path)
    }
}

/// Touching a few accounts reads only records on their paths, each once, and
/// exactly the records warm_path reads.
#[test]
fn untouched_subtrees_are_not_read() {
    let mut rng = StdRng::seed_from_u64(21);
    let mut state = random_state(&mut rng, 20_000, 0);
    let (store, _) = bulk_store(&state, false);
    let touched = [address(5), address(777), address(12_345)];
    for a in &touched {
        let mut l = strata_commitment::StateSource::account(&state, a)
            .expect("memory")
            .expect("exists");
        l.nonce += 1;
        state.set_account(*a, l);
    }
    let rec = Recording {
        inner: &store,
        log: Mutex::new(Vec::new()),
    };
    let update = TrieUpdate {
        accounts: touched.to_vec(),
        ..Default::default()
    };
    let out = compute_root(&update, &rec, &state, &ComputeOptions::default()).expect("compute");
    let log = rec.log.into_inner().expect("log");
    let paths: Vec<Vec<u8>> = touched
        .iter()
        .map(|a| unpack_nibbles(keccak256(a).as_slice()))
        .collect();
    for p in &log {
        assert!(
            paths.iter().any(|k| k.starts_with(p)),
            "read {p:?} is not on a touched path"
        );
    }
    let mut dedup = log.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), log.len(), "a record was read twice: {log:?}");
    assert_eq!(out.stats.records_read as usize, log.len());
    // 20,000 accounts: about 4-5 levels; far below the ~1,300 branches of the trie.
    assert!(log.len() <= 3 * 6, "{} reads for 3 keys", log.len());
    // warm_path reads the same records.
    let warm = Recording {
        inner: &store,
        log: Mutex::new(Vec::new()),
    };
    let mut n = 0;
    for p in &paths {
        n += warm_path(&warm, p).expect("warm");
    }
    let mut wlog = warm.log.into_inner().expect("log");
    assert_eq!(n, wlog.len());
    wlog.sort();
    wlog.dedup();
    assert_eq!(
        wlog, dedup,
        "warm_path reads differ from compute_root reads"
    );
}

/// A storage-only change reads the account's path and its storage path only;
/// an account-only change never reads its storage sub-trie.
#[test]
fn account_only_change_skips_storage() {
    let mut rng = StdRng::seed_from_u64(22);
    let mut state = random_state(&mut rng, 2_000, 0);
    let a = address(3);
    for i in 0..200 {
        state.set_storage(a, slot(i), alloy_primitives::U256::from(i + 1));
    }
    let (store, _) = bulk_store(&state, false);
    let hashed = unpack_nibbles(keccak256(a).as_slice());
    // Account-only.
    let mut l = strata_commitment::StateSource::account(&state, &a)
        .expect("memory")
        .expect("exists");
    l.balance += alloy_primitives::U256::from(1);
    state.set_account(a, l);
    let rec = Recording {
        inner: &store,
        log: Mutex::new(Vec::new()),
    };
    let out = compute_root(
        &TrieUpdate {
            accounts: vec![a],
            ..Default::default()
        },
        &rec,
        &state,
        &ComputeOptions::default(),
    )
    .expect("compute");
    let log = rec.log.into_inner().expect("log");
    assert!(
        log.iter().all(|p| p.len() < 64),
        "account-only change read storage records: {log:?}"
    );
    assert_eq!(
        out.stats.leaves_read, 1,
        "only the account itself is re-read"
    );
    // Storage-only.
    state.set_storage(a, slot(7), alloy_primitives::U256::from(99));
    let rec = Recording {
        inner: &store,
        log: Mutex::new(Vec::new()),
    };
    compute_root(
        &TrieUpdate {
            storage: vec![(a, slot(7))],
            ..Default::default()
        },
        &rec,
        &state,
        &ComputeOptions::default(),
    )
    .expect("compute");
    let log = rec.log.into_inner().expect("log");
    let mut full = hashed.clone();
    full.extend(unpack_nibbles(keccak256(slot(7)).as_slice()));
    assert!(
        log.iter().all(|p| full.starts_with(p)),
        "storage-only change read off-path records: {log:?}"
    );
    assert!(
        log.iter().any(|p| p.len() >= 64),
        "storage sub-trie was not read"
    );
    let mut n = 0;
    let warm = Recording {
        inner: &store,
        log: Mutex::new(Vec::new()),
    };
    n += warm_path(&warm, &full).expect("warm");
    assert_eq!(
        n,
        log.len(),
        "warm_path {:?} vs compute {:?}",
        warm.log.lock().expect("log"),
        log
    );
}

/// With room for everything, the warm start reads every record of the
/// account trie, each once, and none of a storage trie; with half that
/// room it stops after a whole level, within the budget, having read the
/// levels above it in full.
#[test]
fn the_warm_start_reads_whole_top_levels_within_its_budget() {
    let mut rng = StdRng::seed_from_u64(22);
    let state = random_state(&mut rng, 20_000, 40);
    let (store, _) = bulk_store(&state, false);
    let mut account_trie: Vec<(Vec<u8>, u64)> = store
        .iter()
        .filter(|(path, _)| path.len() < 64)
        .map(|(path, record)| (path, record.len() as u64))
        .collect();
    account_trie.sort();
    assert!(
        store.iter().any(|(path, _)| path.len() >= 64),
        "the state has storage tries"
    );
    let recording = || Recording {
        inner: &store,
        log: Mutex::new(Vec::new()),
    };

    let all = recording();
    let read = warm_top_levels(&all, u64::MAX).expect("reads");
    let mut log = all.log.into_inner().expect("log");
    log.sort();
    let paths: Vec<Vec<u8>> = account_trie.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(log, paths, "every account-trie record, each once");
    assert_eq!(read.records, paths.len());
    assert_eq!(read.bytes, account_trie.iter().map(|(_, n)| n).sum::<u64>());
    assert!(read.levels >= 3, "20,000 accounts: {read:?}");

    let half = recording();
    let budget = read.bytes / 2;
    let part = warm_top_levels(&half, budget).expect("reads");
    assert!(part.bytes <= budget, "{part:?} within {budget}");
    assert!(part.levels < read.levels && part.records > 0, "{part:?}");
    let mut log = half.log.into_inner().expect("log");
    log.sort();
    log.dedup();
    assert_eq!(log.len(), part.records, "each once, every one found");
    // The levels read are the top ones, whole: every record at most
    // `levels` branch nodes below the root, and every such record read.
    let depth = |path: &[u8]| {
        (0..path.len())
            .filter(|&cut| paths.binary_search(&path[..cut].to_vec()).is_ok())
            .count()
    };
    let top: Vec<&Vec<u8>> = paths.iter().filter(|p| depth(p) <= part.levels).collect();
    assert_eq!(log.iter().collect::<Vec<_>>(), top);
}
