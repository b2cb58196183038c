//! Import of a whole state at block N: in any account order, through
//! spilled sort runs, into files; checked against the model's root (by
//! alloy-trie), its reads, blocks committed on top, a reopen and verify;
//! refusals leave the store empty.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use strata_storage::dump::{DumpReader, DumpWriter};
use strata_storage::genesis::GenesisAccount;
use strata_storage::import::{IMPORT_DIR, ImportOptions};
use strata_storage::{Account, Error, FILES_DIR, Regime, StateDb};

use crate::model::small_options;
use crate::oracle::{Model, ModelAccount, code_hash, model_root};

const BLOCK: u64 = 1_000;

/// A random state: most accounts plain, some with storage, a few sharing
/// one of three codes.
fn random_model(rng: &mut StdRng, accounts: usize) -> Model {
    let codes: Vec<Bytes> = (1..=3u8)
        .map(|n| Bytes::from(vec![0x60, n, 0x00]))
        .collect();
    let mut model = Model::new();
    for _ in 0..accounts {
        let mut entry = ModelAccount {
            account: Account {
                nonce: rng.random_range(0..5),
                balance: U256::from(rng.random_range(1..1_000_000u64)),
                ..Account::default()
            },
            ..ModelAccount::default()
        };
        if rng.random_bool(0.1) {
            let code = codes[rng.random_range(0..codes.len())].clone();
            entry.account.code_hash = code_hash(&code);
            entry.code = Some(code);
        } else {
            entry.account.code_hash = code_hash(&[]);
        }
        if rng.random_bool(0.2) {
            for _ in 0..rng.random_range(1..20) {
                let slot = B256::from(U256::from(rng.random_range(0..64u64)));
                entry
                    .storage
                    .insert(slot, U256::from(rng.random_range(1..1000u64)));
            }
        }
        model.insert(Address::from(rng.random::<[u8; 20]>()), entry);
    }
    model
}

/// The model's accounts as an import takes them, shuffled.
fn shuffled_input(rng: &mut StdRng, model: &Model) -> Vec<(Address, GenesisAccount)> {
    let mut input: Vec<(Address, GenesisAccount)> = model
        .iter()
        .map(|(address, entry)| {
            (
                *address,
                GenesisAccount {
                    nonce: entry.account.nonce,
                    balance: entry.account.balance,
                    code: entry.code.clone().unwrap_or_default(),
                    storage: entry.storage.clone(),
                },
            )
        })
        .collect();
    input.shuffle(rng);
    input
}

fn ok<T>(items: Vec<T>) -> impl Iterator<Item = Result<T, std::io::Error>> {
    items.into_iter().map(Ok)
}

/// Every account, code and slot reads as the model has it, and the range
/// reads list exactly the model's accounts.
fn assert_state(db: &StateDb, model: &Model, context: &str) {
    let reader = db.reader(Regime::Exec);
    for (address, entry) in model {
        assert_eq!(
            reader.account(address).unwrap(),
            Some(entry.account),
            "{context}: {address}"
        );
        assert_eq!(
            reader.code(address).unwrap().as_deref(),
            entry.code.as_ref().map(|c| &c[..]),
            "{context}: code"
        );
        let slots = reader
            .storage_range(address, &B256::ZERO, usize::MAX)
            .unwrap();
        let want: Vec<(B256, U256)> = entry.storage.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(slots, want, "{context}: storage of {address}");
    }
    let listed = reader.accounts(&Address::ZERO, usize::MAX).unwrap();
    assert_eq!(listed.len(), model.len(), "{context}: account count");
}

