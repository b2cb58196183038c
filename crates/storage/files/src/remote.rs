//! A sorted file read where it lives — an object in a bucket — through
//! ranged reads, without fetching it whole ([`SortedFile::open_remote`]).
//!
//! Opening reads the footer, then the index and the filter (a few percent
//! of the file) and checks them as [`SortedFile::open`] does; a lookup reads the one data block that may hold the key and
//! checks it before answering: its checksum, its entries' layout and
//! order, its first key against the index. The whole-file checksum cannot
//! be recomputed without the whole file: the caller gives the one it
//! expects (a manifest's), and a footer that names another is refused as
//! another file.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::error::FileError;
use super::filter::Filter;
use super::format::{FOOTER_LEN, checksum};
use super::index::BlockHandle;
use super::layout::Block;
use super::open::{
    Checker, check_fetched_block, check_footer, decode_footer, filter_error, parse_index,
};
use super::reader::{FileValue, Remote, SortedFile};
pub use strata_fs::RangeSource;

impl SortedFile {
    /// Opens the `size`-byte file `source` reads, where it lives: two reads
    /// (the footer, then the index and filter), their checks as
    /// [`SortedFile::open`] makes them; each lookup then reads the one data
    /// block that may hold its key, checked before it answers. With
    /// `expected_checksum`, a footer naming another whole-file checksum is
    /// refused: the object is not the file expected. `name` names the file
    /// in errors (its object key); its file name must agree with the
    /// footer, as a local file's must.
    pub fn open_remote(
        name: &Path,
        size: u64,
        expected_checksum: Option<u64>,
        source: Arc<dyn RangeSource>,
    ) -> Result<SortedFile, FileError> {
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
        let (footer, layout) = decode_footer(name, &raw, size)?;
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
        Ok(SortedFile::from_parts(
            name.to_path_buf(),
            meta,
            layout,
            tail,
            footer.entry_count,
            footer.checksum,
            index,
            filter,
        )
        .with_remote(Remote {
            source,
            size,
            tail_at,
        }))
    }

    /// [`SortedFile::get`] of a remote file: the block read and checked,
    /// the value a slice of it.
    pub(crate) fn get_remote(&self, key: &[u8]) -> Result<Option<FileValue>, FileError> {
        let Some(handle) = self.block_for(key)? else {
            return Ok(None);
        };
        let bytes = self.block_bytes(&handle)?;
        let view = Block::new(self.layout(), &bytes)
            .ok_or_else(|| self.block_corrupted(&handle, "block trailer"))?;
        Ok(match view.get(key) {
            Ok(Some(Some(range))) => Some(FileValue::Value(bytes.slice(range))),
            Ok(Some(None)) => Some(FileValue::Tombstone),
            Ok(None) => None,
            Err(()) => return Err(self.block_corrupted(&handle, "entry layout")),
        })
    }
}

/// Block `h` of `file`, read from `remote` and checked as
/// [`SortedFile::open`] checks each block.
pub(crate) fn read_block(
    file: &SortedFile,
    remote: &Remote,
    h: &BlockHandle,
) -> Result<Bytes, FileError> {
    let bytes = read_exact(
        file.path(),
        remote.source.as_ref(),
        h.offset as u64..(h.offset + h.len) as u64,
    )?;
    let c = Checker {
        path: file.path(),
        data: file.held(),
        base: remote.tail_at,
    };
    check_fetched_block(&c, file.layout(), h, &bytes)?;
    Ok(bytes)
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
