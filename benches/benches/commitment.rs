//! Commitment benchmarks.
//!
//! (a) Bulk build of N accounts (no storage): strata's bulk builder on 1 and 2
//!     rayon threads vs alloy-trie's `HashBuilder` on the same sorted leaves.
//! (b) One incremental block (2,000 accounts, 6,000 slots) on a state of N
//!     accounts held in a `MemoryBranchStore` + `MemoryState`, 1 vs 2 threads,
//!     with keccak calls per block and the keccak floor beside it.
//!
//! (c) What (b)'s block spends decoding records: the records its walk reads,
//!     counted per trie depth, each depth's records decoded apart (criterion
//!     group `commitment_record_decode`, ns per record; a decode checks and
//!     locates the cells, and is also timed with every cell built), and the block's
//!     depth ≤ 2 and all records decoded in one pass, timed alternately with
//!     the block itself.
//!
//! `cargo bench -p strata-benches --bench commitment`; the 4M-account state
//! of (b) runs only with `STRATA_BENCH_BIG=1`; `STRATA_BENCH_ONLY=bulk` or
//! `=block` runs one part (`=decode`: (c) without (b)'s own timing); `STRATA_BENCH_SIZES=100000,4000000` picks the
//! state sizes of (b); `STRATA_BENCH_REPS=N` makes (b) compute exactly N
//! blocks on 1 thread per size and skip the timing, so `perf stat` of a run
//! with N minus a run with 0 gives the instructions and cycles of N blocks
//! on a machine too busy for wall-clock figures; it also prints the blocks'
//! CPU time (the pool thread's, from `/proc/thread-self/schedstat`), which
//! (b) prints beside its wall-clock times too.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_trie::{HashBuilder, Nibbles};
use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rayon::{ThreadPool, ThreadPoolBuilder};
use strata_commitment::bench_support::RecordDecoder;
use strata_commitment::source::{BranchSource, SourceError};
use strata_commitment::{
    AccountLeaf, ComputeOptions, MemoryBranchStore, MemoryState, SortedAccount, TrieUpdate,
    build_from_sorted, compute_root,
};

fn pool(threads: usize) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("rayon pool")
}

fn address(i: u64) -> Address {
    let mut a = [0u8; 20];
    a[..8].copy_from_slice(&i.to_be_bytes());
    a[8..16].copy_from_slice(&(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes());
    Address::from(a)
}

/// A realistic account: small nonce, ~9-byte balance, some with code.
fn leaf(rng: &mut StdRng) -> AccountLeaf {
    AccountLeaf {
        nonce: rng.random_range(0..5_000),
        balance: U256::from(rng.random::<u64>()) * U256::from(1_000_000u64),
        code_hash: if rng.random_bool(0.1) {
            B256::from(rng.random::<[u8; 32]>())
        } else {
            alloy_trie::KECCAK_EMPTY
        },
    }
}

/// `n` sorted accounts; every `storage_every`-th one gets `slots` slots.
fn accounts(n: u64, storage_every: u64, slots: u64, seed: u64) -> Vec<SortedAccount> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut v: Vec<SortedAccount> = (0..n)
        .map(|i| {
            let a = address(i);
            let mut storage = Vec::new();
            if storage_every > 0 && i % storage_every == 0 {
                for s in 0..slots {
                    let slot = B256::from(U256::from(s));
                    storage.push((keccak256(slot), slot, U256::from(rng.random::<u64>() | 1)));
                }
                storage.sort();
            }
            SortedAccount {
                hashed_address: keccak256(a),
                address: a,
                leaf: leaf(&mut rng),
                storage,
            }
        })
        .collect();
    v.sort_by_key(|a| a.hashed_address);
    v
}

