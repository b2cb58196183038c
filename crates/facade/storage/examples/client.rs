//! A minimal client on strata: a genesis, a transfer executed by revm over
//! the block's writer, the commit, reads, a proof, an older block and an
//! unwind. The book's "Executing blocks with revm" shows the lines between
//! the `ANCHOR` markers (mdBook includes them), so what it shows is what CI
//! builds.
//!
//! ```text
//! cargo run -p strata-storage --features revm --example client
//! ```

// ANCHOR: client
// Cargo.toml: strata-storage = { git = "https://github.com/strata-eth/strata", features = ["revm"] }
use alloy_primitives::{Address, B256, TxKind, U256};
use revm::context::{BlockEnv, TxEnv};
use revm::{Context, ExecuteEvm, MainBuilder, MainContext};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::revm::{ReaderDatabase, apply_evm_state};
use strata_storage::{Options, Regime, StateDb};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let datadir = tempfile::tempdir()?;
    let db = StateDb::open(datadir.path(), Options::default().with_warmers(4))?;
    let (alice, bob) = (Address::repeat_byte(0xa1), Address::repeat_byte(0xb0));
    let alloc = GenesisAlloc::from([(
        alice,
        GenesisAccount {
            balance: U256::from(10u64).pow(U256::from(18)),
            ..Default::default()
        },
    )]);
    // Block 0's hash is served to BLOCKHASH(0); `init_chain_genesis` (feature
    // `alloy-genesis`) builds it from an `alloy_genesis::Genesis` instead.
    db.init_genesis(
        &alloc,
        strata_storage::GenesisName::Hash(B256::repeat_byte(0x01)),
    )?;

    // Block 1: one transfer executed by revm 43 over the block's writer (its
    // reader sees the block's earlier transactions; reads timed as Exec).
    let mut block = db.begin_block(1)?;
    let tx = TxEnv::builder()
        .caller(alice)
        .kind(TxKind::Call(bob))
        .value(U256::from(1_000))
        .gas_limit(21_000)
        .gas_price(1_000_000_000)
        .build()
        .map_err(|e| format!("{e:?}"))?;
    let mut evm = Context::mainnet()
        .with_db(ReaderDatabase::wrap(block.reader(Regime::Exec)))
        .with_block(BlockEnv {
            number: U256::from(1),
            basefee: 1_000_000_000,
            ..Default::default()
        })
        .build_mainnet();
    let out = evm.transact(tx)?;
    drop(evm);
    apply_evm_state(&mut block, &out.state)?; // or apply_bundle_state(&mut block, &bundle)
    block.set_block_hash(B256::repeat_byte(0x02)); // served to BLOCKHASH for 256 blocks
    let root = block.state_root()?; // the root before deciding: nothing written yet
    // The writer is owned and Send: commit it on another thread if need be.
    let committed = std::thread::spawn(move || block.commit()).join().unwrap()?;
    assert_eq!(committed.root, root); // the commit reused the root (a dropped writer leaves no trace)

    let balance = db.latest().account(&bob)?.map(|account| account.balance);
    assert_eq!(balance, Some(U256::from(1_000)));
    let proof = db.latest().proof(&bob, &[B256::ZERO])?; // eth_getProof nodes from the stored records
    assert!(proof.account.is_some() && !proof.proof.is_empty());
    let then = db.reader_at(0, Regime::Exec)?; // the state after any of the last 128 blocks
    assert_eq!(then.account(&bob)?, None);
    db.unwind_to(0)?; // a reorg: back to any of the last 128 blocks
    assert_eq!(db.latest().account(&bob)?, None);
    Ok(())
}
// ANCHOR_END: client
