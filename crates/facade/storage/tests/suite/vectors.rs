//! Ethereum's BlockchainTests through the whole store: the root of `pre`
//! equals the genesis header's stateRoot, and the difference from `pre` to
//! `postState`, committed as one block, gives the last block's stateRoot.

use std::path::{Path, PathBuf};

use alloy_primitives::{B256, KECCAK256_EMPTY, keccak256};
use serde_json::Value;
use strata_storage::genesis::{GenesisAlloc, alloc_from_value};
use strata_storage::{Account, Regime, StateDb};

/// The shared vectors folder, or `None` when the test skips.
pub(crate) fn vectors_dir() -> Option<PathBuf> {
    strata_test_support::vectors("")
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn last_block_root(case: &Value) -> B256 {
    let last_hash = case["lastblockhash"].as_str().unwrap();
    let block = case["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["blockHeader"]["hash"].as_str() == Some(last_hash))
        .expect("a block whose hash is lastblockhash");
    block["blockHeader"]["stateRoot"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Writes into `writer` whatever turns `pre` into `post`.
fn apply_difference(
    writer: &mut strata_storage::BlockWriter,
    pre: &GenesisAlloc,
    post: &GenesisAlloc,
) {
    for address in pre.keys().filter(|a| !post.contains_key(*a)) {
        writer.delete_account(*address);
    }
    for (address, account) in post {
        let before = pre.get(address);
        if before == Some(account) {
            continue;
        }
        let code_hash = if account.code.is_empty() {
            KECCAK256_EMPTY
        } else {
            keccak256(&account.code)
        };
        writer.put_account(
            *address,
            &Account {
                nonce: account.nonce,
                balance: account.balance,
                code_hash,
            },
        );
        if before.map(|b| &b.code) != Some(&account.code) {
            writer.put_code(*address, account.code.0.clone());
        }
        let empty = Default::default();
        let old_storage = before.map(|b| &b.storage).unwrap_or(&empty);
        for (slot, value) in &account.storage {
            if old_storage.get(slot) != Some(value) {
                writer.put_storage(*address, *slot, *value);
            }
        }
        for slot in old_storage
            .keys()
            .filter(|s| !account.storage.contains_key(*s))
        {
            writer.put_storage(*address, *slot, Default::default());
        }
    }
}

#[test]
fn blockchain_tests_pre_and_post_roots() {
    let Some(dir) = vectors_dir() else { return };
    let mut files = Vec::new();
    json_files(&dir.join("blockchain_tests"), &mut files);
    files.sort();
    assert!(
        !files.is_empty(),
        "no blockchain tests under {}",
        dir.display()
    );
    let mut cases = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let all: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
        for (name, case) in &all {
            let context = format!("{} / {name}", file.display());
            let pre = alloc_from_value(&case["pre"]).unwrap();
            let post = alloc_from_value(&case["postState"]).unwrap();
            let genesis_root: B256 = case["genesisBlockHeader"]["stateRoot"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();

            let dir = tempfile::tempdir().unwrap();
            let db = StateDb::open(dir.path(), crate::model::small_options()).unwrap();
            assert_eq!(
                db.init_genesis(&pre, strata_storage::GenesisName::Unnamed)
                    .unwrap(),
                genesis_root,
                "{context}: pre root"
            );

            let mut writer = db.begin_block(1).unwrap();
            apply_difference(&mut writer, &pre, &post);
            let info = writer.commit().unwrap();
            assert_eq!(info.root, last_block_root(case), "{context}: post root");

            let reader = db.reader(Regime::Exec);
            for (address, account) in &post {
                let found = reader.account(address).unwrap().expect("account exists");
                assert_eq!(
                    found.balance, account.balance,
                    "{context}: balance of {address}"
                );
                for (slot, value) in &account.storage {
                    assert_eq!(
                        reader.storage(address, slot).unwrap(),
                        *value,
                        "{context}: {address} {slot}"
                    );
                }
            }
            assert_proofs(&db, &post, &context);
            // And back: unwinding the block restores the pre root.
            assert_eq!(db.unwind_to(0).unwrap(), genesis_root, "{context}: unwind");
            assert_proofs(&db, &pre, &format!("{context}, unwound"));
            cases += 1;
        }
    }
    assert!(cases >= 8, "only {cases} cases ran");
}

/// The hex quantity at `field` of a header.
#[cfg(feature = "alloy-genesis")]
fn quantity(header: &Value, field: &str) -> u128 {
    let text = header[field].as_str().unwrap_or_else(|| panic!("{field}"));
    u128::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
}

/// The header field at `field`, parsed.
#[cfg(feature = "alloy-genesis")]
fn field<T: std::str::FromStr>(header: &Value, field: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    header[field].as_str().unwrap().parse().unwrap()
}

/// The chain configuration a BlockchainTests `network` names at genesis.
#[cfg(feature = "alloy-genesis")]
fn chain_config(network: &str) -> alloy_genesis::ChainConfig {
    // Every fork up to Berlin at genesis: a configuration in fork order.
    let mut config = alloy_genesis::ChainConfig {
        homestead_block: Some(0),
        eip150_block: Some(0),
        eip155_block: Some(0),
        eip158_block: Some(0),
        byzantium_block: Some(0),
        constantinople_block: Some(0),
        petersburg_block: Some(0),
        istanbul_block: Some(0),
        berlin_block: Some(0),
        ..Default::default()
    };
    match network {
        "Cancun" => {
            config.london_block = Some(0);
            config.shanghai_time = Some(0);
            config.cancun_time = Some(0);
        }
        "BerlinToLondonAt5" => config.london_block = Some(5),
        other => panic!("map the network {other} to its forks"),
    }
    config
}

/// `init_chain_genesis` builds each fixture's genesis header from an
/// `alloy_genesis::Genesis` (its alloc, header fields and forks): the root
/// and the block hash are the fixture's, and BLOCKHASH(0) serves the hash.
#[cfg(feature = "alloy-genesis")]
#[test]
fn blockchain_tests_genesis_block_hashes() {
    use alloy_genesis::{Genesis, GenesisAccount};
    let Some(dir) = vectors_dir() else { return };
    let mut files = Vec::new();
    json_files(&dir.join("blockchain_tests"), &mut files);
    files.sort();
    let mut cases = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let all: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
        for (name, case) in &all {
            let context = format!("{} / {name}", file.display());
            let header = &case["genesisBlockHeader"];
            let pre = alloc_from_value(&case["pre"]).unwrap();
            let alloc = pre
                .iter()
                .map(|(address, account)| {
                    let storage = account
                        .storage
                        .iter()
                        .map(|(slot, value)| (*slot, B256::from(value.to_be_bytes::<32>())))
                        .collect();
                    let account = GenesisAccount {
                        nonce: Some(account.nonce),
                        balance: account.balance,
                        code: (!account.code.is_empty()).then(|| account.code.clone()),
                        storage: Some(storage),
                        private_key: None,
                    };
                    (*address, account)
                })
                .collect();
            let mut genesis = Genesis {
                config: chain_config(case["network"].as_str().unwrap()),
                nonce: quantity(header, "nonce") as u64,
                timestamp: quantity(header, "timestamp") as u64,
                extra_data: field(header, "extraData"),
                gas_limit: quantity(header, "gasLimit") as u64,
                difficulty: field(header, "difficulty"),
                mix_hash: field(header, "mixHash"),
                coinbase: field(header, "coinbase"),
                alloc,
                ..Default::default()
            };
            if header.get("baseFeePerGas").is_some() {
                genesis.base_fee_per_gas = Some(quantity(header, "baseFeePerGas"));
            }
            if header.get("blobGasUsed").is_some() {
                genesis.blob_gas_used = Some(quantity(header, "blobGasUsed") as u64);
                genesis.excess_blob_gas = Some(quantity(header, "excessBlobGas") as u64);
            }

            let dir = tempfile::tempdir().unwrap();
            let db = StateDb::open(dir.path(), crate::model::small_options()).unwrap();
            let (root, hash) = db.init_chain_genesis(&genesis).unwrap();
            assert_eq!(root, field::<B256>(header, "stateRoot"), "{context}: root");
            assert_eq!(hash, field::<B256>(header, "hash"), "{context}: hash");
            let reader = db.reader(Regime::Exec);
            assert_eq!(reader.block_hash(0).unwrap(), Some(hash), "{context}");
            cases += 1;
        }
    }
    assert!(cases >= 8, "only {cases} cases");
}

/// Every account of `alloc` (every slot, and one it does not have) and one
/// absent account proven against `alloc`'s root by alloy-trie's
/// `verify_proof` (the oracle's check, over `alloc` as its model).
fn assert_proofs(db: &StateDb, alloc: &GenesisAlloc, context: &str) {
    use crate::oracle::{Model, ModelAccount, assert_proofs_match, code_hash};
    let model: Model = alloc
        .iter()
        .map(|(address, genesis)| {
            let account = ModelAccount {
                account: Account {
                    nonce: genesis.nonce,
                    balance: genesis.balance,
                    code_hash: code_hash(&genesis.code),
                },
                code: (!genesis.code.is_empty()).then(|| genesis.code.clone()),
                storage: genesis.storage.clone(),
            };
            (*address, account)
        })
        .collect();
    let absent_account = alloy_primitives::Address::repeat_byte(0xee);
    assert!(!alloc.contains_key(&absent_account));
    let mut addresses: Vec<_> = alloc.keys().copied().collect();
    addresses.push(absent_account);
    let mut slots: Vec<B256> = alloc
        .values()
        .flat_map(|g| g.storage.keys().copied())
        .collect();
    slots.sort();
    slots.dedup();
    slots.push(B256::repeat_byte(0xee));
    let reader = db.latest();
    assert_proofs_match(
        &|a, s| reader.proof(a, s),
        &model,
        &addresses,
        &slots,
        context,
    );
}
