//! Load for `strata serve`, driven by alloy's provider (the client reth's
//! Rust users use): for each method and each number of concurrent clients,
//! every client sends calls back to back for a fixed time over its own
//! connection pool, and the report gives requests/s, p50 and p99 latency
//! and errors. The keys come from the server itself (`debug_accountRange`
//! with storage), so any datadir works. `eth_call` and `eth_estimateGas`
//! ask `balanceOf(account)` of the contracts that answer it with a word
//! (probed once at the start: a generated chain's tokens; the server must
//! know the chain's fork rules, recorded by `import-chain` or given by
//! `--genesis`).
//!
//! `--at latest,old:N` runs each method at the head and then at random
//! blocks from N to the one before the head (a datadir that keeps history:
//! `init … --history full`), so the two are measured in one run.
//!
//! ```text
//! cargo run --release -p strata-rpc --example rpc_load -- \
//!     --url http://127.0.0.1:8545 --clients 1,16,64 --seconds 10 \
//!     --methods eth_getBalance,eth_getStorageAt,eth_getProof,eth_call [--at latest,old:0]
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use alloy_eips::BlockId;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use alloy_provider::{Provider, ProviderBuilder};
use alloy_rpc_types_eth::{TransactionInput, TransactionRequest};
use serde_json::{Value, json};

/// `balanceOf(address)`.
const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
/// Contracts probed for `balanceOf`.
const PROBED: usize = 64;

struct Settings {
    url: String,
    clients: Vec<usize>,
    seconds: f64,
    methods: Vec<String>,
    at: Vec<At>,
}

/// Which blocks the calls ask for.
#[derive(Clone, Copy, Debug)]
enum At {
    /// `latest`.
    Latest,
    /// A random block from this one to the one before the head.
    Old(u64),
}

impl At {
    fn parse(text: &str) -> Result<At, String> {
        match text.split_once(':') {
            None if text == "latest" => Ok(At::Latest),
            Some(("old", from)) => from
                .parse()
                .map(At::Old)
                .map_err(|_| format!("bad first block in {text:?}")),
            _ => Err(format!("--at {text:?}: expected latest or old:FIRST_BLOCK")),
        }
    }

    fn label(self) -> String {
        match self {
            At::Latest => "latest".to_string(),
            At::Old(from) => format!("old>={from}"),
        }
    }
}

