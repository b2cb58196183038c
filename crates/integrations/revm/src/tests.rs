//! Real revm 43 transactions over strata, block by block, checked against
//! revm's own in-memory state ([`oracle`]): the root after every block, and
//! every account, code and slot read back through strata.
//!
//! SELFDESTRUCT is run under two specs: SHANGHAI, where it deletes a
//! pre-existing contract with its storage, and CANCUN (EIP-6780), where
//! that contract only loses its balance and only a contract created in the
//! same transaction is deleted. Both specs also run a constructor that
//! selfdestructs, which is deleted in both.

mod fixtures;
mod oracle;

use alloy_primitives::{B256, Bytes, KECCAK256_EMPTY, TxKind, U256, keccak256};
use revm::context::TxEnv;
use revm::context_interface::transaction::{
    Authorization, RecoveredAuthority, RecoveredAuthorization,
};
use revm::database::{CacheDB, EmptyDB};
use revm::primitives::hardfork::SpecId;
use revm::{Context, ExecuteCommitEvm, ExecuteEvm, MainBuilder, MainContext};

use strata_engine::{BlockWriter, Domain, Options, Regime, StateDb, StateReader};

use super::{
    DatabaseRef, ReaderDatabase, RevmError, WrapDatabaseRef, apply_bundle_state, apply_evm_state,
    exec_database, writer_database,
};
use fixtures::*;

/// `reader` as revm's `DatabaseRef`.
fn as_revm(reader: &StateReader) -> ReaderDatabase {
    ReaderDatabase(reader.clone())
}

fn strata_evm(
    reader: StateReader,
    spec: SpecId,
    number: u64,
) -> revm::MainnetEvm<revm::handler::MainnetContext<WrapDatabaseRef<ReaderDatabase>>> {
    Context::mainnet()
        .with_db(ReaderDatabase::wrap(reader))
        .modify_cfg_chained(|cfg| cfg.set_spec_and_mainnet_gas_params(spec))
        .with_block(block_env(number))
        .build_mainnet()
}

/// Runs `tx` on the oracle and commits it there.
fn oracle_transact(
    oracle: &mut CacheDB<EmptyDB>,
    spec: SpecId,
    number: u64,
    tx: TxEnv,
) -> revm::context::result::ExecutionResult {
    let mut evm = Context::mainnet()
        .with_db(oracle)
        .modify_cfg_chained(|cfg| cfg.set_spec_and_mainnet_gas_params(spec))
        .with_block(block_env(number))
        .build_mainnet();
    evm.transact_commit(tx).expect("the oracle executes")
}

/// Every account, code and slot of the oracle reads back the same through
/// strata, and every account the oracle does not hold is absent.
fn assert_same_state(db: &StateDb, oracle: &CacheDB<EmptyDB>, context: &str) {
    let reader = db.reader(Regime::Exec);
    for (address, account) in &oracle.cache.accounts {
        let ours = reader.account(address).unwrap();
        if !oracle::alive(account) {
            assert_eq!(ours, None, "{context}: {address} must not exist");
            continue;
        }
        let ours = ours.unwrap_or_else(|| panic!("{context}: {address} is missing"));
        assert_eq!(
            ours.nonce, account.info.nonce,
            "{context}: nonce of {address}"
        );
        assert_eq!(
            ours.balance, account.info.balance,
            "{context}: balance of {address}"
        );
        assert_eq!(
            ours.code_hash, account.info.code_hash,
            "{context}: code of {address}"
        );
        let code = as_revm(&reader).code_by_hash_ref(ours.code_hash).unwrap();
        assert_eq!(
            code.hash_slow(),
            ours.code_hash,
            "{context}: code of {address}"
        );
        for (slot, value) in &account.storage {
            assert_eq!(
                reader.storage(address, &B256::from(*slot)).unwrap(),
                *value,
                "{context}: slot {slot} of {address}"
            );
        }
    }
}

/// Executes [`blocks`] on strata and on the oracle; checks the root and the
/// state after every block. Returns the store for spec-specific checks.
fn run_scenario(spec: SpecId) -> (tempfile::TempDir, StateDb) {
    run_blocks(spec, blocks())
}

