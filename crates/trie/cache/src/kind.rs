//! Names for the cache implementations, as the CLI and benches spell them.

use std::fmt;
use std::str::FromStr;

use crate::CacheError;

/// Which [`PrefixCache`](crate::PrefixCache) implementation to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheKind {
    /// [`BranchCache`](crate::BranchCache): quick_cache shards plus lock-free
    /// pinned top levels. The engine's default.
    Sharded,
    /// `MutexLruCache`: one mutex around one LRU (the baseline Erigon's
    /// BranchCache started from). Feature `baselines`.
    #[cfg(feature = "baselines")]
    MutexLru,
    /// `ShardedLruCache`: LRU shards, each behind its own cache-padded
    /// mutex. Feature `baselines`.
    #[cfg(feature = "baselines")]
    ShardedLru,
}

impl CacheKind {
    /// Every kind built in, ours first.
    #[cfg(feature = "baselines")]
    pub const ALL: &'static [CacheKind] = &[
        CacheKind::Sharded,
        CacheKind::MutexLru,
        CacheKind::ShardedLru,
    ];
    /// Every kind built in (the baselines need feature `baselines`).
    #[cfg(not(feature = "baselines"))]
    pub const ALL: &'static [CacheKind] = &[CacheKind::Sharded];

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            CacheKind::Sharded => "sharded",
            #[cfg(feature = "baselines")]
            CacheKind::MutexLru => "mutex-lru",
            #[cfg(feature = "baselines")]
            CacheKind::ShardedLru => "sharded-lru",
        }
    }
}

impl fmt::Display for CacheKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CacheKind {
    type Err = CacheError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CacheKind::ALL
            .iter()
            .copied()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| CacheError::UnknownKind {
                found: s.to_owned(),
                expected: CacheKind::ALL
                    .iter()
                    .map(|kind| kind.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}
