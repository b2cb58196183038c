//! A sorted file read where it lives — an object in a bucket — through
//! ranged reads, without fetching it whole ([`RemoteFile`]).
//!
//! Opening reads the footer, then the index and the filter (a few percent
//! of the file) and checks them as [`SortedFile::open`](crate::SortedFile)
//! does; a lookup reads the one data block that may hold the key and
//! checks it before answering: its checksum, its entries' layout and
//! order, its first key against the index. The whole-file checksum cannot
//! be recomputed without the whole file: the caller gives the one it
//! expects (a manifest's), and a footer that names another is refused as
//! another file.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::error::{FileError, HexKey};
use super::filter::{Filter, KeyHash};
use super::format::{FOOTER_LEN, FORMAT_VERSION, Footer, MAGIC, checksum};
use super::index::{BlockHandle, BlockIndex};
use super::layout::{Block, Layout};
use super::meta::FileMeta;
use super::open::{Checker, check_fetched_block, check_footer, filter_error, parse_index};
use super::reader::FileValue;

/// Where a remote file's bytes come from: ranged reads of one object
/// (an object store's ranged GET, a cache in front of one).
pub trait RangeSource: Send + Sync {
    /// The bytes at file offsets `range`: exactly that many, or an error.
    fn read_range(&self, range: Range<u64>) -> io::Result<Bytes>;
}

/// A sorted file whose data blocks are read on demand from a
/// [`RangeSource`]; its index and filter are held in memory.
pub struct RemoteFile {
    /// The name errors give the file (its object key).
    name: PathBuf,
    meta: FileMeta,
    layout: Layout,
    size: u64,
    entries: u64,
    checksum: u64,
    /// The file from its index to its end: index, filter, footer.
    tail: Bytes,
    /// The file offset of `tail`'s first byte.
    tail_at: usize,
    index: BlockIndex,
    filter: Filter,
    source: Arc<dyn RangeSource>,
}

impl std::fmt::Debug for RemoteFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteFile")
            .field("name", &self.name)
            .field("meta", &self.meta)
            .field("size", &self.size)
            .field("blocks", &self.index.len())
            .finish()
    }
}

