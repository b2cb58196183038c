//! Immutable sorted files: the cold tier of every domain.
//!
//! A file holds one domain's entries for a step range `[from_step, to_step)`:
//! sorted unique keys, each with a value or a tombstone that shadows older
//! files. Data lives in ~4 KiB checksummed blocks found through a binary-
//! searched block index; inside a block an offset array makes the key search
//! binary too. A blocked Bloom filter per file lets lookups skip files that
//! cannot hold a key. The byte format is specified in `storage/FORMAT.md`.
//!
//! * [`SortedFileWriter`] writes a file durably (temp name, fsync, rename,
//!   directory fsync) through the [`FileSystem`] seam.
//! * [`SortedFile`] maps a file, verifies all of it once at open, then serves
//!   [`SortedFile::get`], [`SortedFile::iter`] and [`SortedFile::iter_prefix`]
//!   with zero-copy [`bytes::Bytes`] values.
//! * [`merge_files`] merges files (newest first) into one;
//!   [`lookup_newest_first`] is the read path across a domain's files.

mod block;
mod dir;
mod error;
mod filter;
mod format;
pub mod fs;
mod iter;
mod lookup;
mod merge;
mod meta;
mod mmap;
mod open;
mod reader;
mod writer;

#[cfg(test)]
mod tests;

pub use dir::{DirListing, remove_temp_files, scan_dir};
pub use error::FileError;
pub use filter::KeyHash;
pub use format::{FORMAT_VERSION, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use fs::{FileSystem, MemFileSystem, OsFileSystem};
pub use iter::{FileEntry, FileIter};
pub use lookup::{FileHit, lookup_newest_first};
pub use merge::merge_files;
pub use meta::{FILE_EXTENSION, FileInfo, FileMeta, TEMP_SUFFIX};
pub use reader::{FileValue, FileValueRef, SortedFile};
pub use writer::SortedFileWriter;
