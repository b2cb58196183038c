//! The oracle from the other side: strata's executor accepts every
//! generated block over a fresh store initialised from genesis.json —
//! header checks, gas used, receipts root, logs bloom and the state root
//! strata computes.

use strata_chain_gen::{
    ACCESS_LISTS_FILE, CHAIN_FILE, Fork, GENESIS_FILE, GenConfig, TxShape, write_chain,
};
use strata_executor::consensus::Ancestor;
use strata_executor::ef_tests::case_options;
use strata_executor::{
    ChainImporter, ExecError, ExecuteOptions, GenesisBlock, GenesisStart, ImportError, Imported,
    TransactionsAhead, execute_block, execute_block_with,
};
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
        .init_genesis(
            &genesis.alloc,
            strata_storage::GenesisName::Hash(genesis.hash),
        )
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

/// The library's importer: a chain from its genesis, stopped after two
/// blocks and resumed (the blocks the store holds checked, not executed),
/// a block out of order refused, another chain's genesis refused.
#[test]
fn the_importer_takes_a_chain_resumes_it_and_refuses_what_does_not_follow() {
    let dir = tempfile::tempdir().unwrap();
    let summary = write_chain(&small_config(9), dir.path(), |_| {}).expect("generates");
    let genesis = GenesisBlock::read(&dir.path().join(GENESIS_FILE)).expect("genesis.json reads");
    let blocks = read_blocks(&dir.path().join(CHAIN_FILE));
    let store = tempfile::tempdir().unwrap();

    let db = StateDb::open(store.path(), case_options()).expect("opens");
    let mut importer = ChainImporter::from_genesis(&db, &genesis).expect("genesis written");
    assert_eq!(importer.genesis_start(), Some(GenesisStart::Written));
    let error = importer
        .import(blocks[1].clone(), ExecuteOptions::default())
        .expect_err("block 2 before block 1");
    assert!(
        matches!(
            error,
            ImportError::OutOfOrder {
                number: 2,
                expected: 1
            }
        ),
        "{error}"
    );
    for block in &blocks[..2] {
        let imported = importer.import(block.clone(), ExecuteOptions::default());
        assert!(
            matches!(imported, Ok(Imported::Executed(_))),
            "{imported:?}"
        );
    }
    drop(importer);
    db.close().expect("closes");

    let db = StateDb::open(store.path(), case_options()).expect("reopens");
    let mut importer = ChainImporter::from_genesis(&db, &genesis).expect("genesis held");
    assert_eq!(
        importer.genesis_start(),
        Some(GenesisStart::Held { last: 2 })
    );
    assert_eq!(importer.resumes_after(), 2);
    for block in &blocks[..2] {
        let imported = importer.import(block.clone(), ExecuteOptions::default());
        assert!(matches!(imported, Ok(Imported::Known)), "{imported:?}");
    }
    match importer.import(blocks[2].clone(), ExecuteOptions::default()) {
        Ok(Imported::Executed(executed)) => assert_eq!(executed.root, summary.head.2),
        other => panic!("block 3 executes, got {other:?}"),
    }
    assert_eq!(importer.parent(), (3, blocks[2].hash));
    assert_eq!(db.last_block(), Some(3));

    let other = tempfile::tempdir().unwrap();
    write_chain(&small_config(10), other.path(), |_| {}).expect("generates");
    let other = GenesisBlock::read(&other.path().join(GENESIS_FILE)).expect("reads");
    let error = ChainImporter::from_genesis(&db, &other)
        .err()
        .expect("another chain");
    assert!(matches!(error, ImportError::OtherGenesis { .. }), "{error}");
}

