//! Sorted-file formats side by side, in one run: format 1 (whole keys,
//! offset array), format 2 (shared key prefixes) with restart points every
//! 16 entries (the default) and only at block starts, and per-block lz4 and
//! zstd (level 3) over the default format-2 blocks — a prototype that keeps
//! the blocks compressed in memory and, per read, binary-searches the first
//! keys, decompresses one block and searches it (what a compressed format
//! would cost; the reader does not ship it).
//!
//! Per domain of a generator-like state (EOAs, contracts whose storage
//! follows Zipf popularity with hashed slots, a few shared bytecodes, the
//! commitment records the bulk builder makes of it): bytes per entry against
//! the raw key + value bytes, and for each format the write and iteration
//! throughput and `SortedFile::get` latency (p50/p99, each call timed on its
//! own) of present keys and of absent keys (for storage: an existing
//! contract with a random slot), with the ratio to format 1.
//!
//! Sizes: `STRATA_BENCH_SLOTS` storage slots (1,000,000), `STRATA_BENCH_ACCOUNTS`
//! EOAs (200,000), `STRATA_BENCH_PROBES` reads per case (200,000),
//! `STRATA_BENCH_ROUNDS` rounds of every measurement (3; the median is
//! reported). Files go to `STRATA_BENCH_DIR` (a temp dir by default).
//!
//! Then, for the file each domain is written in, the reader's block index
//! sampled every 1 (dense), 4, 16 (the reader's) and 64 blocks, alternately:
//! get latency and the index's memory.
//!
//! Run: `cargo bench -p strata-benches --bench file_format`.

use std::cell::RefCell;
use std::collections::HashSet;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use alloy_primitives::{Address, B256, U256, keccak256};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_benches::{env_u64, machine_load};
use strata_commitment::{AccountLeaf, SortedAccount, build_from_sorted, record_key};
use strata_storage::account::{Account, code_hash, encode_slot_value};
use strata_storage::files::bench_support::{blocks, file_bytes, get_in_block};
use strata_storage::files::{
    FileLayout, FileMeta, FileSystem, OsFileSystem, SortedFile, SortedFileWriter,
};
use strata_storage::{Domain, keys::storage_key};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A generator-like state, one sorted entry list per domain.
fn state(accounts: usize, slots: usize, rng: &mut StdRng) -> Vec<(Domain, Entries)> {
    let (mut account, mut storage, mut code) = (Vec::new(), Vec::new(), Vec::new());
    let mut sorted = Vec::new();
    for _ in 0..accounts {
        let address = Address::from(rng.random::<[u8; 20]>());
        let u = rng.random::<f64>();
        let a = Account {
            nonce: (u * u * u * 2_000.0) as u64,
            balance: U256::from(rng.random_range(10u128.pow(14)..10u128.pow(22))),
            code_hash: code_hash(&[]),
        };
        account.push((address.to_vec(), a.encode()));
        sorted.push(leaf(address, &a, Vec::new()));
    }
    let codes: Vec<Vec<u8>> = (0..8)
        .map(|_| {
            let len = rng.random_range(300..2_500);
            let mut c = vec![0x60, 0x80, 0x60, 0x40, 0x52, 0x60, 0x04, 0x36, 0x10, 0x61];
            c.extend((c.len()..len).map(|_| rng.random::<u8>()));
            c
        })
        .collect();
    let contracts = (accounts / 100).max(10);
    let harmonic: f64 = (1..=contracts).map(|r| 1.0 / r as f64).sum();
    for rank in 1..=contracts {
        let address = Address::from(rng.random::<[u8; 20]>());
        let bytecode = &codes[rng.random_range(0..codes.len())];
        let a = Account {
            nonce: 1,
            balance: U256::ZERO,
            code_hash: code_hash(bytecode),
        };
        let n = ((slots as f64 / harmonic / rank as f64).round() as usize).max(1);
        let mut slot_values = Vec::with_capacity(n);
        for i in 0..n {
            let slot = if i < 4 {
                B256::from(U256::from(i))
            } else {
                B256::from(rng.random::<[u8; 32]>())
            };
            let exponent = rng.random_range(3..80u32);
            let value = U256::from(rng.random_range(1u128..=(1u128 << exponent)));
            storage.push((
                storage_key(&address, &slot).to_vec(),
                encode_slot_value(value),
            ));
            slot_values.push((keccak256(slot), slot, value));
        }
        slot_values.sort_by_key(|s| s.0);
        account.push((address.to_vec(), a.encode()));
        code.push((address.to_vec(), bytecode.clone()));
        sorted.push(leaf(address, &a, slot_values));
    }
    sorted.sort_by_key(|a| a.hashed_address);
    let mut commitment = Vec::new();
    build_from_sorted(&sorted, true, |path, record| {
        commitment.push((record_key(&path), record.to_vec()));
    })
    .expect("bulk build");
    let mut out = vec![
        (Domain::Account, account),
        (Domain::Storage, storage),
        (Domain::Code, code),
        (Domain::Commitment, commitment),
    ];
    for (_, entries) in &mut out {
        entries.sort();
        entries.dedup_by(|a, b| a.0 == b.0);
    }
    out
}

