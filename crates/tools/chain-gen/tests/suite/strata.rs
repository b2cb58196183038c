//! The oracle from the other side: strata's executor accepts every
//! generated block over a fresh store initialised from genesis.json —
//! header checks, gas used, receipts root, logs bloom and the state root
//! strata computes.

use strata_chain_gen::{CHAIN_FILE, GENESIS_FILE, write_chain};
use strata_executor::consensus::Ancestor;
use strata_executor::ef_tests::case_options;
use strata_executor::{GenesisBlock, execute_block};
use strata_storage::StateDb;

use super::{read_blocks, small_config};

#[test]
fn strata_executes_every_generated_block() {
    let dir = tempfile::tempdir().unwrap();
    let summary = write_chain(&small_config(9), dir.path(), |_| {}).expect("generates");
    let genesis = GenesisBlock::read(&dir.path().join(GENESIS_FILE)).expect("genesis.json reads");
    assert_eq!(genesis.hash, summary.genesis_hash);

    let store = tempfile::tempdir().unwrap();
    let db = StateDb::open(store.path(), case_options()).expect("opens");
    let root = db
        .init_genesis_with_hash(&genesis.alloc, genesis.hash)
        .expect("genesis");
    assert_eq!(root, genesis.header.state_root);

    let mut parent = (genesis.header.clone(), genesis.hash);
    for block in read_blocks(&dir.path().join(CHAIN_FILE)) {
        let ancestors = [Ancestor {
            hash: parent.1,
            header: &parent.0,
            ommers: &[],
        }];
        let executed = execute_block(&db, &genesis.spec, &block, &ancestors)
            .unwrap_or_else(|e| panic!("block {}: {e}", block.number()));
        assert_eq!(executed.root, block.header().state_root);
        assert_eq!(executed.gas_used, block.header().gas_used);
        parent = (block.block.header.clone(), block.hash);
    }
    assert_eq!(db.root(), summary.head.2);
    assert_eq!(db.last_block(), Some(3));
}