#[test]
fn an_imported_state_reads_continues_and_reopens_like_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(41);
    let mut model = random_model(&mut rng, 3000);
    let root = model_root(&model);
    let hash = B256::repeat_byte(0x77);
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let options = ImportOptions {
        block: BLOCK,
        block_hash: Some(hash),
        expected_root: Some(root),
        // Tiny sort buffers: every sorter spills many runs.
        sort_memory_bytes: 64 << 10,
        ..ImportOptions::default()
    };
    let report = db
        .import_state(ok(shuffled_input(&mut rng, &model)), &options)
        .unwrap();
    assert_eq!(report.root, root);
    assert_eq!(report.accounts, model.len() as u64);
    let slots: usize = model.values().map(|e| e.storage.len()).sum();
    assert_eq!(report.slots, slots as u64);
    assert!(report.runs > 10, "runs spilled: {}", report.runs);
    assert!(report.file_bytes > 0 && report.raw_bytes > 0);
    assert_eq!(db.last_block(), Some(BLOCK));
    assert_eq!(db.root(), root);
    assert!(!dir.path().join(IMPORT_DIR).exists(), "scratch removed");
    let files = std::fs::read_dir(dir.path().join(FILES_DIR))
        .unwrap()
        .count();
    assert_eq!(files, 4, "one file per domain");
    assert_state(&db, &model, "after import");
    let reader = db.latest();
    assert_eq!(reader.block_hash(BLOCK).unwrap(), Some(hash));
    let some_code = model.values().find_map(|e| e.code.clone()).unwrap();
    assert_eq!(
        reader
            .code_by_hash(&code_hash(&some_code))
            .unwrap()
            .as_deref(),
        Some(&some_code[..])
    );

    // Blocks before the imported one are not there to read or restore.
    assert!(matches!(
        db.reader_at(BLOCK - 1, Regime::Exec),
        Err(Error::StateNotRetained { .. })
    ));
    assert!(db.unwind_to(BLOCK - 1).is_err());
    assert!(db.begin_block(BLOCK).is_err());

    // Blocks on top change imported accounts and slots; each root is the
    // model's, so the imported commitment records are right.
    let addresses: Vec<Address> = model.keys().copied().collect();
    for number in BLOCK + 1..BLOCK + 6 {
        let mut writer = db.begin_block(number).unwrap();
        for _ in 0..40 {
            let address = addresses[rng.random_range(0..addresses.len())];
            let entry = model.get_mut(&address).unwrap();
            entry.account.nonce += 1;
            writer.put_account(address, &entry.account);
            let slot = B256::from(U256::from(rng.random_range(0..64u64)));
            let value = U256::from(rng.random_range(0..3u64));
            writer.put_storage(address, slot, value);
            if value.is_zero() {
                entry.storage.remove(&slot);
            } else {
                entry.storage.insert(slot, value);
            }
        }
        let info = writer.commit().unwrap();
        assert_eq!(info.root, model_root(&model), "block {number}");
    }
    db.compact().unwrap();
    assert_state(&db, &model, "after blocks and compaction");
    drop(db);

    let db = StateDb::open(dir.path(), small_options()).unwrap();
    assert_eq!(db.last_block(), Some(BLOCK + 5));
    assert_eq!(db.root(), model_root(&model));
    assert_state(&db, &model, "after reopen");
    db.verify(&Default::default()).unwrap();
}

#[test]
fn a_refused_import_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    let model = random_model(&mut rng, 500);
    let input = shuffled_input(&mut rng, &model);
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let small = ImportOptions {
        block: BLOCK,
        sort_memory_bytes: 16 << 10,
        ..ImportOptions::default()
    };
    let nothing_written = |db: &StateDb| {
        assert_eq!(db.last_block(), None);
        let files = std::fs::read_dir(dir.path().join(FILES_DIR))
            .unwrap()
            .count();
        assert_eq!(files, 0, "no file left");
        assert!(!dir.path().join(IMPORT_DIR).exists(), "no scratch left");
    };

    let wrong = ImportOptions {
        expected_root: Some(B256::repeat_byte(1)),
        ..small.clone()
    };
    let err = db.import_state(ok(input.clone()), &wrong).unwrap_err();
    assert!(
        matches!(err, Error::ImportRootMismatch { computed, .. } if computed == model_root(&model)),
        "{err}"
    );
    nothing_written(&db);

    let mut repeated = input.clone();
    repeated.push(repeated[17].clone());
    let err = db.import_state(ok(repeated), &small).unwrap_err();
    assert!(
        matches!(err, Error::ImportRepeatedAccount { address } if address == input[17].0),
        "{err}"
    );
    nothing_written(&db);

    let failing = input
        .iter()
        .cloned()
        .map(Ok)
        .chain(std::iter::once(Err(std::io::Error::other(
            "line 9: broken",
        ))));
    let err = db.import_state(failing, &small).unwrap_err();
    assert!(matches!(err, Error::ImportInput { .. }), "{err}");
    assert!(err.to_string().contains("line 9: broken"), "{err}");
    nothing_written(&db);

    // The store is still usable: the same state imports, and only once.
    let report = db.import_state(ok(input.clone()), &small).unwrap();
    assert_eq!(report.root, model_root(&model));
    let err = db.import_state(ok(input), &small).unwrap_err();
    assert!(
        matches!(err, Error::ImportIntoNonEmpty { last: BLOCK }),
        "{err}"
    );
}