fn leaf(address: Address, a: &Account, storage: Vec<(B256, B256, U256)>) -> SortedAccount {
    SortedAccount {
        hashed_address: keccak256(address),
        address,
        leaf: AccountLeaf {
            nonce: a.nonce,
            balance: a.balance,
            code_hash: a.code_hash,
        },
        storage,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    File(FileLayout),
    Lz4,
    Zstd,
}

impl Variant {
    fn name(self) -> String {
        match self {
            Variant::File(FileLayout::V1) => "v1 (whole keys)".to_owned(),
            Variant::File(FileLayout::V2 {
                restart_interval: u32::MAX,
            }) => "v2, restart/block".to_owned(),
            Variant::File(FileLayout::V2 { restart_interval }) => {
                format!("v2, restart/{restart_interval}")
            }
            Variant::Lz4 => "v2/16 + lz4".to_owned(),
            Variant::Zstd => "v2/16 + zstd3".to_owned(),
        }
    }
}

const VARIANTS: [Variant; 7] = [
    Variant::File(FileLayout::V1),
    Variant::File(FileLayout::V2 {
        restart_interval: 1,
    }),
    Variant::File(FileLayout::V2 {
        restart_interval: 4,
    }),
    Variant::File(FileLayout::V2 {
        restart_interval: 16,
    }),
    Variant::File(FileLayout::V2 {
        restart_interval: u32::MAX,
    }),
    Variant::Lz4,
    Variant::Zstd,
];

/// Blocks of a format-2 file stored compressed (the prototype).
struct Compressed {
    first_keys: Vec<Vec<u8>>,
    /// Per block: range in `data`, uncompressed length.
    blocks: Vec<(std::ops::Range<usize>, usize)>,
    data: Vec<u8>,
    /// Index, filter and footer bytes of the file it was made from.
    rest: usize,
    zstd: bool,
}

thread_local! {
    static BUF: RefCell<(Vec<u8>, Option<zstd::bulk::Decompressor<'static>>)> =
        const { RefCell::new((Vec::new(), None)) };
}

impl Compressed {
    fn of(file: &SortedFile, zstd: bool) -> Self {
        let bytes = file_bytes(file);
        let (mut first_keys, mut out, mut data) = (Vec::new(), Vec::new(), Vec::new());
        let mut compressor = zstd::bulk::Compressor::new(3).expect("zstd");
        let mut data_end = 0;
        for (first, range) in blocks(file) {
            let block = &bytes[range.clone()];
            data_end = range.end;
            let packed = if zstd {
                compressor.compress(block).expect("zstd compress")
            } else {
                lz4_flex::block::compress(block)
            };
            let at = data.len();
            data.extend_from_slice(&packed);
            first_keys.push(first);
            out.push((at..data.len(), block.len()));
        }
        Compressed {
            first_keys,
            blocks: out,
            data,
            rest: bytes.len() - data_end,
            zstd,
        }
    }

    fn size(&self) -> usize {
        // Each block's index entry would also carry its uncompressed length.
        self.data.len() + self.rest + 4 * self.blocks.len()
    }

    fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        let b = self
            .first_keys
            .partition_point(|k| k.as_slice() <= key)
            .checked_sub(1)?;
        let (range, len) = &self.blocks[b];
        BUF.with(|cell| {
            let (buf, dec) = &mut *cell.borrow_mut();
            buf.resize(*len, 0);
            let packed = &self.data[range.clone()];
            if self.zstd {
                let dec = dec.get_or_insert_with(|| zstd::bulk::Decompressor::new().expect("zstd"));
                dec.decompress_to_buffer(packed, &mut buf[..])
                    .expect("zstd decompress");
            } else {
                lz4_flex::block::decompress_into(packed, &mut buf[..]).expect("lz4 decompress");
            }
            get_in_block(2, buf, key).map(|v| v.map(|r| Bytes::copy_from_slice(&buf[r])))
        })
    }
}

/// One variant's figures for one domain in one round.
#[derive(Clone, Copy, Default)]
struct Figures {
    bytes: f64,
    write_per_s: f64,
    iter_per_s: f64,
    hit: (f64, f64),
    miss: (f64, f64),
}

fn percentiles(mut ns: Vec<u64>) -> (f64, f64) {
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q) as usize] as f64;
    (at(0.5), at(0.99))
}

