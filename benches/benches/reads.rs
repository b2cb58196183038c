//! Read-path benchmarks, one function per group, each beside its baseline.
//!
//! File tier (per key shape: 20-byte account keys with 70-byte values,
//! 52-byte storage keys with 32-byte values; 1,000,000 keys by default,
//! `STRATA_BENCH_KEYS` to change):
//! * `file_hit/<shape>`: `SortedFile::get` (reference-counted value) and
//!   `SortedFile::get_ref` (borrowed value) of random present keys vs the raw
//!   baseline, a binary search over a memory-mapped array of fixed-size
//!   sorted records;
//! * `file_depth/<shape>`: `lookup_newest_first` over 1, 8 and 32 files with
//!   the key in the oldest (largest) file, so every newer file is probed
//!   through its filter first;
//! * `file_miss/<shape>`: a key absent from all 32 files.
//!
//! The layout: the oldest file holds the N keys; each of the 31 newer files
//! holds N/32 other keys (newer files are smaller, as after power-of-two
//! merges). At the end the ratios the design targets are printed from the
//! same measurements criterion took.
//!
//! StateDb tiers (`tiers/<shape>`, same shapes): `StateReader::get_latest`
//! hitting the db tier vs a plain redb table get of the same keys and values
//! (one read transaction and table, reused); hitting a file (after
//! compaction) vs the raw mmap binary search above; a miss through db and
//! files; a block's own write (memory tier) vs a `BTreeMap` get. StateDb
//! reads include their telemetry, as in production.
//!
//! Run: `cargo bench -p strata-benches --bench reads`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256};
use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use strata_benches::env_u64;
use strata_storage::files::{
    FileMeta, FileSystem, OsFileSystem, SortedFile, SortedFileWriter, lookup_newest_first,
};
use strata_storage::genesis::{GenesisAccount, GenesisAlloc};
use strata_storage::keys::storage_key;
use strata_storage::{Domain, Options, Regime, StateDb};

/// Files in the deepest stack.
const DEPTH: usize = 32;
/// Lookup keys cycled through by each benchmark.
const PROBES: usize = 1 << 16;

/// Mean time per lookup of every benchmark, from criterion's own samples.
#[derive(Default)]
struct Recorder(Mutex<BTreeMap<String, (Duration, u64)>>);

impl Recorder {
    fn add(&self, id: &str, elapsed: Duration, iters: u64) {
        let mut map = self.0.lock().expect("recorder lock");
        let e = map.entry(id.to_string()).or_default();
        e.0 += elapsed;
        e.1 += iters;
    }

    fn ns(&self, id: &str) -> Option<f64> {
        let map = self.0.lock().expect("recorder lock");
        map.get(id)
            .filter(|(_, n)| *n > 0)
            .map(|(d, n)| d.as_nanos() as f64 / *n as f64)
    }
}

/// One key shape's files: `K`-byte keys, `V`-byte values.
struct Fixture<const K: usize, const V: usize> {
    name: &'static str,
    /// Newest first; the last one is the big oldest file.
    files: Vec<Arc<SortedFile>>,
    /// Sorted `key ‖ value` records of the oldest file's keys, mmapped.
    raw: Bytes,
    hits: Vec<[u8; K]>,
    misses: Vec<[u8; K]>,
    _dir: tempfile::TempDir,
}

fn value_for<const K: usize, const V: usize>(key: &[u8; K]) -> [u8; V] {
    std::array::from_fn(|i| key[i % K] ^ (i as u8))
}

