//! Range reads against a model: accounts in address order and one
//! account's slots in slot order, paged, with versions spread over files,
//! redb, the memory tier and a block writer's own writes (deletions and
//! storage wipes included), and at an older block.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_storage::{Account, BlockWriter, Regime, StateDb, StateReader};

use crate::model::small_options;

/// Accounts (nonce) and storage per address, as the model holds them.
#[derive(Clone, Default)]
struct Model {
    accounts: BTreeMap<Address, u64>,
    storage: BTreeMap<Address, BTreeMap<B256, U256>>,
}

fn address(n: u8) -> Address {
    // Spread over the key space so ranges start mid-domain.
    Address::repeat_byte(n.wrapping_mul(37))
}

fn slot(n: u8) -> B256 {
    B256::repeat_byte(n.wrapping_mul(53))
}

/// One random block: accounts created, changed and deleted (with their
/// storage), slots written and cleared.
fn random_block(rng: &mut StdRng, writer: &mut BlockWriter, model: &mut Model) {
    for _ in 0..12 {
        let who = address(rng.random_range(0..40));
        match rng.random_range(0..10) {
            0 if model.accounts.contains_key(&who) => {
                writer.delete_account(who);
                model.accounts.remove(&who);
                model.storage.remove(&who);
            }
            _ => {
                let nonce = rng.random_range(1..1000);
                writer.put_account(
                    who,
                    &Account {
                        nonce,
                        ..Account::default()
                    },
                );
                model.accounts.insert(who, nonce);
                for _ in 0..rng.random_range(0..4) {
                    let key = slot(rng.random_range(0..30));
                    let value = U256::from(rng.random_range(0..3u64));
                    writer.put_storage(who, key, value);
                    let slots = model.storage.entry(who).or_default();
                    if value.is_zero() {
                        slots.remove(&key);
                    } else {
                        slots.insert(key, value);
                    }
                }
            }
        }
    }
}

/// Pages through every account and every slot with `reader` and compares
/// them with `model`.
fn check(reader: &StateReader, model: &Model, page: usize) {
    let mut seen = Vec::new();
    let mut from = Address::ZERO;
    loop {
        let batch = reader.accounts(&from, page).unwrap();
        assert!(batch.len() <= page);
        let full = batch.len() == page;
        let last = batch.last().map(|(a, _)| *a);
        seen.extend(batch.into_iter().map(|(a, account)| (a, account.nonce)));
        match last {
            Some(last) if full => {
                let Some(next) = strata_storage::keys::next_key(last.as_slice()) else {
                    break;
                };
                from = Address::from_slice(&next);
            }
            _ => break,
        }
    }
    let expected: Vec<(Address, u64)> = model.accounts.iter().map(|(a, n)| (*a, *n)).collect();
    assert_eq!(seen, expected, "accounts");
    for who in (0..40).map(address) {
        let slots = reader.storage_range(&who, &B256::ZERO, usize::MAX).unwrap();
        let expected: Vec<(B256, U256)> = model
            .storage
            .get(&who)
            .map(|s| s.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default();
        assert_eq!(slots, expected, "storage of {who}");
        // From the middle, with a limit.
        if let Some((middle, _)) = expected.get(expected.len() / 2) {
            let tail = reader.storage_range(&who, middle, 2).unwrap();
            let want: Vec<_> = expected
                .iter()
                .filter(|(k, _)| k >= middle)
                .take(2)
                .cloned()
                .collect();
            assert_eq!(tail, want, "storage of {who} from {middle}");
        }
    }
}

#[test]
fn ranges_match_the_model_across_every_tier_a_writer_and_an_older_block() {
    let dir = tempfile::tempdir().unwrap();
    // Blocks stay in the memory tier until an explicit compaction, so the
    // newest versions of many keys sit above older ones in redb and files.
    let options = small_options()
        .with_flush_batch_bytes(1 << 20)
        .with_memory_budget_bytes(1 << 21);
    let db = StateDb::open(dir.path(), options).unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let mut model = Model::default();
    let mut models = Vec::new();
    for number in 0..24 {
        let mut writer = db.begin_block(number).unwrap();
        random_block(&mut rng, &mut writer, &mut model);
        writer.commit().unwrap();
        models.push(model.clone());
        if number % 7 == 6 {
            db.compact().unwrap(); // into redb and files
        }
    }
    let stats = db.stats().unwrap();
    assert!(
        stats.domains.iter().any(|d| !d.files.is_empty()),
        "some versions live in files"
    );
    for page in [1, 3, 1000] {
        check(&db.latest(), &model, page);
    }
    // A block's writer sees its own writes (and wipes) over the tiers.
    let mut writer = db.begin_block(24).unwrap();
    let mut pending = model.clone();
    random_block(&mut rng, &mut writer, &mut pending);
    let doomed = *model.accounts.keys().next().unwrap();
    writer.delete_account(doomed);
    pending.accounts.remove(&doomed);
    pending.storage.remove(&doomed);
    writer.put_storage(doomed, slot(1), U256::from(5));
    pending.accounts.insert(doomed, 0);
    writer.put_account(doomed, &Account::default());
    pending
        .storage
        .entry(doomed)
        .or_default()
        .insert(slot(1), U256::from(5));
    check(&writer.reader(Regime::Exec), &pending, 4);
    drop(writer);
    // At an older block, within the unwind window.
    let older = db.reader_at(21, Regime::Exec).unwrap();
    check(&older, &models[21], 5);
}