/// Executes `blocks` over [`genesis`] on strata and on the oracle, each
/// block's transactions written into its writer by `fill` (which runs them
/// on the oracle too), checking the root and the state after every block.
fn run_blocks_with(
    spec: SpecId,
    blocks: Vec<Vec<TxEnv>>,
    way: &str,
    mut fill: impl FnMut(&StateDb, &mut BlockWriter, &mut CacheDB<EmptyDB>, u64, Vec<TxEnv>),
) -> (tempfile::TempDir, StateDb) {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), Options::default()).unwrap();
    let alloc = genesis();
    let mut oracle = oracle::seeded(&alloc);
    let genesis_root = db
        .init_genesis(&alloc, strata_engine::GenesisName::Unnamed)
        .unwrap();
    assert_eq!(
        genesis_root,
        oracle::state_root(&oracle),
        "{spec:?}: genesis root"
    );
    for (index, txs) in blocks.into_iter().enumerate() {
        let number = index as u64 + 1;
        let mut writer = db.begin_block(number).unwrap();
        fill(&db, &mut writer, &mut oracle, number, txs);
        writer.set_block_hash(block_hash(number));
        let root = writer.commit().unwrap().root;
        let context = format!("{spec:?} {way} block {number}");
        assert_eq!(root, oracle::state_root(&oracle), "{context}: state root");
        assert_same_state(&db, &oracle, &context);
    }
    (dir, db)
}

/// One EVM per transaction over the writer's reader (it sees the block's
/// earlier transactions), [`apply_evm_state`] after each.
fn run_blocks(spec: SpecId, blocks: Vec<Vec<TxEnv>>) -> (tempfile::TempDir, StateDb) {
    run_blocks_with(spec, blocks, "per-tx", |_, writer, oracle, number, txs| {
        for (i, tx) in txs.into_iter().enumerate() {
            let mut evm = strata_evm(writer.reader(Regime::Exec), spec, number);
            let ours = evm.transact(tx.clone()).unwrap();
            drop(evm);
            let theirs = oracle_transact(oracle, spec, number, tx);
            assert!(
                theirs.is_success(),
                "{spec:?} block {number} tx {i}: {theirs:?}"
            );
            assert_eq!(ours.result, theirs, "{spec:?} block {number} tx {i}");
            apply_evm_state(writer, &ours.state).unwrap();
        }
    })
}

/// As reth does: one EVM per block over revm's `State` (with bundle
/// updates) over a strata reader of the last block, the block's
/// [`revm::database::BundleState`] written with [`apply_bundle_state`].
fn run_blocks_as_bundles(spec: SpecId, blocks: Vec<Vec<TxEnv>>) -> (tempfile::TempDir, StateDb) {
    use revm::database::{State, states::bundle_state::BundleRetention};
    run_blocks_with(spec, blocks, "bundle", |db, writer, oracle, number, txs| {
        let mut state = State::builder()
            .with_database_ref(ReaderDatabase(db.reader(Regime::Exec)))
            .with_bundle_update()
            .build();
        let mut evm = Context::mainnet()
            .with_db(&mut state)
            .modify_cfg_chained(|cfg| cfg.set_spec_and_mainnet_gas_params(spec))
            .with_block(block_env(number))
            .build_mainnet();
        for (i, tx) in txs.into_iter().enumerate() {
            let ours = evm.transact_commit(tx.clone()).unwrap();
            let theirs = oracle_transact(oracle, spec, number, tx);
            assert_eq!(ours, theirs, "{spec:?} block {number} tx {i}");
        }
        drop(evm);
        state.merge_transitions(BundleRetention::Reverts);
        apply_bundle_state(writer, &state.take_bundle()).unwrap();
    })
}

/// One EVM per block over the writer itself ([`writer_database`]: each
/// transaction reads the earlier ones and `transact_commit` writes its
/// changes into the block).
fn run_blocks_in_one_evm(spec: SpecId, blocks: Vec<Vec<TxEnv>>) -> (tempfile::TempDir, StateDb) {
    run_blocks_with(spec, blocks, "one-EVM", |_, writer, oracle, number, txs| {
        let mut evm = Context::mainnet()
            .with_db(writer_database(writer))
            .modify_cfg_chained(|cfg| cfg.set_spec_and_mainnet_gas_params(spec))
            .with_block(block_env(number))
            .build_mainnet();
        for (i, tx) in txs.into_iter().enumerate() {
            let ours = evm.transact_commit(tx.clone()).unwrap();
            let theirs = oracle_transact(oracle, spec, number, tx);
            assert_eq!(ours, theirs, "{spec:?} block {number} tx {i}");
        }
        evm.ctx.journaled_state.database.finish().unwrap();
    })
}

