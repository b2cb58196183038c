//! A running server, asked with alloy's provider (the client reth's Rust
//! users use): every state method against what the library reads, at the
//! head and at an older block; proofs verified with alloy-trie against the
//! block's root; the range methods; and the errors clients expect.

use std::net::SocketAddr;
use std::sync::Arc;

use alloy_eips::BlockId;
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_provider::{Provider, ProviderBuilder};
use alloy_rpc_types_eth::EIP1186AccountProofResponse;
use alloy_trie::proof::verify_proof;
use alloy_trie::{Nibbles, TrieAccount};
use serde_json::{Value, json};
use strata_rpc::{Chain, Limits, RpcMetrics, RpcServer};
use strata_storage::genesis::GenesisAlloc;
use strata_storage::{Account, Options, ReadOnlyStateDb, Regime, StateDb};
use strata_test_support::http_post as post;

const CHAIN_ID: u64 = 1337;

fn address(n: u8) -> Address {
    Address::repeat_byte(n)
}

fn slot(n: u64) -> B256 {
    B256::from(U256::from(n))
}

/// A datadir with a genesis and five blocks: balances change every block,
/// a contract gets code and 300 slots at block 1, some changed later.
fn datadir(dir: &std::path::Path) -> Vec<B256> {
    datadir_with(dir, Options::default(), 5)
}

/// [`datadir`] with `options` and blocks `1..=last`, flushed every 4.
fn datadir_with(dir: &std::path::Path, options: Options, last: u64) -> Vec<B256> {
    let db = StateDb::open(dir, options).unwrap();
    let mut alloc = GenesisAlloc::new();
    alloc.insert(
        address(1),
        strata_storage::genesis::GenesisAccount {
            balance: U256::from(1000),
            ..Default::default()
        },
    );
    let mut roots = vec![
        db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
            .unwrap(),
    ];
    for block in 1..=last {
        if block % 4 == 0 {
            db.flush().unwrap();
        }
        let mut writer = db.begin_block(block).unwrap();
        put_first_account(&mut writer, block);
        if block == 1 {
            let code = Bytes::from_static(&[0x60, 0x01, 0x60, 0x00, 0x55]);
            writer.put_account(
                address(2),
                &Account {
                    nonce: 1,
                    balance: U256::ZERO,
                    code_hash: keccak256(&code),
                },
            );
            writer.put_code(address(2), code.0);
            for n in 0..300 {
                writer.put_storage(address(2), slot(n), U256::from(n + 1));
            }
        } else {
            writer.put_storage(address(2), slot(block), U256::from(block * 100));
        }
        writer.set_block_hash(keccak256(block.to_be_bytes()));
        roots.push(writer.commit().unwrap().root);
    }
    db.close().unwrap();
    roots
}

/// Block `block`'s write of account 1: nonce `block`, balance 1000 + `block`.
fn put_first_account(writer: &mut strata_storage::BlockWriter, block: u64) {
    writer.put_account(
        address(1),
        &Account {
            nonce: block,
            balance: U256::from(1000 + block),
            ..Account::default()
        },
    );
}

/// A server over `db` on a free port.
fn start_server(
    runtime: &tokio::runtime::Runtime,
    db: Arc<ReadOnlyStateDb>,
    limits: Limits,
) -> RpcServer {
    runtime
        .block_on(RpcServer::start(
            db,
            Chain {
                chain_id: Some(CHAIN_ID),
                spec: None,
            },
            limits,
            RpcMetrics::default(),
            "127.0.0.1:0".parse().unwrap(),
            None,
        ))
        .unwrap()
}

struct Served {
    _dir: tempfile::TempDir,
    db: Arc<ReadOnlyStateDb>,
    roots: Vec<B256>,
    server: RpcServer,
    runtime: tokio::runtime::Runtime,
}

