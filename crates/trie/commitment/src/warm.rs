//! Warmup planning: read the records a key's path needs before the block's
//! root calculation runs, so a cache in front of the [`BranchSource`] is hot.

use crate::nibbles::nibble;
use crate::node::EMPTY_ROOT;
use crate::record::{Cell, LeafKind, Record, decode_record};
use crate::source::{BranchSource, SourceError};

/// Reads, through `branches`, the records that [`compute_root`] reads when it
/// walks `hashed_path`, and returns how many reads it made.
///
/// `hashed_path` holds one nibble per byte: the 64 nibbles of
/// `keccak(address)` for an account, or those followed by the 64 nibbles of
/// `keccak(slot)` for a storage slot (a prefix also works). The walk stops where
/// the trie diverges from the path. It does not read the records of a wiped
/// account's storage, which `compute_root` walks to delete them.
///
/// [`compute_root`]: crate::compute_root
pub fn warm_path(branches: &dyn BranchSource, hashed_path: &[u8]) -> Result<usize, SourceError> {
    let mut reads = 0usize;
    let mut base = 0usize; // start of the current sub-trie inside hashed_path
    loop {
        let root = &hashed_path[..base];
        reads += 1;
        let Some(bytes) = branches.branch(root)? else {
            return Ok(reads);
        };
        let mut rec = decode_record(root, &bytes).map_err(Box::new)?;
        let mut at = base; // absolute position of the current node
        let next_sub = 'walk: loop {
            let cell = match rec {
                Record::RootCell(c) => c,
                Record::Branch { mut children, .. } => {
                    let Some(&n) = hashed_path.get(at) else {
                        break 'walk None;
                    };
                    at += 1;
                    children
                        .take((n & 0x0f) as usize, &hashed_path[..at - 1])
                        .map_err(Box::new)?
                }
            };
            match cell {
                Cell::Empty => break 'walk None,
                Cell::Leaf(leaf) => {
                    let LeafKind::Account { storage_root, .. } = leaf.kind else {
                        break 'walk None;
                    };
                    let wants_storage = hashed_path.len() > 64 && base == 0;
                    let same =
                        wants_storage && (0..64).all(|i| nibble(&leaf.hashed, i) == hashed_path[i]);
                    break 'walk (same && storage_root != EMPTY_ROOT).then_some(64);
                }
                Cell::Branch(b) => {
                    let end = at + b.ext.len();
                    if end >= hashed_path.len() || hashed_path[at..end] != b.ext[..] {
                        break 'walk None;
                    }
                    at = end;
                    reads += 1;
                    let Some(bytes) = branches.branch(&hashed_path[..at])? else {
                        break 'walk None;
                    };
                    rec = decode_record(&hashed_path[..at], &bytes).map_err(Box::new)?;
                }
            }
        };
        match next_sub {
            Some(b) => base = b,
            None => return Ok(reads),
        }
    }
}
