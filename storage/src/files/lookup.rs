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

/// Looks `key` up in `files`, which must be ordered **newest first**. The
/// key is hashed once; each file's filter is probed before its index. The
/// first file with an entry wins — a tombstone there means "deleted" and the
/// older files are not consulted.
///
/// `files` may hold `Arc<SortedFile>`, `&SortedFile` or `SortedFile`.
pub fn lookup_newest_first<F: AsRef<SortedFile>>(
    files: &[F],
    key: &[u8],
) -> Result<Option<FileHit>, FileError> {
    let hash = KeyHash::of(key);
    for (position, file) in files.iter().enumerate() {
        let file = file.as_ref();
        if !file.may_contain_hash(hash) {
            continue;
        }
        if let Some(value) = file.get(key)? {
            return Ok(Some(FileHit { position, value }));
        }
    }
    Ok(None)
}