/// An import and a genesis of the same state agree on the root and on every
/// key's value.
#[test]
fn import_and_genesis_build_the_same_state() {
    let mut rng = StdRng::seed_from_u64(43);
    let model = random_model(&mut rng, 1200);
    let input = shuffled_input(&mut rng, &model);
    let genesis_dir = tempfile::tempdir().unwrap();
    let genesis = StateDb::open(genesis_dir.path(), small_options()).unwrap();
    let alloc: BTreeMap<Address, GenesisAccount> = input.iter().cloned().collect();
    let genesis_root = genesis
        .init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
        .unwrap();
    let import_dir = tempfile::tempdir().unwrap();
    let imported = StateDb::open(import_dir.path(), small_options()).unwrap();
    // Runs in a caller's folder go to a folder of their own, removed after;
    // what else is in that folder is left alone.
    let parent = tempfile::tempdir().unwrap();
    std::fs::write(parent.path().join("keep.txt"), b"mine").unwrap();
    let options = ImportOptions {
        temp_dir: Some(parent.path().to_path_buf()),
        ..ImportOptions::default()
    };
    let report = imported.import_state(ok(input), &options).unwrap();
    let left: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["keep.txt"]);
    assert_eq!(report.root, genesis_root);
    assert_eq!(report.runs, 0, "the default budget holds a small state");
    assert_state(&imported, &model, "import at block 0");
    assert_state(&genesis, &model, "genesis");
}

/// A genesis of 100,000 accounts or more is written as files, as an
/// import is (a small one goes into redb): its root is the model's
/// (alloy-trie), block 0 keeps its hash, every key reads as the model has
/// it, and a block commits on top and survives a reopen.
#[test]
fn a_large_genesis_is_written_as_files() {
    let mut rng = StdRng::seed_from_u64(44);
    let model = random_model(&mut rng, 100_000);
    let alloc: BTreeMap<Address, GenesisAccount> =
        shuffled_input(&mut rng, &model).into_iter().collect();
    let dir = tempfile::tempdir().unwrap();
    let hash = B256::repeat_byte(0x42);
    let root = {
        let db = StateDb::open(dir.path(), small_options()).unwrap();
        let root = db
            .init_genesis(&alloc, strata_storage::GenesisName::Hash(hash))
            .unwrap();
        assert_eq!(root, model_root(&model));
        assert_eq!(db.last_block(), Some(0));
        assert_eq!(db.latest().block_hash(0).unwrap(), Some(hash));
        let files = std::fs::read_dir(dir.path().join(FILES_DIR))
            .unwrap()
            .count();
        assert_eq!(files, 4, "one file per domain");
        assert!(!dir.path().join(IMPORT_DIR).exists(), "scratch removed");
        assert_state(&db, &model, "large genesis");
        let (address, entry) = model.iter().next().unwrap();
        let mut block = db.begin_block(1).unwrap();
        let changed = Account {
            balance: entry.account.balance + U256::from(1),
            ..entry.account
        };
        block.put_account(*address, &changed);
        let root = block.commit().unwrap().root;
        db.close().unwrap();
        root
    };
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    assert_eq!((db.last_block(), db.root()), (Some(1), root));
    assert_eq!(db.latest().block_hash(0).unwrap(), Some(hash));
}

