//! A block of many dependent transactions executed by revm 43 two ways, in
//! one run, on two stores built from the same genesis (issue 16):
//!
//! - `writer`: one EVM per transaction over the block writer's reader (it
//!   sees the block's earlier transactions), `apply_evm_state` after each;
//! - `bundle` (what reth's executor does): one EVM for the whole block over
//!   revm's `State` (its cache, with bundle updates) over a strata reader,
//!   `apply_bundle_state` once at the end.
//!
//! Both must reach the same root; printed per way: execution time, strata
//! reads and reads/s, commit time, and the ratio of the execution times.
//!
//! `cargo bench -p strata-benches --bench revm_block` (20,000 accounts,
//! blocks of 400 transactions); `STRATA_BENCH_ACCOUNTS`, `STRATA_BENCH_TXS`;
//! `--test` runs a small version.

use std::time::{Duration, Instant};

use alloy_primitives::{Address, Bytes, TxKind, U256};
use rand::Rng;
use revm::context::{BlockEnv, TxEnv};
use revm::database::State;
use revm::database::states::bundle_state::BundleRetention;
use revm::{Context, ExecuteCommitEvm, ExecuteEvm, MainBuilder, MainContext};
use strata_benches::{env_u64, machine_load, seeded};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::revm::{ReaderDatabase, apply_bundle_state, apply_evm_state};
use strata_storage::{Options, Regime, StateDb};

/// Counter runtime: slot 0 += 1 on every call.
const COUNTER: [u8; 10] = [0x60, 0x00, 0x54, 0x60, 0x01, 0x01, 0x60, 0x00, 0x55, 0x00];
const GWEI: u64 = 1_000_000_000;

fn block_env() -> BlockEnv {
    BlockEnv {
        number: U256::from(1),
        basefee: GWEI,
        gas_limit: u64::MAX,
        ..Default::default()
    }
}

/// Transfers between random funded accounts and calls to a few counters:
/// every sender's nonce and the counters' slot depend on earlier txs.
fn transactions(senders: &[Address], counters: &[Address], n: usize) -> Vec<TxEnv> {
    let mut rng = seeded(3);
    let mut nonces = vec![0u64; senders.len()];
    (0..n)
        .map(|i| {
            let from = rng.random_range(0..senders.len());
            let nonce = nonces[from];
            nonces[from] += 1;
            let (kind, value) = if i % 4 == 0 {
                (TxKind::Call(counters[i % counters.len()]), U256::ZERO)
            } else {
                let to = senders[rng.random_range(0..senders.len())];
                (TxKind::Call(to), U256::from(rng.random_range(1..1_000u64)))
            };
            TxEnv::builder()
                .caller(senders[from])
                .nonce(nonce)
                .kind(kind)
                .value(value)
                .data(Bytes::new())
                .gas_limit(100_000)
                .gas_price(GWEI as u128)
                .build()
                .expect("a valid transaction")
        })
        .collect()
}

fn exec_reads(db: &StateDb) -> u64 {
    db.metrics()
        .snapshot()
        .cells
        .iter()
        .filter(|c| c.regime == Regime::Exec)
        .map(|c| c.count)
        .sum()
}

struct Way {
    execute: Duration,
    reads: u64,
    commit: Duration,
}

fn by_writer(db: &StateDb, txs: &[TxEnv]) -> (Way, alloy_primitives::B256) {
    let reads = exec_reads(db);
    let started = Instant::now();
    let mut writer = db.begin_block(1).unwrap();
    for tx in txs {
        let mut evm = Context::mainnet()
            .with_db(ReaderDatabase::wrap(writer.reader(Regime::Exec)))
            .with_block(block_env())
            .build_mainnet();
        let out = evm.transact(tx.clone()).unwrap();
        drop(evm);
        assert!(out.result.is_success(), "{:?}", out.result);
        apply_evm_state(&mut writer, &out.state).unwrap();
    }
    let execute = started.elapsed();
    let reads = exec_reads(db) - reads;
    let started = Instant::now();
    let root = writer.commit().unwrap().root;
    let way = Way {
        execute,
        reads,
        commit: started.elapsed(),
    };
    (way, root)
}