impl<const K: usize, const V: usize> Fixture<K, V> {
    fn build(name: &'static str, domain: Domain, n: usize) -> Self {
        let started = Instant::now();
        let mut rng = StdRng::seed_from_u64(0x5eed ^ K as u64);
        let newer = n / DEPTH;
        let total = n + (DEPTH - 1) * newer + PROBES;
        let mut keys: Vec<[u8; K]> = (0..total).map(|_| rng.random()).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.shuffle(&mut rng);
        let misses = keys.split_off(keys.len() - PROBES);

        let dir = tempfile::tempdir().expect("temp dir");
        let fs: Arc<dyn FileSystem> = Arc::new(OsFileSystem);
        let write = |keys: &mut [[u8; K]], step: u64| {
            keys.sort_unstable();
            let meta = FileMeta {
                domain,
                from_step: step,
                to_step: step + 1,
            };
            let mut w = SortedFileWriter::new(Arc::clone(&fs), dir.path(), meta).expect("writer");
            for k in keys.iter() {
                w.push(k, Some(&value_for::<K, V>(k))).expect("push");
            }
            let info = w.finish().expect("finish");
            Arc::new(SortedFile::open(&*fs, &info.path).expect("open"))
        };
        let (oldest, rest) = keys.split_at_mut(n);
        let mut files: Vec<Arc<SortedFile>> = rest
            .chunks_mut(newer.max(1))
            .take(DEPTH - 1)
            .enumerate()
            .map(|(i, chunk)| write(chunk, (DEPTH - 1 - i) as u64))
            .collect();
        files.push(write(oldest, 0));

        let raw_path = dir.path().join("raw-records.bin");
        let mut raw = Vec::with_capacity(n * (K + V));
        for k in oldest.iter() {
            raw.extend_from_slice(k);
            raw.extend_from_slice(&value_for::<K, V>(k));
        }
        std::fs::write(&raw_path, &raw).expect("write raw records");
        drop(raw);
        let raw = OsFileSystem.map(&raw_path).expect("map raw records");

        // Uniform over the whole oldest file (it is sorted by now).
        let hits: Vec<[u8; K]> = (0..PROBES)
            .map(|_| oldest[rng.random_range(0..oldest.len())])
            .collect();
        let big = files.last().expect("files");
        let built = started.elapsed();
        let reopen = Instant::now();
        let again = SortedFile::open(&OsFileSystem, big.path()).expect("reopen");
        let verify = reopen.elapsed();
        assert_eq!(again.checksum(), big.checksum());
        println!(
            "{name}: {} files, oldest {} keys in {} blocks ({:.1} MB, filter {:.2} MB), \
             built in {built:.1?}; re-opening (full verification) took {verify:.1?}",
            files.len(),
            big.entries(),
            big.block_count(),
            big.size_bytes() as f64 / 1e6,
            big.filter_bytes() as f64 / 1e6,
        );
        Fixture {
            name,
            files,
            raw,
            hits,
            misses,
            _dir: dir,
        }
    }

    fn oldest(&self) -> &SortedFile {
        self.files.last().expect("files")
    }

    /// The `depth` files a lookup walks when the key is in the oldest file.
    fn stack(&self, depth: usize) -> Vec<Arc<SortedFile>> {
        self.files[self.files.len() - depth..].to_vec()
    }
}

/// The baseline: binary search over fixed-size sorted records.
fn raw_get<'a, const R: usize>(records: &'a [[u8; R]], key: &[u8]) -> Option<&'a [u8]> {
    let k = key.len();
    records
        .binary_search_by(|rec| rec[..k].cmp(key))
        .ok()
        .map(|i| &records[i][k..])
}

/// Runs `op` over the probe keys in criterion's timing loop, recording the
/// mean for the printed ratios.
fn timed<T, Key: AsRef<[u8]>>(
    rec: &Recorder,
    id: &str,
    keys: &[Key],
    mut op: impl FnMut(&[u8]) -> T,
) -> impl FnMut(u64) -> Duration {
    let id = id.to_string();
    let mut i = 0usize;
    move |iters| {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(op(black_box(keys[i % keys.len()].as_ref())));
            i += 1;
        }
        let elapsed = start.elapsed();
        rec.add(&id, elapsed, iters);
        elapsed
    }
}

/// `SortedFile::get` vs binary search in a memory-mapped record array.
fn file_hit<const K: usize, const V: usize, const R: usize>(
    c: &mut Criterion,
    fx: &Fixture<K, V>,
    rec: &Recorder,
) {
    assert_eq!(R, K + V);
    let (records, rest) = fx.raw.as_chunks::<R>();
    assert!(rest.is_empty());
    let file = fx.oldest();
    for k in fx.hits.iter().take(1000) {
        assert_eq!(
            file.get(k)
                .expect("get")
                .and_then(|v| v.into_value())
                .as_deref(),
            raw_get(records, k)
        );
    }
    let mut g = c.benchmark_group(format!("file_hit/{}", fx.name));
    g.throughput(Throughput::Elements(1));
    let id = format!("file_hit/{}/raw_mmap_binary_search", fx.name);
    g.bench_function("raw_mmap_binary_search", |b| {
        b.iter_custom(timed(rec, &id, &fx.hits, |k| {
            raw_get(records, k).map(<[u8]>::len)
        }))
    });
    let id = format!("file_hit/{}/sorted_file_get", fx.name);
    g.bench_function("sorted_file_get", |b| {
        b.iter_custom(timed(rec, &id, &fx.hits, |k| file.get(k).expect("get")))
    });
    let id = format!("file_hit/{}/sorted_file_get_ref", fx.name);
    g.bench_function("sorted_file_get_ref", |b| {
        b.iter_custom(timed(rec, &id, &fx.hits, |k| {
            file.get_ref(k).expect("get_ref").is_some()
        }))
    });
    g.finish();
}