/// Every fork `gen-chain --fork` makes: strata executes each block of the
/// chain (from Prague the system contracts' calls and the requests hash,
/// from Amsterdam the block's access list: the one the generator wrote
/// beside it is the one strata's execution builds, and the root strata
/// computes from it alongside execution is the block's), and reaches the
/// generator's roots, which alloy-trie computed.
#[test]
fn strata_executes_every_fork_the_generator_makes() {
    for fork in [Fork::Cancun, Fork::Prague, Fork::Osaka, Fork::Amsterdam] {
        let dir = tempfile::tempdir().unwrap();
        // 20 blocks: about 400 transactions, so that each shape of the mix shows.
        let config = GenConfig {
            fork,
            blocks: 20,
            ..small_config(11)
        };
        let summary = write_chain(&config, dir.path(), |_| {}).expect("generates");
        assert_eq!(summary.reverted, 0, "{fork:?}: the mix reverts nothing");
        // Every fork's mix carries blobs (EIP-4844); from Prague it
        // delegates EOAs to code (EIP-7702).
        for (shape, from) in [
            (TxShape::Blob, Fork::Cancun),
            (TxShape::SetCode, Fork::Prague),
        ] {
            assert_eq!(
                summary.shapes.get(&shape).is_some_and(|n| *n > 0),
                fork >= from,
                "{fork:?}, {shape:?}: {:?}",
                summary.shapes
            );
        }
        let genesis =
            GenesisBlock::read(&dir.path().join(GENESIS_FILE)).expect("genesis.json reads");
        let lists =
            (fork == Fork::Amsterdam).then(|| read_lists(&dir.path().join(ACCESS_LISTS_FILE)));
        assert_eq!(
            dir.path().join(ACCESS_LISTS_FILE).exists(),
            fork == Fork::Amsterdam
        );
        let store = tempfile::tempdir().unwrap();
        let db = StateDb::open(store.path(), case_options()).expect("opens");
        db.init_genesis(
            &genesis.alloc,
            strata_storage::GenesisName::Hash(genesis.hash),
        )
        .expect("genesis");
        let mut parent = (genesis.header.clone(), genesis.hash);
        for (index, block) in read_blocks(&dir.path().join(CHAIN_FILE))
            .into_iter()
            .enumerate()
        {
            let header = block.header().clone();
            assert_eq!(header.requests_hash.is_some(), fork >= Fork::Prague);
            assert_eq!(
                header.block_access_list_hash.is_some(),
                fork >= Fork::Amsterdam
            );
            let given = lists.as_ref().map(|lists| lists[index].clone());
            let block = match given.clone() {
                Some(list) => block.with_access_list(list),
                None => block,
            };
            let ancestors = [Ancestor {
                hash: parent.1,
                header: &parent.0,
                ommers: &[],
            }];
            let executed = execute_block(&db, &genesis.spec, &block, &ancestors)
                .unwrap_or_else(|e| panic!("{fork:?} block {}: {e}", block.number()));
            assert_eq!(executed.root, header.state_root);
            assert_eq!(
                executed.access_list, given,
                "{fork:?} block {}",
                header.number
            );
            assert_eq!(
                db.latest().block_hash(header.number).unwrap(),
                Some(block.hash),
                "{fork:?} block {}: its hash, for BLOCKHASH",
                header.number
            );
            parent = (header, block.hash);
        }
        assert_eq!(db.root(), summary.head.2, "{fork:?}");
    }
}

/// An Amsterdam block that comes with a list other than the one its
/// execution builds is refused, naming the difference, and nothing of it
/// is written: the store stays at its parent, with its parent's root.
#[test]
fn a_block_with_a_wrong_access_list_is_refused_and_writes_nothing() {
    let AmsterdamChain {
        genesis,
        mut blocks,
        mut lists,
        ..
    } = amsterdam_chain(12);
    let block = blocks.remove(0);
    let (_store, db) = store_at_genesis(&genesis);
    let root = db.root();
    // One balance after the block, off by one wei.
    let mut wrong = lists.remove(0);
    let account = wrong
        .iter_mut()
        .find(|account| !account.balance_changes.is_empty())
        .expect("a balance changes");
    let change = account.balance_changes.last_mut().unwrap();
    change.post_balance += alloy_primitives::U256::from(1);
    let address = account.address;
    let ancestors = [Ancestor {
        hash: genesis.hash,
        header: &genesis.header,
        ommers: &[],
    }];
    let error = execute_block(
        &db,
        &genesis.spec,
        &block.with_access_list(wrong),
        &ancestors,
    )
    .expect_err("a wrong list is refused");
    let text = error.to_string();
    assert!(
        text.contains("access list") && text.to_lowercase().contains(&format!("{address:x}")[..8]),
        "{text}"
    );
    match error {
        ExecError::Invalid { reason, .. } => assert_eq!(reason.check(), "access-list"),
        other => panic!("{other}"),
    }
    assert_eq!(db.last_block(), Some(0));
    assert_eq!(db.root(), root);
}