fn settings() -> Result<Settings, String> {
    let mut settings = Settings {
        url: "http://127.0.0.1:8545".to_string(),
        clients: vec![1, 16, 64],
        seconds: 10.0,
        methods: ["eth_getBalance", "eth_getStorageAt", "eth_getProof"]
            .map(String::from)
            .to_vec(),
        at: vec![At::Latest],
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => settings.url = value,
            "--clients" => {
                settings.clients = value
                    .split(',')
                    .map(|n| n.parse().map_err(|_| format!("bad client count {n:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--seconds" => {
                settings.seconds = value
                    .parse()
                    .map_err(|_| format!("bad seconds {value:?}"))?;
            }
            "--methods" => settings.methods = value.split(',').map(String::from).collect(),
            "--at" => {
                settings.at = value.split(',').map(At::parse).collect::<Result<_, _>>()?;
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(settings)
}

/// Accounts and (account, slot) pairs to ask for, and contracts that
/// answer `balanceOf`.
struct Keys {
    accounts: Vec<Address>,
    slots: Vec<(Address, B256)>,
    tokens: Vec<Address>,
}

/// A `balanceOf(holder)` call to `token`.
fn balance_of(token: Address, holder: Address) -> TransactionRequest {
    let mut data = BALANCE_OF.to_vec();
    data.extend_from_slice(B256::left_padding_from(holder.as_slice()).as_slice());
    TransactionRequest {
        to: Some(TxKind::Call(token)),
        input: TransactionInput::new(Bytes::from(data)),
        ..Default::default()
    }
}

async fn keys(url: &str) -> Result<Keys, String> {
    let provider = ProviderBuilder::new().connect_http(url.parse().map_err(|e| format!("{e}"))?);
    let page: Value = provider
        .raw_request(
            "debug_accountRange".into(),
            json!(["latest", null, 1000, true, false]),
        )
        .await
        .map_err(|e| format!("debug_accountRange: {e}"))?;
    let mut keys = Keys {
        accounts: Vec::new(),
        slots: Vec::new(),
        tokens: Vec::new(),
    };
    let mut contracts = Vec::new();
    for (address, account) in page["accounts"].as_object().into_iter().flatten() {
        let address: Address = address.parse().map_err(|e| format!("{e}"))?;
        keys.accounts.push(address);
        if account["storage"]
            .as_object()
            .is_some_and(|map| !map.is_empty())
        {
            contracts.push(address);
        }
        for slot in account["storage"]
            .as_object()
            .into_iter()
            .flat_map(|map| map.keys())
        {
            keys.slots
                .push((address, slot.parse().map_err(|e| format!("{e}"))?));
        }
    }
    if keys.accounts.is_empty() {
        return Err("the server has no accounts".to_string());
    }
    if keys.slots.is_empty() {
        keys.slots.push((keys.accounts[0], B256::ZERO));
    }
    for contract in contracts.into_iter().take(PROBED) {
        let mut probe = balance_of(contract, keys.accounts[0]);
        probe.gas = Some(100_000);
        if provider
            .call(probe)
            .await
            .is_ok_and(|word| word.len() == 32)
        {
            keys.tokens.push(contract);
        }
    }
    Ok(keys)
}

/// One client's calls for the run: latencies in µs and errors.
async fn client(
    url: String,
    method: String,
    keys: Arc<Keys>,
    offset: usize,
    blocks: Option<(u64, u64)>,
    stop: Arc<AtomicBool>,
) -> (Vec<u64>, u64) {
    let provider = ProviderBuilder::new().connect_http(url.parse().expect("checked"));
    let (mut latencies, mut errors) = (Vec::new(), 0);
    let mut index = offset;
    while !stop.load(Ordering::Relaxed) {
        index = index.wrapping_add(7919);
        let account = keys.accounts[index % keys.accounts.len()];
        let (holder, slot) = keys.slots[index % keys.slots.len()];
        let block = match blocks {
            Some((first, head)) if head > first => {
                BlockId::number(first + (index as u64 / 3) % (head - first))
            }
            _ => BlockId::latest(),
        };
        let started = Instant::now();
        let ok = match method.as_str() {
            "eth_getBalance" => provider.get_balance(account).block_id(block).await.is_ok(),
            "eth_getTransactionCount" => provider
                .get_transaction_count(account)
                .block_id(block)
                .await
                .is_ok(),
            "eth_getStorageAt" => provider
                .get_storage_at(holder, U256::from_be_bytes(slot.0))
                .block_id(block)
                .await
                .is_ok(),
            "eth_getProof" => provider
                .get_proof(holder, vec![slot])
                .block_id(block)
                .await
                .is_ok(),
            "eth_blockNumber" => provider.get_block_number().await.is_ok(),
            "eth_call" | "eth_estimateGas" if keys.tokens.is_empty() => {
                panic!("no contract answers balanceOf: no {method} load")
            }
            "eth_call" => {
                let token = keys.tokens[index % keys.tokens.len()];
                provider.call(balance_of(token, account)).await.is_ok()
            }
            "eth_estimateGas" => {
                let token = keys.tokens[index % keys.tokens.len()];
                provider
                    .estimate_gas(balance_of(token, account))
                    .await
                    .is_ok()
            }
            other => panic!("no load for {other}"),
        };
        latencies.push(started.elapsed().as_micros() as u64);
        if !ok {
            errors += 1;
        }
    }
    (latencies, errors)
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let settings = settings()?;
    let keys = Arc::new(keys(&settings.url).await?);
    println!(
        "{} accounts, {} slots, {} contracts answering balanceOf from {}; {} s per run",
        keys.accounts.len(),
        keys.slots.len(),
        keys.tokens.len(),
        settings.url,
        settings.seconds
    );
    println!(
        "{:<24} {:<10} {:>7} {:>10} {:>9} {:>9} {:>7}",
        "method", "blocks", "clients", "req/s", "p50 µs", "p99 µs", "errors"
    );
    let head = ProviderBuilder::new()
        .connect_http(settings.url.parse().map_err(|e| format!("{e}"))?)
        .get_block_number()
        .await
        .map_err(|e| format!("eth_blockNumber: {e}"))?;
    for method in &settings.methods {
        for &at in &settings.at {
            let blocks = match at {
                At::Latest => None,
                At::Old(first) => Some((first, head)),
            };
            for &clients in &settings.clients {
                let stop = Arc::new(AtomicBool::new(false));
                let started = Instant::now();
                let tasks: Vec<_> = (0..clients)
                    .map(|offset| {
                        tokio::spawn(client(
                            settings.url.clone(),
                            method.clone(),
                            keys.clone(),
                            offset,
                            blocks,
                            stop.clone(),
                        ))
                    })
                    .collect();
                tokio::time::sleep(Duration::from_secs_f64(settings.seconds)).await;
                stop.store(true, Ordering::Relaxed);
                let (mut latencies, mut errors) = (Vec::new(), 0);
                for task in tasks {
                    let (mut each, failed) = task.await.map_err(|e| e.to_string())?;
                    latencies.append(&mut each);
                    errors += failed;
                }
                let elapsed = started.elapsed().as_secs_f64();
                latencies.sort_unstable();
                println!(
                    "{:<24} {:<10} {:>7} {:>10.0} {:>9} {:>9} {:>7}",
                    method,
                    at.label(),
                    clients,
                    latencies.len() as f64 / elapsed,
                    percentile(&latencies, 0.5),
                    percentile(&latencies, 0.99),
                    errors
                );
            }
        }
    }
    Ok(())
}
