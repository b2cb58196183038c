//! The Ethereum trie vectors (ethereum/tests TrieTests) from ../shared/vectors.

use std::path::PathBuf;

use alloy_primitives::{B256, hex, keccak256};
use alloy_rlp::Decodable;
use alloy_trie::TrieAccount;
use serde_json::Value;
use strata_commitment::{
    AccountLeaf, EMPTY_ROOT, MemoryBranchStore, MemoryState, RawTrie, TrieUpdate,
};

use crate::common::commit;

/// The trie vectors folder, or `None` when the test skips.
fn vectors_dir() -> Option<PathBuf> {
    strata_test_support::vectors("trie")
}

fn load(file: &str) -> Option<serde_json::Map<String, Value>> {
    let path = vectors_dir()?.join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    match serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
    {
        Value::Object(m) => Some(m),
        _ => panic!("{}: expected a JSON object", path.display()),
    }
}

/// "0x…" is hex, anything else is its UTF-8 bytes; null is empty (delete).
fn bytes_of(v: &Value) -> Vec<u8> {
    match v {
        Value::Null => Vec::new(),
        Value::String(s) => match s.strip_prefix("0x") {
            Some(h) => hex::decode(h).unwrap_or_else(|e| panic!("bad hex {s}: {e}")),
            None => s.as_bytes().to_vec(),
        },
        other => panic!("unexpected JSON value {other}"),
    }
}

fn expected_root(case: &Value) -> B256 {
    B256::try_from(bytes_of(&case["root"]).as_slice()).expect("32-byte root")
}

/// The (key, value) operations of a case, in order for lists.
fn ops(case: &Value) -> Vec<(Vec<u8>, Vec<u8>)> {
    match &case["in"] {
        Value::Array(items) => items
            .iter()
            .map(|kv| {
                let kv = kv.as_array().expect("[key, value]");
                (bytes_of(&kv[0]), bytes_of(&kv[1]))
            })
            .collect(),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| (bytes_of(&Value::String(k.clone())), bytes_of(v)))
            .collect(),
        other => panic!("unexpected 'in': {other}"),
    }
}

fn check_raw(file: &str, secure: bool) -> usize {
    let Some(cases) = load(file) else { return 0 };
    for (name, case) in &cases {
        let mut t = RawTrie::new();
        for (k, v) in ops(case) {
            let key = if secure { keccak256(&k).to_vec() } else { k };
            t.insert(&key, &v);
        }
        assert_eq!(t.root(), expected_root(case), "{file} / {name}");
    }
    cases.len()
}

#[test]
fn trietest() {
    let n = check_raw("trietest.json", false);
    assert!(n == 0 || n == 5, "{n} cases");
}

#[test]
fn trieanyorder() {
    let n = check_raw("trieanyorder.json", false);
    assert!(n == 0 || n == 7, "{n} cases");
    // Any order: reversed insertion gives the same roots.
    let Some(cases) = load("trieanyorder.json") else {
        return;
    };
    for (name, case) in &cases {
        let mut t = RawTrie::new();
        for (k, v) in ops(case).into_iter().rev() {
            t.insert(&k, &v);
        }
        assert_eq!(t.root(), expected_root(case), "reversed {name}");
    }
}

#[test]
fn secure_tries() {
    let a = check_raw("trietest_secureTrie.json", true);
    let b = check_raw("trieanyorder_secureTrie.json", true);
    assert!(a + b == 0 || (a == 3 && b == 7), "{a} + {b} cases");
}

/// The secure state-trie vectors: through RawTrie with keccak keys, and
/// through compute_root when every account has empty storage.
#[test]
fn hex_encoded_securetrie() {
    let n = check_raw("hex_encoded_securetrie_test.json", true);
    let Some(cases) = load("hex_encoded_securetrie_test.json") else {
        return;
    };
    assert_eq!(n, 3);
    let mut via_compute = 0;
    for (name, case) in &cases {
        let mut state = MemoryState::new();
        let mut all_empty_storage = true;
        let mut update = TrieUpdate::default();
        for (k, v) in ops(case) {
            let address = alloy_primitives::Address::from_slice(&k);
            let acct = TrieAccount::decode(&mut v.as_slice())
                .unwrap_or_else(|e| panic!("{name}: account RLP: {e}"));
            all_empty_storage &= acct.storage_root == EMPTY_ROOT;
            state.set_account(
                address,
                AccountLeaf {
                    nonce: acct.nonce,
                    balance: acct.balance,
                    code_hash: acct.code_hash,
                },
            );
            update.accounts.push(address);
        }
        if !all_empty_storage {
            continue;
        }
        let mut store = MemoryBranchStore::new();
        assert_eq!(
            commit(&mut store, &state, &update, 1),
            expected_root(case),
            "compute_root {name}"
        );
        via_compute += 1;
    }
    assert!(via_compute > 0, "no case went through compute_root");
}