#[test]
fn one_evm_per_block_over_the_writer_matches_revm() {
    for spec in [SpecId::SHANGHAI, SpecId::CANCUN] {
        let (_dir, db) = run_blocks_in_one_evm(spec, blocks());
        assert_common(&db);
    }
}

#[test]
fn bundles_of_whole_blocks_match_revm_under_shanghai_and_cancun() {
    for spec in [SpecId::SHANGHAI, SpecId::CANCUN] {
        let (_dir, db) = run_blocks_as_bundles(spec, blocks());
        assert_common(&db);
    }
}

/// Checks both specs share: the deployed contract, its storage, EIP-161,
/// BLOCKHASH, the self-destructing constructor.
fn assert_common(db: &StateDb) {
    let reader = db.reader(Regime::Exec);
    let contract = reader.account(&created(1)).unwrap().unwrap();
    assert_eq!(contract.code_hash, keccak256(RUNTIME));
    assert_eq!(reader.code(&created(1)).unwrap().unwrap().as_ref(), RUNTIME);
    assert_eq!(
        reader.storage(&created(1), &word(1)).unwrap(),
        U256::from(0x2a)
    );
    assert_eq!(
        reader.storage(&created(1), &word(3)).unwrap(),
        U256::from(0x99)
    );
    assert_eq!(
        reader.account(&FRESH).unwrap(),
        None,
        "EIP-161: touched empty"
    );
    let reads_hash = reader.account(&created(4)).unwrap().unwrap();
    assert_eq!(
        (reads_hash.nonce, reads_hash.code_hash),
        (1, KECCAK256_EMPTY)
    );
    assert_eq!(
        B256::from(reader.storage(&created(4), &word(5)).unwrap()),
        block_hash(1),
        "BLOCKHASH(1) served by strata"
    );
    assert_eq!(reader.account(&created(6)).unwrap(), None);
    assert_eq!(reader.storage(&created(6), &word(0)).unwrap(), U256::ZERO);
    assert!(reader.account(&COINBASE).unwrap().unwrap().balance > U256::ZERO);
}

#[test]
fn shanghai_blocks_match_revm_and_selfdestruct_deletes_the_contract() {
    let (_dir, db) = run_scenario(SpecId::SHANGHAI);
    assert_common(&db);
    let reader = db.reader(Regime::Exec);
    assert_eq!(reader.account(&PRE).unwrap(), None);
    assert_eq!(reader.code(&PRE).unwrap(), None);
    assert_eq!(
        reader.storage(&PRE, &word(2)).unwrap(),
        U256::ZERO,
        "storage wiped"
    );
}

#[test]
fn cancun_blocks_match_revm_and_selfdestruct_only_moves_the_balance() {
    let (_dir, db) = run_scenario(SpecId::CANCUN);
    assert_common(&db);
    let reader = db.reader(Regime::Exec);
    let pre = reader.account(&PRE).unwrap().unwrap();
    assert_eq!(pre.balance, U256::ZERO);
    assert_eq!(pre.code_hash, keccak256(RUNTIME));
    assert_eq!(
        reader.storage(&PRE, &word(1)).unwrap(),
        U256::ZERO,
        "set to zero in block 2"
    );
    assert_eq!(reader.storage(&PRE, &word(2)).unwrap(), U256::from(6));
}