impl RemoteFile {
    /// Opens the `size`-byte file `source` reads (two reads: the footer,
    /// then the index and filter), checking its footer, index and filter.
    /// With `expected_checksum`, a footer naming another whole-file
    /// checksum is refused: the object is not the file expected.
    pub fn open(
        name: &Path,
        size: u64,
        expected_checksum: Option<u64>,
        source: Arc<dyn RangeSource>,
    ) -> Result<RemoteFile, FileError> {
        let read = |range: Range<u64>| read_exact(name, source.as_ref(), range);
        let footer_at = size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| {
            corrupted(
                name,
                0,
                format!("file is {size} bytes, shorter than the {FOOTER_LEN}-byte footer"),
            )
        })?;
        let mut raw = [0u8; FOOTER_LEN];
        raw.copy_from_slice(&read(footer_at..size)?);
        if raw[FOOTER_LEN - 8..] != MAGIC {
            return Err(corrupted(
                name,
                size - 8,
                format!(
                    "bad magic: expected {}, found {}",
                    HexKey(&MAGIC),
                    HexKey(&raw[FOOTER_LEN - 8..])
                ),
            ));
        }
        let footer = Footer::decode(&raw);
        let layout =
            Layout::of_version(footer.version).ok_or_else(|| FileError::UnsupportedVersion {
                file: name.to_path_buf(),
                found: footer.version,
                supported: FORMAT_VERSION,
            })?;
        if let Some(expected) = expected_checksum
            && footer.checksum != expected
        {
            return Err(FileError::ChecksumMismatch {
                file: name.to_path_buf(),
                offset: 0,
                what: "whole file (the footer names another file than the one expected)".into(),
                expected,
                found: footer.checksum,
            });
        }
        let empty = Bytes::new();
        let footer_start = footer_at as usize;
        let meta = check_footer(
            &Checker {
                path: name,
                data: &empty,
                base: 0,
            },
            &footer,
            &raw,
            footer_start,
        )?;
        let tail_at = footer.index_offset as usize;
        let tail = read(footer.index_offset..size)?;
        let c = Checker {
            path: name,
            data: &tail,
            base: tail_at,
        };
        let index = parse_index(&c, &footer, layout, &mut |_| {})?;
        let filter_at = footer.filter_offset as usize;
        let filter = Filter::decode_with(
            tail.slice(filter_at - tail_at..footer_start - tail_at),
            footer.filter_offset,
            checksum,
        )
        .map_err(|defect| filter_error(&c, filter_at, defect))?;
        Ok(RemoteFile {
            name: name.to_path_buf(),
            meta,
            layout,
            size,
            entries: footer.entry_count,
            checksum: footer.checksum,
            tail,
            tail_at,
            index,
            filter,
            source,
        })
    }

    /// Domain and step range.
    pub fn meta(&self) -> FileMeta {
        self.meta
    }

    /// The name errors give the file.
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// Size of the file in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    /// Bytes held in memory: the index, filter and footer as read.
    pub fn resident_bytes(&self) -> usize {
        self.tail.len() + self.index.memory_bytes()
    }

    /// Number of entries (values and tombstones).
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The whole-file checksum the footer names.
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// Number of data blocks.
    pub fn block_count(&self) -> usize {
        self.index.len()
    }

    /// The existence filter: `false` means the key is certainly not in the
    /// file (no read needed).
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.filter.may_contain(KeyHash::of(key))
    }

    /// Looks `key` up (without consulting the filter): its value, a
    /// tombstone, or `None` if the file has no entry for it. Reads the
    /// one data block that may hold it (none for a key below the first).
    pub fn get(&self, key: &[u8]) -> Result<Option<FileValue>, FileError> {
        let Some(handle) = self
            .index
            .block_for(&self.tail, key)
            .ok_or_else(|| self.index_unreadable())?
        else {
            return Ok(None);
        };
        let bytes = self.read_block(&handle)?;
        let view = Block::new(self.layout, &bytes)
            .ok_or_else(|| corrupted(&self.name, handle.offset as u64, "block trailer"))?;
        Ok(match view.get(key) {
            Ok(Some(Some(range))) => Some(FileValue::Value(bytes.slice(range))),
            Ok(Some(None)) => Some(FileValue::Tombstone),
            Ok(None) => None,
            Err(()) => {
                return Err(corrupted(
                    &self.name,
                    handle.offset as u64,
                    format!("data block {}: entry layout", handle.number),
                ));
            }
        })
    }

    /// Block `h` read and checked as [`SortedFile::open`](crate::SortedFile)
    /// checks each block.
    fn read_block(&self, h: &BlockHandle) -> Result<Bytes, FileError> {
        let bytes = read_exact(
            &self.name,
            self.source.as_ref(),
            h.offset as u64..(h.offset + h.len) as u64,
        )?;
        let c = Checker {
            path: &self.name,
            data: &self.tail,
            base: self.tail_at,
        };
        check_fetched_block(&c, self.layout, h, &bytes)?;
        Ok(bytes)
    }

    fn index_unreadable(&self) -> FileError {
        corrupted(
            &self.name,
            self.tail_at as u64,
            "index: an entry cannot be read back",
        )
    }
}

/// `range` from `source`, refused unless it is exactly that long.
fn read_exact(
    name: &Path,
    source: &dyn RangeSource,
    range: Range<u64>,
) -> Result<Bytes, FileError> {
    let want = range.end - range.start;
    let start = range.start;
    let bytes = source.read_range(range).map_err(|source| FileError::Io {
        file: name.to_path_buf(),
        op: "read range",
        source,
    })?;
    if bytes.len() as u64 != want {
        return Err(corrupted(
            name,
            start,
            format!("a read of {want} bytes gave {}", bytes.len()),
        ));
    }
    Ok(bytes)
}

fn corrupted(name: &Path, offset: u64, what: impl Into<String>) -> FileError {
    FileError::Corrupted {
        file: name.to_path_buf(),
        offset,
        what: what.into(),
    }
}
