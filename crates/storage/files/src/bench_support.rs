//! Block-level access for the benches' per-block compression prototype
//! (feature `test-utils` only): a file's blocks, and a lookup inside one
//! block's bytes, so a bench can store the blocks compressed and measure
//! what a decompress-then-search read would cost beside the real reader.

use std::ops::Range;

use super::layout::{Block, Layout};
use super::reader::SortedFile;

/// Each data block of `file`: its first key and its bytes' range in the file.
pub fn blocks(file: &SortedFile) -> Vec<(Vec<u8>, Range<usize>)> {
    let data = file.bytes_for_bench();
    file.blocks_for_test()
        .iter()
        .map(|h| (h.first_key(data).to_vec(), h.offset..h.offset + h.len))
        .collect()
}

/// The whole file's bytes.
pub fn file_bytes(file: &SortedFile) -> &[u8] {
    file.bytes_for_bench()
}

/// Looks `key` up in one block of a file of format `version`: `Some(Some(r))`
/// for a value at `r` in `block`, `Some(None)` for a tombstone, `None` when
/// the block has no entry for it (or is malformed, or the version unknown).
pub fn get_in_block(version: u32, block: &[u8], key: &[u8]) -> Option<Option<Range<usize>>> {
    let layout = Layout::of_version(version)?;
    Block::new(layout, block)?.get(key).ok().flatten()
}