/// The same leaves as `HashBuilder` input: (nibbles, RLP account).
fn hb_leaves(accts: &[SortedAccount]) -> Vec<(Nibbles, Vec<u8>)> {
    accts
        .iter()
        .map(|a| {
            let acct = alloy_trie::TrieAccount {
                nonce: a.leaf.nonce,
                balance: a.leaf.balance,
                storage_root: alloy_trie::EMPTY_ROOT_HASH,
                code_hash: a.leaf.code_hash,
            };
            (Nibbles::unpack(a.hashed_address), alloy_rlp::encode(acct))
        })
        .collect()
}

fn hb_root(leaves: &[(Nibbles, Vec<u8>)]) -> B256 {
    let mut hb = HashBuilder::default();
    for (k, v) in leaves {
        hb.add_leaf(*k, v);
    }
    hb.root()
}

fn strata_root(accts: &[SortedAccount], parallel: bool) -> B256 {
    let mut bytes = 0usize;
    let root =
        build_from_sorted(accts, parallel, |p, r| bytes += p.len() + r.len()).expect("bulk build");
    black_box(bytes);
    root
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// CPU time the calling thread has run so far (Linux:
/// `/proc/thread-self/schedstat`; `None` elsewhere). Unlike wall-clock time
/// it leaves out the time other tenants of a busy machine hold the core.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// One block's root on `pool`, timed in CPU time of the pool's thread (for a
/// 1-thread pool, all of the block's work).
fn block_cpu(pool: &ThreadPool, f: impl FnOnce() + Send) -> Option<Duration> {
    pool.install(|| {
        let t0 = thread_cpu()?;
        f();
        Some(thread_cpu()?.saturating_sub(t0))
    })
}

fn once(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// Runs `a` and `b` alternately `runs` times (after one warm-up each), so a
/// busy period of the shared machine hits both alike; returns their fastest
/// runs (the least disturbed) and medians.
fn time_pair(
    runs: usize,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> ((Duration, Duration), (Duration, Duration)) {
    a();
    b();
    let (mut ta, mut tb) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        ta.push(once(&mut a));
        tb.push(once(&mut b));
    }
    let min = |v: &[Duration]| v.iter().copied().min().unwrap_or_default();
    ((min(&ta), median(ta.clone())), (min(&tb), median(tb)))
}

/// ns per keccak256 of a 100-byte input, latency-chained as in a Merkle fold.
/// The fastest of several 20,000-hash rounds, so a busy moment of the
/// shared machine does not inflate the floor.
fn keccak_ns() -> f64 {
    let mut buf = [7u8; 100];
    let n = 20_000;
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = Instant::now();
        for _ in 0..n {
            let h = keccak256(buf);
            buf[..32].copy_from_slice(h.as_slice());
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    black_box(buf);
    best
}

/// Whether the part `name` runs (`STRATA_BENCH_ONLY=bulk|block` picks one).
fn enabled(name: &str) -> bool {
    std::env::var("STRATA_BENCH_ONLY").map_or(true, |only| only == name)
}

fn bulk_build(c: &mut Criterion) {
    if !enabled("bulk") {
        return;
    }
    let (p1, p2) = (pool(1), pool(2));
    let mut group = c.benchmark_group("commitment_bulk_build");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for n in [100_000u64, 1_000_000] {
        let accts = accounts(n, 0, 0, n);
        let leaves = hb_leaves(&accts);
        let expected = hb_root(&leaves);
        assert_eq!(
            p1.install(|| strata_root(&accts, false)),
            expected,
            "bulk root differs from HashBuilder"
        );
        assert_eq!(
            p2.install(|| strata_root(&accts, true)),
            expected,
            "parallel bulk root differs"
        );
        // Interleaved runs, so a busy period hits every contender alike.
        let runs = if n >= 1_000_000 { 3 } else { 7 };
        let (mut hb, mut s1, mut s2) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            hb.push(once(|| {
                black_box(hb_root(&leaves));
            }));
            s1.push(once(|| {
                black_box(p1.install(|| strata_root(&accts, false)));
            }));
            s2.push(once(|| {
                black_box(p2.install(|| strata_root(&accts, true)));
            }));
        }
        let (hb, s1, s2) = (median(hb), median(s1), median(s2));
        println!(
            "bulk {n}: HashBuilder {:.1} ms ({:.0} ns/leaf) | strata 1 thread {:.1} ms = {:.2}x | strata 2 threads {:.1} ms = {:.2}x",
            hb.as_secs_f64() * 1e3,
            hb.as_nanos() as f64 / n as f64,
            s1.as_secs_f64() * 1e3,
            s1.as_secs_f64() / hb.as_secs_f64(),
            s2.as_secs_f64() * 1e3,
            s2.as_secs_f64() / hb.as_secs_f64(),
        );
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(
            BenchmarkId::new("alloy_hash_builder", n),
            &leaves,
            |b, l| b.iter(|| hb_root(l)),
        );
        group.bench_with_input(BenchmarkId::new("strata_1_thread", n), &accts, |b, a| {
            b.iter(|| p1.install(|| strata_root(a, false)))
        });
        group.bench_with_input(BenchmarkId::new("strata_2_threads", n), &accts, |b, a| {
            b.iter(|| p2.install(|| strata_root(a, true)))
        });
    }
    group.finish();
}

/// A state of `n` accounts (1 in 100 with 20 slots) in memory, bulk-built.
fn state_of(n: u64) -> (MemoryBranchStore, MemoryState, B256) {
    let accts = accounts(n, 100, 20, 42);
    let mut state = MemoryState::new();
    for a in &accts {
        state.set_account(a.address, a.leaf);
        for (_, s, v) in &a.storage {
            state.set_storage(a.address, *s, *v);
        }
    }
    let mut store = MemoryBranchStore::new();
    let root = build_from_sorted(&accts, true, |p, r| store.insert(p, r)).expect("bulk build");
    (store, state, root)
}

/// One block: 2,000 accounts (1,800 updated, 200 new) and 6,000 slots (200
/// contracts × 30: updates, inserts and deletes).
fn block(n: u64, state: &mut MemoryState, rng: &mut StdRng) -> TrieUpdate {
    let mut u = TrieUpdate::default();
    for _ in 0..1_800 {
        let a = address(rng.random_range(0..n));
        state.set_account(a, leaf(rng));
        u.accounts.push(a);
    }
    for i in 0..200 {
        let a = address(n + 1_000_000_000 + i);
        state.set_account(a, leaf(rng));
        u.accounts.push(a);
    }
    for _ in 0..200 {
        let a = address(rng.random_range(0..n / 100) * 100);
        for _ in 0..30 {
            let slot = B256::from(U256::from(rng.random_range(0..40u64)));
            let v = if rng.random_bool(0.1) {
                U256::ZERO
            } else {
                U256::from(rng.random::<u64>() | 1)
            };
            state.set_storage(a, slot, v);
            u.storage.push((a, slot));
        }
    }
    u
}

/// Where a record sits: its depth in the account trie (path length), or
/// `STORAGE` for every record of a storage sub-trie.
type Depth = usize;
const STORAGE: Depth = usize::MAX;

/// A branch source that keeps every record it hands out (path and bytes),
/// so the records one block's walk decodes can be counted per depth and
/// decoded again on their own.
struct Census<'a> {
    inner: &'a MemoryBranchStore,
    seen: Mutex<Vec<(Vec<u8>, Bytes)>>,
}

impl BranchSource for Census<'_> {
    fn branch(&self, path: &[u8]) -> Result<Option<Bytes>, SourceError> {
        let r = self.inner.branch(path)?;
        if let Some(b) = &r {
            self.seen
                .lock()
                .expect("census lock")
                .push((path.to_vec(), b.clone()));
        }
        Ok(r)
    }
}

