//! `ReadOnlyStateDb::sample_keys` over a store whose keys are spread over
//! the memory tier, redb and files, with deletions in each: checked against
//! a model of the live keys.

use std::collections::BTreeSet;

use alloy_primitives::{Address, B256, U256};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::keys::storage_key;
use strata_storage::{Account, Domain, Options, ReadOnlyStateDb, StateDb};

fn options() -> Options {
    Options::default()
        .with_step_size(2)
        .with_keep_steps_in_db(1)
        .with_background_maintenance(false)
        .with_warmers(0)
        .with_share_with_readers(true)
}

fn address(n: u16) -> Address {
    Address::left_padding_from(&n.to_be_bytes())
}

/// The live accounts and storage keys, as the writes below leave them.
#[derive(Default)]
struct Model {
    accounts: BTreeSet<Vec<u8>>,
    slots: BTreeSet<Vec<u8>>,
}

impl Model {
    fn account(&mut self, n: u16) -> (Address, Account) {
        self.accounts.insert(address(n).to_vec());
        let account = Account {
            nonce: u64::from(n),
            balance: U256::from(n),
            ..Account::default()
        };
        (address(n), account)
    }

    fn slot(&mut self, n: u16, slot: u8, value: u64) -> (Address, B256, U256) {
        let key = storage_key(&address(n), &B256::with_last_byte(slot)).to_vec();
        if value == 0 {
            self.slots.remove(&key);
        } else {
            self.slots.insert(key);
        }
        (address(n), B256::with_last_byte(slot), U256::from(value))
    }
}

/// 200 accounts (every fifth with 3 slots) at genesis; blocks 1–4 delete
/// some, create others and clear slots, then a compaction moves them to
/// files and redb; blocks 5–6 stay in the memory tier, deleting keys the
/// older tiers hold and re-creating deleted ones.
fn write_store(db: &StateDb, model: &mut Model) {
    let mut alloc = GenesisAlloc::new();
    for n in 1..=200u16 {
        let (address, account) = model.account(n);
        let mut genesis = GenesisAccount {
            nonce: account.nonce,
            balance: account.balance,
            ..GenesisAccount::default()
        };
        if n % 5 == 0 {
            for slot in 1..=3 {
                let (_, slot, value) = model.slot(n, slot, u64::from(n));
                genesis.storage.insert(slot, value);
            }
        }
        alloc.insert(address, genesis);
    }
    db.init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
        .unwrap();
    let commit = |block: u64, model: &mut Model, deletes: &[u16], creates: &[u16]| {
        let mut writer = db.begin_block(block).unwrap();
        for &n in deletes {
            writer.delete_account(address(n));
            model.accounts.remove(&address(n).to_vec());
            model
                .slots
                .retain(|key| key[..20] != address(n).as_slice()[..]);
        }
        for &n in creates {
            let (address, account) = model.account(n);
            writer.put_account(address, &account);
        }
        let (address, slot, value) = model.slot(100 + block as u16 * 5, 2, 0);
        writer.put_storage(address, slot, value);
        let (address, slot, value) = model.slot(150 + block as u16 * 5, 9, block);
        writer.put_storage(address, slot, value);
        writer.commit().unwrap();
    };
    for block in 1..=4u64 {
        let first = block as u16 * 10;
        commit(
            block,
            model,
            &[first, first + 1],
            &[300 + first, 301 + first],
        );
    }
    db.compact().unwrap();
    commit(5, model, &[3, 310, 50], &[10, 400]);
    commit(6, model, &[4, 401], &[11, 3]);
}

fn sample(db: &ReadOnlyStateDb, domain: Domain, count: usize, seed: u64) -> Vec<Vec<u8>> {
    db.sample_keys(domain, count, seed)
        .unwrap()
        .iter()
        .map(|key| key.to_vec())
        .collect()
}

#[test]
fn samples_are_live_keys_once_each_uniform_and_seeded() {
    let dir = tempfile::tempdir().unwrap();
    let writer = StateDb::open(dir.path(), options()).unwrap();
    let mut model = Model::default();
    write_store(&writer, &mut model);
    let stats = writer.stats().unwrap();
    let accounts = &stats.domains[Domain::Account.index()];
    assert!(
        accounts.memory_entries > 0 && accounts.db_entries > 0 && !accounts.files.is_empty(),
        "keys in every tier: {accounts:?}"
    );
    let db = ReadOnlyStateDb::open(dir.path(), options()).unwrap();
    assert_eq!(db.last_block().unwrap(), Some(6));

    // Asking for more than there are: every live key, once, in key order.
    let all: Vec<_> = model.accounts.iter().cloned().collect();
    assert_eq!(sample(&db, Domain::Account, 10_000, 1), all);
    let all_slots: Vec<_> = model.slots.iter().cloned().collect();
    assert_eq!(sample(&db, Domain::Storage, 10_000, 1), all_slots);
    assert!(sample(&db, Domain::Account, 0, 1).is_empty());

    // A few: live, distinct, sorted, the same for the same seed.
    let few = sample(&db, Domain::Account, 8, 42);
    assert_eq!(few.len(), 8);
    assert!(few.windows(2).all(|w| w[0] < w[1]), "{few:?}");
    assert!(few.iter().all(|key| model.accounts.contains(key)));
    assert_eq!(sample(&db, Domain::Account, 8, 42), few);
    assert!((0..10).any(|seed| sample(&db, Domain::Account, 8, seed) != few));

    // Uniform over the live accounts, whichever tiers hold them: 400
    // single draws put no account near 0 or far above 400 / live times.
    let mut drawn = std::collections::BTreeMap::<Vec<u8>, u32>::new();
    for seed in 0..400 {
        let one = sample(&db, Domain::Account, 1, seed);
        *drawn.entry(one[0].clone()).or_default() += 1;
    }
    let most = drawn.values().max().copied().unwrap_or(0);
    assert!(
        drawn.len() > all.len() / 2,
        "{} of {} drawn",
        drawn.len(),
        all.len()
    );
    assert!(
        most <= 12,
        "one account drawn {most} times of 400 ({} live)",
        all.len()
    );
}
