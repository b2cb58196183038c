//! The reader of one immutable sorted file: point lookups through the block
//! index and the in-block offset array, zero-copy values, the filter.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::error::FileError;
use super::filter::{Filter, KeyHash};
use super::fs::FileSystem;
use super::layout::{Block, Layout};
use super::meta::FileMeta;

/// What a file holds for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileValue {
    /// The key's value: a zero-copy slice of the file's map.
    Value(Bytes),
    /// The key was deleted in this file's step range; older files must not
    /// be consulted for it.
    Tombstone,
}

impl FileValue {
    /// The value, or `None` for a tombstone.
    pub fn value(&self) -> Option<&Bytes> {
        match self {
            FileValue::Value(v) => Some(v),
            FileValue::Tombstone => None,
        }
    }

    /// The value as an owned option (`None` for a tombstone).
    pub fn into_value(self) -> Option<Bytes> {
        match self {
            FileValue::Value(v) => Some(v),
            FileValue::Tombstone => None,
        }
    }
}

/// What a file holds for a key, borrowed from the file's map (see
/// [`SortedFile::get_ref`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileValueRef<'a> {
    /// The key's value.
    Value(&'a [u8]),
    /// The key was deleted in this file's step range.
    Tombstone,
}

/// Where a data block lies, and its first key for the index search.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockHandle {
    /// The first 8 bytes of the first key, big-endian, zero-padded: most
    /// index comparisons end here without touching the key bytes.
    prefix: u64,
    key_start: usize,
    key_len: usize,
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) entries: u32,
}

#[inline]
fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

impl BlockHandle {
    pub(crate) fn new(
        first_key: &[u8],
        key_start: usize,
        offset: usize,
        len: usize,
        entries: u32,
    ) -> Self {
        BlockHandle {
            prefix: key_prefix(first_key),
            key_start,
            key_len: first_key.len(),
            offset,
            len,
            entries,
        }
    }

    /// The block's first key (`data` is the file the handle was built from).
    #[inline]
    pub(crate) fn first_key<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.key_start..self.key_start + self.key_len]
    }
}

/// One immutable sorted file, memory-mapped and verified at open.
///
/// Cheap to share behind an `Arc`; all methods take `&self` and never block.
#[derive(Debug)]
pub struct SortedFile {
    path: PathBuf,
    meta: FileMeta,
    layout: Layout,
    data: Bytes,
    entries: u64,
    checksum: u64,
    blocks: Vec<BlockHandle>,
    /// `blocks[i].prefix` again, densely packed: the index search runs over
    /// this small array and touches the handles only to break ties.
    prefixes: Vec<u64>,
    filter: Filter,
}

impl SortedFile {
    /// Maps the file at `path` and verifies it completely: footer, index,
    /// filter, every block checksum and layout, key order and the whole-file
    /// checksum. Errors name the file, the offset and what is wrong.
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<SortedFile, FileError> {
        // The check releases the pages it has passed over as it goes; later
        // reads bring back only theirs.
        let mut opened = None;
        fs.map_checked(path, &mut |data, release| {
            let file = super::open::open_bytes(path.to_path_buf(), data.clone(), release);
            let ok = file.is_ok();
            opened = Some(file);
            ok
        })
        .map_err(|source| FileError::Io {
            file: path.to_path_buf(),
            op: "map",
            source,
        })?;
        opened.expect("map_checked runs the check once it has mapped the file")
    }

