//! The proof-of-work difficulty a block must carry, from its parent: the
//! Frontier, Homestead (EIP-2) and Byzantium (EIP-100) adjustments and the
//! difficulty bomb with each fork's delay (EIP-649, 1234, 2384, 3554, 4345,
//! 5133).

use alloy_consensus::{EMPTY_OMMER_ROOT_HASH, Header};
use alloy_hardforks::{EthereumHardfork, EthereumHardforks};
use alloy_primitives::U256;

use crate::ChainSpec;

/// The lowest difficulty a block may have.
const MINIMUM_DIFFICULTY: u64 = 131_072;
/// The parent's difficulty is adjusted in steps of this fraction.
const DIFFICULTY_BOUND_DIVISOR: u64 = 2048;
/// The bomb doubles every this many blocks.
const BOMB_PERIOD: u64 = 100_000;

/// The difficulty `header` must carry after `parent` on a proof-of-work chain.
pub fn ethash_difficulty(spec: &ChainSpec, header: &Header, parent: &Header) -> U256 {
    let number = header.number;
    let elapsed = header.timestamp.saturating_sub(parent.timestamp);
    let step = parent.difficulty / U256::from(DIFFICULTY_BOUND_DIVISOR);
    // The adjustment in steps of `step`, between -99 and +2.
    let adjustment: i64 = if spec.is_byzantium_active_at_block(number) {
        let uncles = if parent.ommers_hash == EMPTY_OMMER_ROOT_HASH {
            1
        } else {
            2
        };
        (uncles - (elapsed / 9) as i64).max(-99)
    } else if spec.is_homestead_active_at_block(number) {
        (1 - (elapsed / 10) as i64).max(-99)
    } else if elapsed < 13 {
        1
    } else {
        -1
    };
    let change = step * U256::from(adjustment.unsigned_abs());
    let adjusted = if adjustment >= 0 {
        parent.difficulty.saturating_add(change)
    } else {
        parent.difficulty.saturating_sub(change)
    };
    let mut difficulty = adjusted.max(U256::from(MINIMUM_DIFFICULTY));
    let bomb_number = number.saturating_sub(bomb_delay(spec, number));
    let periods = bomb_number / BOMB_PERIOD;
    if periods > 1 {
        difficulty = difficulty.saturating_add(U256::from(1) << (periods - 2) as usize);
    }
    difficulty
}

/// How many blocks the bomb is pushed back at `number`.
fn bomb_delay(spec: &ChainSpec, number: u64) -> u64 {
    let delays = [
        (EthereumHardfork::GrayGlacier, 11_400_000),
        (EthereumHardfork::ArrowGlacier, 10_700_000),
        (EthereumHardfork::London, 9_700_000),
        (EthereumHardfork::MuirGlacier, 9_000_000),
        (EthereumHardfork::Constantinople, 5_000_000),
        (EthereumHardfork::Byzantium, 3_000_000),
    ];
    delays
        .iter()
        .find(|(fork, _)| spec.is_ethereum_fork_active_at_block(*fork, number))
        .map_or(0, |(_, delay)| *delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(number: u64, timestamp: u64, difficulty: u64) -> Header {
        Header {
            number,
            timestamp,
            difficulty: U256::from(difficulty),
            ..Header::default()
        }
    }

    #[test]
    fn homestead_raises_for_quick_blocks_and_lowers_for_slow_ones() {
        let spec = ChainSpec::from_test_network("Homestead").unwrap();
        let parent = header(1, 100, 0x20000 * 4);
        // 0x80000 / 2048 = 256 per step.
        assert_eq!(
            ethash_difficulty(&spec, &header(2, 105, 0), &parent),
            U256::from(0x80000 + 256)
        );
        assert_eq!(
            ethash_difficulty(&spec, &header(2, 130, 0), &parent),
            U256::from(0x80000 - 2 * 256)
        );
    }

    #[test]
    fn byzantium_counts_the_parents_uncles_and_never_goes_below_the_minimum() {
        let spec = ChainSpec::from_test_network("Byzantium").unwrap();
        let mut parent = header(1, 100, 0x20000);
        assert_eq!(
            ethash_difficulty(&spec, &header(2, 200, 0), &parent),
            U256::from(MINIMUM_DIFFICULTY)
        );
        parent.ommers_hash = alloy_primitives::B256::repeat_byte(1);
        assert_eq!(
            ethash_difficulty(&spec, &header(2, 101, 0), &parent),
            U256::from(0x20000 + 2 * 64)
        );
    }
}
