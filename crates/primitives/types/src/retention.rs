//! How much of the past a datadir keeps ([`HistoryRetention`]): fixed when
//! the datadir is made and recorded in it.

use std::fmt;
use std::str::FromStr;

/// How far back a datadir answers reads and proofs.
///
/// `Off` keeps today's window: the last `unwind_depth` blocks, rebuilt
/// from the journal's unwind data. `Full` keeps each key's value before
/// every change from the block the history starts at, and `Blocks(n)` the
/// last `n` blocks of it. Written as `off`, `full` or a block count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HistoryRetention {
    /// Only the unwind window.
    #[default]
    Off,
    /// Every block since the history started.
    Full,
    /// The last `n` blocks, the last one included (at least 1).
    Blocks(u64),
}

impl HistoryRetention {
    /// Whether history is kept at all.
    pub fn is_on(self) -> bool {
        self != HistoryRetention::Off
    }

    /// The encoding recorded in a datadir (`u64::MAX`: full, 0: off).
    pub fn to_u64(self) -> u64 {
        match self {
            HistoryRetention::Off => 0,
            HistoryRetention::Full => u64::MAX,
            HistoryRetention::Blocks(n) => n,
        }
    }

    /// The retention a recorded value stands for.
    pub fn from_u64(value: u64) -> HistoryRetention {
        match value {
            0 => HistoryRetention::Off,
            u64::MAX => HistoryRetention::Full,
            n => HistoryRetention::Blocks(n),
        }
    }

    /// The oldest block kept when the last is `last` and the history
    /// started at `from` (`None`: no history): `from`, or with `Blocks(n)`
    /// no more than `n` blocks, the last one included.
    pub fn oldest(self, from: u64, last: u64) -> Option<u64> {
        match self {
            HistoryRetention::Off => None,
            HistoryRetention::Full => Some(from.min(last)),
            HistoryRetention::Blocks(n) => {
                Some(from.max(last.saturating_sub(n.saturating_sub(1))).min(last))
            }
        }
    }
}

impl fmt::Display for HistoryRetention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryRetention::Off => f.write_str("off"),
            HistoryRetention::Full => f.write_str("full"),
            HistoryRetention::Blocks(n) => write!(f, "{n} blocks"),
        }
    }
}

/// A retention that is none of `off`, `full` or a positive block count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("history retention {0:?}: expected off, full or a number of blocks (at least 1)")]
pub struct ParseRetentionError(pub String);

impl FromStr for HistoryRetention {
    type Err = ParseRetentionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "off" => Ok(HistoryRetention::Off),
            "full" => Ok(HistoryRetention::Full),
            other => match other.parse::<u64>() {
                Ok(n) if (1..u64::MAX).contains(&n) => Ok(HistoryRetention::Blocks(n)),
                _ => Err(ParseRetentionError(text.to_string())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_reads_back_as_written_and_bounds_the_blocks_kept() {
        for retention in [
            HistoryRetention::Off,
            HistoryRetention::Full,
            HistoryRetention::Blocks(1),
            HistoryRetention::Blocks(90_000),
        ] {
            assert_eq!(HistoryRetention::from_u64(retention.to_u64()), retention);
        }
        assert_eq!("full".parse(), Ok(HistoryRetention::Full));
        assert_eq!("512".parse(), Ok(HistoryRetention::Blocks(512)));
        assert!("0".parse::<HistoryRetention>().is_err());
        assert!("all".parse::<HistoryRetention>().is_err());
        assert_eq!(HistoryRetention::Full.oldest(10, 500), Some(10));
        assert_eq!(HistoryRetention::Blocks(100).oldest(10, 500), Some(401));
        assert_eq!(HistoryRetention::Blocks(1).oldest(10, 500), Some(500));
        assert_eq!(HistoryRetention::Blocks(1000).oldest(10, 500), Some(10));
        assert_eq!(HistoryRetention::Off.oldest(10, 500), None);
    }
}