/// EIP-7702 (PRAGUE): bob delegates to the genesis contract, so his code
/// hash changes without a CREATE and the delegation bytecode must be
/// stored; the next block runs it, loaded from strata by hash.
#[test]
fn prague_delegation_stores_the_new_code_of_an_existing_account() {
    let authorization = RecoveredAuthorization::new_unchecked(
        Authorization {
            chain_id: U256::from(1),
            address: PRE,
            nonce: 0,
        },
        RecoveredAuthority::Valid(BOB),
    );
    let delegate = TxEnv::builder()
        .tx_type(Some(4))
        .caller(ALICE)
        .nonce(0)
        .call(BOB)
        .data(store_call(4, 0x44))
        .gas_limit(300_000)
        .max_fee_per_gas(2 * GWEI as u128)
        .gas_priority_fee(Some(GWEI as u128))
        .chain_id(Some(1))
        .authorization_list_recovered(vec![authorization])
        .build()
        .expect("a complete EIP-7702 transaction");
    let call = tx(ALICE, 1, TxKind::Call(BOB), U256::ZERO, store_call(5, 0x55));
    let (_dir, db) = run_blocks(SpecId::PRAGUE, vec![vec![delegate], vec![call]]);

    let reader = db.reader(Regime::Exec);
    let bob = reader.account(&BOB).unwrap().unwrap();
    let code = [[0xef, 0x01, 0x00].as_slice(), PRE.as_slice()].concat();
    assert_eq!(bob.nonce, 1);
    assert_eq!(bob.code_hash, keccak256(&code));
    assert_eq!(
        reader.code(&BOB).unwrap().unwrap().as_ref(),
        code.as_slice()
    );
    assert!(
        as_revm(&reader)
            .code_by_hash_ref(bob.code_hash)
            .unwrap()
            .is_eip7702()
    );
    assert_eq!(reader.storage(&BOB, &word(4)).unwrap(), U256::from(0x44));
    assert_eq!(reader.storage(&BOB, &word(5)).unwrap(), U256::from(0x55));
}

/// Runs `txs` in one revm journal over strata (`transact_many_finalize`)
/// and one by one in the oracle, applies the journal's single state as
/// block 1, and checks its root and whole state against the oracle's;
/// returns the store (and the folder it lives in) and that state.
fn one_journal_matches_the_oracle(
    txs: Vec<TxEnv>,
    what: &str,
) -> (tempfile::TempDir, StateDb, revm::state::EvmState) {
    let spec = SpecId::SHANGHAI;
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), Options::default()).unwrap();
    let alloc = genesis();
    let mut oracle = oracle::seeded(&alloc);
    db.init_genesis(&alloc, strata_engine::GenesisName::Unnamed)
        .unwrap();
    for tx in &txs {
        assert!(oracle_transact(&mut oracle, spec, 1, tx.clone()).is_success());
    }
    let mut evm = strata_evm(db.reader(Regime::Exec), spec, 1);
    let out = evm.transact_many_finalize(txs.into_iter()).unwrap();
    drop(evm);
    assert!(out.result.iter().all(|r| r.is_success()));

    let mut writer = db.begin_block(1).unwrap();
    apply_evm_state(&mut writer, &out.state).unwrap();
    let root = writer.commit().unwrap().root;
    assert_eq!(root, oracle::state_root(&oracle), "{what}");
    assert_same_state(&db, &oracle, what);
    (dir, db, out.state)
}

/// One revm journal over two transactions (`transact_many_finalize`): the
/// genesis contract selfdestructs, then receives value. The single
/// `EvmState` marks it selfdestructed yet alive; strata must wipe it and
/// keep the new balance, as revm's own per-transaction commits do.
#[test]
fn one_journal_selfdestruct_then_refund_matches_per_tx_commits() {
    let (_dir, db, state) = one_journal_matches_the_oracle(
        vec![
            tx(ALICE, 0, TxKind::Call(PRE), U256::ZERO, Bytes::new()),
            tx(BOB, 0, TxKind::Call(PRE), U256::from(5), Bytes::new()),
        ],
        "one journal",
    );
    let pre = &state[&PRE];
    assert!(pre.is_selfdestructed() && !pre.is_selfdestructed_locally());
    let reader = db.reader(Regime::Exec);
    let pre = reader.account(&PRE).unwrap().unwrap();
    assert_eq!(
        (pre.nonce, pre.balance, pre.code_hash),
        (0, U256::from(5), KECCAK256_EMPTY)
    );
    assert_eq!(reader.storage(&PRE, &word(2)).unwrap(), U256::ZERO);
}

/// One journal over two transactions: BOB is paid in the first and only
/// touched by the second, which makes revm take his paid balance as his
/// original; the payment is still written.
#[test]
fn one_journal_keeps_a_change_the_next_transaction_only_touches() {
    one_journal_matches_the_oracle(
        vec![
            tx(ALICE, 0, TxKind::Call(BOB), U256::from(5), Bytes::new()),
            tx(ALICE, 1, TxKind::Call(BOB), U256::ZERO, Bytes::new()),
        ],
        "one journal, a change then a touch",
    );
}

