//! Where a block's durable write should go (issue 13): the same block's
//! bytes made durable three ways, interleaved in one run so the ratios are
//! read off the same machine state.
//!
//! * `btree` (today's commit, the baseline): one redb write transaction of
//!   random inserts into a prefilled state table (each after a read of the
//!   previous value, which goes into a changes table as unwind data) and a
//!   prefilled commitment table, committed durably;
//! * `redb_value`: the block as one encoded value (`block → record`) in a
//!   redb table, committed durably;
//! * `file_append`: the block record appended to a file with a checksum,
//!   then `fdatasync`.
//!
//! The shape defaults to the README's 100,000-account trace: 2,200 state
//! writes (20- and 52-byte keys, ~32-byte values) and 5,800 commitment
//! records of ~380 bytes per block, over 300,000 state keys and 300,000
//! commitment records already stored.
//!
//! `cargo bench -p strata-benches --bench journal` (`STRATA_BENCH_BLOCKS`,
//! `STRATA_BENCH_STATE_WRITES`, `STRATA_BENCH_RECORDS`,
//! `STRATA_BENCH_RECORD_BYTES`, `STRATA_BENCH_PREFILL` change the shape;
//! `--test` runs a small version). The datadir is a temporary folder under
//! `TMPDIR` (fsync goes to that disk).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, RngCore};
use redb::{Database, TableDefinition};
use strata_benches::{env_u64, machine_load, seeded};

const STATE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("state");
const CHANGES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("changes");
const COMMITMENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("commitment");
const JOURNAL: TableDefinition<u64, &[u8]> = TableDefinition::new("journal");

struct Shape {
    blocks: u64,
    state_writes: usize,
    records: usize,
    record_bytes: usize,
    prefill: usize,
}

impl Shape {
    fn from_env() -> Shape {
        let quick = std::env::args().any(|a| a == "--test");
        Shape {
            blocks: env_u64("STRATA_BENCH_BLOCKS", if quick { 3 } else { 30 }),
            state_writes: env_u64("STRATA_BENCH_STATE_WRITES", 2_200) as usize,
            records: env_u64("STRATA_BENCH_RECORDS", 5_800) as usize,
            record_bytes: env_u64("STRATA_BENCH_RECORD_BYTES", 380) as usize,
            prefill: env_u64("STRATA_BENCH_PREFILL", if quick { 10_000 } else { 300_000 }) as usize,
        }
    }
}

/// One block's writes: state keys (existing or new) with values, and
/// commitment records by nibble-path key.
struct Block {
    state: Vec<(Vec<u8>, Vec<u8>)>,
    records: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Block {
    fn random(
        shape: &Shape,
        state_keys: &[Vec<u8>],
        record_keys: &[Vec<u8>],
        rng: &mut StdRng,
    ) -> Block {
        let mut bytes = |len: usize| {
            let mut v = vec![0u8; len];
            rng.fill_bytes(&mut v);
            v
        };
        let state = (0..shape.state_writes)
            .map(|_| (bytes(0), bytes(32)))
            .collect::<Vec<_>>();
        let records = (0..shape.records)
            .map(|_| (Vec::new(), bytes(shape.record_bytes)))
            .collect::<Vec<_>>();
        let mut block = Block { state, records };
        for (key, _) in &mut block.state {
            *key = state_keys[rng.random_range(0..state_keys.len())].clone();
        }
        for (key, _) in &mut block.records {
            *key = record_keys[rng.random_range(0..record_keys.len())].clone();
        }
        block
    }

    /// The journal record: length-prefixed keys and values, the unwind data
    /// (previous values, here of the same size) and a checksum.
    fn encode(&self, number: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes() * 2);
        out.extend_from_slice(&number.to_le_bytes());
        for (key, value) in self.state.iter().chain(&self.records) {
            out.extend_from_slice(&(key.len() as u16).to_le_bytes());
            out.extend_from_slice(key);
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(value);
        }
        // Unwind data: each state key's previous value.
        for (key, value) in &self.state {
            out.extend_from_slice(&(key.len() as u16).to_le_bytes());
            out.extend_from_slice(key);
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(value);
        }
        let checksum = xxhash_rust::xxh3::xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    fn bytes(&self) -> usize {
        self.state
            .iter()
            .chain(&self.records)
            .map(|(k, v)| k.len() + v.len())
            .sum()
    }
}

fn random_keys(count: usize, rng: &mut StdRng, state: bool) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let len = if state {
                if i % 3 == 0 { 20 } else { 52 }
            } else {
                rng.random_range(1..=9)
            };
            let mut key = vec![0u8; len];
            rng.fill_bytes(&mut key);
            key
        })
        .collect()
}

