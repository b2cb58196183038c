//! Randomized stress: tiny memory budgets, steps and segments with the
//! background flusher and maintenance on, so flushes, collations, merges
//! and prunes overlap commits, unwinds and readers all the time (the class
//! of B6 in the durability findings). A reader thread checks every snapshot
//! it sees against the model of the state with that root; after each run
//! the store is compacted, reopened, compared with the model and verified.
//!
//! `STRATA_STRESS_RUNS` sets the number of seeded runs (4 by default); the
//! long campaign is `cargo test -p strata-storage --all-features --test
//! suite -- --ignored stress_long --nocapture` (200 runs).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use alloy_primitives::{Address, B256};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_storage::{Options, Regime, StateDb};

use crate::model::{ADDRESSES, SLOTS, Write, address, apply, slot};
use crate::oracle::{Model, assert_reads_match, model_root};

fn options(rng: &mut StdRng) -> Options {
    let flush_batch_bytes = rng.random_range(1u64..6) << 10;
    Options::default()
        .with_step_size(rng.random_range(1..=4))
        .with_keep_steps_in_db(rng.random_range(1..=2))
        .with_unwind_depth(rng.random_range(3..=8))
        .with_background_maintenance(true)
        .with_parallel_commitment_threshold(8)
        .with_flush_batch_bytes(flush_batch_bytes)
        .with_memory_budget_bytes(flush_batch_bytes * rng.random_range(1..=4))
        .with_journal_segment_bytes(rng.random_range(1u64..8) << 10)
        .with_flush_txn_keys(rng.random_range(1..8))
        .with_value_cache_bytes(if rng.random_bool(0.5) { 16 << 10 } else { 0 })
}

fn random_write(rng: &mut StdRng) -> Write {
    let who = rng.random_range(0..ADDRESSES);
    match rng.random_range(0..10) {
        0..=2 => Write::Account {
            who,
            nonce: rng.random_range(0..4),
            balance: rng.random_range(0..1000),
        },
        3..=7 => Write::Slot {
            who,
            slot: rng.random_range(0..SLOTS),
            value: [0, 1, 2, 3, u64::MAX][rng.random_range(0..5)],
        },
        8 => Write::Code {
            who,
            variant: rng.random_range(0..3),
        },
        _ => Write::Delete { who },
    }
}

/// The model of every state the store has had, by root.
type States = Arc<Mutex<HashMap<B256, Model>>>;

fn check_reader(db: &StateDb, states: &States, context: &str) {
    let reader = db.reader(Regime::Exec);
    let Some(model) = states.lock().get(&reader.root()).cloned() else {
        panic!(
            "{context}: block {:?} has root {}, which no committed state had",
            reader.block(),
            reader.root()
        );
    };
    let addresses: Vec<Address> = (0..ADDRESSES).map(address).collect();
    let slots: Vec<B256> = (0..SLOTS).map(slot).collect();
    assert_reads_match(&reader, &model, &addresses, &slots, context);
}

fn stress_run(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let options = options(&mut rng);
    let context = format!("seed {seed} ({options:?})");
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(StateDb::open(dir.path(), options.clone()).unwrap());
    let states: States = Arc::default();
    let mut history: Vec<Model> = Vec::new();
    let mut model = Model::new();
    states.lock().insert(model_root(&model), model.clone());
    db.begin_block(0).unwrap().commit().unwrap();
    history.push(model.clone());

    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, states, done, context) =
            (db.clone(), states.clone(), done.clone(), context.clone());
        std::thread::spawn(move || {
            let mut seen = 0u64;
            while !done.load(Ordering::Relaxed) {
                check_reader(&db, &states, &format!("{context}: concurrent read"));
                seen += 1;
            }
            seen
        })
    };
    for step in 0..60 {
        let last = db.last_block().unwrap();
        if rng.random_range(0..12) == 0 && last > 2 {
            let oldest = db.oldest_unwindable().unwrap().unwrap_or(last);
            let target = last.saturating_sub(rng.random_range(1..4)).max(oldest);
            let root = db.unwind_to(target).unwrap();
            history.truncate(target as usize + 1);
            model = history.last().unwrap().clone();
            assert_eq!(
                root,
                model_root(&model),
                "{context}: step {step}: unwind root"
            );
            continue;
        }
        let mut writer = db.begin_block(last + 1).unwrap();
        for _ in 0..rng.random_range(0..10) {
            apply(&mut writer, &mut model, &random_write(&mut rng));
        }
        // Published before the commit, so the reader knows the root it may see.
        states.lock().insert(model_root(&model), model.clone());
        let info = writer.commit().unwrap();
        assert_eq!(
            info.root,
            model_root(&model),
            "{context}: step {step}: root"
        );
        history.push(model.clone());
        if rng.random_range(0..8) == 0 {
            db.compact().unwrap();
        }
    }
    done.store(true, Ordering::Relaxed);
    let reads = reader.join().expect("the concurrent reader failed");
    assert!(reads > 0, "{context}: the reader never read");
    check_reader(&db, &states, &format!("{context}: before close"));
    assert_eq!(
        db.root(),
        model_root(&model),
        "{context}: root before close"
    );
    let report = db.verify(&Default::default()).unwrap();
    assert!(
        report.is_ok(),
        "{context}: verify before close: {:?}",
        report.problems
    );
    drop(Arc::into_inner(db).expect("the reader is joined"));
    let db = StateDb::open(dir.path(), options).unwrap();
    assert_eq!(
        db.root(),
        model_root(&model),
        "{context}: root after reopen"
    );
    check_reader(&db, &states, &format!("{context}: after reopen"));
    let report = db.verify(&Default::default()).unwrap();
    assert!(
        report.is_ok(),
        "{context}: verify after reopen: {:?}",
        report.problems
    );
}

fn runs_from_env(default: u64) -> u64 {
    std::env::var("STRATA_STRESS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn stress_tiny_budgets_with_background_maintenance() {
    for seed in 0..runs_from_env(4) {
        stress_run(seed);
    }
}

#[test]
#[ignore = "long: 200 seeded runs (see the module docs)"]
fn stress_long() {
    let started = std::time::Instant::now();
    let runs = runs_from_env(200);
    for seed in 1_000..1_000 + runs {
        stress_run(seed);
    }
    eprintln!("stress_long: {runs} runs in {:.1?}", started.elapsed());
}
