//! Model-based property test: random blocks of writes and deletes (including
//! deleting accounts that have storage), commits, flushes, compaction,
//! reopen, a crash after a commit (recovery from the journal) and unwind,
//! compared after every step with an in-memory model and its HashBuilder
//! root.

use alloy_primitives::{Address, B256, Bytes, U256};
use proptest::prelude::*;
use strata_storage::{Account, Error, Options, Regime, StateDb};

use crate::oracle::{
    Model, ModelAccount, assert_proofs_match, assert_reads_match, code_hash, model_root,
};

pub(crate) const ADDRESSES: usize = 8;
pub(crate) const SLOTS: usize = 6;

#[derive(Clone, Debug)]
pub(crate) enum Write {
    Account {
        who: usize,
        nonce: u64,
        balance: u64,
    },
    Slot {
        who: usize,
        slot: usize,
        value: u64,
    },
    Code {
        who: usize,
        variant: u8,
    },
    Delete {
        who: usize,
    },
}

#[derive(Clone, Debug)]
enum Step {
    Block(Vec<Write>),
    Compact,
    Flush,
    Reopen,
    Crash,
    Unwind(u64),
    /// A reader at this many blocks before the last.
    ReadAt(u64),
}

pub(crate) fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        3 => (0..ADDRESSES, 0..4u64, 0..1000u64).prop_map(|(who, nonce, balance)| Write::Account { who, nonce, balance }),
        5 => (0..ADDRESSES, 0..SLOTS, prop_oneof![Just(0u64), 1..5u64, Just(u64::MAX)]).prop_map(|(who, slot, value)| Write::Slot { who, slot, value }),
        1 => (0..ADDRESSES, 0..3u8).prop_map(|(who, variant)| Write::Code { who, variant }),
        1 => (0..ADDRESSES).prop_map(|who| Write::Delete { who }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => prop::collection::vec(write(), 0..12).prop_map(Step::Block),
        1 => Just(Step::Compact),
        1 => Just(Step::Flush),
        1 => Just(Step::Reopen),
        1 => Just(Step::Crash),
        1 => (1..5u64).prop_map(Step::Unwind),
        2 => (0..9u64).prop_map(Step::ReadAt),
    ]
}

pub(crate) fn address(i: usize) -> Address {
    Address::with_last_byte(i as u8 + 1)
}

pub(crate) fn slot(i: usize) -> B256 {
    B256::with_last_byte(i as u8 + 1)
}

fn code(variant: u8) -> Bytes {
    match variant {
        0 => Bytes::new(),
        1 => Bytes::from_static(&[0x60, 0x00, 0x60, 0x00, 0xf3]),
        _ => Bytes::from(vec![0x5b; 100]),
    }
}

pub(crate) fn small_options() -> Options {
    Options::default()
        .with_step_size(2)
        .with_keep_steps_in_db(1)
        .with_unwind_depth(6)
        .with_background_maintenance(false)
        .with_parallel_commitment_threshold(8)
        // A few blocks per flush, so blocks sit in every tier.
        .with_flush_batch_bytes(2 << 10)
        .with_memory_budget_bytes(6 << 10)
        .with_journal_segment_bytes(4 << 10)
        // Several redb transactions per flush.
        .with_flush_txn_keys(5)
        // A value cache that evicts.
        .with_value_cache_bytes(16 << 10)
}

/// Applies one write to the store and the model; storage writes to a missing
/// account create it first, as the EVM would.
pub(crate) fn apply(writer: &mut strata_storage::BlockWriter, model: &mut Model, write: &Write) {
    let ensure = |writer: &mut strata_storage::BlockWriter, model: &mut Model, who: Address| {
        if let std::collections::btree_map::Entry::Vacant(entry) = model.entry(who) {
            entry.insert(ModelAccount::default());
            writer.put_account(who, &Account::default());
        }
    };
    match *write {
        Write::Account {
            who,
            nonce,
            balance,
        } => {
            let who = address(who);
            let entry = model.entry(who).or_default();
            entry.account.nonce = nonce;
            entry.account.balance = U256::from(balance);
            writer.put_account(who, &entry.account);
        }
        Write::Slot {
            who,
            slot: s,
            value,
        } => {
            let who = address(who);
            ensure(writer, model, who);
            let entry = model.get_mut(&who).unwrap();
            let value = U256::from(value);
            if value.is_zero() {
                entry.storage.remove(&slot(s));
            } else {
                entry.storage.insert(slot(s), value);
            }
            writer.put_storage(who, slot(s), value);
        }
        Write::Code { who, variant } => {
            let who = address(who);
            ensure(writer, model, who);
            let entry = model.get_mut(&who).unwrap();
            let bytes = code(variant);
            entry.code = (!bytes.is_empty()).then(|| bytes.clone());
            entry.account.code_hash = code_hash(&bytes);
            writer.put_code(who, bytes.into());
            writer.put_account(who, &entry.account);
        }
        Write::Delete { who } => {
            let who = address(who);
            model.remove(&who);
            writer.delete_account(who);
        }
    }
}

