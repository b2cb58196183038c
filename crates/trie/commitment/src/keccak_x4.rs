//! Four keccak256 digests at once, for independent trie nodes and keys.
//!
//! A single Keccak-f[1600] permutation is a chain of dependent steps that
//! does not vectorise, but four independent ones do: lane `i` of the four
//! states sits in the four 64-bit lanes of one 256-bit register, and each
//! step of a round is one vector instruction for all four. Sibling nodes of
//! a trie are independent of one another (an account leaf usually fits one
//! 136-byte block, a full branch takes four), so the bulk builder and the
//! walk hash them four at a time ([`keccak256_x4`]), and a block's touched
//! keys too ([`hash_each`]).
//!
//! The AVX-512VL path is chosen at run time (`is_x86_feature_detected!`); without
//! it each message goes through the scalar `keccak256`, so digests never
//! depend on the machine. No crate on stable Rust offers a multi-lane
//! Keccak (RustCrypto's `keccak` does behind nightly `portable_simd`), hence
//! this module.

use alloy_primitives::{B256, keccak256};

/// Bytes absorbed per Keccak-f call by keccak256 (1600 − 2·256 bits).
const RATE: usize = 136;

/// The longest message hashed in one Keccak-f call (one block with its
/// padding).
pub(crate) const MAX_ONE_BLOCK: usize = RATE - 1;

/// keccak256 of one to four messages, computed together; digest `i` is that
/// of `msgs[i]` (the rest are zero). Messages of any length are taken, but
/// four lanes run as many permutations as the longest needs, so callers
/// group messages of about the same length. A single message goes to the
/// scalar `keccak256`, which is cheaper than four lanes.
pub(crate) fn keccak256_x4(msgs: &[&[u8]]) -> [B256; 4] {
    assert!(
        (1..=4).contains(&msgs.len()),
        "keccak256_x4 takes one to four messages, not {}",
        msgs.len()
    );
    #[cfg(target_arch = "x86_64")]
    if msgs.len() > 1 && avx512::available() {
        return avx512::digest_x4(msgs);
    }
    one_by_one(msgs)
}

/// The scalar path: each message through `keccak256`.
fn one_by_one(msgs: &[&[u8]]) -> [B256; 4] {
    let mut out = [B256::ZERO; 4];
    for (digest, msg) in out.iter_mut().zip(msgs) {
        *digest = keccak256(msg);
    }
    out
}

/// Sets each item's hash to keccak256 of its `key`, four items at a time.
pub(crate) fn hash_each<T>(
    items: &mut [T],
    key: impl Fn(&T) -> &[u8],
    mut set: impl FnMut(&mut T, B256),
) {
    for chunk in items.chunks_mut(4) {
        let mut keys = [&[][..]; 4];
        for (k, item) in keys.iter_mut().zip(chunk.iter()) {
            *k = key(item);
        }
        let hashes = keccak256_x4(&keys[..chunk.len()]);
        for (item, hash) in chunk.iter_mut().zip(hashes) {
            set(item, hash);
        }
    }
}

/// How many blocks keccak256 absorbs for a message of `len` bytes.
pub(crate) fn block_count(len: usize) -> usize {
    len / RATE + 1
}

/// Block `b` of the padded message as little-endian lanes (keccak's
/// pad10*1 with the domain byte 0x01 in the last block).
fn block_lanes(msg: &[u8], b: usize) -> [u64; RATE / 8] {
    let mut block = [0u8; RATE];
    let part = &msg[(b * RATE).min(msg.len())..((b + 1) * RATE).min(msg.len())];
    block[..part.len()].copy_from_slice(part);
    if b + 1 == block_count(msg.len()) {
        block[part.len()] ^= 0x01;
        block[RATE - 1] ^= 0x80;
    }
    let mut lanes = [0u64; RATE / 8];
    for (lane, bytes) in lanes.iter_mut().zip(block.chunks_exact(8)) {
        *lane = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    }
    lanes
}

