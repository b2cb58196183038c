//! The store's block-level figures: how long commits, roots, journal
//! writes, flushes and maintenance steps took, and how much they moved.
//! Recorded once per event with relaxed atomics (never on the read path);
//! read by exporters such as [`crate::prometheus`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::durations::DurationHistogram;

/// Durations and totals of the store's commits, flushes and maintenance.
#[derive(Debug, Default)]
pub struct StoreMetrics {
    commit: DurationHistogram,
    root: DurationHistogram,
    journal_write: DurationHistogram,
    flush: DurationHistogram,
    collate: DurationHistogram,
    merge: DurationHistogram,
    blocks: AtomicU64,
    keys_written: AtomicU64,
    journal_bytes: AtomicU64,
    warmer_loads: AtomicU64,
    pruned: AtomicU64,
}

/// One committed block's figures, as [`StoreMetrics::record_commit`] takes them.
#[derive(Clone, Copy, Debug)]
pub struct CommitFigures {
    /// The whole commit (root, journal write, publication).
    pub total: Duration,
    /// The state-root calculation.
    pub root: Duration,
    /// The journal append (and its fsync when the block is durable).
    pub journal_write: Duration,
    /// State keys the block wrote.
    pub keys_written: u64,
    /// Bytes of the block's journal record.
    pub journal_bytes: u64,
    /// Loads the block's warmers made.
    pub warmer_loads: u64,
}

impl StoreMetrics {
    /// Records one committed block.
    pub fn record_commit(&self, figures: CommitFigures) {
        self.commit.record(figures.total);
        self.root.record(figures.root);
        self.journal_write.record(figures.journal_write);
        self.blocks.fetch_add(1, Ordering::Relaxed);
        self.keys_written
            .fetch_add(figures.keys_written, Ordering::Relaxed);
        self.journal_bytes
            .fetch_add(figures.journal_bytes, Ordering::Relaxed);
        self.warmer_loads
            .fetch_add(figures.warmer_loads, Ordering::Relaxed);
    }

    /// Records one flush of the memory tier into redb.
    pub fn record_flush(&self, duration: Duration) {
        self.flush.record(duration);
    }

    /// Records one collation and the db entries it pruned.
    pub fn record_collate(&self, duration: Duration, pruned: u64) {
        self.collate.record(duration);
        self.pruned.fetch_add(pruned, Ordering::Relaxed);
    }

    /// Records one merge of files.
    pub fn record_merge(&self, duration: Duration) {
        self.merge.record(duration);
    }

    /// Whole block commits (root, journal write, publication).
    pub fn commit(&self) -> &DurationHistogram {
        &self.commit
    }

    /// The state-root calculation of each block.
    pub fn root(&self) -> &DurationHistogram {
        &self.root
    }

    /// Making each block durable: unwind data, journal record, append, fsync.
    pub fn journal_write(&self) -> &DurationHistogram {
        &self.journal_write
    }

    /// Each flush of a batch of blocks from the memory tier into redb.
    pub fn flush(&self) -> &DurationHistogram {
        &self.flush
    }

    /// Each collation (db steps → a new file, with the prune of what it took).
    pub fn collate(&self) -> &DurationHistogram {
        &self.collate
    }

    /// Each merge of two adjacent files.
    pub fn merge(&self) -> &DurationHistogram {
        &self.merge
    }

    /// Blocks committed since the store was opened.
    pub fn blocks(&self) -> u64 {
        self.blocks.load(Ordering::Relaxed)
    }

    /// Keys written by those blocks (commitment records included).
    pub fn keys_written(&self) -> u64 {
        self.keys_written.load(Ordering::Relaxed)
    }

    /// Bytes of journal records those blocks appended.
    pub fn journal_bytes(&self) -> u64 {
        self.journal_bytes.load(Ordering::Relaxed)
    }

    /// Branch prefixes the warmers loaded for those blocks.
    pub fn warmer_loads(&self) -> u64 {
        self.warmer_loads.load(Ordering::Relaxed)
    }

    /// Db entries pruned by collations (a file now holds them).
    pub fn pruned(&self) -> u64 {
        self.pruned.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_add_up() {
        let metrics = StoreMetrics::default();
        for _ in 0..3 {
            metrics.record_commit(CommitFigures {
                total: Duration::from_millis(5),
                root: Duration::from_millis(3),
                journal_write: Duration::from_millis(1),
                keys_written: 10,
                journal_bytes: 100,
                warmer_loads: 7,
            });
        }
        metrics.record_collate(Duration::from_millis(2), 4);
        assert_eq!(metrics.blocks(), 3);
        assert_eq!(metrics.keys_written(), 30);
        assert_eq!(metrics.journal_bytes(), 300);
        assert_eq!(metrics.warmer_loads(), 21);
        assert_eq!(metrics.pruned(), 4);
        assert_eq!(metrics.commit().counts().count, 3);
        assert_eq!(metrics.root().counts().count, 3);
        assert_eq!(metrics.collate().counts().count, 1);
        assert_eq!(metrics.merge().counts().count, 0);
        assert_eq!(metrics.flush().counts().count, 0);
    }
}