#[test]
fn revm_reads_are_timed_in_the_exec_regime() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), Options::default()).unwrap();
    db.init_genesis(&genesis(), strata_engine::GenesisName::Unnamed)
        .unwrap();
    db.metrics().reset();

    let mut evm = Context::mainnet()
        .with_db(exec_database(&db))
        .modify_cfg_chained(|cfg| cfg.set_spec_and_mainnet_gas_params(SpecId::CANCUN))
        .with_block(block_env(1))
        .build_mainnet();
    let out = evm
        .transact(tx(
            ALICE,
            0,
            TxKind::Call(PRE),
            U256::ZERO,
            store_call(9, 1),
        ))
        .unwrap();
    assert!(out.result.is_success());

    let snapshot = db.metrics().snapshot();
    let count = |domain: Domain, regime: Regime| -> u64 {
        snapshot
            .cells
            .iter()
            .filter(|c| c.domain == domain && c.regime == regime)
            .map(|c| c.count)
            .sum()
    };
    for domain in [Domain::Account, Domain::Storage, Domain::Code] {
        assert!(
            count(domain, Regime::Exec) > 0,
            "no exec reads of {domain}: {snapshot:?}"
        );
    }
    let commitment: u64 = Domain::ALL
        .iter()
        .map(|&d| count(d, Regime::Commitment))
        .sum();
    assert_eq!(
        commitment, 0,
        "revm's reads must not be charged to the commitment"
    );
}

#[test]
fn database_ref_answers_and_refuses_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), Options::default()).unwrap();
    db.init_genesis(&genesis(), strata_engine::GenesisName::Unnamed)
        .unwrap();
    let mut writer = db.begin_block(1).unwrap();
    writer.set_block_hash(block_hash(1));
    writer.commit().unwrap();
    let reader = db.reader(Regime::Exec);

    let info = as_revm(&reader).basic_ref(PRE).unwrap().unwrap();
    assert_eq!((info.nonce, info.balance), (1, U256::from(1000)));
    assert_eq!(info.code_hash, keccak256(RUNTIME));
    assert!(info.code.is_none(), "code is served by hash, lazily");
    assert_eq!(
        as_revm(&reader)
            .code_by_hash_ref(info.code_hash)
            .unwrap()
            .original_bytes()
            .as_ref(),
        RUNTIME
    );
    assert!(
        as_revm(&reader)
            .code_by_hash_ref(KECCAK256_EMPTY)
            .unwrap()
            .is_empty()
    );
    assert_eq!(as_revm(&reader).basic_ref(FRESH).unwrap(), None);
    assert_eq!(
        as_revm(&reader).storage_ref(PRE, U256::from(2)).unwrap(),
        U256::from(6)
    );
    assert_eq!(
        as_revm(&reader).storage_ref(PRE, U256::from(3)).unwrap(),
        U256::ZERO
    );
    assert_eq!(as_revm(&reader).block_hash_ref(1).unwrap(), block_hash(1));

    let missing = B256::repeat_byte(0x77);
    match as_revm(&reader).code_by_hash_ref(missing) {
        Err(RevmError::CodeNotFound { hash }) => assert_eq!(hash, missing),
        other => panic!("expected CodeNotFound, got {other:?}"),
    }
    match as_revm(&reader).block_hash_ref(0) {
        Err(error @ RevmError::BlockHashNotFound { number: 0, .. }) => {
            assert!(
                error.to_string().contains("last committed block: 1"),
                "{error}"
            )
        }
        other => panic!("expected BlockHashNotFound, got {other:?}"),
    }
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    assert_send_sync(&exec_database(&db));
}

/// A state that sets a code hash without the bytecode is refused with the
/// account named, instead of storing an account whose code is missing.
#[test]
fn a_code_hash_without_bytecode_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), Options::default()).unwrap();
    db.init_genesis(&genesis(), strata_engine::GenesisName::Unnamed)
        .unwrap();
    let original = as_revm(&db.reader(Regime::Exec))
        .basic_ref(BOB)
        .unwrap()
        .unwrap();
    let mut account = revm::state::Account::from(original);
    account.info.code_hash = B256::repeat_byte(0x42);
    account.mark_touch();
    let state = revm::state::EvmState::from_iter([(BOB, account)]);
    let mut writer = db.begin_block(1).unwrap();
    match apply_evm_state(&mut writer, &state) {
        Err(RevmError::MissingCode { address, code_hash }) => {
            assert_eq!((address, code_hash), (BOB, B256::repeat_byte(0x42)))
        }
        other => panic!("expected MissingCode, got {other:?}"),
    }
}