fn serve(limits: Limits) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let roots = datadir(dir.path());
    let db = Arc::new(ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_server(&runtime, db.clone(), limits);
    Served {
        _dir: dir,
        db,
        roots,
        server,
        runtime,
    }
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// The account's proof checked against `root`, and each slot's against
/// the account's storage root.
fn verify(root: B256, proof: &EIP1186AccountProofResponse) {
    let account = TrieAccount {
        nonce: proof.nonce,
        balance: proof.balance,
        storage_root: proof.storage_hash,
        code_hash: proof.code_hash,
    };
    let exists = !(proof.nonce == 0
        && proof.balance.is_zero()
        && proof.code_hash == alloy_primitives::KECCAK256_EMPTY);
    verify_proof(
        root,
        Nibbles::unpack(keccak256(proof.address)),
        exists.then(|| alloy_rlp::encode(account)),
        &proof.account_proof,
    )
    .unwrap_or_else(|e| panic!("account proof of {}: {e}", proof.address));
    for slot in &proof.storage_proof {
        let value = (!slot.value.is_zero()).then(|| alloy_rlp::encode(slot.value));
        verify_proof(
            proof.storage_hash,
            Nibbles::unpack(keccak256(slot.key.as_b256())),
            value,
            &slot.proof,
        )
        .unwrap_or_else(|e| panic!("slot proof of {:?}: {e}", slot.key));
    }
}

#[test]
fn state_methods_answer_what_the_library_reads_at_the_head_and_before() {
    let served = serve(Limits::default());
    let provider =
        ProviderBuilder::new().connect_http(url(served.server.http_addr()).parse().unwrap());
    served.runtime.block_on(async {
        assert_eq!(provider.get_chain_id().await.unwrap(), CHAIN_ID);
        assert_eq!(provider.get_block_number().await.unwrap(), 5);
        for block in [5u64, 3, 1] {
            let at = BlockId::number(block);
            let reader = served.db.reader_at(block, Regime::Exec).unwrap();
            let expected = reader.account(&address(1)).unwrap().unwrap();
            let balance = provider.get_balance(address(1)).block_id(at).await.unwrap();
            assert_eq!(balance, expected.balance, "block {block}");
            let nonce = provider
                .get_transaction_count(address(1))
                .block_id(at)
                .await
                .unwrap();
            assert_eq!(nonce, expected.nonce, "block {block}");
            let code = provider.get_code_at(address(2)).block_id(at).await.unwrap();
            assert_eq!(code.len(), 5);
            for n in [0u64, 3, 5, 299, 1000] {
                let value = provider
                    .get_storage_at(address(2), U256::from(n))
                    .block_id(at)
                    .await
                    .unwrap();
                assert_eq!(value, reader.storage(&address(2), &slot(n)).unwrap());
            }
            let proof = provider
                .get_proof(address(2), vec![slot(3), slot(5), slot(4000)])
                .block_id(at)
                .await
                .unwrap();
            verify(served.roots[block as usize], &proof);
            let absent = provider
                .get_proof(address(9), vec![slot(1)])
                .block_id(at)
                .await
                .unwrap();
            verify(served.roots[block as usize], &absent);
        }
        // A block hash resolves to its block.
        let by_hash = provider
            .get_balance(address(1))
            .block_id(BlockId::hash(keccak256(4u64.to_be_bytes())))
            .await
            .unwrap();
        assert_eq!(by_hash, U256::from(1004));
    });
}

#[test]
fn range_methods_page_through_accounts_and_hashed_slots() {
    let served = serve(Limits {
        max_page: 100,
        ..Limits::default()
    });
    let provider =
        ProviderBuilder::new().connect_http(url(served.server.http_addr()).parse().unwrap());
    served.runtime.block_on(async {
        // Slots of the state before block 5 (after block 4), 100 a page.
        let mut seen = Vec::new();
        let mut start = B256::ZERO;
        loop {
            let page: Value = provider
                .raw_request(
                    "debug_storageRangeAt".into(),
                    json!(["0x5", 0, address(2), start, 1000]),
                )
                .await
                .unwrap();
            let storage = page["storage"].as_object().unwrap();
            assert!(storage.len() <= 100);
            for (hashed, entry) in storage {
                let key: B256 = entry["key"].as_str().unwrap().parse().unwrap();
                assert_eq!(hashed.parse::<B256>().unwrap(), keccak256(key));
                seen.push(hashed.clone());
            }
            match page["nextKey"].as_str() {
                Some(next) => start = next.parse().unwrap(),
                None => break,
            }
        }
        assert_eq!(seen.len(), 300);
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(seen, sorted, "hashed-key order across pages");

        let page: Value = provider
            .raw_request(
                "debug_accountRange".into(),
                json!(["latest", Address::ZERO, 1, true, false]),
            )
            .await
            .unwrap();
        assert_eq!(page["accounts"].as_object().unwrap().len(), 1);
        assert_eq!(page["next"], json!(address(2)));
        assert_eq!(page["root"], json!(served.roots[5]));
        let account = &page["accounts"][address(1).to_string().to_lowercase()];
        assert_eq!(account["nonce"], json!(5));
        assert!(account.get("storageNext").is_none(), "{account}");

        // An account of 300 slots is cut at the page, and says so.
        let page: Value = provider
            .raw_request(
                "debug_accountRange".into(),
                json!(["0x5", address(2), 1, true, false]),
            )
            .await
            .unwrap();
        let account = &page["accounts"][address(2).to_string().to_lowercase()];
        let storage = account["storage"].as_object().unwrap();
        assert_eq!(storage.len(), 100);
        let next: B256 = account["storageNext"].as_str().unwrap().parse().unwrap();
        let last: B256 = storage.keys().max().unwrap().parse().unwrap();
        assert!(next > last, "{next} after {last}");
    });
}

/// A datadir that keeps history answers the state methods, proofs and
/// the range methods at every block it keeps — most of them below redb's
/// head, read through its history files — as it was then.
#[test]
fn a_history_datadir_answers_at_every_kept_block() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default()
        .with_unwind_depth(2)
        .with_history(Some(strata_storage::HistoryRetention::Full));
    let roots = datadir_with(dir.path(), options, 30);
    let db = Arc::new(ReadOnlyStateDb::open(dir.path(), Options::default()).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_server(&runtime, db.clone(), Limits::default());
    let provider = ProviderBuilder::new().connect_http(url(server.http_addr()).parse().unwrap());
    runtime.block_on(async {
        for block in [1u64, 2, 7, 15, 26, 30] {
            let at = BlockId::number(block);
            let balance = provider.get_balance(address(1)).block_id(at).await.unwrap();
            assert_eq!(balance, U256::from(1000 + block), "block {block}");
            let proof = provider
                .get_proof(address(2), vec![slot(3), slot(block), slot(block + 1)])
                .block_id(at)
                .await
                .unwrap();
            verify(roots[block as usize], &proof);
            // Slot `n` (2 ≤ n ≤ 30) holds n + 1 until block n writes n · 100.
            for slot_proof in &proof.storage_proof {
                let n = u64::from_be_bytes(slot_proof.key.as_b256()[24..].try_into().unwrap());
                let expected = if n >= 2 && n <= block { n * 100 } else { n + 1 };
                assert_eq!(
                    slot_proof.value,
                    U256::from(expected),
                    "block {block} slot {n}"
                );
            }
            let page: Value = provider
                .raw_request(
                    "debug_accountRange".into(),
                    json!([format!("{block:#x}"), Address::ZERO, 10, true, false]),
                )
                .await
                .unwrap();
            let account = &page["accounts"][address(1).to_string().to_lowercase()];
            assert_eq!(account["nonce"], json!(block), "block {block}: {page}");
            assert_eq!(page["root"], json!(roots[block as usize]));
            // `debug_storageRangeAt` reads the state before the block.
            let before = block - 1;
            let range: Value = provider
                .raw_request(
                    "debug_storageRangeAt".into(),
                    json!([format!("{block:#x}"), 0, address(2), B256::ZERO, 1000]),
                )
                .await
                .unwrap();
            let storage = range["storage"].as_object().unwrap();
            // The contract and its 300 slots came with block 1.
            let slots = if before >= 1 { 300 } else { 0 };
            assert_eq!(storage.len(), slots, "block {block}");
            for entry in storage.values() {
                let key: B256 = entry["key"].as_str().unwrap().parse().unwrap();
                let value: U256 = entry["value"].as_str().unwrap().parse().unwrap();
                let n = u64::from_be_bytes(key[24..].try_into().unwrap());
                let expected = if n >= 2 && n <= before {
                    n * 100
                } else {
                    n + 1
                };
                assert_eq!(
                    value,
                    U256::from(expected),
                    "before block {block}, slot {n}"
                );
            }
        }
    });
}

#[test]
fn bad_requests_get_the_errors_clients_expect() {
    let served = serve(Limits {
        max_batch: 3,
        ..Limits::default()
    });
    let addr = served.server.http_addr();
    let code = |response: &Value| response["error"]["code"].as_i64().unwrap();
    assert_eq!(code(&post(addr, "{not json")), -32700);
    assert_eq!(code(&post(addr, r#"{"jsonrpc":"2.0","id":1}"#)), -32600);
    assert_eq!(
        code(&post(
            addr,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_mine","params":[]}"#
        )),
        -32601
    );
    let bad = post(
        addr,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x12","latest"]}"#,
    );
    assert_eq!(code(&bad), -32602, "{bad}");
    let extra = post(
        addr,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#,
    );
    assert_eq!(extra["result"], json!("0x5"));
    let after = post(
        addr,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x0101010101010101010101010101010101010101","0x9"]}"#,
    );
    assert_eq!(code(&after), -32000);
    assert!(
        after["error"]["message"]
            .as_str()
            .unwrap()
            .contains("block 9"),
        "{after}"
    );
    let safe = post(
        addr,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x0101010101010101010101010101010101010101","safe"]}"#,
    );
    assert_eq!(code(&safe), -32000);
    // A batch within the limit is answered call by call; over it, refused.
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#;
    let batch = post(addr, &format!("[{call},{call},{call}]"));
    assert_eq!(batch.as_array().unwrap().len(), 3);
    let over = post(addr, &format!("[{call},{call},{call},{call}]"));
    assert!(over.to_string().contains("-32"), "{over}");
}

/// No answer older than the head the writer published before the request:
/// with the follower thread out of the way (an hour between its looks),
/// every block the writer commits is what the next request reads.
#[test]
fn every_answer_sees_the_block_committed_before_the_request() {
    let dir = tempfile::tempdir().unwrap();
    datadir(dir.path());
    let shared = Options::default().with_share_with_readers(true);
    let writer = StateDb::open(dir.path(), shared).unwrap();
    let manual = Options::default().with_follow_interval(std::time::Duration::from_secs(3600));
    let db = Arc::new(ReadOnlyStateDb::open(dir.path(), manual).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = start_server(&runtime, db, Limits::default());
    let provider = ProviderBuilder::new().connect_http(url(server.http_addr()).parse().unwrap());
    runtime.block_on(async {
        for block in 6..=30u64 {
            let mut next = writer.begin_block(block).unwrap();
            put_first_account(&mut next, block);
            next.commit().unwrap();
            assert_eq!(provider.get_block_number().await.unwrap(), block);
            assert_eq!(
                provider.get_balance(address(1)).await.unwrap(),
                U256::from(1000 + block)
            );
            assert_eq!(
                provider
                    .get_transaction_count(address(1))
                    .block_id(BlockId::number(block))
                    .await
                    .unwrap(),
                block
            );
        }
    });
}