    /// Verifies `data` as the content of the file `path` (which is only used
    /// to name the file in errors and to cross-check the name).
    pub fn from_bytes(path: &Path, data: Bytes) -> Result<SortedFile, FileError> {
        super::open::open_bytes(path.to_path_buf(), data, &mut |_| {})
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "the parts open checked, handed over once"
    )]
    pub(crate) fn from_parts(
        path: PathBuf,
        meta: FileMeta,
        layout: Layout,
        data: Bytes,
        entries: u64,
        checksum: u64,
        blocks: Vec<BlockHandle>,
        filter: Filter,
    ) -> Self {
        let prefixes = blocks.iter().map(|h| h.prefix).collect();
        SortedFile {
            path,
            meta,
            layout,
            data,
            entries,
            checksum,
            blocks,
            prefixes,
            filter,
        }
    }

    /// Domain and step range.
    pub fn meta(&self) -> FileMeta {
        self.meta
    }

    /// Where the file lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of entries (values and tombstones).
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Size of the file in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.data.len() as u64
    }

    /// The whole-file checksum from the footer.
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// The format version of the file (1 or 2).
    pub fn format_version(&self) -> u32 {
        match self.layout {
            Layout::Plain => super::layout::VERSION_PLAIN,
            Layout::Prefixed => super::layout::VERSION_PREFIXED,
        }
    }

    /// Number of data blocks.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// Size of the existence filter's bit array in bytes.
    pub fn filter_bytes(&self) -> usize {
        self.filter.size_bytes()
    }

    /// The existence filter: `false` means the key is certainly not in the
    /// file (neither value nor tombstone).
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.filter.may_contain(KeyHash::of(key))
    }

    /// [`SortedFile::may_contain`] with a hash computed once for many files.
    #[inline]
    pub fn may_contain_hash(&self, hash: KeyHash) -> bool {
        self.filter.may_contain(hash)
    }

    /// The filter's first bit only: a cheap pre-check that brings the
    /// filter line into cache (used by [`crate::files::lookup_newest_first`]
    /// to probe many files with overlapping memory accesses).
    #[inline]
    pub(crate) fn first_probe(&self, hash: KeyHash) -> bool {
        self.filter.first_probe(hash)
    }

    /// Looks `key` up (without consulting the filter): its value, a
    /// tombstone, or `None` if the file has no entry for it. The value is a
    /// zero-copy slice of the map that keeps the map alive.
    pub fn get(&self, key: &[u8]) -> Result<Option<FileValue>, FileError> {
        Ok(self.locate(key)?.map(|(b, value)| match value {
            Some(r) => FileValue::Value(self.block_slice(b, r)),
            None => FileValue::Tombstone,
        }))
    }

    /// Like [`SortedFile::get`], but borrows the value from the map instead
    /// of taking a reference-counted slice: no shared counter is touched, so
    /// many threads reading one file do not contend on it.
    pub fn get_ref(&self, key: &[u8]) -> Result<Option<FileValueRef<'_>>, FileError> {
        Ok(self.locate(key)?.map(|(b, value)| match value {
            Some(r) => {
                let off = self.blocks[b].offset;
                FileValueRef::Value(&self.data[off + r.start..off + r.end])
            }
            None => FileValueRef::Tombstone,
        }))
    }

    /// The block holding `key` and where its value lies in that block
    /// (`None` for a tombstone), if the file has an entry for it.
    #[inline]
    #[expect(
        clippy::type_complexity,
        reason = "block, then value range or tombstone"
    )]
    fn locate(
        &self,
        key: &[u8],
    ) -> Result<Option<(usize, Option<std::ops::Range<usize>>)>, FileError> {
        let Some(b) = self.block_for(key) else {
            return Ok(None);
        };
        match self.view(b)?.get(key) {
            Ok(found) => Ok(found.map(|value| (b, value))),
            Err(()) => Err(self.block_corrupted(b, "entry layout changed after open")),
        }
    }

    /// Index of the last block whose first key is ≤ `key`, if any: a binary
    /// search over the in-memory index.
    #[inline]
    pub(crate) fn block_for(&self, key: &[u8]) -> Option<usize> {
        let prefix = key_prefix(key);
        // Blocks whose first key has a smaller 8-byte prefix all start
        // before `key`; among those with an equal prefix (many, for storage
        // keys of one contract) the full keys decide — both binary searches.
        let below = self.prefixes.partition_point(|&p| p < prefix);
        let equal = self.prefixes[below..].partition_point(|&p| p == prefix);
        let data = &self.data[..];
        let ties = &self.blocks[below..below + equal];
        let after = below + ties.partition_point(|h| h.first_key(data) <= key);
        after.checked_sub(1)
    }

    /// A view of block `b`.
    #[inline]
    pub(crate) fn view(&self, b: usize) -> Result<Block<'_>, FileError> {
        let h = &self.blocks[b];
        Block::new(self.layout, &self.data[h.offset..h.offset + h.len])
            .ok_or_else(|| self.block_corrupted(b, "block trailer changed after open"))
    }

    #[cfg(any(test, feature = "test-utils"))]
    pub(crate) fn blocks_for_test(&self) -> &[BlockHandle] {
        &self.blocks
    }

    #[cfg(feature = "test-utils")]
    pub(crate) fn bytes_for_bench(&self) -> &Bytes {
        &self.data
    }

    pub(crate) fn block_count_internal(&self) -> usize {
        self.blocks.len()
    }

    /// The bytes of block `b`'s entry `range` as a zero-copy slice.
    pub(crate) fn block_slice(&self, b: usize, range: std::ops::Range<usize>) -> Bytes {
        let off = self.blocks[b].offset;
        self.data.slice(off + range.start..off + range.end)
    }

    pub(crate) fn block_corrupted(&self, b: usize, what: &str) -> FileError {
        FileError::Corrupted {
            file: self.path.clone(),
            offset: self.blocks[b].offset as u64,
            what: format!("data block {b}: {what}"),
        }
    }
}

impl AsRef<SortedFile> for SortedFile {
    fn as_ref(&self) -> &SortedFile {
        self
    }
}