fn depth_of(path: &[u8]) -> Depth {
    if path.len() >= 64 {
        STORAGE
    } else {
        path.len()
    }
}

fn depth_name(d: Depth) -> String {
    if d == STORAGE {
        "storage".into()
    } else {
        format!("depth_{d}")
    }
}

/// The records `update`'s walk decodes (every record the source returns is
/// decoded once), grouped by depth.
fn census(
    update: &TrieUpdate,
    store: &MemoryBranchStore,
    state: &MemoryState,
) -> BTreeMap<Depth, Vec<(Vec<u8>, Bytes)>> {
    let c = Census {
        inner: store,
        seen: Mutex::new(Vec::new()),
    };
    // No rayon split: the reads are the same, in one order.
    let opts = ComputeOptions {
        parallel_threshold: usize::MAX,
    };
    compute_root(update, &c, state, &opts).expect("compute");
    let mut by_depth: BTreeMap<Depth, Vec<(Vec<u8>, Bytes)>> = BTreeMap::new();
    for (p, b) in c.seen.into_inner().expect("census lock") {
        by_depth.entry(depth_of(&p)).or_default().push((p, b));
    }
    by_depth
}

/// Decodes every record of `records` once; returns the cells decoded.
fn decode_all(dec: &mut RecordDecoder, records: &[(Vec<u8>, Bytes)]) -> usize {
    records
        .iter()
        .map(|(p, b)| dec.decode(p, b).expect("decode"))
        .sum()
}

