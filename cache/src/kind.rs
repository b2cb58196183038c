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
    /// [`MutexLruCache`](crate::MutexLruCache): one mutex around one LRU
    /// (the baseline Erigon's BranchCache started from).
    MutexLru,
    /// [`ShardedLruCache`](crate::ShardedLruCache): LRU shards, each behind
    /// its own cache-padded mutex.
    ShardedLru,
}

impl CacheKind {
    /// Every kind, ours first.
    pub const ALL: [CacheKind; 3] = [
        CacheKind::Sharded,
        CacheKind::MutexLru,
        CacheKind::ShardedLru,
    ];

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            CacheKind::Sharded => "sharded",
            CacheKind::MutexLru => "mutex-lru",
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
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| CacheError::UnknownKind {
                found: s.to_owned(),
                expected: CacheKind::ALL.map(CacheKind::name).join(", "),
            })
    }
}