/// A write that fails after some files are whole (a full disk) refuses the
/// import and removes the files it had written; the store stays empty and
/// usable.
#[test]
fn a_failed_file_write_removes_the_files_already_written() {
    use std::sync::Arc;
    use strata_storage::files::fs::{Fault, FaultyFileSystem};
    use strata_storage::files::{FileSystem, OsFileSystem};

    let mut rng = StdRng::seed_from_u64(44);
    let model = random_model(&mut rng, 600);
    let input = shuffled_input(&mut rng, &model);
    // The sizes of the four files, from an import that succeeds.
    let sizing = tempfile::tempdir().unwrap();
    let db = StateDb::open(sizing.path(), small_options()).unwrap();
    db.import_state(ok(input.clone()), &ImportOptions::default())
        .unwrap();
    let mut sizes: Vec<(String, u64)> = std::fs::read_dir(sizing.path().join(FILES_DIR))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    sizes.sort_by_key(|(_, len)| *len);
    let account = sizes
        .iter()
        .find(|(n, _)| n.starts_with("account"))
        .unwrap()
        .1;
    assert!(sizes.iter().any(|(_, len)| *len > account + 1), "{sizes:?}");

    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyFileSystem::new(Arc::new(OsFileSystem)));
    let fs: Arc<dyn FileSystem> = disk.clone();
    let db = StateDb::open_with_fs(dir.path(), small_options(), fs).unwrap();
    // The account file (written first) fits; a larger one does not.
    disk.inject(Fault::WriteAfter(account + 1));
    let err = db
        .import_state(ok(input.clone()), &ImportOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    assert_eq!(db.last_block(), None);
    let left = std::fs::read_dir(dir.path().join(FILES_DIR))
        .unwrap()
        .count();
    assert_eq!(left, 0, "the files written before the failure are removed");
    disk.clear();
    let report = db
        .import_state(ok(input), &ImportOptions::default())
        .unwrap();
    assert_eq!(report.root, model_root(&model));
}

/// `model` as a state dump, accounts in address order.
fn dump_of(model: &Model, root: B256) -> Vec<u8> {
    let mut dump = DumpWriter::new(Vec::new(), root).unwrap();
    for (address, entry) in model {
        let code = entry.code.clone().unwrap_or_default();
        let storage = entry.storage.iter().map(|(slot, value)| (*slot, *value));
        dump.account(
            *address,
            entry.account.nonce,
            entry.account.balance,
            &code,
            storage,
        )
        .unwrap();
    }
    dump.into_inner()
}

