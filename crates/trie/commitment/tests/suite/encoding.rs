//! Key encoding round trips, malformed keys and corrupted records.

use alloy_primitives::U256;
use bytes::Bytes;
use proptest::prelude::*;
use rand::{SeedableRng, rngs::StdRng};
use strata_commitment::{
    BranchSource, CommitmentError, ComputeOptions, MemoryBranchStore, SourceError, TrieUpdate,
    compute_root, record_key, record_path, reencode_record, warm_path,
};

use crate::common::{address, bulk_store, random_state, slot};

proptest! {
    #[test]
    fn record_key_round_trips(path in proptest::collection::vec(0u8..16, 0..=128)) {
        let key = record_key(&path);
        prop_assert!(key[0] < 0x20);
        prop_assert_eq!(key.len(), 1 + path.len() / 2);
        prop_assert_eq!(record_path(&key).expect("valid key"), path);
    }
}

#[test]
fn known_keys() {
    assert_eq!(record_key(&[]), vec![0x00]);
    assert_eq!(record_key(&[0xa]), vec![0x1a]);
    assert_eq!(record_key(&[1, 2]), vec![0x00, 0x12]);
    assert_eq!(record_key(&[1, 2, 3]), vec![0x11, 0x23]);
    assert_ne!(record_key(&[]), b"\xffroot".to_vec());
}

#[test]
fn malformed_keys_are_errors() {
    for key in [
        &b""[..],
        b"\xffroot",
        &[0x20][..],
        &[0x01][..],
        &[0x05, 0x12][..],
        &[0u8; 66][..],
    ] {
        assert!(
            matches!(record_path(key), Err(CommitmentError::MalformedKey { .. })),
            "{key:?}"
        );
    }
}

/// A store whose records were damaged: every compute over it fails with
/// `Corrupted` (or succeeds when the damage is off the walked path), never panics.
struct Damaged {
    inner: MemoryBranchStore,
}

impl BranchSource for Damaged {
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        self.inner.branch(path)
    }
}

#[test]
fn corrupted_records_are_errors_not_panics() {
    let mut rng = StdRng::seed_from_u64(31);
    let mut state = random_state(&mut rng, 400, 10);
    let (store, _) = bulk_store(&state, false);
    let a = address(1);
    state.set_storage(a, slot(1), U256::from(5));
    let update = TrieUpdate {
        accounts: (0..400).map(address).collect(),
        storage: vec![(a, slot(1))],
        wiped: vec![],
    };
    // Records of the account trie: every one is read, since every account is touched.
    let mut originals: Vec<(Vec<u8>, Bytes)> = store
        .iter()
        .filter(|(p, _)| p.len() < 64)
        .map(|(p, r)| (p.clone(), r.clone()))
        .collect();
    originals.sort();
    assert!(originals.len() > 20);
    for (i, (path, rec)) in originals.iter().enumerate().take(40) {
        let variants: Vec<(bool, Vec<u8>)> = vec![
            (true, rec[..rec.len() / 2].to_vec()),       // truncated
            (true, [rec.as_ref(), &[0u8][..]].concat()), // trailing byte
            (true, {
                let mut v = rec.to_vec();
                v[0] = 9;
                v
            }), // bad tag
            (true, vec![]),                              // empty
            (false, {
                let mut v = rec.to_vec();
                let k = (i * 7) % v.len();
                v[k] ^= 0xff;
                v
            }), // flipped byte
        ];
        for (must_detect, bad) in variants {
            let mut damaged = Damaged {
                inner: MemoryBranchStore::new(),
            };
            for (p, r) in store.iter() {
                damaged.inner.insert(p.clone(), r.clone());
            }
            damaged.inner.insert(path.clone(), Bytes::from(bad));
            match compute_root(&update, &damaged, &state, &ComputeOptions::default()) {
                Err(CommitmentError::Corrupted { what, .. }) => assert!(!what.is_empty()),
                Err(e) => panic!("unexpected error kind: {e}"),
                // A flipped hash byte is only caught by the block's root check.
                Ok(_) => assert!(!must_detect, "damage at {path:?} went unnoticed"),
            }
            // warm_path over the damaged record: an error or a count, never a panic.
            let _ = warm_path(&damaged, path);
        }
    }
}

/// A failing source surfaces as an error naming the path.
#[test]
fn source_errors_name_the_path() {
    struct Failing;
    impl BranchSource for Failing {
        fn branch(&self, _path: &[u8]) -> Result<Option<Bytes>, SourceError> {
            Err("disk on fire".into())
        }
    }
    let state = strata_commitment::MemoryState::new();
    let err = compute_root(
        &TrieUpdate {
            accounts: vec![address(1)],
            ..Default::default()
        },
        &Failing,
        &state,
        &ComputeOptions::default(),
    )
    .expect_err("must fail");
    let msg = err.to_string();
    assert!(
        msg.contains("<root>") && msg.contains("disk on fire"),
        "{msg}"
    );
}

/// A well-formed record whose extension runs past the 64-nibble key is
/// reported, not indexed out of bounds.
#[test]
fn extension_past_the_key_is_corrupted() {
    let mut rec = vec![2u8, 3, 64];
    rec.extend_from_slice(&[0u8; 32]);
    for _ in 0..2 {
        rec.push(32);
        rec.extend_from_slice(&[0xab; 32]);
    }
    let mut store = MemoryBranchStore::new();
    store.insert(Vec::new(), Bytes::from(rec));
    let state = strata_commitment::MemoryState::new();
    let update = TrieUpdate {
        accounts: vec![address(1), address(2)],
        ..Default::default()
    };
    let r = compute_root(&update, &store, &state, &ComputeOptions::default());
    assert!(matches!(r, Err(CommitmentError::Corrupted { .. })), "{r:?}");
}

/// Every record a bulk build writes (account and storage sub-tries) decodes
/// and re-encodes to the same bytes; damaged records are errors.
#[test]
fn stored_records_reencode_to_themselves() {
    let mut rng = StdRng::seed_from_u64(32);
    let state = random_state(&mut rng, 300, 10);
    let (store, _) = bulk_store(&state, false);
    let (mut accounts, mut slots) = (0, 0);
    for (path, rec) in store.iter() {
        let again = reencode_record(&path, rec).expect("a stored record decodes");
        assert_eq!(again, rec.to_vec(), "record at {path:?}");
        if path.len() < 64 {
            accounts += 1
        } else {
            slots += 1
        }
        let truncated = reencode_record(&path, &rec[..rec.len() - 1]);
        assert!(
            matches!(truncated, Err(CommitmentError::Corrupted { .. })),
            "{truncated:?}"
        );
    }
    assert!(
        accounts > 10 && slots > 10,
        "{accounts} account / {slots} storage records"
    );
}
