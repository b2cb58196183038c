//! Proof generation (issue 16): `StateReader::proof` for random present and
//! absent accounts with 2 slots each (one set, one not), beside reading the
//! same account and slots without proofs, interleaved round by round in one
//! run; prints proofs/s, the median time of each and their ratio, and the
//! proof bytes per account (byte-equal to alloy-trie's, see
//! `commitment/tests/suite/proof.rs`).
//!
//! `cargo bench -p strata-benches --bench proof` (100,000 accounts);
//! `STRATA_BENCH_ACCOUNTS=1000000` for 1M; `--test` runs a small version.

use std::time::Instant;

use alloy_primitives::{Address, B256};
use rand::Rng;
use strata_benches::{env_u64, genesis_with_contracts, machine_load, seeded};
use strata_storage::{Options, StateDb, StateReader};

/// One key set: an account and two of its slots.
type Target = (Address, [B256; 2]);

/// `n` targets: a third contracts with one set and one unset slot, a third
/// present accounts, a third absent ones (their slots unset).
fn targets(set_slots: &[(Address, B256)], addresses: &[Address], n: usize) -> Vec<Target> {
    let mut rng = seeded(7);
    (0..n)
        .map(|i| {
            let unset = B256::from(rng.random::<[u8; 32]>());
            match i % 3 {
                0 => {
                    let (contract, slot) = set_slots[rng.random_range(0..set_slots.len())];
                    (contract, [slot, unset])
                }
                1 => (
                    addresses[rng.random_range(0..addresses.len())],
                    [unset, unset],
                ),
                _ => (Address::from(rng.random::<[u8; 20]>()), [unset, unset]),
            }
        })
        .collect()
}

fn read_plain(reader: &StateReader, targets: &[Target]) -> usize {
    let mut found = 0;
    for (address, slots) in targets {
        found += reader.account(address).unwrap().is_some() as usize;
        for slot in slots {
            found += !reader.storage(address, slot).unwrap().is_zero() as usize;
        }
    }
    found
}

fn read_proofs(reader: &StateReader, targets: &[Target]) -> (usize, usize) {
    let (mut found, mut bytes) = (0, 0);
    for (address, slots) in targets {
        let proof = reader.proof(address, slots).unwrap();
        found += proof.account.is_some() as usize;
        found += proof.storage.iter().filter(|s| !s.value.is_zero()).count();
        bytes += proof.proof.iter().map(|n| n.len()).sum::<usize>();
        bytes += proof
            .storage
            .iter()
            .flat_map(|s| &s.proof)
            .map(|n| n.len())
            .sum::<usize>();
    }
    (found, bytes)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let accounts = env_u64("STRATA_BENCH_ACCOUNTS", if quick { 5_000 } else { 100_000 }) as usize;
    let per_round = if quick { 60 } else { 600 };
    let rounds = if quick { 3 } else { 15 };
    println!(
        "proof bench: {accounts} accounts, {rounds} rounds of {per_round} targets; {}",
        machine_load()
    );
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), Options::default()).unwrap();
    let mut rng = seeded(1);
    let (alloc, contracts) = genesis_with_contracts(accounts, &mut rng);
    let addresses: Vec<Address> = alloc.keys().copied().collect();
    // Contracts' set slots, so a third of the slot proofs end in a leaf.
    let set_slots: Vec<(Address, B256)> = contracts
        .iter()
        .map(|c| (*c, *alloc[c].storage.keys().next().unwrap()))
        .collect();
    db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
        .unwrap();
    drop(alloc);
    let all = targets(&set_slots, &addresses, per_round);
    let reader = db.latest();
    let (mut plain, mut proofs) = (Vec::new(), Vec::new());
    let mut bytes = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let found_plain = read_plain(&reader, &all);
        plain.push(started.elapsed().as_nanos() as f64 / all.len() as f64);
        let started = Instant::now();
        let (found_proofs, round_bytes) = read_proofs(&reader, &all);
        proofs.push(started.elapsed().as_nanos() as f64 / all.len() as f64);
        assert_eq!(found_plain, found_proofs, "proofs and reads disagree");
        bytes = round_bytes;
    }
    let (plain, proofs) = (median(&mut plain), median(&mut proofs));
    println!(
        "read account + 2 slots: {:>9.1} µs/target (median)",
        plain / 1e3
    );
    println!(
        "proof account + 2 slots: {:>8.1} µs/target (median), {:.0} proofs/s, {:.2}x the plain reads",
        proofs / 1e3,
        1e9 / proofs,
        proofs / plain
    );
    println!(
        "proof bytes: {:.0} per target (account proof + 2 storage proofs)",
        bytes as f64 / all.len() as f64
    );
}