/// An Amsterdam chain's transactions run ahead of their turn from each
/// block's list, on two workers: every block reaches the roots, gas and
/// list of the serial run (and its header's), with every transaction
/// committed as run ahead; a block whose list has one wrong balance is
/// still refused by the list's check, with nothing written.
#[test]
fn transactions_run_ahead_from_the_list_match_the_serial_run() {
    let AmsterdamChain {
        genesis,
        blocks,
        lists,
        ..
    } = amsterdam_chain(13);
    let (_serial_dir, serial) = store_at_genesis(&genesis);
    let (_ahead_dir, ahead) = store_at_genesis(&genesis);
    // The first block and its list, kept for the wrong list below.
    let (first_block, mut wrong) = (blocks[0].clone(), lists[0].clone());
    let mut parent = (genesis.header.clone(), genesis.hash);
    for (block, list) in blocks.into_iter().zip(lists) {
        let block = block.with_access_list(list);
        let header = block.header().clone();
        let ancestors = [Ancestor {
            hash: parent.1,
            header: &parent.0,
            ommers: &[],
        }];
        let run = |db: &StateDb, transaction_workers| {
            let options = ExecuteOptions {
                transaction_workers,
                ..ExecuteOptions::default()
            };
            execute_block_with(db, &genesis.spec, &block, &ancestors, options)
                .unwrap_or_else(|e| panic!("block {}: {e}", header.number))
        };
        let one_by_one = run(&serial, 0);
        let run_ahead = run(&ahead, 2);
        assert_eq!(one_by_one.transactions_ahead, None);
        assert_eq!(
            run_ahead.transactions_ahead,
            Some(TransactionsAhead {
                workers: 2.min(run_ahead.transactions),
                committed: run_ahead.transactions,
                executed_again: 0,
            }),
            "block {}",
            header.number
        );
        assert!(run_ahead.transactions > 1, "block {}", header.number);
        assert_eq!(run_ahead.root, header.state_root);
        assert_eq!(run_ahead.root, one_by_one.root);
        assert_eq!(run_ahead.gas_used, one_by_one.gas_used);
        assert_eq!(run_ahead.access_list, one_by_one.access_list);
        parent = (header, block.hash);
    }
    assert_eq!(ahead.root(), serial.root());

    // The coinbase's balance after the first transaction, off by one wei:
    // every later transaction that read it from the list reads it again.
    let (_store, db) = store_at_genesis(&genesis);
    let block = first_block;
    let coinbase = block.header().beneficiary;
    let account = wrong
        .iter_mut()
        .find(|account| account.address == coinbase)
        .expect("the coinbase is in the list");
    account.balance_changes[0].post_balance += alloy_primitives::U256::from(1);
    let ancestors = [Ancestor {
        hash: genesis.hash,
        header: &genesis.header,
        ommers: &[],
    }];
    let options = ExecuteOptions {
        transaction_workers: 2,
        ..ExecuteOptions::default()
    };
    let error = execute_block_with(
        &db,
        &genesis.spec,
        &block.with_access_list(wrong),
        &ancestors,
        options,
    )
    .expect_err("a wrong list is refused");
    match error {
        ExecError::Invalid { reason, .. } => assert_eq!(reason.check(), "access-list"),
        other => panic!("{other}"),
    }
    assert_eq!(db.last_block(), Some(0));
    assert_eq!(db.root(), genesis.header.state_root);
}

/// A generated Amsterdam chain (`small_config(seed)`): its genesis, its
/// blocks and their access lists, and the folder they were written to.
struct AmsterdamChain {
    _dir: tempfile::TempDir,
    genesis: GenesisBlock,
    blocks: Vec<strata_executor::DecodedBlock>,
    lists: Vec<alloy_eip7928::BlockAccessList>,
}

fn amsterdam_chain(seed: u64) -> AmsterdamChain {
    let dir = tempfile::tempdir().unwrap();
    let config = GenConfig {
        fork: Fork::Amsterdam,
        ..small_config(seed)
    };
    write_chain(&config, dir.path(), |_| {}).expect("generates");
    AmsterdamChain {
        genesis: GenesisBlock::read(&dir.path().join(GENESIS_FILE)).expect("genesis.json reads"),
        blocks: read_blocks(&dir.path().join(CHAIN_FILE)),
        lists: read_lists(&dir.path().join(ACCESS_LISTS_FILE)),
        _dir: dir,
    }
}

/// A fresh store holding `genesis` as block 0, with its hash.
fn store_at_genesis(genesis: &GenesisBlock) -> (tempfile::TempDir, StateDb) {
    let store = tempfile::tempdir().unwrap();
    let db = StateDb::open(store.path(), case_options()).expect("opens");
    db.init_genesis(
        &genesis.alloc,
        strata_storage::GenesisName::Hash(genesis.hash),
    )
    .expect("genesis");
    (store, db)
}

/// The lists of an access-lists file, one RLP list after another.
fn read_lists(path: &std::path::Path) -> Vec<alloy_eip7928::BlockAccessList> {
    let bytes = std::fs::read(path).expect("the access lists read");
    let mut rest = bytes.as_slice();
    let mut lists = Vec::new();
    while !rest.is_empty() {
        lists.push(alloy_rlp::Decodable::decode(&mut rest).expect("a list decodes"));
    }
    lists
}
