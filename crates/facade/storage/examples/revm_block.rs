//! Executes a few real transactions with revm 43 over a strata datadir and
//! commits each block's state changes, printing the state roots.
//!
//! ```text
//! cargo run -p strata-storage --features revm --example revm_block [DATADIR]
//! ```
//!
//! Without DATADIR a temporary directory is used. Block 1 sends ether and
//! deploys a counter contract; block 2 calls it twice (two transactions in
//! one block, the second one reading the first one's write through the
//! block writer's reader).

use std::error::Error;

use alloy_primitives::{Address, Bytes, TxKind, U256};
use revm::context::{BlockEnv, TxEnv};
use revm::{Context, ExecuteEvm, MainBuilder, MainContext};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::revm::{ReaderDatabase, apply_evm_state};
use strata_storage::{Options, Regime, StateDb};

/// Counter runtime: slot 0 += 1 on every call.
const COUNTER: [u8; 10] = [0x60, 0x00, 0x54, 0x60, 0x01, 0x01, 0x60, 0x00, 0x55, 0x00];

/// Init code returning [`COUNTER`]: CODECOPY(0, 12, 10) RETURN(0, 10).
const INIT: [u8; 12] = [
    0x60, 0x0a, 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, 0x0a, 0x60, 0x00, 0xf3,
];

fn main() -> Result<(), Box<dyn Error>> {
    let temp = tempfile::tempdir()?;
    let datadir = std::env::args()
        .nth(1)
        .map_or_else(|| temp.path().to_path_buf(), Into::into);
    let db = StateDb::open(&datadir, Options::default())?;

    let sender = Address::repeat_byte(0x11);
    let friend = Address::repeat_byte(0x22);
    let alloc = GenesisAlloc::from([(
        sender,
        GenesisAccount {
            balance: U256::from(10u64).pow(U256::from(20)),
            ..Default::default()
        },
    )]);
    println!(
        "genesis  root {}",
        db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)?
    );

    let counter = sender.create(1);
    let deploy: Bytes = [INIT.as_slice(), COUNTER.as_slice()].concat().into();
    let blocks: [Vec<(TxKind, U256, Bytes)>; 2] = [
        vec![
            (TxKind::Call(friend), U256::from(1_000_000), Bytes::new()),
            (TxKind::Create, U256::ZERO, deploy),
        ],
        vec![
            (TxKind::Call(counter), U256::ZERO, Bytes::new()),
            (TxKind::Call(counter), U256::ZERO, Bytes::new()),
        ],
    ];

    let mut nonce = 0;
    for (index, txs) in blocks.into_iter().enumerate() {
        let number = index as u64 + 1;
        let mut writer = db.begin_block(number)?;
        for (kind, value, data) in txs {
            let tx = TxEnv::builder()
                .caller(sender)
                .nonce(nonce)
                .kind(kind)
                .value(value)
                .data(data)
                .gas_limit(200_000)
                .gas_price(1_000_000_000)
                .build()
                .map_err(|e| format!("transaction {nonce}: {e:?}"))?;
            nonce += 1;
            // The writer's reader sees this block's earlier transactions.
            let mut evm = Context::mainnet()
                .with_db(ReaderDatabase::wrap(writer.reader(Regime::Exec)))
                .with_block(BlockEnv {
                    number: U256::from(number),
                    basefee: 1_000_000_000,
                    ..Default::default()
                })
                .build_mainnet();
            let out = evm.transact(tx)?;
            drop(evm);
            if !out.result.is_success() {
                return Err(format!("block {number}: {:?}", out.result).into());
            }
            let stats = apply_evm_state(&mut writer, &out.state)?;
            println!(
                "block {number} tx: gas {:>6}, {} accounts, {} slots written",
                out.result.tx_gas_used(),
                stats.accounts_written,
                stats.slots_written
            );
        }
        let info = writer.commit()?;
        println!("block {number}  root {}", info.root);
    }

    let reader = db.reader(Regime::Exec);
    let count = reader.storage(&counter, &Default::default())?;
    println!("counter at {counter} = {count}");
    if count != U256::from(2) {
        return Err(format!("counter is {count}, expected 2").into());
    }
    println!("{}", db.metrics().snapshot().to_prometheus());
    Ok(())
}