/// The 24 round constants of Keccak-f[1600] (iota).
const ROUND_CONSTANTS: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808a,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808b,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008a,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000a,
    0x0000_0000_8000_808b,
    0x8000_0000_0000_008b,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800a,
    0x8000_0000_8000_000a,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! The permutation on four states in 256-bit registers with AVX-512VL,
    //! whose lane rotation (`vprolq`) and three-input logic (`vpternlogq`)
    //! make a round ~95 instructions for all four states, and whose 32
    //! vector registers hold the 25 lanes without spilling. (Plain AVX2,
    //! with rotations as two shifts and an or and only 16 registers, was
    //! measured no faster than four scalar calls, so it is not used.)

    use std::arch::x86_64::{
        __m256i, _mm256_extract_epi64, _mm256_rol_epi64, _mm256_set_epi64x, _mm256_set1_epi64x,
        _mm256_setzero_si256, _mm256_ternarylogic_epi64, _mm256_xor_si256,
    };

    use super::{B256, RATE, ROUND_CONSTANTS, block_count, block_lanes};

    /// `vpternlogq` truth table of `a ^ b ^ c`.
    const XOR3: i32 = 0x96;
    /// `vpternlogq` truth table of chi's `a ^ (!b & c)`.
    const CHI: i32 = 0xd2;

    /// Whether this CPU runs [`digest_x4`].
    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl")
    }

    /// Digests of one to four messages; only where [`available`].
    pub(super) fn digest_x4(msgs: &[&[u8]]) -> [B256; 4] {
        assert!(
            available(),
            "keccak256_x4's AVX-512 path on a CPU without it"
        );
        // SAFETY: the assertion above checked at run time that the CPU has
        // AVX-512F and AVX-512VL, the features `digest_x4_avx512` enables.
        #[allow(unsafe_code)]
        unsafe {
            digest_x4_avx512(msgs)
        }
    }

    /// Absorbs the messages block by block, all four lanes at a time; a
    /// lane's digest is read right after its last block's permutation (the
    /// lanes of shorter or missing messages absorb zeros afterwards, unused).
    #[target_feature(enable = "avx512f,avx512vl")]
    fn digest_x4_avx512(msgs: &[&[u8]]) -> [B256; 4] {
        let blocks: [usize; 4] =
            std::array::from_fn(|i| msgs.get(i).map_or(0, |m| block_count(m.len())));
        let mut state = [_mm256_setzero_si256(); 25];
        let mut out = [B256::ZERO; 4];
        for b in 0..blocks.iter().copied().max().unwrap_or(0) {
            let words: [[u64; RATE / 8]; 4] = std::array::from_fn(|i| {
                if b < blocks[i] {
                    block_lanes(msgs[i], b)
                } else {
                    [0; RATE / 8]
                }
            });
            for (i, lane) in state.iter_mut().take(RATE / 8).enumerate() {
                // `as i64` reinterprets the bits.
                let block = _mm256_set_epi64x(
                    words[3][i] as i64,
                    words[2][i] as i64,
                    words[1][i] as i64,
                    words[0][i] as i64,
                );
                *lane = _mm256_xor_si256(*lane, block);
            }
            permute(&mut state);
            for (lane, digest) in out.iter_mut().enumerate() {
                if blocks[lane] == b + 1 {
                    *digest = lane_digest(&state, lane);
                }
            }
        }
        out
    }

    /// The digest of state `lane` (0..4): its first four 64-bit words.
    #[target_feature(enable = "avx512f,avx512vl")]
    fn lane_digest(state: &[__m256i; 25], lane: usize) -> B256 {
        let mut digest = B256::ZERO;
        for (w, &v) in state[..4].iter().enumerate() {
            let word = match lane {
                0 => _mm256_extract_epi64::<0>(v),
                1 => _mm256_extract_epi64::<1>(v),
                2 => _mm256_extract_epi64::<2>(v),
                _ => _mm256_extract_epi64::<3>(v),
            };
            digest.0[w * 8..w * 8 + 8].copy_from_slice(&(word as u64).to_le_bytes());
        }
        digest
    }

    /// theta's last step, rho and pi: lane `$from` (= x + 5y) xored with
    /// `$d[x]`, rotated by its rho offset into lane `y + 5·((2x + 3y) mod 5)`
    /// of `$b`, the table spelled out so each rotation is an immediate.
    macro_rules! theta_rho_pi {
        ($a:ident, $d:ident, $b:ident; $($from:literal => $to:literal by $l:literal),* $(,)?) => {
            $( $b[$to] = _mm256_rol_epi64::<$l>(_mm256_xor_si256($a[$from], $d[$from % 5])); )*
        };
    }

    /// Keccak-f[1600] on the four states: theta, rho and pi, chi, iota.
    #[target_feature(enable = "avx512f,avx512vl")]
    fn permute(a: &mut [__m256i; 25]) {
        for rc in ROUND_CONSTANTS {
            let c: [__m256i; 5] = std::array::from_fn(|x| {
                let three = _mm256_ternarylogic_epi64::<XOR3>(a[x], a[x + 5], a[x + 10]);
                _mm256_ternarylogic_epi64::<XOR3>(three, a[x + 15], a[x + 20])
            });
            let d: [__m256i; 5] = std::array::from_fn(|x| {
                _mm256_xor_si256(c[(x + 4) % 5], _mm256_rol_epi64::<1>(c[(x + 1) % 5]))
            });
            let mut b = [_mm256_xor_si256(a[0], d[0]); 25];
            theta_rho_pi!(a, d, b;
                1 => 10 by 1, 2 => 20 by 62, 3 => 5 by 28, 4 => 15 by 27,
                5 => 16 by 36, 6 => 1 by 44, 7 => 11 by 6, 8 => 21 by 55, 9 => 6 by 20,
                10 => 7 by 3, 11 => 17 by 10, 12 => 2 by 43, 13 => 12 by 25, 14 => 22 by 39,
                15 => 23 by 41, 16 => 8 by 45, 17 => 18 by 15, 18 => 3 by 21, 19 => 13 by 8,
                20 => 14 by 18, 21 => 24 by 2, 22 => 9 by 61, 23 => 19 by 56, 24 => 4 by 14,
            );
            for y in 0..5 {
                for x in 0..5 {
                    a[x + 5 * y] = _mm256_ternarylogic_epi64::<CHI>(
                        b[x + 5 * y],
                        b[(x + 1) % 5 + 5 * y],
                        b[(x + 2) % 5 + 5 * y],
                    );
                }
            }
            a[0] = _mm256_xor_si256(a[0], _mm256_set1_epi64x(rc as i64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four messages of `lens` bytes, each different.
    fn messages(lens: [usize; 4]) -> Vec<Vec<u8>> {
        (0..4u8)
            .map(|s| {
                (0..lens[s as usize])
                    .map(|i| (i as u8).wrapping_mul(31) ^ s.wrapping_mul(77))
                    .collect()
            })
            .collect()
    }

    /// Both paths (the vector one where the CPU has it) against keccak256.
    fn check(lens: [usize; 4]) {
        let msgs = messages(lens);
        let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        for (n, path) in (1..=4).flat_map(|n| [(n, true), (n, false)]) {
            let got = if path {
                keccak256_x4(&refs[..n])
            } else {
                one_by_one(&refs[..n])
            };
            for i in 0..4 {
                let expected = if i < n {
                    keccak256(refs[i])
                } else {
                    B256::ZERO
                };
                assert_eq!(
                    got[i], expected,
                    "lane {i} of {n}, lengths {lens:?}, vector path {path}"
                );
            }
        }
    }

    #[test]
    fn digests_match_keccak256_at_every_length_up_to_four_blocks() {
        for len in 0..=4 * RATE + 2 {
            check([len, len, len, len / 2]);
        }
    }

    #[test]
    fn lanes_of_different_block_counts_finish_apart() {
        check([532, 107, 0, 300]);
        check([135, 136, 271, 272]);
        check([1, 600, 33, 532]);
    }

    #[test]
    fn each_item_gets_the_hash_of_its_key() {
        for n in 0..11u8 {
            let mut items: Vec<(Vec<u8>, B256)> = (0..n)
                .map(|i| (vec![i; 20 + i as usize], B256::ZERO))
                .collect();
            hash_each(&mut items, |(k, _)| k, |(_, h), hash| *h = hash);
            for (key, hash) in &items {
                assert_eq!(*hash, keccak256(key), "{n} items");
            }
        }
    }

    #[test]
    #[should_panic(expected = "one to four messages")]
    fn five_messages_are_refused() {
        keccak256_x4(&[&[], &[], &[], &[], &[]]);
    }
}