/// `lookup_newest_first` with the key in the oldest of 1, 8 and 32 files.
fn file_depth<const K: usize, const V: usize>(
    c: &mut Criterion,
    fx: &Fixture<K, V>,
    rec: &Recorder,
) {
    let mut g = c.benchmark_group(format!("file_depth/{}", fx.name));
    g.throughput(Throughput::Elements(1));
    for depth in [1, 8, DEPTH] {
        let stack = fx.stack(depth);
        assert!(
            lookup_newest_first(&stack, &fx.hits[0])
                .expect("lookup")
                .is_some()
        );
        let id = format!("file_depth/{}/{depth}", fx.name);
        g.bench_with_input(
            BenchmarkId::new("hit_in_oldest", depth),
            &stack,
            |b, stack| {
                b.iter_custom(timed(rec, &id, &fx.hits, |k| {
                    lookup_newest_first(stack, k).expect("lookup")
                }))
            },
        );
    }
    g.finish();
}

/// `lookup_newest_first` of keys that no file holds.
fn file_miss<const K: usize, const V: usize>(
    c: &mut Criterion,
    fx: &Fixture<K, V>,
    rec: &Recorder,
) {
    let stack = fx.stack(DEPTH);
    assert!(
        lookup_newest_first(&stack, &fx.misses[0])
            .expect("lookup")
            .is_none()
    );
    let mut g = c.benchmark_group(format!("file_miss/{}", fx.name));
    g.throughput(Throughput::Elements(1));
    let id = format!("file_miss/{}/{DEPTH}", fx.name);
    g.bench_with_input(BenchmarkId::new("miss", DEPTH), &stack, |b, stack| {
        b.iter_custom(timed(rec, &id, &fx.misses, |k| {
            lookup_newest_first(stack, k).expect("lookup")
        }))
    });
    g.finish();
}

/// The StateDb tiers of one key shape: the same keys and values in the db
/// tier, in files (after compaction), and a plain redb table beside them.
struct DbFixture {
    name: &'static str,
    domain: Domain,
    keys: Vec<Vec<u8>>,
    misses: Vec<Vec<u8>>,
    in_db: StateDb,
    in_files: StateDb,
    raw: redb::Database,
    _dirs: Vec<tempfile::TempDir>,
}

