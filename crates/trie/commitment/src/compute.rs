//! `compute_root`: the per-block incremental root calculation.

use alloy_primitives::B256;
use bytes::Bytes;
use rayon::slice::ParallelSliceMut;

use crate::error::CommitmentError;
use crate::source::{BranchSource, StateSource};
use crate::stats::CommitStats;
use crate::touch::{TrieUpdate, prepare};
use crate::walk::{Sub, Walker};

/// Tuning for [`compute_root`].
#[derive(Clone, Debug)]
pub struct ComputeOptions {
    /// Touched keys (accounts plus slots) above which a branch's children are
    /// walked in parallel on the current rayon pool. Below a split, a child
    /// that holds more than a quarter of the keys splits again, so one
    /// account with many slots also spreads over the pool. The root is the
    /// same either way.
    pub parallel_threshold: usize,
}

impl Default for ComputeOptions {
    fn default() -> Self {
        Self {
            parallel_threshold: 64,
        }
    }
}

/// A changed record: its nibble path and its new bytes (`None` = delete).
pub type RecordWrite = (Vec<u8>, Option<Bytes>);

/// What [`compute_root`] returns.
#[derive(Clone, Debug)]
pub struct CommitOutput {
    /// The new state root.
    pub root: B256,
    /// Every record that changed, sorted by nibble path, one entry per path.
    pub writes: Vec<RecordWrite>,
    /// Counters.
    pub stats: CommitStats,
}

/// Computes the new state root after a block that touched `update`'s keys.
///
/// Walks only the touched hashed paths: records come from `branches` (the
/// trie as persisted after the previous block), leaf values from `state` (the
/// state after this block). The caller persists `writes` so the next call
/// sees them. Cost grows with touched keys × depth, not with the state size.
pub fn compute_root(
    update: &TrieUpdate,
    branches: &dyn BranchSource,
    state: &dyn StateSource,
    options: &ComputeOptions,
) -> Result<CommitOutput, CommitmentError> {
    let (accounts, key_hashes) = prepare(update);
    let mut w = Walker::new(branches, state, Some(options.parallel_threshold));
    let root = if accounts.is_empty() {
        w.current_root()?
    } else {
        w.update_subtrie(&Sub { storage_of: None }, false, &accounts)?
    };
    let mut stats = w.stats;
    stats.key_hashes = key_hashes;
    stats.keccak_calls = w.keccak.calls + key_hashes;
    stats.keccak_blocks = w.keccak.blocks + key_hashes;
    stats.touched_accounts = accounts.len() as u64;
    stats.touched_slots = accounts.iter().map(|a| a.slots.len() as u64).sum();
    // Keep the last write per path (a sub-trie root may be deleted by the fold
    // of its old branch and rewritten as a root cell). The walk writes a
    // branch after everything below it and walks children from the highest
    // nibble down, so reversed its writes are sorted, the latest of a path
    // first; only a wiped storage trie written again after its deletes
    // needs the (stable) sort.
    let mut writes = w.writes;
    writes.reverse();
    if !writes.is_sorted_by(|a, b| a.0 <= b.0) {
        writes.par_sort_by(|a, b| a.0.cmp(&b.0));
    }
    writes.dedup_by(|later, earlier| later.0 == earlier.0);
    stats.records_written = writes.iter().filter(|w| w.1.is_some()).count() as u64;
    stats.records_deleted = writes.len() as u64 - stats.records_written;
    Ok(CommitOutput {
        root,
        writes,
        stats,
    })
}
