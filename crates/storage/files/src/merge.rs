//! K-way merge of files into one; the newest version of each key wins.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use bytes::Bytes;

use super::error::FileError;
use super::iter::FileIter;
use super::meta::FileInfo;
use super::reader::{FileValue, SortedFile};
use super::writer::SortedFileWriter;

/// The current entry of one input, ordered by key, then by input position
/// (a smaller position is a newer file, and wins).
struct Head {
    key: Bytes,
    value: FileValue,
    source: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key
            .cmp(&other.key)
            .then(self.source.cmp(&other.source))
    }
}

/// Merges `inputs` (ordered **newest first**) into `writer` and finishes it.
///
/// For a key present in several inputs only the newest version is written.
/// Tombstones are written too, unless `drop_tombstones` is set — allowed only
/// when the merge includes the oldest file of the domain, since otherwise an
/// older file outside the merge could resurface the deleted key. Every input
/// must belong to the writer's domain.
pub fn merge_files(
    inputs: &[&SortedFile],
    mut writer: SortedFileWriter,
    drop_tombstones: bool,
) -> Result<FileInfo, FileError> {
    let domain = writer.meta().domain;
    if let Some(other) = inputs.iter().find(|f| f.meta().domain != domain) {
        return Err(FileError::InvalidInput {
            file: other.path().to_path_buf(),
            what: format!(
                "cannot merge a file of domain {} into a file of domain {domain}",
                other.meta().domain
            ),
        });
    }
    let mut iters: Vec<FileIter<'_>> = inputs.iter().map(|f| f.iter()).collect();
    let mut heap = BinaryHeap::with_capacity(iters.len());
    for source in 0..iters.len() {
        advance(&mut iters, source, &mut heap)?;
    }
    while let Some(Reverse(winner)) = heap.pop() {
        // Older versions of the same key sort right after the winner.
        while let Some(Reverse(older)) = heap.peek() {
            if older.key != winner.key {
                break;
            }
            let source = older.source;
            heap.pop();
            advance(&mut iters, source, &mut heap)?;
        }
        match &winner.value {
            FileValue::Value(v) => writer.push(&winner.key, Some(v))?,
            FileValue::Tombstone if !drop_tombstones => writer.push(&winner.key, None)?,
            FileValue::Tombstone => {}
        }
        advance(&mut iters, winner.source, &mut heap)?;
    }
    writer.finish()
}

fn advance(
    iters: &mut [FileIter<'_>],
    source: usize,
    heap: &mut BinaryHeap<Reverse<Head>>,
) -> Result<(), FileError> {
    if let Some(item) = iters[source].next() {
        let (key, value) = item?;
        heap.push(Reverse(Head { key, value, source }));
    }
    Ok(())
}
