//! Four keccak256 digests at once, for the bulk builder's leaves.
//!
//! A single Keccak-f[1600] permutation is a chain of dependent steps that
//! does not vectorise, but four independent ones do: lane `i` of the four
//! states sits in the four 64-bit lanes of one AVX2 register, and each step
//! of a round is one vector instruction for all four. A trie's leaves are
//! independent of one another and nearly all fit in one 136-byte block
//! (an account leaf is ~110–120 bytes, a storage leaf at most ~70), so the
//! bulk builder hashes them four at a time ([`keccak256_x4`]).
//!
//! The AVX2 path is chosen at run time (`is_x86_feature_detected!`); without
//! it each message goes through the scalar `keccak256`, so digests never
//! depend on the machine. No crate on stable Rust offers a multi-lane
//! Keccak (RustCrypto's `keccak` does behind nightly `portable_simd`), hence
//! this module.

use alloy_primitives::{B256, keccak256};

/// Bytes absorbed per Keccak-f call by keccak256 (1600 − 2·256 bits).
const RATE: usize = 136;

/// The longest message [`keccak256_x4`] takes: one block with its padding.
pub(crate) const MAX_ONE_BLOCK: usize = RATE - 1;

/// keccak256 of one to four messages of at most [`MAX_ONE_BLOCK`] bytes
/// each, computed together; digest `i` is that of `msgs[i]` (the rest are
/// zero). A single message goes to the scalar `keccak256`, which is cheaper
/// than four lanes.
pub(crate) fn keccak256_x4(msgs: &[&[u8]]) -> [B256; 4] {
    assert!(
        (1..=4).contains(&msgs.len()) && msgs.iter().all(|m| m.len() <= MAX_ONE_BLOCK),
        "keccak256_x4 takes one to four one-block messages"
    );
    let mut out = [B256::ZERO; 4];
    #[cfg(target_arch = "x86_64")]
    if msgs.len() > 1 && avx512::available() {
        let lanes = avx512::digest_x4(std::array::from_fn(|i| {
            padded_block(msgs.get(i).copied().unwrap_or_default())
        }));
        out[..msgs.len()].copy_from_slice(&lanes[..msgs.len()]);
        return out;
    }
    for (digest, msg) in out.iter_mut().zip(msgs) {
        *digest = keccak256(msg);
    }
    out
}

/// Sets each item's hash to keccak256 of its `key` (at most
/// [`MAX_ONE_BLOCK`] bytes), four items at a time.
pub(crate) fn hash_each<T>(
    items: &mut [T],
    key: impl Fn(&T) -> &[u8],
    mut set: impl FnMut(&mut T, B256),
) {
    let mut chunks = items.chunks_exact_mut(4);
    for chunk in &mut chunks {
        let hashes = keccak256_x4(&[
            key(&chunk[0]),
            key(&chunk[1]),
            key(&chunk[2]),
            key(&chunk[3]),
        ]);
        for (item, hash) in chunk.iter_mut().zip(hashes) {
            set(item, hash);
        }
    }
    for item in chunks.into_remainder() {
        let hash = keccak256(key(item));
        set(item, hash);
    }
}

/// The message's one padded block as little-endian lanes (keccak's pad10*1
/// with the domain byte 0x01).
fn padded_block(msg: &[u8]) -> [u64; RATE / 8] {
    let mut block = [0u8; RATE];
    block[..msg.len()].copy_from_slice(msg);
    block[msg.len()] ^= 0x01;
    block[RATE - 1] ^= 0x80;
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

    use super::{B256, RATE, ROUND_CONSTANTS};

    /// `vpternlogq` truth table of `a ^ b ^ c`.
    const XOR3: i32 = 0x96;
    /// `vpternlogq` truth table of chi's `a ^ (!b & c)`.
    const CHI: i32 = 0xd2;

    /// Whether this CPU runs [`digest_x4`].
    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl")
    }

    /// Digests of four padded one-block messages; only where [`available`].
    pub(super) fn digest_x4(blocks: [[u64; RATE / 8]; 4]) -> [B256; 4] {
        assert!(
            available(),
            "keccak256_x4's AVX-512 path on a CPU without it"
        );
        // SAFETY: the assertion above checked at run time that the CPU has
        // AVX-512F and AVX-512VL, the features `digest_x4_avx512` enables.
        #[allow(unsafe_code)]
        unsafe {
            digest_x4_avx512(&blocks)
        }
    }

    #[target_feature(enable = "avx512f,avx512vl")]
    fn digest_x4_avx512(blocks: &[[u64; RATE / 8]; 4]) -> [B256; 4] {
        let mut state = [_mm256_setzero_si256(); 25];
        for (i, lane) in state.iter_mut().take(RATE / 8).enumerate() {
            // `as i64` reinterprets the bits.
            *lane = _mm256_set_epi64x(
                blocks[3][i] as i64,
                blocks[2][i] as i64,
                blocks[1][i] as i64,
                blocks[0][i] as i64,
            );
        }
        permute(&mut state);
        let mut out = [B256::ZERO; 4];
        for (w, &lane) in state[..4].iter().enumerate() {
            let words = [
                _mm256_extract_epi64::<0>(lane),
                _mm256_extract_epi64::<1>(lane),
                _mm256_extract_epi64::<2>(lane),
                _mm256_extract_epi64::<3>(lane),
            ];
            for (digest, word) in out.iter_mut().zip(words) {
                digest.0[w * 8..w * 8 + 8].copy_from_slice(&(word as u64).to_le_bytes());
            }
        }
        out
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

    #[test]
    fn four_digests_match_keccak256_at_every_one_block_length() {
        for len in 0..=MAX_ONE_BLOCK {
            let msgs: Vec<Vec<u8>> = (0..4u8)
                .map(|s| {
                    (0..len)
                        .map(|i| (i as u8).wrapping_mul(31) ^ s.wrapping_mul(77))
                        .collect()
                })
                .collect();
            // Different lengths side by side too.
            let short = &msgs[3][..len / 2];
            let got = keccak256_x4(&[&msgs[0], &msgs[1], &msgs[2], short]);
            for n in 1..4 {
                let fewer = keccak256_x4(&[&msgs[0][..], &msgs[1], &msgs[2]][..n]);
                assert_eq!(fewer[..n], got[..n], "{n} messages of length {len}");
                assert!(fewer[n..].iter().all(|d| d.is_zero()));
            }
            assert_eq!(got[0], keccak256(&msgs[0]), "length {len}");
            assert_eq!(got[1], keccak256(&msgs[1]), "length {len}");
            assert_eq!(got[2], keccak256(&msgs[2]), "length {len}");
            assert_eq!(got[3], keccak256(short), "length {}", len / 2);
        }
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
    #[should_panic(expected = "one-block messages")]
    fn a_two_block_message_is_refused() {
        keccak256_x4(&[&[0u8; 136], &[]]);
    }
}