fn timed(probes: &[Vec<u8>], mut get: impl FnMut(&[u8]) -> bool) -> (f64, f64) {
    let mut ns = Vec::with_capacity(probes.len());
    for k in probes {
        let t = Instant::now();
        black_box(get(black_box(k)));
        ns.push(t.elapsed().as_nanos() as u64);
    }
    percentiles(ns)
}

fn write(dir: &Path, domain: Domain, layout: FileLayout, entries: &Entries) -> (SortedFile, f64) {
    let fs: Arc<dyn FileSystem> = Arc::new(OsFileSystem);
    let meta = FileMeta {
        domain,
        from_step: 0,
        to_step: 1,
    };
    let t = Instant::now();
    let mut w = SortedFileWriter::new(Arc::clone(&fs), dir, meta)
        .expect("writer")
        .with_layout(layout)
        .with_expected_keys(entries.len() as u64);
    for (k, v) in entries {
        w.push(k, Some(v)).expect("push");
    }
    let info = w.finish().expect("finish");
    let secs = t.elapsed().as_secs_f64();
    let file = SortedFile::open(&*fs, &info.path).expect("open");
    (file, entries.len() as f64 / secs)
}

fn measure(
    dir: &Path,
    domain: Domain,
    entries: &Entries,
    hits: &[Vec<u8>],
    misses: &[Vec<u8>],
) -> Vec<Figures> {
    let (base, base_write) = write(dir, domain, FileLayout::default(), entries);
    VARIANTS
        .iter()
        .map(|&variant| {
            let mut f = Figures::default();
            match variant {
                Variant::File(layout) => {
                    let (file, per_s) = if layout == FileLayout::default() {
                        (None, base_write)
                    } else {
                        let sub = dir.join(format!("{layout:?}").replace([' ', '{', '}', ':'], ""));
                        std::fs::create_dir_all(&sub).expect("dir");
                        let (file, per_s) = write(&sub, domain, layout, entries);
                        (Some(file), per_s)
                    };
                    let file = file.as_ref().unwrap_or(&base);
                    f.bytes = file.size_bytes() as f64;
                    f.write_per_s = per_s;
                    let t = Instant::now();
                    let n = file.iter().count();
                    f.iter_per_s = n as f64 / t.elapsed().as_secs_f64();
                    f.hit = timed(hits, |k| matches!(file.get(k), Ok(Some(_))));
                    f.miss = timed(misses, |k| matches!(file.get(k), Ok(Some(_))));
                }
                Variant::Lz4 | Variant::Zstd => {
                    let t = Instant::now();
                    let c = Compressed::of(&base, variant == Variant::Zstd);
                    // Writing = format 2's write plus compressing its blocks.
                    let extra = t.elapsed().as_secs_f64();
                    f.write_per_s = 1.0 / (1.0 / base_write + extra / entries.len() as f64);
                    f.bytes = c.size() as f64;
                    let t = Instant::now();
                    let mut n = 0usize;
                    for (range, len) in &c.blocks {
                        let mut buf = vec![0u8; *len];
                        if c.zstd {
                            zstd::bulk::decompress_to_buffer(&c.data[range.clone()], &mut buf)
                                .expect("zstd");
                        } else {
                            lz4_flex::block::decompress_into(&c.data[range.clone()], &mut buf)
                                .expect("lz4");
                        }
                        n += black_box(buf.len());
                    }
                    black_box(n);
                    // Decompressing every block, then iterating format 2.
                    let decompress = t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    let count = base.iter().count();
                    f.iter_per_s = count as f64 / (t.elapsed().as_secs_f64() + decompress);
                    f.hit = timed(hits, |k| c.get(k).is_some());
                    f.miss = timed(misses, |k| c.get(k).is_some());
                }
            }
            f
        })
        .collect()
}

