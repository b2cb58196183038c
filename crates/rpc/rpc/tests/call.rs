//! `eth_call`, `eth_estimateGas` and `eth_createAccessList` asked with
//! alloy's provider over a chain of real transactions: strata's chain
//! generator's (its token contract deployed at genesis, token transfers in
//! every block), executed block by block into a datadir by strata's
//! executor, which keeps each block's header; the datadir served
//! read-only. Every answer is checked against what the library reads or
//! what revm gives over the same state.

use std::sync::Arc;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Header, Transaction};
use alloy_eips::BlockId;
use alloy_eips::eip2930::AccessList;
use alloy_evm::{Evm, EvmFactory};
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, map::HashMap};
use alloy_provider::{Provider, ProviderBuilder};
use alloy_rlp::Decodable;
use alloy_rpc_types_eth::state::{AccountOverride, StateOverride};
use alloy_rpc_types_eth::{BlockOverrides, TransactionInput, TransactionRequest};
use alloy_sol_types::{Revert, SolError};
use revm::context::TxEnv;
use revm::context::result::ExecutionResult;
use revm::database::CacheDB;
use strata_chain_gen::contracts::{
    BALANCE_OF_SELECTOR, ContractKind, TRANSFER_SELECTOR, balance_slot, runtime_code,
    transfer_calldata,
};
use strata_chain_gen::{Fork, GenConfig, Generator};
use strata_chainspec::StrataEvmFactory;
use strata_executor::consensus::Ancestor;
use strata_executor::{ChainSpec, DecodedBlock, GenesisBlock, execute_block};
use strata_rpc::{Chain, Limits, REVERTED_CODE, RpcMetrics, RpcServer, SERVER_ERROR_CODE};
use strata_storage::revm::ReaderDatabase;
use strata_storage::{Options, ReadOnlyStateDb, Regime, StateDb};

/// Blocks after the genesis.
const BLOCKS: u64 = 4;

/// A token transfer some block of the chain holds.
#[derive(Clone, Copy, Debug)]
struct Transfer {
    block: u64,
    token: Address,
    sender: Address,
}

/// The generated chain, executed into a datadir.
struct Executed {
    dir: tempfile::TempDir,
    genesis: GenesisBlock,
    transfer: Transfer,
    /// An EOA of the genesis without token balance of `transfer.token`.
    other: Address,
}

/// Generates a small chain and executes it block by block into a new
/// datadir; records the chain's configuration when `record` is set.
fn executed(record: bool) -> Executed {
    let config = GenConfig {
        accounts: 40,
        contracts: 10,
        blocks: BLOCKS,
        gas_per_block: 1_000_000,
        seed: 7,
        fork: Fork::Cancun,
    };
    let mut generator = Generator::new(&config).unwrap();
    let genesis = GenesisBlock::new(generator.genesis()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), Options::default()).unwrap();
    db.init_genesis(
        &genesis.alloc,
        strata_storage::GenesisName::HashAndHeader(genesis.hash, genesis.header_rlp()),
    )
    .unwrap();
    if record {
        db.set_chain_config(&genesis.recorded_config()).unwrap();
    }
    let token_code = runtime_code(ContractKind::Token).unwrap();
    let mut parent = (genesis.header.clone(), genesis.hash);
    let mut transfer = None;
    for _ in 0..BLOCKS {
        let generated = generator.next_block().unwrap();
        let block = DecodedBlock::from_block(generated.block);
        let ancestors = [Ancestor {
            hash: parent.1,
            header: &parent.0,
            ommers: &[],
        }];
        execute_block(&db, &genesis.spec, &block, &ancestors).unwrap();
        for tx in &block.block.body.transactions {
            let Some(to) = tx.to() else { continue };
            let is_token = genesis
                .alloc
                .get(&to)
                .is_some_and(|account| account.code == token_code);
            if transfer.is_none() && is_token && tx.input().starts_with(&TRANSFER_SELECTOR) {
                transfer = Some(Transfer {
                    block: block.number(),
                    token: to,
                    sender: tx.recover_signer().unwrap(),
                });
            }
        }
        parent = (block.block.header.clone(), block.hash);
    }
    let transfer = transfer.expect("the chain holds a token transfer");
    let token_storage = &genesis.alloc[&transfer.token].storage;
    let other = *genesis
        .alloc
        .iter()
        .find(|(address, account)| {
            account.code.is_empty()
                && !account.balance.is_zero()
                && !token_storage.contains_key(&B256::from(balance_slot(**address)))
        })
        .expect("an EOA without the token")
        .0;
    db.close().unwrap();
    Executed {
        dir,
        genesis,
        transfer,
        other,
    }
}

