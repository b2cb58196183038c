//! The model's state root against ethereum/tests BlockchainTests: the root
//! of `pre` is the genesis header's stateRoot, and applying the pre → post
//! difference as one trace block's writes gives the last block's stateRoot.

use std::collections::BTreeMap;

use alloy_primitives::{B256, U256};
use strata_storage::genesis::{GenesisAlloc, alloc_from_value, parse_hash};
use strata_trace::model::WorldState;
use strata_trace::{AccountWrite, TraceBlock};

use crate::common::{read_json, vectors};
use strata_test_support::json_files;

/// The writes that turn `pre` into `post` (deleted accounts, changed
/// fields, new and cleared slots).
fn diff(
    pre: &GenesisAlloc,
    post: &GenesisAlloc,
) -> BTreeMap<alloy_primitives::Address, AccountWrite> {
    let mut writes = BTreeMap::new();
    for address in pre.keys() {
        if !post.contains_key(address) {
            writes.insert(
                *address,
                AccountWrite {
                    deleted: true,
                    ..AccountWrite::default()
                },
            );
        }
    }
    for (address, after) in post {
        let mut write = AccountWrite {
            balance: Some(after.balance),
            nonce: Some(after.nonce),
            code: Some(after.code.clone()),
            storage: after.storage.clone(),
            ..AccountWrite::default()
        };
        if let Some(before) = pre.get(address) {
            for slot in before.storage.keys() {
                write.storage.entry(*slot).or_insert(U256::ZERO);
            }
        }
        writes.insert(*address, write);
    }
    writes
}

fn root_of(value: &serde_json::Value) -> B256 {
    parse_hash(value.as_str().unwrap()).unwrap()
}

#[test]
fn model_roots_match_every_blockchain_test() {
    let Some(dir) = vectors() else { return };
    let mut cases = 0;
    for file in json_files(&dir.join("blockchain_tests")) {
        let doc = read_json(&file);
        for (name, case) in doc.as_object().unwrap() {
            let pre = alloc_from_value(&case["pre"]).unwrap();
            let post = alloc_from_value(&case["postState"]).unwrap();
            let mut state = WorldState::from_alloc(&pre);
            let expected_pre = root_of(&case["genesisBlockHeader"]["stateRoot"]);
            assert_eq!(
                state.state_root(),
                expected_pre,
                "{}::{name}: pre root",
                file.display()
            );

            let last = case["lastblockhash"].as_str().unwrap();
            let block = case["blocks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["blockHeader"]["hash"].as_str() == Some(last))
                .unwrap_or_else(|| panic!("{name}: no block with hash {last}"));
            let expected_post = root_of(&block["blockHeader"]["stateRoot"]);
            assert_eq!(
                WorldState::from_alloc(&post).state_root(),
                expected_post,
                "{}::{name}: postState root",
                file.display()
            );

            // The same post root through the write path (deletes, clears, creations),
            // applied on top of a state whose roots were already cached.
            let block = TraceBlock {
                number: 1,
                writes: diff(&pre, &post),
                ..TraceBlock::default()
            };
            state.apply_block(&block);
            assert_eq!(
                state.state_root(),
                expected_post,
                "{}::{name}: pre + writes",
                file.display()
            );
            assert_eq!(
                state.to_alloc(),
                post,
                "{name}: model state equals postState"
            );
            cases += 1;
        }
    }
    assert!(cases >= 12, "only {cases} cases found");
}

#[test]
fn empty_state_has_the_empty_root() {
    let empty: B256 = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
        .parse()
        .unwrap();
    assert_eq!(WorldState::new().state_root(), empty);
}
