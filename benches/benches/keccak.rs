//! keccak256 implementations side by side: alloy-primitives' `keccak256`
//! (the workspace enables `asm-keccak`), `sha3::Keccak256` and `tiny-keccak`,
//! on the input sizes the trie hashes: a 32-byte key (address or slot
//! preimage, padded), a 64-byte small node, a ~107-byte account leaf and a
//! 532-byte full branch. Each hash feeds the next input, as in a Merkle fold,
//! so the figures are latencies. All three must give the same digests.
//!
//! `cargo bench -p strata-benches --bench keccak`

use std::hint::black_box;

use alloy_primitives::keccak256;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sha3::Digest;
use strata_commitment::bench_support::keccak256_x4;
use tiny_keccak::Hasher;

/// A keccak256 implementation under test.
type Keccak = fn(&[u8]) -> [u8; 32];

fn with_sha3(data: &[u8]) -> [u8; 32] {
    sha3::Keccak256::digest(data).into()
}

fn with_tiny(data: &[u8]) -> [u8; 32] {
    let mut k = tiny_keccak::Keccak::v256();
    k.update(data);
    let mut out = [0u8; 32];
    k.finalize(&mut out);
    out
}

fn with_alloy(data: &[u8]) -> [u8; 32] {
    keccak256(data).0
}

/// Hashes `input` `n` times, each digest overwriting the input's head.
fn chain(input: &mut [u8], n: usize, hash: Keccak) {
    for _ in 0..n {
        let h = hash(input);
        input[..32].copy_from_slice(&h);
    }
}

fn implementations(c: &mut Criterion) {
    let contenders: [(&str, Keccak); 3] = [
        ("alloy_asm_keccak", with_alloy),
        ("sha3", with_sha3),
        ("tiny_keccak", with_tiny),
    ];
    let mut group = c.benchmark_group("keccak256");
    for len in [32usize, 64, 107, 532] {
        let input: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        // Same digests, including after a chain of 1,000 hashes.
        let expected = {
            let mut v = input.clone();
            chain(&mut v, 1_000, with_alloy);
            v
        };
        for (name, f) in contenders {
            assert_eq!(
                f(&input),
                with_alloy(&input),
                "{name} differs on {len} bytes"
            );
            let mut v = input.clone();
            chain(&mut v, 1_000, f);
            assert_eq!(v, expected, "{name} differs after a chain on {len} bytes");
        }
        group.throughput(Throughput::Bytes(len as u64));
        for (name, f) in contenders {
            group.bench_with_input(BenchmarkId::new(name, len), &input, |b, input| {
                let mut v = input.clone();
                b.iter(|| {
                    chain(&mut v, 1, f);
                    black_box(&v);
                })
            });
        }
    }
    group.finish();
}

/// Four independent leaves hashed one after another by the scalar asm
/// keccak against one call of strata's four-lane `keccak256_x4` (what the
/// bulk builder does with its leaves), on account-leaf-sized (107 bytes) and
/// storage-leaf-sized (64 bytes) inputs. Throughput is in hashes.
fn four_at_once(c: &mut Criterion) {
    let mut group = c.benchmark_group("keccak256_four_leaves");
    for len in [64usize, 107] {
        let inputs: [Vec<u8>; 4] =
            std::array::from_fn(|s| (0..len).map(|i| (i * 31 + s * 7) as u8).collect());
        let msgs = [&inputs[0][..], &inputs[1], &inputs[2], &inputs[3]];
        assert_eq!(
            keccak256_x4(msgs),
            msgs.map(keccak256),
            "keccak256_x4 differs on {len} bytes"
        );
        group.throughput(Throughput::Elements(4));
        group.bench_with_input(
            BenchmarkId::new("alloy_asm_keccak_4_calls", len),
            &msgs,
            |b, m| b.iter(|| black_box(black_box(*m).map(keccak256))),
        );
        group.bench_with_input(
            BenchmarkId::new("strata_keccak256_x4", len),
            &msgs,
            |b, m| b.iter(|| black_box(keccak256_x4(black_box(*m)))),
        );
    }
    group.finish();
}

criterion_group!(benches, implementations, four_at_once);
criterion_main!(benches);