/// Blocks per in-memory index sample compared: 1 (a dense index, what the
/// reader held before), 4, 16 (the reader's) and 64.
const INDEX_SHIFTS: [u32; 4] = [0, 2, 4, 6];

/// Get p50/p99 of hits, then of misses, in one round.
type HitMiss = ((f64, f64), (f64, f64));

/// The default layout's file read through block indexes sampled every 1,
/// 4, 16 and 64 blocks, alternately in each round: get p50/p99 of hits and
/// misses (medians over rounds) and the index's memory.
fn index_sampling(
    dir: &Path,
    domain: Domain,
    entries: &Entries,
    hits: &[Vec<u8>],
    misses: &[Vec<u8>],
    rounds: usize,
) {
    let sub = dir.join("index-sampling");
    std::fs::create_dir_all(&sub).expect("dir");
    let (mut file, _) = write(&sub, domain, FileLayout::for_domain(domain), entries);
    let mut figures = vec![Vec::new(); INDEX_SHIFTS.len()];
    let mut memory = vec![0; INDEX_SHIFTS.len()];
    for _ in 0..rounds {
        for (i, &shift) in INDEX_SHIFTS.iter().enumerate() {
            file.resample_index(shift).expect("resample");
            memory[i] = file.index_memory_bytes();
            let hit = timed(hits, |k| matches!(file.get(k), Ok(Some(_))));
            let miss = timed(misses, |k| matches!(file.get(k), Ok(Some(_))));
            figures[i].push((hit, miss));
        }
    }
    println!(
        "  block index ({} blocks, {} B/block in the file's index region):",
        file.block_count(),
        entries.first().map_or(0, |(k, _)| k.len()) + 18
    );
    let pick = |i: usize, f: &dyn Fn(&HitMiss) -> f64| median(figures[i].iter().map(f).collect());
    for (i, shift) in INDEX_SHIFTS.iter().enumerate() {
        println!(
            "  sample every {:>2}: {:>10} B in memory ({:>5.2} B/block)  get hit {:>5.0}/{:<5.0}ns  miss {:>5.0}/{:<5.0}ns  (x{:.2} hit, x{:.2} miss p50 vs every 1)",
            1u32 << shift,
            memory[i],
            memory[i] as f64 / file.block_count().max(1) as f64,
            pick(i, &|f| f.0.0),
            pick(i, &|f| f.0.1),
            pick(i, &|f| f.1.0),
            pick(i, &|f| f.1.1),
            pick(i, &|f| f.0.0) / pick(0, &|f| f.0.0),
            pick(i, &|f| f.1.0) / pick(0, &|f| f.1.0),
        );
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let slots = env_u64("STRATA_BENCH_SLOTS", 1_000_000) as usize;
    let accounts = env_u64("STRATA_BENCH_ACCOUNTS", 200_000) as usize;
    let probes = env_u64("STRATA_BENCH_PROBES", 200_000) as usize;
    let rounds = env_u64("STRATA_BENCH_ROUNDS", 3).max(1) as usize;
    let tmp =
        tempfile::tempdir_in(std::env::var("STRATA_BENCH_DIR").unwrap_or_else(|_| ".".into()))
            .expect("temp dir");
    println!("{}", machine_load());
    println!(
        "state: {accounts} EOAs, {slots} storage slots; {probes} reads per case, {rounds} rounds (medians)"
    );
    let mut rng = StdRng::seed_from_u64(15);
    let t = Instant::now();
    let state = state(accounts, slots, &mut rng);
    println!("state built in {:.1?}", t.elapsed());
    for (domain, entries) in &state {
        let raw: usize = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
        let keys: HashSet<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).collect();
        let hits: Vec<Vec<u8>> = (0..probes)
            .map(|_| entries[rng.random_range(0..entries.len())].0.clone())
            .collect();
        let misses: Vec<Vec<u8>> = (0..probes)
            .map(|_| {
                loop {
                    let mut k = entries[rng.random_range(0..entries.len())].0.clone();
                    // Storage: the same contract, a random slot; else a random tail.
                    let from = if *domain == Domain::Storage {
                        20
                    } else {
                        k.len() / 2
                    };
                    rng.fill(&mut k[from..]);
                    if !keys.contains(k.as_slice()) {
                        break k;
                    }
                }
            })
            .collect();
        let dir = tmp.path().join(domain.to_string());
        std::fs::create_dir_all(&dir).expect("dir");
        let runs: Vec<Vec<Figures>> = (0..rounds)
            .map(|_| measure(&dir, *domain, entries, &hits, &misses))
            .collect();
        let n = entries.len() as f64;
        println!(
            "\n{domain}: {} entries, raw key+value {:.1} B/entry (keys {:.1})",
            entries.len(),
            raw as f64 / n,
            entries.iter().map(|(k, _)| k.len()).sum::<usize>() as f64 / n
        );
        println!(
            "{:<18} {:>9} {:>7} {:>7} {:>10} {:>10} {:>18} {:>18}",
            "format",
            "B/entry",
            "vs raw",
            "vs v1",
            "write/s",
            "iter/s",
            "get hit p50/p99",
            "get miss p50/p99"
        );
        let pick =
            |i: usize, f: &dyn Fn(&Figures) -> f64| median(runs.iter().map(|r| f(&r[i])).collect());
        let v1 = |f: &dyn Fn(&Figures) -> f64| pick(0, f);
        for (i, variant) in VARIANTS.iter().enumerate() {
            let bytes = pick(i, &|f| f.bytes);
            let hit = (pick(i, &|f| f.hit.0), pick(i, &|f| f.hit.1));
            let miss = (pick(i, &|f| f.miss.0), pick(i, &|f| f.miss.1));
            println!(
                "{:<18} {:>9.1} {:>7.2} {:>7.2} {:>9.2}M {:>9.2}M {:>7.0}/{:<6.0}ns {:>7.0}/{:<6.0}ns   (x{:.2}/{:.2} hit, x{:.2}/{:.2} miss vs v1)",
                variant.name(),
                bytes / n,
                bytes / raw as f64,
                bytes / v1(&|f| f.bytes),
                pick(i, &|f| f.write_per_s) / 1e6,
                pick(i, &|f| f.iter_per_s) / 1e6,
                hit.0,
                hit.1,
                miss.0,
                miss.1,
                hit.0 / v1(&|f| f.hit.0),
                hit.1 / v1(&|f| f.hit.1),
                miss.0 / v1(&|f| f.miss.0),
                miss.1 / v1(&|f| f.miss.1),
            );
        }
        index_sampling(&dir, *domain, entries, &hits, &misses, rounds);
    }
}