impl DbFixture {
    /// `accounts` accounts with `slots` slots each; the shape's keys are the
    /// account addresses (account) or address ‖ slot (storage).
    fn build(name: &'static str, domain: Domain, accounts: usize, slots: usize) -> Self {
        let mut rng = StdRng::seed_from_u64(7);
        let mut alloc = GenesisAlloc::new();
        for _ in 0..accounts {
            let storage = (0..slots)
                .map(|_| {
                    (
                        B256::from(rng.random::<[u8; 32]>()),
                        U256::from(rng.random::<u64>() | 1),
                    )
                })
                .collect();
            let account = GenesisAccount {
                nonce: rng.random::<u32>() as u64,
                balance: U256::from(rng.random::<u128>()),
                code: Default::default(),
                storage,
            };
            alloc.insert(Address::from(rng.random::<[u8; 20]>()), account);
        }
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for (address, account) in &alloc {
            match domain {
                Domain::Storage => keys.extend(
                    account
                        .storage
                        .keys()
                        .map(|slot| storage_key(address, slot).to_vec()),
                ),
                _ => keys.push(address.to_vec()),
            }
        }
        keys.shuffle(&mut rng);
        keys.truncate(PROBES);
        let key_len = keys[0].len();
        let misses = (0..PROBES)
            .map(|_| (0..key_len).map(|_| rng.random::<u8>()).collect())
            .collect();
        let options = Options::default()
            .with_step_size(1)
            .with_keep_steps_in_db(1)
            .with_background_maintenance(false)
            .with_warmers(0);
        let db_dir = tempfile::tempdir().expect("temp dir");
        let in_db = StateDb::open(db_dir.path(), options.clone()).expect("open");
        in_db
            .init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
            .expect("genesis");
        let files_dir = tempfile::tempdir().expect("temp dir");
        let in_files = StateDb::open(files_dir.path(), options).expect("open");
        in_files
            .init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
            .expect("genesis");
        in_files
            .begin_block(1)
            .expect("block")
            .commit()
            .expect("commit");
        in_files.compact().expect("compact");

        // The baseline: the same keys and values in one plain redb table.
        let raw_dir = tempfile::tempdir().expect("temp dir");
        let raw = redb::Database::create(raw_dir.path().join("raw.redb")).expect("raw redb");
        let reader = in_db.reader(Regime::Exec);
        let txn = raw.begin_write().expect("write");
        {
            let mut table = txn.open_table(RAW_TABLE).expect("table");
            for (address, account) in &alloc {
                match domain {
                    Domain::Storage => {
                        for slot in account.storage.keys() {
                            let key = storage_key(address, slot);
                            let value = reader
                                .get_latest(domain, &key)
                                .expect("get")
                                .expect("present");
                            table
                                .insert(key.as_slice(), value.as_ref())
                                .expect("insert");
                        }
                    }
                    _ => {
                        let value = reader
                            .get_latest(domain, address.as_slice())
                            .expect("get")
                            .expect("present");
                        table
                            .insert(address.as_slice(), value.as_ref())
                            .expect("insert");
                    }
                }
            }
        }
        txn.commit().expect("commit");
        DbFixture {
            name,
            domain,
            keys,
            misses,
            in_db,
            in_files,
            raw,
            _dirs: vec![db_dir, files_dir, raw_dir],
        }
    }
}

const RAW_TABLE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("raw");

/// `StateReader::get_latest` per tier vs a plain redb get and a BTreeMap
/// get (the memory tier's baseline).
fn db_tiers(c: &mut Criterion, fx: &DbFixture, rec: &Recorder) {
    use redb::ReadableDatabase;
    let domain = fx.domain;
    let db_reader = fx.in_db.reader(Regime::Exec);
    let file_reader = fx.in_files.reader(Regime::Exec);
    let raw_txn = fx.raw.begin_read().expect("read");
    let raw_table = raw_txn.open_table(RAW_TABLE).expect("table");
    for key in fx.keys.iter().take(1000) {
        let want = raw_table
            .get(key.as_slice())
            .expect("raw")
            .map(|g| g.value().to_vec());
        assert_eq!(
            db_reader.get_latest(domain, key).expect("db").as_deref(),
            want.as_deref()
        );
        assert_eq!(
            file_reader
                .get_latest(domain, key)
                .expect("file")
                .as_deref(),
            want.as_deref()
        );
    }
    assert!(fx.in_files.stats().expect("stats").domains[domain.index()].db_entries == 0);

    let mut g = c.benchmark_group(format!("tiers/{}", fx.name));
    g.throughput(Throughput::Elements(1));
    let id = format!("tiers/{}/raw_redb_get", fx.name);
    g.bench_function("raw_redb_get", |b| {
        b.iter_custom(timed(rec, &id, &fx.keys, |k| {
            raw_table.get(k).expect("raw").map(|g| g.value().len())
        }))
    });
    let id = format!("tiers/{}/db_hit", fx.name);
    g.bench_function("db_hit", |b| {
        b.iter_custom(timed(rec, &id, &fx.keys, |k| {
            db_reader.get_latest(domain, k).expect("get")
        }))
    });
    let id = format!("tiers/{}/file_hit", fx.name);
    g.bench_function("file_hit", |b| {
        b.iter_custom(timed(rec, &id, &fx.keys, |k| {
            file_reader.get_latest(domain, k).expect("get")
        }))
    });
    let id = format!("tiers/{}/miss", fx.name);
    g.bench_function("miss_db_and_files", |b| {
        b.iter_custom(timed(rec, &id, &fx.misses, |k| {
            file_reader.get_latest(domain, k).expect("get")
        }))
    });

    // The memory tier: a block's own writes, beside a BTreeMap of them.
    let mut writer = fx.in_db.begin_block(1).expect("block");
    let mut map = BTreeMap::new();
    for key in &fx.keys {
        let value = Bytes::from(vec![0x2a; 32]);
        writer
            .put_raw(domain, key, Some(value.clone()))
            .expect("put");
        map.insert(key.clone(), value);
    }
    let id = format!("tiers/{}/raw_btreemap_get", fx.name);
    g.bench_function("raw_btreemap_get", |b| {
        b.iter_custom(timed(rec, &id, &fx.keys, |k| map.get(k).map(Bytes::len)))
    });
    let id = format!("tiers/{}/memory_hit", fx.name);
    g.bench_function("memory_hit", |b| {
        b.iter_custom(timed(rec, &id, &fx.keys, |k| {
            writer.get_latest(domain, k).expect("get")
        }))
    });
    g.finish();
}