fn prefill(db: &Database, state_keys: &[Vec<u8>], record_keys: &[Vec<u8>], shape: &Shape) {
    let txn = db.begin_write().expect("begin write");
    {
        let mut state = txn.open_table(STATE).expect("state table");
        for key in state_keys {
            state
                .insert(key.as_slice(), [7u8; 32].as_slice())
                .expect("insert");
        }
        let mut commitment = txn.open_table(COMMITMENT).expect("commitment table");
        let value = vec![9u8; shape.record_bytes];
        for key in record_keys {
            commitment
                .insert(key.as_slice(), value.as_slice())
                .expect("insert");
        }
        txn.open_table(CHANGES).expect("changes table");
        txn.open_table(JOURNAL).expect("journal table");
    }
    txn.commit().expect("commit prefill");
}

/// Today's commit: random B-tree inserts with unwind data, one durable txn.
fn commit_btree(db: &Database, block: &Block, number: u64) -> Duration {
    let start = Instant::now();
    let txn = db.begin_write().expect("begin write");
    {
        let mut state = txn.open_table(STATE).expect("state table");
        let mut changes = txn.open_table(CHANGES).expect("changes table");
        let mut change_key = Vec::with_capacity(64);
        for (key, value) in &block.state {
            let previous = state
                .insert(key.as_slice(), value.as_slice())
                .expect("insert")
                .map(|old| old.value().to_vec())
                .unwrap_or_default();
            change_key.clear();
            change_key.extend_from_slice(&number.to_be_bytes());
            change_key.extend_from_slice(key);
            changes
                .insert(change_key.as_slice(), previous.as_slice())
                .expect("insert change");
        }
        let mut commitment = txn.open_table(COMMITMENT).expect("commitment table");
        for (key, value) in &block.records {
            commitment
                .insert(key.as_slice(), value.as_slice())
                .expect("insert");
        }
    }
    txn.commit().expect("commit");
    start.elapsed()
}

/// The block as one value in a redb journal table, one durable txn.
fn commit_redb_value(db: &Database, block: &Block, number: u64) -> Duration {
    let start = Instant::now();
    let record = block.encode(number);
    let txn = db.begin_write().expect("begin write");
    {
        let mut journal = txn.open_table(JOURNAL).expect("journal table");
        journal.insert(number, record.as_slice()).expect("insert");
    }
    txn.commit().expect("commit");
    start.elapsed()
}

/// The block record appended to a file, then fdatasync.
fn commit_file_append(file: &mut File, block: &Block, number: u64) -> Duration {
    let start = Instant::now();
    let record = block.encode(number);
    file.write_all(&(record.len() as u64).to_le_bytes())
        .and_then(|()| file.write_all(&record))
        .and_then(|()| file.sync_data())
        .expect("append");
    start.elapsed()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn open_db(path: &Path) -> Database {
    Database::builder()
        .set_cache_size(256 << 20)
        .create(path)
        .expect("create db")
}

fn main() {
    let shape = Shape::from_env();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = seeded(13);
    let state_keys = random_keys(shape.prefill, &mut rng, true);
    let record_keys = random_keys(shape.prefill, &mut rng, false);
    println!(
        "journal: {} blocks of {} state writes + {} records of {} bytes over {} + {} stored keys; {}",
        shape.blocks,
        shape.state_writes,
        shape.records,
        shape.record_bytes,
        shape.prefill,
        shape.prefill,
        machine_load()
    );
    let btree_db = open_db(&dir.path().join("btree.redb"));
    let journal_db = open_db(&dir.path().join("journal.redb"));
    let started = Instant::now();
    prefill(&btree_db, &state_keys, &record_keys, &shape);
    prefill(&journal_db, &[], &[], &shape);
    println!("prefill {:.1} s", started.elapsed().as_secs_f64());
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("journal.log"))
        .expect("open journal file");

    let (mut btree, mut redb_value, mut file_append) = (Vec::new(), Vec::new(), Vec::new());
    let mut record_len = 0;
    for number in 1..=shape.blocks {
        let block = Block::random(&shape, &state_keys, &record_keys, &mut rng);
        record_len = block.encode(number).len();
        // Rotate the order so none always runs first after generation.
        for turn in 0..3 {
            match (number as usize + turn) % 3 {
                0 => btree.push(commit_btree(&btree_db, &block, number)),
                1 => redb_value.push(commit_redb_value(&journal_db, &block, number)),
                _ => file_append.push(commit_file_append(&mut file, &block, number)),
            }
        }
    }
    let (b, r, f) = (median(btree), median(redb_value), median(file_append));
    println!("record {:.2} MB per block", record_len as f64 / 1e6);
    println!(
        "{:<12} {:>12} {:>10}",
        "durable way", "median/block", "vs btree"
    );
    for (name, value) in [("btree", b), ("redb_value", r), ("file_append", f)] {
        println!(
            "{:<12} {:>10.2}ms {:>9.2}x",
            name,
            value.as_secs_f64() * 1e3,
            b.as_secs_f64() / value.as_secs_f64()
        );
    }
}