/// [`decode_all`] with every cell built in memory (what a decode cost when
/// it built all of them; the walk builds only those it takes).
fn decode_all_built(dec: &mut RecordDecoder, records: &[(Vec<u8>, Bytes)]) -> usize {
    records
        .iter()
        .map(|(p, b)| dec.decode_built(p, b).expect("decode"))
        .sum()
}

/// ns per call of `f`, which does `per_call` units of work: the median of 15
/// rounds of about a millisecond each.
fn ns_per(per_call: usize, mut f: impl FnMut()) -> f64 {
    f();
    let t = Instant::now();
    f();
    let one = t.elapsed().as_nanos().max(1) as usize;
    let reps = (1_000_000 / one).max(1);
    let rounds: Vec<f64> = (0..15)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed().as_nanos() as f64 / (reps * per_call) as f64
        })
        .collect();
    let mut r = rounds;
    r.sort_by(f64::total_cmp);
    r[r.len() / 2]
}

/// Part (c) for one state: counts per depth, ns per decode per depth, the
/// cost of the copy a kept decoded record would still need, and the decode
/// of the block's records down to depth 2, down to depth 3 and all of them,
/// each timed alternately with the block's root.
fn decode_census(
    n: u64,
    update: &TrieUpdate,
    store: &MemoryBranchStore,
    state: &MemoryState,
    block_1_thread: &mut dyn FnMut(),
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
) {
    let by_depth = census(update, store, state);
    let mut dec = RecordDecoder::new();
    let mut counts = Vec::new();
    let mut per_depth = Vec::new();
    let mut per_depth_built = Vec::new();
    for (&d, recs) in &by_depth {
        let cells = decode_all(&mut dec, recs);
        let ns = ns_per(recs.len(), || {
            black_box(decode_all(&mut dec, recs));
        });
        let built_ns = ns_per(recs.len(), || {
            black_box(decode_all_built(&mut dec, recs));
        });
        per_depth_built.push(format!("{} {built_ns:.0}", depth_name(d)));
        counts.push(format!(
            "{} {} ({:.1} cells)",
            depth_name(d),
            recs.len(),
            cells as f64 / recs.len() as f64
        ));
        per_depth.push(format!("{} {ns:.0}", depth_name(d)));
    }
    // A kept decoded record still costs a copy per use (the walk takes the
    // children out of the array it folds): the root record's, as the example.
    let copy_ns = match by_depth.get(&0).and_then(|r| r.first()) {
        Some((p, b)) if dec.keep(p, b).expect("decode") => ns_per(1, || {
            black_box(dec.copy_kept());
        }),
        _ => f64::NAN,
    };
    println!(
        "block on {n} accounts: records decoded per depth: {} | ns per decode: {} | ns per decode with every cell built: {} | copy of a kept root record {copy_ns:.0} ns",
        counts.join(", "),
        per_depth.join(", "),
        per_depth_built.join(", "),
    );
    // Each pass (the block's records down to a depth, decoded once) timed
    // alternately with the block itself, so a busy period hits both alike.
    let passes: [(&str, Depth); 3] = [("depth<=2", 2), ("depth<=3", 3), ("all", STORAGE)];
    let mut shares = Vec::new();
    for (name, max) in passes {
        let recs: Vec<(Vec<u8>, Bytes)> = by_depth
            .range(0..=max)
            .flat_map(|(_, r)| r.iter().cloned())
            .collect();
        let ((_, block_t), (_, pass_t)) = time_pair(15, &mut *block_1_thread, || {
            black_box(decode_all(&mut dec, &recs));
        });
        shares.push(format!(
            "{name} {} records {:.0} us = {:.2}% of the block ({:.2} ms)",
            recs.len(),
            pass_t.as_secs_f64() * 1e6,
            100.0 * pass_t.as_secs_f64() / block_t.as_secs_f64(),
            block_t.as_secs_f64() * 1e3,
        ));
    }
    println!(
        "block on {n} accounts: decode of its records, 1 thread, medians of 15 alternating with the block: {}",
        shares.join(" | ")
    );
    for (&d, recs) in by_depth.range(0..=4).chain(by_depth.range(STORAGE..)) {
        group.throughput(Throughput::Elements(recs.len() as u64));
        group.bench_with_input(BenchmarkId::new(depth_name(d), n), recs, |b, r| {
            b.iter(|| decode_all(&mut dec, r))
        });
    }
}