fn by_bundle(db: &StateDb, txs: &[TxEnv]) -> (Way, alloy_primitives::B256) {
    let reads = exec_reads(db);
    let started = Instant::now();
    let mut state = State::builder()
        .with_database_ref(ReaderDatabase(db.latest()))
        .with_bundle_update()
        .build();
    let mut evm = Context::mainnet()
        .with_db(&mut state)
        .with_block(block_env())
        .build_mainnet();
    for tx in txs {
        let result = evm.transact_commit(tx.clone()).unwrap();
        assert!(result.is_success(), "{result:?}");
    }
    drop(evm);
    state.merge_transitions(BundleRetention::Reverts);
    let bundle = state.take_bundle();
    let mut writer = db.begin_block(1).unwrap();
    apply_bundle_state(&mut writer, &bundle).unwrap();
    let execute = started.elapsed();
    let reads = exec_reads(db) - reads;
    let started = Instant::now();
    let root = writer.commit().unwrap().root;
    let way = Way {
        execute,
        reads,
        commit: started.elapsed(),
    };
    (way, root)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let accounts = env_u64("STRATA_BENCH_ACCOUNTS", if quick { 2_000 } else { 20_000 }) as usize;
    let txs = env_u64("STRATA_BENCH_TXS", if quick { 50 } else { 400 }) as usize;
    let rounds = if quick { 1 } else { 5 };
    println!(
        "revm block bench: {accounts} accounts, {txs} transactions, {rounds} rounds; {}",
        machine_load()
    );
    let mut rng = seeded(2);
    let senders: Vec<Address> = (0..accounts)
        .map(|_| Address::from(rng.random::<[u8; 20]>()))
        .collect();
    let counters: Vec<Address> = (0..8).map(|i| Address::repeat_byte(0xc0 + i)).collect();
    let mut alloc = GenesisAlloc::new();
    for sender in &senders {
        alloc.insert(
            *sender,
            GenesisAccount {
                balance: U256::from(10u64).pow(U256::from(20)),
                ..Default::default()
            },
        );
    }
    for counter in &counters {
        alloc.insert(
            *counter,
            GenesisAccount {
                code: Bytes::from_static(&COUNTER),
                ..Default::default()
            },
        );
    }
    let block = transactions(&senders, &counters, txs);
    let (mut writer_ways, mut bundle_ways) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        // Each way on a fresh store from the same genesis, alternating.
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = StateDb::open(dir_a.path(), Options::default()).unwrap();
        let b = StateDb::open(dir_b.path(), Options::default()).unwrap();
        a.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
            .unwrap();
        b.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
            .unwrap();
        let (writer_way, writer_root) = by_writer(&a, &block);
        let (bundle_way, bundle_root) = by_bundle(&b, &block);
        assert_eq!(
            writer_root, bundle_root,
            "the two ways disagree on the root"
        );
        writer_ways.push(writer_way);
        bundle_ways.push(bundle_way);
    }
    let median = |ways: &mut Vec<Way>| {
        ways.sort_by_key(|w| w.execute);
        let w = &ways[ways.len() / 2];
        (w.execute, w.reads, w.commit)
    };
    let (we, wr, wc) = median(&mut writer_ways);
    let (be, br, bc) = median(&mut bundle_ways);
    for (name, execute, reads, commit) in [
        ("writer (per-tx EVM, apply_evm_state)", we, wr, wc),
        ("bundle (revm State, apply_bundle_state)", be, br, bc),
    ] {
        println!(
            "{name:<42} execute {:>8.2} ms, {reads:>6} strata reads ({:>9.0} reads/s), commit {:>7.2} ms",
            execute.as_secs_f64() * 1e3,
            reads as f64 / execute.as_secs_f64(),
            commit.as_secs_f64() * 1e3
        );
    }
    println!(
        "bundle execution takes {:.2}x the writer's (median of {rounds}); same root",
        be.as_secs_f64() / we.as_secs_f64()
    );
}