fn ratio(rec: &Recorder, what: &str, num: &str, den: &str, target: Option<f64>) {
    match (rec.ns(num), rec.ns(den)) {
        (Some(a), Some(b)) => {
            let r = a / b;
            let verdict = match target {
                Some(t) if r <= t => format!(" (meets target <= {t}x)"),
                Some(t) => format!(" (MISSES target <= {t}x)"),
                None => String::new(),
            };
            println!("{what}: {a:.0} ns / {b:.0} ns = {r:.2}x{verdict}");
        }
        _ => println!("{what}: not measured in this run (filtered out)"),
    }
}

fn run_shape<const K: usize, const V: usize, const R: usize>(
    c: &mut Criterion,
    rec: &Recorder,
    name: &'static str,
    domain: Domain,
    n: usize,
) {
    let fx = Fixture::<K, V>::build(name, domain, n);
    file_hit::<K, V, R>(c, &fx, rec);
    file_depth(c, &fx, rec);
    file_miss(c, &fx, rec);
}

fn main() {
    let n = env_u64("STRATA_BENCH_KEYS", 1_000_000) as usize;
    let rec = Recorder::default();
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    run_shape::<20, 70, 90>(&mut c, &rec, "account", Domain::Account, n);
    run_shape::<52, 32, 84>(&mut c, &rec, "storage", Domain::Storage, n);
    let accounts = DbFixture::build("account", Domain::Account, n, 0);
    db_tiers(&mut c, &accounts, &rec);
    drop(accounts);
    let slots = DbFixture::build("storage", Domain::Storage, n / 100, 100);
    db_tiers(&mut c, &slots, &rec);
    drop(slots);
    c.final_summary();

    println!("\nratios (mean ns per lookup over criterion's samples):");
    for shape in ["account", "storage"] {
        ratio(
            &rec,
            &format!("{shape}: StateDb db-tier get / raw redb get"),
            &format!("tiers/{shape}/db_hit"),
            &format!("tiers/{shape}/raw_redb_get"),
            Some(1.2),
        );
        ratio(
            &rec,
            &format!("{shape}: StateDb file-tier get / raw mmap binary search"),
            &format!("tiers/{shape}/file_hit"),
            &format!("file_hit/{shape}/raw_mmap_binary_search"),
            Some(2.0),
        );
        ratio(
            &rec,
            &format!("{shape}: StateDb miss (db + files) / StateDb file hit"),
            &format!("tiers/{shape}/miss"),
            &format!("tiers/{shape}/file_hit"),
            None,
        );
        ratio(
            &rec,
            &format!("{shape}: StateDb memory-tier get / BTreeMap get"),
            &format!("tiers/{shape}/memory_hit"),
            &format!("tiers/{shape}/raw_btreemap_get"),
            None,
        );
        ratio(
            &rec,
            &format!("{shape}: file hit / raw mmap binary search"),
            &format!("file_hit/{shape}/sorted_file_get"),
            &format!("file_hit/{shape}/raw_mmap_binary_search"),
            Some(2.0),
        );
        ratio(
            &rec,
            &format!("{shape}: miss across {DEPTH} files / one file hit (lookup, 1 file)"),
            &format!("file_miss/{shape}/{DEPTH}"),
            &format!("file_depth/{shape}/1"),
            Some(3.0),
        );
        ratio(
            &rec,
            &format!("{shape}: miss across {DEPTH} files / one file hit (SortedFile::get)"),
            &format!("file_miss/{shape}/{DEPTH}"),
            &format!("file_hit/{shape}/sorted_file_get"),
            Some(3.0),
        );
        ratio(
            &rec,
            &format!("{shape}: hit in oldest of {DEPTH} / one file hit"),
            &format!("file_depth/{shape}/{DEPTH}"),
            &format!("file_depth/{shape}/1"),
            None,
        );
    }
}
