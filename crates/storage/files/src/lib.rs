//! strata-files, the immutable sorted files: the cold tier of every domain.
//!
//! A file holds one domain's entries for a step range `[from_step, to_step)`:
//! sorted unique keys, each with a value or a tombstone that shadows older
//! files. Data lives in ~4 KiB checksummed blocks found through a binary-
//! searched block index; inside a block keys share their prefix with the
//! previous key, and restart points (whole keys every 16 entries) make the
//! key search binary down to a short scan. A blocked Bloom filter per file lets lookups skip files that
//! cannot hold a key. The byte format is specified in `book/src/reference/formats/sorted-files.md`.
//!
//! * [`SortedFileWriter`] writes a file durably (temp name, fsync, rename,
//!   directory fsync) through the [`FileSystem`] seam.
//! * [`SortedFile`] maps a file, verifies all of it once at open, then serves
//!   [`SortedFile::get`], [`SortedFile::iter`] and [`SortedFile::iter_prefix`]
//!   with zero-copy [`bytes::Bytes`] values.
//! * [`merge_files`] merges files (newest first) into one;
//!   [`lookup_newest_first`] is the read path across a domain's files.
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//!
//! use strata_files::{
//!     FileMeta, FileSystem, FileValue, MemFileSystem, SortedFile, SortedFileWriter,
//!     lookup_newest_first,
//! };
//! use strata_types::Domain;
//!
//! # fn main() -> Result<(), strata_files::FileError> {
//! let fs: Arc<dyn FileSystem> = Arc::new(MemFileSystem::new());
//! let dir = Path::new("/state/files");
//! let meta = FileMeta { domain: Domain::Account, from_step: 0, to_step: 16 };
//! let mut writer = SortedFileWriter::new(Arc::clone(&fs), dir, meta)?;
//! writer.push(b"alice", Some(b"balance 10"))?;
//! writer.push(b"bob", None)?; // deleted in steps [0, 16)
//! let info = writer.finish()?;
//! assert_eq!(info.name, "account-0000000000-0000000016.sst");
//!
//! let file = Arc::new(SortedFile::open(&*fs, &info.path)?);
//! assert_eq!(file.get(b"alice")?, Some(FileValue::Value("balance 10".into())));
//! assert_eq!(file.get(b"bob")?, Some(FileValue::Tombstone));
//! assert_eq!(file.get(b"carol")?, None);
//! let hit = lookup_newest_first(&[file], b"alice")?.expect("present");
//! assert_eq!(hit.position, 0);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

#[cfg(feature = "test-utils")]
pub mod bench_support;
mod block;
mod dir;
mod error;
mod filter;
mod format;
mod index;
mod iter;
mod layout;
mod lookup;
mod merge;
mod meta;
mod open;
mod prefixed;
mod reader;
mod remote;
mod writer;

#[cfg(test)]
mod tests;

pub use dir::{DirListing, remove_temp_files, scan_dir};
pub use error::FileError;
pub use filter::KeyHash;
pub use format::{FORMAT_VERSION, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use iter::{FileEntry, FileIter};
pub use layout::FileLayout;
pub use lookup::{FileHit, lookup_newest_first};
pub use merge::merge_files;
pub use meta::{FILE_EXTENSION, FileInfo, FileMeta, TEMP_SUFFIX};
pub use reader::{FileValue, FileValueRef, SortedFile};
pub use remote::RangeSource;
pub use strata_fs as fs;
pub use strata_fs::{FileSystem, MemFileSystem, OsFileSystem};
pub use writer::SortedFileWriter;