/// A small random state and one contract of `slots` slots.
fn model_with_a_large_account(seed: u64, slots: u64) -> (Model, Address) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = random_model(&mut rng, 300);
    let code = Bytes::from_static(&[0x60, 0x2a, 0x00]);
    let large = Address::repeat_byte(0xb1);
    let entry = ModelAccount {
        account: Account {
            nonce: 1,
            balance: U256::from(5),
            code_hash: code_hash(&code),
        },
        code: Some(code),
        storage: (0..slots)
            .map(|i| {
                let slot = B256::from(U256::from(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
                (slot, U256::from(i + 1))
            })
            .collect(),
    };
    model.insert(large, entry);
    (model, large)
}

/// A dump line too long for the sort budget is parsed as it is read, its
/// 200,000 slots sorted on disk on their own: the root, the reads and
/// verify are those of the same state held whole, and no scratch is left.
#[test]
fn an_account_too_large_to_hold_streams_to_the_root_of_one_held_whole() {
    let (model, large) = model_with_a_large_account(45, 200_000);
    let root = model_root(&model);
    let mut rng = StdRng::seed_from_u64(46);

    let whole_dir = tempfile::tempdir().unwrap();
    let whole = StateDb::open(whole_dir.path(), small_options()).unwrap();
    let report = whole
        .import_state(
            ok(shuffled_input(&mut rng, &model)),
            &ImportOptions::default(),
        )
        .unwrap();
    assert_eq!((report.root, report.streamed), (root, 0));

    let dump = dump_of(&model, root);
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let options = ImportOptions {
        block: BLOCK,
        expected_root: Some(root),
        // A tenth for the large account's sort: lines above 50 KiB stream.
        sort_memory_bytes: 1 << 20,
        ..ImportOptions::default()
    };
    let reader = DumpReader::new(&dump[..]).unwrap();
    let report = db.import_state(reader, &options).unwrap();
    assert_eq!(report.root, root);
    assert_eq!(report.streamed, 1, "only the large account streams");
    assert_eq!(report.accounts, model.len() as u64);
    let slots: usize = model.values().map(|e| e.storage.len()).sum();
    assert_eq!(report.slots, slots as u64);
    // 200,000 slots of 96 bytes in runs of ~100 KiB.
    assert!(report.runs > 150, "runs: {}", report.runs);
    assert!(!dir.path().join(IMPORT_DIR).exists(), "scratch removed");
    assert_state(&db, &model, "streamed import");
    assert_eq!(
        db.reader(Regime::Exec)
            .storage_range(&large, &B256::ZERO, usize::MAX)
            .unwrap()
            .len(),
        200_000
    );
    db.verify(&Default::default()).unwrap();
}

/// A streamed line's refusals name its line (and the slot); nothing is
/// written and no scratch is left.
#[test]
fn a_streamed_lines_refusals_name_the_line_and_write_nothing() {
    let (model, large) = model_with_a_large_account(47, 2_000);
    let root = model_root(&model);
    let text = String::from_utf8(dump_of(&model, root)).unwrap();
    let (number, line) = text
        .lines()
        .enumerate()
        .find(|(_, line)| line.len() > 100_000)
        .map(|(i, line)| (i + 1, line.to_owned()))
        .unwrap();
    let word = |n: u64| format!("\"{}\"", B256::from(U256::from(n)));
    let slot = |i: u64| B256::from(U256::from(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    let slot_key = |i: u64| format!("\"{}\":", slot(i));
    let bad_value = line.replace(
        &format!("{}{}", slot_key(1500), word(1501)),
        &format!("{}\"0xzz\"", slot_key(1500)),
    );
    let repeated = line.replace(&slot_key(1500), &slot_key(7));
    let at = text.find(&line).unwrap();
    let cases = [
        (
            text.replacen(&line, &bad_value, 1),
            format!(
                "line {number}: account {large}: field \"storage[{}]\": invalid hex \"0xzz\"",
                slot(1500)
            ),
        ),
        (
            text.replacen(&line, &repeated, 1),
            format!(
                "line {number}: account {large}: storage slot {} is listed twice",
                slot(7)
            ),
        ),
        (
            // The dump cut in the middle of the line.
            text[..at + line.len() * 2 / 3].to_owned(),
            format!("line {number}: invalid JSON: EOF while parsing"),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let db = StateDb::open(dir.path(), small_options()).unwrap();
    let options = ImportOptions {
        sort_memory_bytes: 64 << 10,
        ..ImportOptions::default()
    };
    for (dump, expected) in cases {
        let reader = DumpReader::new(dump.as_bytes()).unwrap();
        let err = db.import_state(reader, &options).unwrap_err();
        assert!(matches!(err, Error::ImportInput { .. }), "{err}");
        assert!(err.to_string().contains(&expected), "{expected}\n{err}");
        assert_eq!(db.last_block(), None);
        assert_eq!(
            std::fs::read_dir(dir.path().join(FILES_DIR))
                .unwrap()
                .count(),
            0
        );
        assert!(!dir.path().join(IMPORT_DIR).exists(), "no scratch left");
    }
    let reader = DumpReader::new(text.as_bytes()).unwrap();
    assert_eq!(db.import_state(reader, &options).unwrap().root, root);
}
