//! Fuzz target for the commitment record decoder (`strata_commitment`).
//!
//! Input: `key_len:u8`, then `key_len` bytes of a commitment-domain key, then
//! the record bytes stored under it.
//! * The key goes through `record_path`: a valid key must give back the same
//!   bytes through `record_key`; an invalid one must be a `MalformedKey`
//!   error (the record is then decoded at the root path).
//! * The record goes through `reencode_record` (the decoder every read uses):
//!   `Ok` or `Corrupted` naming the path, never a panic. When it decodes, the
//!   re-encoding must equal the input (records are canonical, FORMAT.md) and
//!   decode again to the same bytes.
//! * At a sub-trie root the record is also walked: `warm_path` along a path
//!   through it and, at the trie root, `compute_root` over a few accounts
//!   (an empty state, so every touched leaf is deleted) must return `Ok` or an
//!   error, never panic.
#![no_main]

use alloy_primitives::Address;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strata_commitment::{
    CommitmentError, ComputeOptions, MemoryBranchStore, MemoryState, TrieUpdate, compute_root,
    record_key, record_path, reencode_record, warm_path,
};

fuzz_target!(|data: &[u8]| {
    let Some((&key_len, rest)) = data.split_first() else {
        return;
    };
    let key_len = usize::from(key_len).min(rest.len());
    let (key, record) = rest.split_at(key_len);
    let path = match record_path(key) {
        Ok(path) => {
            assert_eq!(
                record_key(&path),
                key,
                "record_key(record_path(key)) != key"
            );
            path
        }
        Err(e) => {
            assert!(matches!(e, CommitmentError::MalformedKey { .. }), "{e}");
            Vec::new()
        }
    };
    match reencode_record(&path, record) {
        Ok(canonical) => {
            assert_eq!(canonical, record, "a decoded record re-encodes differently");
            let again = reencode_record(&path, &canonical).expect("canonical bytes decode");
            assert_eq!(again, canonical);
        }
        Err(e) => {
            assert!(matches!(e, CommitmentError::Corrupted { .. }), "{e}");
            assert!(!e.to_string().is_empty());
        }
    }
    if path.is_empty() || path.len() == 64 {
        walk(&path, record);
    }
});

/// Puts `record` at the sub-trie root `path` and walks through it.
fn walk(path: &[u8], record: &[u8]) {
    let mut store = MemoryBranchStore::new();
    store.insert(path.to_vec(), Bytes::copy_from_slice(record));
    // A full path through the record, its nibbles taken from the record bytes.
    let mut full = path.to_vec();
    full.extend(
        record
            .iter()
            .cycle()
            .take(128 - path.len())
            .map(|b| b & 0x0f),
    );
    let _ = warm_path(&store, &full);
    if path.is_empty() {
        let update = TrieUpdate {
            accounts: (0u8..4).map(Address::repeat_byte).collect(),
            storage: vec![],
            wiped: vec![],
        };
        let _ = compute_root(
            &update,
            &store,
            &MemoryState::new(),
            &ComputeOptions::default(),
        );
    }
}