struct Served {
    db: Arc<ReadOnlyStateDb>,
    server: RpcServer,
    runtime: tokio::runtime::Runtime,
}

fn serve(dir: &std::path::Path, chain: Chain, limits: Limits) -> Served {
    let db = Arc::new(ReadOnlyStateDb::open(dir, Options::default()).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(RpcServer::start(
            db.clone(),
            chain,
            limits,
            RpcMetrics::default(),
            "127.0.0.1:0".parse().unwrap(),
            None,
        ))
        .unwrap();
    Served {
        db,
        server,
        runtime,
    }
}

impl Served {
    fn provider(&self) -> impl Provider + use<> {
        let url = format!("http://{}", self.server.http_addr());
        ProviderBuilder::new().connect_http(url.parse().unwrap())
    }
}

fn request(from: Address, to: Address, data: Bytes) -> TransactionRequest {
    TransactionRequest {
        from: Some(from),
        to: Some(TxKind::Call(to)),
        input: TransactionInput::new(data),
        ..Default::default()
    }
}

fn balance_of(holder: Address) -> Bytes {
    let mut data = BALANCE_OF_SELECTOR.to_vec();
    data.extend_from_slice(B256::left_padding_from(holder.as_slice()).as_slice());
    data.into()
}

fn word(output: &Bytes) -> U256 {
    assert_eq!(output.len(), 32, "{output}");
    U256::from_be_slice(output)
}

/// The code, error code, message and data of a refused call.
fn refusal<T: std::fmt::Debug>(
    answer: Result<T, alloy_provider::transport::TransportError>,
) -> (i64, String, Option<String>) {
    let error = answer.expect_err("refused");
    let payload = error
        .as_error_resp()
        .unwrap_or_else(|| panic!("a JSON-RPC error: {error}"));
    let data = payload
        .data
        .as_ref()
        .map(|raw| serde_json::from_str::<String>(raw.get()).unwrap());
    (payload.code, payload.message.to_string(), data)
}

/// `tx` run by revm over the state after `block`, in that block's
/// environment, as the chain would run it (every check on).
fn run_at(db: &ReadOnlyStateDb, spec: &ChainSpec, block: u64, tx: TxEnv) -> ExecutionResult {
    let reader = db.reader_at(block, Regime::Exec).unwrap();
    let rlp = reader.block_header(block).unwrap().unwrap();
    let header = Header::decode(&mut rlp.as_ref()).unwrap();
    let env = strata_executor::evm_env(spec, &header);
    let mut evm = StrataEvmFactory.create_evm(CacheDB::new(ReaderDatabase(reader)), env);
    evm.transact(tx).unwrap().result
}

fn base_fee(db: &ReadOnlyStateDb, block: u64) -> u64 {
    let reader = db.reader_at(block, Regime::Exec).unwrap();
    let rlp = reader.block_header(block).unwrap().unwrap();
    Header::decode(&mut rlp.as_ref())
        .unwrap()
        .base_fee_per_gas
        .unwrap()
}

#[test]
fn eth_call_answers_a_token_balance_at_the_head_and_at_an_older_block() {
    let chain = executed(true);
    let served = serve(chain.dir.path(), Chain::default(), Limits::default());
    let provider = served.provider();
    let Transfer {
        block,
        token,
        sender,
    } = chain.transfer;
    served.runtime.block_on(async {
        let slot = U256::from_be_bytes(B256::from(balance_slot(sender)).0);
        let mut answers = Vec::new();
        for at in [block - 1, block, BLOCKS] {
            let output = provider
                .call(request(sender, token, balance_of(sender)))
                .block(BlockId::number(at))
                .await
                .unwrap();
            let stored = provider
                .get_storage_at(token, slot)
                .block_id(BlockId::number(at))
                .await
                .unwrap();
            let library = served
                .db
                .reader_at(at, Regime::Exec)
                .unwrap()
                .storage(&token, &B256::from(slot))
                .unwrap();
            assert_eq!(word(&output), stored, "block {at}");
            assert_eq!(stored, library, "block {at}");
            answers.push(word(&output));
        }
        assert_ne!(answers[0], answers[1], "the transfer of block {block}");
        // `latest`, and the block by its hash, are the same blocks.
        let latest = provider
            .call(request(sender, token, balance_of(sender)))
            .latest()
            .await
            .unwrap();
        assert_eq!(word(&latest), answers[2]);
        let hash = served
            .db
            .reader(Regime::Exec)
            .unwrap()
            .block_hash(block)
            .unwrap()
            .unwrap();
        let by_hash = provider
            .call(request(sender, token, balance_of(sender)))
            .hash(hash)
            .await
            .unwrap();
        assert_eq!(word(&by_hash), answers[1]);
        // The call's writes are dropped: a transfer answers `true`, and
        // the balance after it is unchanged.
        let sent = provider
            .call(request(
                sender,
                token,
                transfer_calldata(chain.other, U256::from(1)),
            ))
            .await
            .unwrap();
        assert_eq!(word(&sent), U256::from(1));
        let after = provider
            .call(request(sender, token, balance_of(sender)))
            .await
            .unwrap();
        assert_eq!(word(&after), answers[2]);
    });
}

#[test]
fn a_revert_answers_code_3_with_its_data_and_a_halt_names_itself() {
    let chain = executed(true);
    let served = serve(chain.dir.path(), Chain::default(), Limits::default());
    let provider = served.provider();
    let Transfer { token, .. } = chain.transfer;
    served.runtime.block_on(async {
        // The token reverts a transfer of more than the sender holds, with
        // no data.
        let (code, message, data) = refusal(
            provider
                .call(request(
                    chain.other,
                    token,
                    transfer_calldata(token, U256::from(1)),
                ))
                .await,
        );
        assert_eq!(code, i64::from(REVERTED_CODE));
        assert_eq!(message, "execution reverted");
        assert_eq!(data.as_deref(), Some("0x"));

        // Code that reverts with Error("no way"), put in by an override.
        let reason = Revert::from("no way").abi_encode();
        let mut code = Vec::new();
        for (offset, byte) in reason.iter().enumerate() {
            // PUSH1 byte PUSH2 offset MSTORE8
            code.extend_from_slice(&[0x60, *byte, 0x61, (offset >> 8) as u8, offset as u8, 0x53]);
        }
        code.extend_from_slice(&[
            0x61,
            (reason.len() >> 8) as u8,
            reason.len() as u8,
            0x5f,
            0xfd,
        ]);
        let reverter = Address::repeat_byte(0xaa);
        let overrides: StateOverride = [(
            reverter,
            AccountOverride {
                code: Some(code.into()),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect();
        let (code, message, data) = refusal(
            provider
                .call(request(chain.other, reverter, Bytes::new()))
                .overrides(overrides)
                .await,
        );
        assert_eq!(code, i64::from(REVERTED_CODE));
        assert_eq!(message, "execution reverted: no way");
        assert_eq!(data, Some(Bytes::from(reason).to_string()));

        // An invalid opcode halts: -32000 naming it.
        let halter = Address::repeat_byte(0xbb);
        let overrides: StateOverride = [(
            halter,
            AccountOverride {
                code: Some(Bytes::from_static(&[0xfe])),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect();
        let (code, message, _) = refusal(
            provider
                .call(request(chain.other, halter, Bytes::new()))
                .overrides(overrides)
                .await,
        );
        assert_eq!(code, i64::from(SERVER_ERROR_CODE));
        assert!(message.contains("0xFE"), "{message}");

        // Out of gas halts too.
        let mut starved = request(chain.transfer.sender, token, balance_of(chain.other));
        starved.gas = Some(22_000);
        let (code, message, _) = refusal(provider.call(starved).await);
        assert_eq!(code, i64::from(SERVER_ERROR_CODE));
        assert!(message.contains("out of gas"), "{message}");
    });
}

#[test]
fn estimate_gas_is_the_least_gas_the_transaction_succeeds_with() {
    let chain = executed(true);
    let served = serve(chain.dir.path(), Chain::default(), Limits::default());
    let provider = served.provider();
    let Transfer { token, sender, .. } = chain.transfer;
    served.runtime.block_on(async {
        // A token transfer with a real fee, as a wallet would send it.
        let fee = u128::from(base_fee(&served.db, BLOCKS)) * 2;
        let calldata = transfer_calldata(chain.other, U256::from(1000));
        let mut priced = request(sender, token, calldata.clone());
        priced.max_fee_per_gas = Some(fee);
        let estimate = provider
            .estimate_gas(priced.clone())
            .block(BlockId::number(BLOCKS))
            .await
            .unwrap();
        let nonce = served
            .db
            .reader(Regime::Exec)
            .unwrap()
            .account(&sender)
            .unwrap()
            .unwrap()
            .nonce;
        let tx = |gas_limit| TxEnv {
            tx_type: 2,
            caller: sender,
            kind: TxKind::Call(token),
            data: calldata.clone(),
            gas_limit,
            gas_price: fee,
            gas_priority_fee: Some(0),
            nonce,
            chain_id: Some(chain.genesis.spec.chain_id),
            ..Default::default()
        };
        let spec = &chain.genesis.spec;
        assert!(
            run_at(&served.db, spec, BLOCKS, tx(estimate)).is_success(),
            "the estimate {estimate} suffices"
        );
        assert!(
            !run_at(&served.db, spec, BLOCKS, tx(estimate - 1)).is_success(),
            "one gas less fails"
        );
        // The same without a gas price.
        let free = provider
            .estimate_gas(request(sender, token, calldata.clone()))
            .await
            .unwrap();
        assert_eq!(free, estimate);

        // A plain transfer of ether: 21,000.
        let mut ether = request(sender, chain.other, Bytes::new());
        ether.value = Some(U256::from(1));
        assert_eq!(provider.estimate_gas(ether).await.unwrap(), 21_000);

        // A transfer that reverts at the cap: the revert error.
        let (code, message, _) = refusal(
            provider
                .estimate_gas(request(
                    chain.other,
                    token,
                    transfer_calldata(sender, U256::from(1)),
                ))
                .await,
        );
        assert_eq!(code, i64::from(REVERTED_CODE));
        assert_eq!(message, "execution reverted");

        // A named gas below the need: nothing succeeds below it.
        let mut capped = request(sender, token, calldata.clone());
        capped.gas = Some(estimate - 1);
        let (code, message, _) = refusal(provider.estimate_gas(capped).await);
        assert_eq!(code, i64::from(SERVER_ERROR_CODE));
        assert!(
            message.contains("gas required exceeds allowance"),
            "{message}"
        );
    });
}

#[test]
fn create_access_list_holds_the_slots_the_call_reads() {
    let chain = executed(true);
    let served = serve(chain.dir.path(), Chain::default(), Limits::default());
    let provider = served.provider();
    let Transfer { token, sender, .. } = chain.transfer;
    served.runtime.block_on(async {
        let read = request(chain.other, token, balance_of(sender));
        let answer = provider.create_access_list(&read).await.unwrap();
        assert_eq!(answer.error, None);
        let expected = AccessList::from(vec![alloy_eips::eip2930::AccessListItem {
            address: token,
            storage_keys: vec![B256::from(balance_slot(sender))],
        }]);
        assert_eq!(answer.access_list, expected);
        // The gas used with the list is what eth_estimateGas needs with it.
        let mut with_list = read.clone();
        with_list.access_list = Some(answer.access_list.clone());
        let estimate = provider.estimate_gas(with_list).await.unwrap();
        assert_eq!(answer.gas_used, U256::from(estimate));

        // A transfer touches both balances.
        let send = request(sender, token, transfer_calldata(chain.other, U256::from(1)));
        let answer = provider.create_access_list(&send).await.unwrap();
        let mut slots = vec![
            B256::from(balance_slot(sender)),
            B256::from(balance_slot(chain.other)),
        ];
        slots.sort();
        assert_eq!(answer.access_list.0.len(), 1);
        assert_eq!(answer.access_list.0[0].storage_keys, slots);

        // A reverting transaction still answers, with its error.
        let failing = request(chain.other, token, transfer_calldata(sender, U256::from(1)));
        let answer = provider.create_access_list(&failing).await.unwrap();
        assert_eq!(answer.error.as_deref(), Some("execution reverted"));
    });
}

#[test]
fn state_and_block_overrides_change_the_answer() {
    let chain = executed(true);
    let served = serve(chain.dir.path(), Chain::default(), Limits::default());
    let provider = served.provider();
    let Transfer { token, sender, .. } = chain.transfer;
    served.runtime.block_on(async {
        let slot = B256::from(balance_slot(sender));
        let stored = word(
            &provider
                .call(request(sender, token, balance_of(sender)))
                .await
                .unwrap(),
        );
        assert!(!stored.is_zero());
        // stateDiff: that slot changed, the others kept.
        let diff: StateOverride = [(
            token,
            AccountOverride {
                state_diff: Some(HashMap::from_iter([(slot, B256::from(U256::from(42)))])),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect();
        let answer = provider
            .call(request(sender, token, balance_of(sender)))
            .overrides(diff.clone())
            .await
            .unwrap();
        assert_eq!(word(&answer), U256::from(42));
        // state: the whole storage replaced, so the sender's slot is empty.
        let other_slot = B256::from(balance_slot(chain.other));
        let state: StateOverride = [(
            token,
            AccountOverride {
                state: Some(HashMap::from_iter([(
                    other_slot,
                    B256::from(U256::from(7)),
                )])),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect();
        let emptied = provider
            .call(request(sender, token, balance_of(sender)))
            .overrides(state.clone())
            .await
            .unwrap();
        assert_eq!(word(&emptied), U256::ZERO);
        let given = provider
            .call(request(sender, token, balance_of(chain.other)))
            .overrides(state)
            .await
            .unwrap();
        assert_eq!(word(&given), U256::from(7));

        // Balance and code: SELFBALANCE returned.
        let probe = Address::repeat_byte(0xcc);
        let code = Bytes::from_static(&[0x47, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        let balance: StateOverride = [(
            probe,
            AccountOverride {
                balance: Some(U256::from(123_456)),
                code: Some(code),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect();
        let answer = provider
            .call(request(sender, probe, Bytes::new()))
            .overrides(balance)
            .await
            .unwrap();
        assert_eq!(word(&answer), U256::from(123_456));

        // Block overrides: NUMBER returned.
        let number_code = Bytes::from_static(&[0x43, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        let numbered: StateOverride = [(
            probe,
            AccountOverride {
                code: Some(number_code),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect();
        let plain = provider
            .call(request(sender, probe, Bytes::new()))
            .overrides(numbered.clone())
            .block(BlockId::number(2))
            .await
            .unwrap();
        assert_eq!(word(&plain), U256::from(2));
        let moved = provider
            .call(request(sender, probe, Bytes::new()))
            .overrides(numbered)
            .with_block_overrides(BlockOverrides {
                number: Some(U256::from(999)),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(word(&moved), U256::from(999));

        // The estimate sees the overrides too: a sender without the token
        // given some can transfer it.
        let poor = chain.other;
        let credited: StateOverride = [(
            token,
            AccountOverride {
                state_diff: Some(HashMap::from_iter([(
                    B256::from(balance_slot(poor)),
                    B256::from(U256::from(10)),
                )])),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect();
        let send = request(poor, token, transfer_calldata(sender, U256::from(1)));
        assert!(provider.estimate_gas(send.clone()).await.is_err());
        let estimate = provider
            .estimate_gas(send)
            .overrides(credited)
            .await
            .unwrap();
        assert!(estimate > 21_000, "{estimate}");
    });
}

#[test]
fn calls_run_under_the_given_or_recorded_fork_rules_and_are_refused_without() {
    let chain_id_code = Bytes::from_static(&[0x46, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
    let probe = Address::repeat_byte(0xdd);
    let overrides: StateOverride = [(
        probe,
        AccountOverride {
            code: Some(chain_id_code),
            ..Default::default()
        },
    )]
    .into_iter()
    .collect();
    let probe_call = request(Address::ZERO, probe, Bytes::new());

    // Neither recorded nor given: refused, naming what is missing.
    let bare = executed(false);
    let served = serve(bare.dir.path(), Chain::default(), Limits::default());
    let provider = served.provider();
    served.runtime.block_on(async {
        let (code, message, _) = refusal(
            provider
                .call(probe_call.clone())
                .overrides(overrides.clone())
                .await,
        );
        assert_eq!(code, i64::from(SERVER_ERROR_CODE));
        assert!(message.contains("chain configuration"), "{message}");
        assert!(message.contains("--genesis"), "{message}");
        let (code, _, _) = refusal(provider.estimate_gas(probe_call.clone()).await);
        assert_eq!(code, i64::from(SERVER_ERROR_CODE));
        assert_eq!(provider.get_chain_id().await.unwrap(), 1);
    });
    drop(served);

    // Given (--genesis): the calls run, with the given chain id.
    let mut spec = bare.genesis.spec.clone();
    spec.chain_id = 4242;
    let served = serve(
        bare.dir.path(),
        Chain {
            chain_id: None,
            spec: Some(spec.clone()),
        },
        Limits::default(),
    );
    let provider = served.provider();
    served.runtime.block_on(async {
        let answer = provider
            .call(probe_call.clone())
            .overrides(overrides.clone())
            .await
            .unwrap();
        assert_eq!(word(&answer), U256::from(4242));
        assert_eq!(provider.get_chain_id().await.unwrap(), 4242);
    });
    drop(served);

    // Recorded: the recorded chain id; a given spec wins over it.
    let recorded = executed(true);
    let served = serve(recorded.dir.path(), Chain::default(), Limits::default());
    let provider = served.provider();
    served.runtime.block_on(async {
        let answer = provider
            .call(probe_call.clone())
            .overrides(overrides.clone())
            .await
            .unwrap();
        assert_eq!(word(&answer), U256::from(recorded.genesis.spec.chain_id));
        assert_eq!(
            provider.get_chain_id().await.unwrap(),
            recorded.genesis.spec.chain_id
        );
    });
    drop(served);
    let served = serve(
        recorded.dir.path(),
        Chain {
            chain_id: None,
            spec: Some(spec),
        },
        Limits::default(),
    );
    let provider = served.provider();
    served.runtime.block_on(async {
        let answer = provider
            .call(probe_call)
            .overrides(overrides)
            .await
            .unwrap();
        assert_eq!(word(&answer), U256::from(4242));
    });
}

#[test]
fn the_gas_cap_bounds_a_call() {
    let chain = executed(true);
    let served = serve(
        chain.dir.path(),
        Chain::default(),
        Limits {
            gas_cap: 30_000,
            ..Limits::default()
        },
    );
    let provider = served.provider();
    let Transfer { token, sender, .. } = chain.transfer;
    served.runtime.block_on(async {
        // A transfer needs more than 30,000 gas: at the cap it runs out.
        let send = request(sender, token, transfer_calldata(chain.other, U256::from(1)));
        let (code, message, _) = refusal(provider.call(send.clone()).await);
        assert_eq!(code, i64::from(SERVER_ERROR_CODE));
        assert!(message.contains("out of gas"), "{message}");
        // Naming more gas does not pass the cap.
        let mut more = send.clone();
        more.gas = Some(1_000_000);
        let (_, message, _) = refusal(provider.call(more).await);
        assert!(message.contains("out of gas"), "{message}");
        let (_, message, _) = refusal(provider.estimate_gas(send).await);
        assert!(
            message.contains("gas required exceeds allowance (30000)"),
            "{message}"
        );
    });
}

#[test]
fn a_call_past_its_time_limit_is_stopped_before_it_is_answered() {
    let chain = executed(true);
    let metrics = RpcMetrics::default();
    let db = Arc::new(ReadOnlyStateDb::open(chain.dir.path(), Options::default()).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(RpcServer::start(
            db,
            Chain::default(),
            Limits {
                call_timeout: std::time::Duration::from_millis(200),
                // Enough gas for a loop to run for many seconds.
                gas_cap: 20_000_000_000,
                max_in_flight: 2,
                ..Limits::default()
            },
            metrics.clone(),
            "127.0.0.1:0".parse().unwrap(),
            None,
        ))
        .unwrap();
    let url = format!("http://{}", server.http_addr());
    let provider = ProviderBuilder::new().connect_http(url.parse().unwrap());
    let looping = Address::repeat_byte(0xee);
    // JUMPDEST PUSH1 0 JUMP: a loop that ends only when its gas does.
    let code: StateOverride = [(
        looping,
        AccountOverride {
            code: Some(Bytes::from_static(&[0x5b, 0x60, 0x00, 0x56])),
            ..Default::default()
        },
    )]
    .into_iter()
    .collect();
    runtime.block_on(async {
        // Three in a row, more than --max-in-flight: each is answered
        // only once stopped, so nothing of it runs any more.
        for _ in 0..3 {
            let send = request(chain.transfer.sender, looping, Bytes::new());
            let answer = provider.call(send).overrides(code.clone()).await;
            let (code_number, message, _) = refusal(answer);
            assert_eq!(code_number, i64::from(SERVER_ERROR_CODE));
            assert!(
                message.contains("took longer than 200 ms and was stopped"),
                "{message}"
            );
            assert_eq!(metrics.calls_running(), 0, "a timed-out call still runs");
        }
        // The slots are free: a call that fits answers.
        let stored = provider
            .call(request(
                chain.transfer.sender,
                chain.transfer.token,
                balance_of(chain.transfer.sender),
            ))
            .await
            .unwrap();
        assert!(!word(&stored).is_zero());
    });
}
