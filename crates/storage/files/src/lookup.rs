//! A point lookup across a domain's files, newest to oldest, with the
//! existence filters skipping files that cannot hold the key.

use super::error::FileError;
use super::filter::KeyHash;
use super::reader::{FileValue, SortedFile};

/// The first (newest) file that holds a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHit {
    /// Position of the file in the slice given to [`lookup_newest_first`]
    /// (0 = newest), e.g. to attribute the read to a file level.
    pub position: usize,
    /// The value or tombstone found there.
    pub value: FileValue,
}

/// Files whose filters are pre-probed together: enough to overlap their
/// cache misses, few enough that a hit in a recent file wastes little.
const PROBE_BATCH: usize = 8;

/// Looks `key` up in `files`, which must be ordered **newest first**. The
/// first file with an entry wins — a tombstone there means "deleted" and the
/// older files are not consulted.
///
/// The key is hashed once. Files are taken in batches of 8:
/// a branch-free first pass tests one filter bit per file (so the CPU can
/// overlap the cache misses of the batch), then the files that pass, newest
/// first, get the full filter test and, if it passes, the index lookup.
///
/// `files` may hold `Arc<SortedFile>`, `&SortedFile` or `SortedFile`.
pub fn lookup_newest_first<F: AsRef<SortedFile>>(
    files: &[F],
    key: &[u8],
) -> Result<Option<FileHit>, FileError> {
    let hash = KeyHash::of(key);
    for (batch, chunk) in files.chunks(PROBE_BATCH).enumerate() {
        let mut candidates = 0u32;
        for (i, file) in chunk.iter().enumerate() {
            candidates |= u32::from(file.as_ref().first_probe(hash)) << i;
        }
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let file = chunk[i].as_ref();
            if !file.may_contain_hash(hash) {
                continue;
            }
            if let Some(value) = file.get(key)? {
                return Ok(Some(FileHit {
                    position: batch * PROBE_BATCH + i,
                    value,
                }));
            }
        }
    }
    Ok(None)
}