fn incremental_block(c: &mut Criterion) {
    if !enabled("block") && !enabled("decode") {
        return;
    }
    let (p1, p2) = (pool(1), pool(2));
    let keccak = keccak_ns();
    println!("keccak256 of 100 bytes: {keccak:.1} ns");
    let mut sizes = vec![100_000u64, 1_000_000];
    if std::env::var("STRATA_BENCH_BIG").as_deref() == Ok("1") {
        sizes.push(4_000_000);
    }
    if let Ok(only) = std::env::var("STRATA_BENCH_SIZES") {
        sizes = only
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("STRATA_BENCH_SIZES: comma-separated counts")
            })
            .collect();
    }
    let reps: Option<usize> = std::env::var("STRATA_BENCH_REPS")
        .ok()
        .map(|r| r.parse().expect("STRATA_BENCH_REPS: a count"));
    let opts = ComputeOptions::default();
    // `STRATA_BENCH_ONLY=decode`: part (c) alone.
    let block_timing = enabled("block");
    for n in sizes {
        let (store, mut state, _) = state_of(n);
        let mut rng = StdRng::seed_from_u64(n ^ 7);
        let update = block(n, &mut state, &mut rng);
        let out1 = p1
            .install(|| compute_root(&update, &store, &state, &opts))
            .expect("compute");
        let out2 = p2
            .install(|| compute_root(&update, &store, &state, &opts))
            .expect("compute");
        assert_eq!(out1.root, out2.root, "1 and 2 threads disagree");
        if let Some(reps) = reps {
            // Exactly `reps` blocks on 1 thread and nothing else, for a
            // counter such as `perf stat` that cannot tell setup from work:
            // run with 0 and with N, and take the difference.
            let mut cpu = Vec::with_capacity(reps);
            for _ in 0..reps {
                cpu.extend(block_cpu(&p1, || {
                    black_box(compute_root(&update, &store, &state, &opts).expect("compute"));
                }));
            }
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            let fastest = cpu.iter().copied().min().unwrap_or_default();
            println!(
                "block on {n} accounts: root {} after {reps} reps; 1 thread CPU time per block fastest {:.2} ms, median {:.2} ms",
                out1.root,
                ms(fastest),
                ms(if cpu.is_empty() { fastest } else { median(cpu) }),
            );
            continue;
        }
        let mut decode_group = c.benchmark_group("commitment_record_decode");
        decode_group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        decode_census(
            n,
            &update,
            &store,
            &state,
            &mut || {
                black_box(
                    p1.install(|| compute_root(&update, &store, &state, &opts))
                        .expect("compute"),
                );
            },
            &mut decode_group,
        );
        decode_group.finish();
        if !block_timing {
            continue;
        }
        // The 1-thread runs also record their CPU time (the pool thread's).
        let mut cpu1 = Vec::with_capacity(16);
        let ((t1, m1), (t2, m2)) = time_pair(
            15,
            || {
                cpu1.extend(block_cpu(&p1, || {
                    black_box(compute_root(&update, &store, &state, &opts).expect("compute"));
                }));
            },
            || {
                black_box(
                    p2.install(|| compute_root(&update, &store, &state, &opts))
                        .expect("compute"),
                );
            },
        );
        let s = out1.stats;
        // Floor A: every call at the cost of a 100-byte (one-permutation)
        // keccak. Floor B: each call weighted by its permutations (a full
        // branch of 532 bytes costs 4).
        let floor_a = s.keccak_calls as f64 * keccak;
        let floor_b = s.keccak_blocks as f64 * keccak;
        // About the fewest calls the touched paths need: one per distinct key,
        // one per re-hashed leaf (taken as one per distinct key) and one per
        // changed branch record.
        let minimum = 2 * s.touched_accounts + 2 * s.touched_slots + s.records_written;
        println!(
            "block on {n} accounts: fastest of 15: 1 thread {:.2} ms, 2 threads {:.2} ms (speed-up {:.2}x; medians {:.2} / {:.2} ms) | keccak calls {} (keys {}, distinct keys {}, approx. minimum {}), permutations {} -> floor A {:.2} ms, floor B {:.2} ms (1 thread = {:.2}x A, {:.2}x B) | records read {} written {} deleted {} | leaves read {}",
            t1.as_secs_f64() * 1e3,
            t2.as_secs_f64() * 1e3,
            t1.as_secs_f64() / t2.as_secs_f64(),
            m1.as_secs_f64() * 1e3,
            m2.as_secs_f64() * 1e3,
            s.keccak_calls,
            update.accounts.len() + update.storage.len() + update.wiped.len(),
            s.touched_accounts + s.touched_slots,
            minimum,
            s.keccak_blocks,
            floor_a / 1e6,
            floor_b / 1e6,
            t1.as_nanos() as f64 / floor_a,
            t1.as_nanos() as f64 / floor_b,
            s.records_read,
            s.records_written,
            s.records_deleted,
            s.leaves_read,
        );
        if cpu1.len() > 1 {
            cpu1.remove(0); // the warm-up
            let fastest = cpu1.iter().copied().min().unwrap_or_default();
            let med = median(cpu1);
            println!(
                "block on {n} accounts: 1 thread CPU time of 15: fastest {:.2} ms, median {:.2} ms (= {:.2}x / {:.2}x floor A, {:.2}x / {:.2}x floor B)",
                fastest.as_secs_f64() * 1e3,
                med.as_secs_f64() * 1e3,
                fastest.as_nanos() as f64 / floor_a,
                med.as_nanos() as f64 / floor_a,
                fastest.as_nanos() as f64 / floor_b,
                med.as_nanos() as f64 / floor_b,
            );
        }
        let mut group = c.benchmark_group("commitment_block");
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        group.throughput(Throughput::Elements(8_000));
        group.bench_with_input(BenchmarkId::new("strata_1_thread", n), &update, |b, u| {
            b.iter(|| {
                p1.install(|| compute_root(u, &store, &state, &opts))
                    .expect("compute")
            })
        });
        group.bench_with_input(BenchmarkId::new("strata_2_threads", n), &update, |b, u| {
            b.iter(|| {
                p2.install(|| compute_root(u, &store, &state, &opts))
                    .expect("compute")
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bulk_build, incremental_block);
criterion_main!(benches);
