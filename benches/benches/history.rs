//! History (issue 46): reads and proofs at old blocks, read through redb's
//! history, beside the same reads and proofs at the head, interleaved in
//! one run; and what history costs the writer: the same blocks committed
//! into a store that keeps history and one that does not, alternated block
//! by block (the flushes run in the background of both). Prints p50/p99 of
//! each and their ratio, and the history's bytes per block against the
//! blocks' raw plain changes.
//!
//! `cargo bench -p strata-benches --bench history` (100,000 accounts, 300
//! blocks of 2,000 accounts and 500 slots); `STRATA_BENCH_ACCOUNTS`,
//! `STRATA_BENCH_BLOCKS`; `--test` runs a small version.

use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256};
use rand::Rng;
use strata_benches::{block_writes, env_u64, genesis_with_contracts, machine_load, seeded, stage};
use strata_storage::{HistoryRetention, Options, Regime, StateDb};

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p) as usize]
}

fn line(name: &str, head: &mut [f64], old: &mut [f64]) {
    let (h50, h99) = (percentile(head, 0.5), percentile(head, 0.99));
    let (o50, o99) = (percentile(old, 0.5), percentile(old, 0.99));
    println!(
        "{name:<22} head p50 {:>8.1} µs p99 {:>8.1} µs | old blocks p50 {:>8.1} µs p99 {:>8.1} µs | {:.2}x / {:.2}x",
        h50 / 1e3,
        h99 / 1e3,
        o50 / 1e3,
        o99 / 1e3,
        o50 / h50,
        o99 / h99
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let accounts = env_u64("STRATA_BENCH_ACCOUNTS", if quick { 5_000 } else { 100_000 }) as usize;
    let blocks = env_u64("STRATA_BENCH_BLOCKS", if quick { 40 } else { 300 });
    let (per_block_accounts, per_block_slots) = if quick { (200, 50) } else { (2_000, 500) };
    let targets = if quick { 200 } else { 3_000 };
    println!(
        "history bench: {accounts} accounts, {blocks} blocks of {per_block_accounts} accounts and {per_block_slots} slots; {}",
        machine_load()
    );
    let mut rng = seeded(1);
    let (alloc, contracts) = genesis_with_contracts(accounts, &mut rng);
    let addresses: Vec<Address> = alloc.keys().copied().collect();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let open = |dir: &tempfile::TempDir, history| {
        let db = StateDb::open(dir.path(), Options::default().with_history(Some(history))).unwrap();
        db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
            .unwrap();
        db
    };
    let stores = [
        open(&dirs[0], HistoryRetention::Off),
        open(&dirs[1], HistoryRetention::Full),
    ];
    let mut commit_time = [Duration::ZERO; 2];
    let mut raw_plain = 0u64;
    for block in 1..=blocks {
        let writes = block_writes(
            &addresses,
            &contracts,
            per_block_accounts,
            per_block_slots,
            &mut rng,
        );
        raw_plain += writes
            .iter()
            .map(|(_, slot, _)| if slot.is_some() { 52 + 8 } else { 20 + 10 })
            .sum::<u64>();
        // Alternate which store goes first.
        let order = if block % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let started = Instant::now();
            let mut writer = stores[which].begin_block(block).unwrap();
            stage(&mut writer, &writes);
            writer.commit().unwrap();
            commit_time[which] += started.elapsed();
        }
    }
    for store in &stores {
        store.flush().unwrap();
    }
    println!(
        "writer: {blocks} blocks committed in {:.2} s without history, {:.2} s with ({:.2}x)",
        commit_time[0].as_secs_f64(),
        commit_time[1].as_secs_f64(),
        commit_time[1].as_secs_f64() / commit_time[0].as_secs_f64()
    );
    let db = &stores[1];
    let stats = db.history_stats().unwrap().unwrap();
    let plain: u64 = stats
        .domains
        .iter()
        .filter(|d| d.domain != strata_storage::Domain::Commitment)
        .map(|d| d.bytes)
        .sum();
    let all: u64 = stats.domains.iter().map(|d| d.bytes).sum();
    println!(
        "history files: {:.0} bytes a block on disk ({:.0} of them plain state, {:.2}x the blocks' raw plain changes of {:.0} bytes a block)",
        all as f64 / blocks as f64,
        plain as f64 / blocks as f64,
        plain as f64 / raw_plain as f64,
        raw_plain as f64 / blocks as f64
    );
    let head = db.reader(Regime::Exec);
    let (mut head_reads, mut old_reads) = (Vec::new(), Vec::new());
    let (mut head_proofs, mut old_proofs) = (Vec::new(), Vec::new());
    let mut old_opens = Vec::new();
    for _ in 0..targets {
        let address = addresses[rng.random_range(0..addresses.len())];
        let contract = contracts[rng.random_range(0..contracts.len())];
        let slot = B256::from(rng.random::<[u8; 32]>());
        let block = rng.random_range(1..blocks);
        let started = Instant::now();
        let opened = db.reader_at(block, Regime::Exec).unwrap();
        old_opens.push(started.elapsed().as_nanos() as f64);
        for (reader, out) in [(&head, &mut head_reads), (&opened, &mut old_reads)] {
            let started = Instant::now();
            std::hint::black_box(reader.account(&address).unwrap());
            std::hint::black_box(reader.storage(&contract, &slot).unwrap());
            out.push(started.elapsed().as_nanos() as f64 / 2.0);
        }
        let started = Instant::now();
        std::hint::black_box(head.proof(&contract, &[slot]).unwrap());
        head_proofs.push(started.elapsed().as_nanos() as f64);
        let started = Instant::now();
        std::hint::black_box(db.proof_at(block, &contract, &[slot]).unwrap());
        old_proofs.push(started.elapsed().as_nanos() as f64);
    }
    line("read (account, slot)", &mut head_reads, &mut old_reads);
    line("proof (account + slot)", &mut head_proofs, &mut old_proofs);
    println!(
        "reader_at an old block: p50 {:.1} µs p99 {:.1} µs",
        percentile(&mut old_opens, 0.5) / 1e3,
        percentile(&mut old_opens, 0.99) / 1e3
    );
}
