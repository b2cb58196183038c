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

/// What [`warm_top_levels`] read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopLevels {
    /// Records read.
    pub records: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Branch levels read below the root record (0: the root alone).
    pub levels: usize,
}

/// Reads, through `branches`, the account trie's branch records from the
/// root down, one level of branch nodes at a time (a level: the branch
/// children of the one above, whatever their extensions), whole levels
/// only, while the bytes read stay within `budget_bytes`: the next level
/// is read when its records, at the mean size of the level above, fit in
/// what is left. A cache in front of `branches` is so filled with the
/// records nearly every block's root reads (at 1M accounts, the root and
/// four levels: about 70,000 records). Storage tries are not entered. The
/// records of a level are read on rayon's pool.
pub fn warm_top_levels(
    branches: &dyn BranchSource,
    budget_bytes: u64,
) -> Result<TopLevels, SourceError> {
    use rayon::prelude::*;

    let mut read = TopLevels::default();
    let mut level: Vec<Vec<u8>> = vec![Vec::new()];
    let mut mean = 0u64;
    loop {
        let estimate = mean.saturating_mul(level.len() as u64);
        if read.records > 0 && (level.is_empty() || read.bytes + estimate > budget_bytes) {
            return Ok(read);
        }
        let children = level
            .par_iter()
            .map(|path| level_children(branches, path))
            .collect::<Result<Vec<_>, SourceError>>()?;
        let (mut bytes, mut records) = (0u64, 0usize);
        let mut next = Vec::new();
        for (size, paths) in children {
            if let Some(size) = size {
                bytes += size;
                records += 1;
            }
            next.extend(paths);
        }
        if records == 0 {
            return Ok(read);
        }
        if read.records > 0 {
            read.levels += 1;
        }
        read.records += records;
        read.bytes += bytes;
        mean = bytes / records as u64;
        level = next;
    }
}

/// The size of the record at `path` (`None`: there is none) and the paths
/// of its children that are branch nodes.
fn level_children(
    branches: &dyn BranchSource,
    path: &[u8],
) -> Result<(Option<u64>, Vec<Vec<u8>>), SourceError> {
    let Some(bytes) = branches.branch(path)? else {
        return Ok((None, Vec::new()));
    };
    let size = bytes.len() as u64;
    let child_path = |nibble: Option<u8>, cell: Cell| match cell {
        Cell::Branch(b) => {
            let mut child = path.to_vec();
            child.extend(nibble);
            child.extend_from_slice(&b.ext);
            Some(child)
        }
        Cell::Empty | Cell::Leaf(_) => None,
    };
    let paths = match decode_record(path, &bytes).map_err(Box::new)? {
        Record::RootCell(cell) => child_path(None, cell).into_iter().collect(),
        Record::Branch { mut children, .. } => {
            let present = children.present();
            let mut paths = Vec::new();
            for n in (0..16u8).filter(|n| present & (1 << n) != 0) {
                let cell = children.take(n as usize, path).map_err(Box::new)?;
                paths.extend(child_path(Some(n), cell));
            }
            paths
        }
    };
    Ok((Some(size), paths))
}
