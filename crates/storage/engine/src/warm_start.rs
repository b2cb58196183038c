//! The branch cache warmed before the first block: the account trie's top
//! levels, which nearly every block's root reads, read into it at open and
//! after a genesis or a state import, so the first blocks do not pay a
//! file read for each of them one miss at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_commitment::warm_top_levels;
use strata_types::domain::Regime;
use strata_view::sources::CachedBranches;

use crate::inner::Inner;

/// The share of the branch cache the warm start may fill.
const CACHE_SHARE: u64 = 4;

/// What a warm start read into the branch cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmStart {
    /// Records read.
    pub records: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Branch levels below the root record read whole.
    pub levels: usize,
    /// How long it took.
    pub took: Duration,
}

/// Reads the top levels of the account trie of the current head into the
/// branch cache, when [`crate::Options::warm_start`] is on and the store
/// has a head; `None` otherwise. The caller holds the writer slot or has
/// no writer yet, so no commit writes the cache meanwhile (a record read
/// here is the head's). A record that cannot be read ends the warm start
/// with a warning: the block that needs it will fail on it, naming it.
pub(crate) fn warm_branch_cache(inner: &Arc<Inner>) -> Option<WarmStart> {
    if !inner.options.warm_start {
        return None;
    }
    let snapshot = inner.current.load_full();
    let block = snapshot.block()?;
    let started = Instant::now();
    let reader = inner.reader(snapshot, None, Regime::Commitment).untimed();
    let branches = CachedBranches::for_commitment(reader, inner.cache.clone());
    match warm_top_levels(&branches, inner.options.cache_bytes / CACHE_SHARE) {
        Ok(read) => {
            let warm = WarmStart {
                records: read.records,
                bytes: read.bytes,
                levels: read.levels,
                took: started.elapsed(),
            };
            tracing::debug!(
                block,
                records = warm.records,
                bytes = warm.bytes,
                levels = warm.levels,
                ms = warm.took.as_millis() as u64,
                "branch cache warmed"
            );
            Some(warm)
        }
        Err(error) => {
            tracing::warn!(block, %error, "branch cache warm start stopped");
            None
        }
    }
}

#[cfg(all(test, feature = "test-utils"))]
mod tests {
    use alloy_primitives::Address;

    use crate::test_chain::{account, options};
    use crate::{Options, StateDb};

    fn address(i: u64) -> Address {
        Address::left_padding_from(&i.to_be_bytes())
    }

    /// A store of 5,000 accounts, flushed and closed.
    fn store(dir: &std::path::Path) {
        let db = StateDb::open(dir, options()).unwrap();
        let mut writer = db.begin_block(0).unwrap();
        for i in 0..5_000 {
            writer.put_account(address(i), &account(i));
        }
        writer.commit().unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }

    /// Reopened, the store reads the account trie's top levels into the
    /// branch cache before its first block, and that block's root is the
    /// one the same block gives over a store opened without the warm start.
    #[test]
    fn an_open_warms_the_top_levels_and_the_next_root_is_unchanged() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let mut roots = Vec::new();
        for (dir, warm) in dirs.iter().zip([true, false]) {
            store(dir.path());
            let db = StateDb::open(dir.path(), Options::with_warm_start(options(), warm)).unwrap();
            let cache = db.cache_stats();
            match db.warm_start() {
                Some(read) => {
                    assert!(warm);
                    // 5,000 accounts: the root and two full levels at least.
                    assert!(read.levels >= 2 && read.records > 16 * 16, "{read:?}");
                    assert!(cache.entries >= read.records as u64, "{cache:?}");
                }
                None => {
                    assert!(!warm);
                    assert_eq!(cache.entries, 0, "{cache:?}");
                }
            }
            let mut writer = db.begin_block(1).unwrap();
            for i in (0..5_000).step_by(7) {
                writer.put_account(address(i), &account(i + 1));
            }
            writer.commit().unwrap();
            roots.push(db.root());
            db.close().unwrap();
        }
        assert_eq!(roots[0], roots[1]);
    }
}