/// Commits `writes` as the block after the last one, to the store and the
/// model; returns its number.
pub(crate) fn commit_next_block(db: &StateDb, model: &mut Model, writes: &[Write]) -> u64 {
    let number = db.last_block().unwrap() + 1;
    let mut writer = db.begin_block(number).unwrap();
    for write in writes {
        apply(&mut writer, model, write);
    }
    let info = writer.commit().unwrap();
    assert_eq!(info.block, number);
    number
}

fn check(db: &StateDb, model: &Model, context: &str) {
    let addresses: Vec<Address> = (0..ADDRESSES).map(address).collect();
    let slots: Vec<B256> = (0..SLOTS).map(slot).collect();
    let reader = db.reader(Regime::Exec);
    assert_reads_match(&reader, model, &addresses, &slots, context);
    assert_eq!(db.root(), model_root(model), "{context}: root");
    assert_proofs_match(
        &|a, s| reader.proof(a, s),
        model,
        &addresses,
        &slots,
        context,
    );
}

fn run(steps: Vec<Step>) {
    let dir = tempfile::tempdir().unwrap();
    let mut db = StateDb::open(dir.path(), small_options()).unwrap();
    // history[i] is the model after block i.
    let mut history: Vec<Model> = Vec::new();
    let mut model = Model::new();
    {
        let writer = db.begin_block(0).unwrap();
        writer.commit().unwrap();
        history.push(model.clone());
    }
    for (i, step) in steps.into_iter().enumerate() {
        let context = format!("step {i} ({step:?})");
        match step {
            Step::Block(writes) => {
                commit_next_block(&db, &mut model, &writes);
                history.push(model.clone());
            }
            Step::Compact => {
                db.compact().unwrap();
            }
            Step::Flush => {
                db.flush().unwrap();
            }
            Step::Reopen => {
                drop(db);
                db = StateDb::open(dir.path(), small_options()).unwrap();
            }
            Step::Crash => {
                // The unflushed blocks exist only in the journal now.
                db.abandon();
                db = StateDb::open(dir.path(), small_options()).unwrap();
            }
            Step::Unwind(back) => {
                let last = db.last_block().unwrap();
                let oldest = db.oldest_unwindable().unwrap().unwrap();
                let target = last.saturating_sub(back).max(oldest);
                if last.saturating_sub(back) < oldest {
                    let err = db.unwind_to(oldest - 1).unwrap_err().to_string();
                    assert!(err.contains("cannot unwind"), "{context}: {err}");
                }
                let root = db.unwind_to(target).unwrap();
                history.truncate(target as usize + 1);
                model = history.last().unwrap().clone();
                assert_eq!(root, model_root(&model), "{context}: unwind root");
                assert_eq!(db.root_at(target).unwrap(), Some(root));
            }
            Step::ReadAt(back) => {
                let last = db.last_block().unwrap();
                let target = last.saturating_sub(back);
                let oldest = db.oldest_unwindable().unwrap().unwrap();
                match db.reader_at(target, Regime::Exec) {
                    Ok(reader) => {
                        let then = &history[target as usize];
                        let context = format!("{context}: at block {target}");
                        assert_eq!(reader.block(), Some(target), "{context}");
                        assert_eq!(reader.root(), model_root(then), "{context}: root");
                        let addresses: Vec<Address> = (0..ADDRESSES).map(address).collect();
                        let slots: Vec<B256> = (0..SLOTS).map(slot).collect();
                        assert_reads_match(&reader, then, &addresses, &slots, &context);
                        let prove = |a: &Address, s: &[B256]| db.proof_at(target, a, s);
                        assert_proofs_match(&prove, then, &addresses, &slots, &context);
                    }
                    Err(Error::StateNotRetained { .. }) if target < oldest => {}
                    Err(other) => {
                        panic!("{context}: block {target} of {oldest}..={last}: {other}")
                    }
                }
            }
        }
        check(&db, &model, &context);
    }
    // Everything survives a final compaction and reopen.
    db.compact().unwrap();
    check(&db, &model, "final compaction");
    drop(db);
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    check(&db, &model, "final reopen");
    let report = db.verify(&Default::default()).unwrap();
    assert!(report.is_ok(), "verify: {:?}", report.problems);
    assert_eq!(report.computed_root, model_root(&model));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn store_matches_model(steps in prop::collection::vec(step(), 1..30)) {
        run(steps);
    }
}

#[test]
fn deleting_an_account_removes_storage_held_in_files() {
    use Step::*;
    let mut steps = vec![Block(vec![
        Write::Slot {
            who: 0,
            slot: 0,
            value: 7,
        },
        Write::Slot {
            who: 0,
            slot: 1,
            value: 8,
        },
    ])];
    // Push the slots down into files, then delete and re-create the account.
    steps.extend((0..6).map(|_| {
        Block(vec![Write::Account {
            who: 1,
            nonce: 1,
            balance: 1,
        }])
    }));
    steps.push(Compact);
    steps.push(Block(vec![
        Write::Delete { who: 0 },
        Write::Slot {
            who: 0,
            slot: 1,
            value: 9,
        },
    ]));
    steps.push(Compact);
    steps.push(Unwind(1));
    steps.push(Reopen);
    run(steps);
}
