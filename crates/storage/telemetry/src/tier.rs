//! Where a read was answered.

use std::fmt;

/// File levels tracked separately; deeper levels share the last one.
pub const MAX_FILE_LEVELS: usize = 8;

/// Number of distinct tiers: memory, the two caches, db, the file levels
/// and "absent".
pub const TIER_COUNT: usize = 5 + MAX_FILE_LEVELS;

const NAMES: [&str; TIER_COUNT] = [
    "memory",
    "branch_cache",
    "value_cache",
    "db",
    "file0",
    "file1",
    "file2",
    "file3",
    "file4",
    "file5",
    "file6",
    "file7",
    "absent",
];

/// Where a read was answered; a read of a key that no tier holds is
/// counted apart, as [`Tier::Absent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// The uncommitted writes of the block being written (a block writer's
    /// own reads) or the committed blocks not yet flushed to redb.
    Memory,
    /// The branch cache (commitment records read by the commitment).
    BranchCache,
    /// The state value cache (account, storage and code values and known
    /// absences, filled by commits, reads and prefetch).
    ValueCache,
    /// redb.
    Db,
    /// An immutable file; level 0 is the newest file, searched first.
    /// Levels ≥ [`MAX_FILE_LEVELS`] - 1 share the last bucket ("file7").
    File(u8),
    /// No tier holds the key: every tier was searched (the time is the
    /// whole search).
    Absent,
}

impl Tier {
    /// Every tracked tier in index order (the file levels 0..=7).
    pub const ALL: [Tier; TIER_COUNT] = [
        Tier::Memory,
        Tier::BranchCache,
        Tier::ValueCache,
        Tier::Db,
        Tier::File(0),
        Tier::File(1),
        Tier::File(2),
        Tier::File(3),
        Tier::File(4),
        Tier::File(5),
        Tier::File(6),
        Tier::File(7),
        Tier::Absent,
    ];

    /// A dense index in `0..TIER_COUNT`; deep file levels are capped.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            Tier::Memory => 0,
            Tier::BranchCache => 1,
            Tier::ValueCache => 2,
            Tier::Db => 3,
            Tier::Absent => TIER_COUNT - 1,
            Tier::File(level) => {
                let level = level as usize;
                4 + if level < MAX_FILE_LEVELS {
                    level
                } else {
                    MAX_FILE_LEVELS - 1
                }
            }
        }
    }

    /// The tier at a dense index, the inverse of [`index`](Self::index).
    pub const fn from_index(index: usize) -> Option<Tier> {
        if index < TIER_COUNT {
            Some(Tier::ALL[index])
        } else {
            None
        }
    }

    /// The lower-case name used in metrics: "memory", "branch_cache",
    /// "value_cache", "db", "file0" … "file7", "absent".
    pub const fn name(self) -> &'static str {
        NAMES[self.index()]
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_dense_and_deep_levels_share_the_last() {
        for (i, tier) in Tier::ALL.into_iter().enumerate() {
            assert_eq!(tier.index(), i);
            assert_eq!(Tier::from_index(i), Some(tier));
        }
        assert_eq!(Tier::from_index(TIER_COUNT), None);
        assert_eq!(Tier::File(7).index(), Tier::File(200).index());
        assert_eq!(Tier::File(9).name(), "file7");
        assert_eq!(Tier::File(0).to_string(), "file0");
        assert_eq!(Tier::Db.name(), "db");
        assert_eq!(Tier::Absent.name(), "absent");
        assert_eq!(Tier::Absent.index(), TIER_COUNT - 1);
    }
}
