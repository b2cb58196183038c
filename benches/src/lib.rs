//! Shared helpers for strata's benchmarks: the machine's load, and a
//! mainnet-shaped genesis with one block's worth of writes on it.

use alloy_primitives::{Address, B256, U256};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::{Account, BlockWriter};

/// The machine's load average and runnable tasks, read before a run starts
/// (the machines are shared: figures are read against it).
pub fn machine_load() -> String {
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut fields = loadavg.split_whitespace();
    let one_minute = fields.next().unwrap_or("?");
    let running = fields
        .next()
        .and_then(|f| f.split('/').next())
        .unwrap_or("?");
    format!("load avg {one_minute}, {running} runnable tasks (before starting)")
}

/// The number in the environment variable `name`, or `default` when it is
/// unset or not a number (how every bench takes its sizes).
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(default)
}

/// One write of a block: an account's nonce (`slot` = `None`) or a slot's value.
pub type BlockWrite = (Address, Option<B256>, u64);

/// A genesis of `accounts` random accounts, one in 50 a contract with 20
/// slots; returns it with the addresses of the contracts.
pub fn genesis_with_contracts(accounts: usize, rng: &mut StdRng) -> (GenesisAlloc, Vec<Address>) {
    let mut alloc = GenesisAlloc::new();
    let mut contracts = Vec::new();
    for i in 0..accounts {
        let address = Address::from(rng.random::<[u8; 20]>());
        let mut account = GenesisAccount {
            nonce: rng.random::<u16>() as u64,
            balance: U256::from(rng.random::<u64>()),
            ..GenesisAccount::default()
        };
        if i % 50 == 0 {
            for _ in 0..20 {
                account.storage.insert(
                    B256::from(rng.random::<[u8; 32]>()),
                    U256::from(rng.random::<u32>() | 1),
                );
            }
            contracts.push(address);
        }
        alloc.insert(address, account);
    }
    (alloc, contracts)
}

/// A block's writes on that genesis: `accounts` nonces of random accounts
/// and `slots` new slots of random contracts.
pub fn block_writes(
    addresses: &[Address],
    contracts: &[Address],
    accounts: usize,
    slots: usize,
    rng: &mut StdRng,
) -> Vec<BlockWrite> {
    let mut writes = Vec::with_capacity(accounts + slots);
    for _ in 0..accounts {
        writes.push((
            addresses[rng.random_range(0..addresses.len())],
            None,
            rng.random::<u64>(),
        ));
    }
    for _ in 0..slots {
        writes.push((
            contracts[rng.random_range(0..contracts.len())],
            Some(B256::from(rng.random::<[u8; 32]>())),
            rng.random::<u64>() | 1,
        ));
    }
    writes
}

/// Stages `writes` in a block: nonces as accounts, the rest as slots.
pub fn stage(writer: &mut BlockWriter, writes: &[BlockWrite]) {
    for (address, slot, value) in writes {
        match slot {
            None => writer.put_account(
                *address,
                &Account {
                    nonce: *value,
                    ..Account::default()
                },
            ),
            Some(slot) => writer.put_storage(*address, *slot, U256::from(*value)),
        }
    }
}

/// A seeded generator for a benchmark's data.
pub fn seeded(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}
