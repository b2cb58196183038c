//! The reader of one immutable sorted file: point lookups through the block
//! index and the in-block offset array, zero-copy values, the filter.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::error::FileError;
use super::filter::{Filter, KeyHash};
use super::index::{BlockHandle, BlockIndex};
use super::layout::{Block, Layout};
use super::meta::FileMeta;
use super::remote::RangeSource;
use strata_fs::FileSystem;

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

/// One immutable sorted file, memory-mapped and verified at open, or read
/// where it lives through ranged reads ([`SortedFile::open_remote`]).
///
/// Cheap to share behind an `Arc`; all methods take `&self`. A mapped
/// file's methods never block; a remote file's reads may wait for its
/// source.
#[derive(Debug)]
pub struct SortedFile {
    path: PathBuf,
    meta: FileMeta,
    layout: Layout,
    /// The mapped file; for a remote file, its tail (index, filter, footer).
    data: Bytes,
    entries: u64,
    checksum: u64,
    /// Positions in `data`.
    index: BlockIndex,
    filter: Filter,
    /// Where a remote file's data blocks are read from.
    remote: Option<Remote>,
}

/// The data blocks of a file read through ranged reads.
pub(crate) struct Remote {
    pub(crate) source: Arc<dyn RangeSource>,
    /// The file's size.
    pub(crate) size: u64,
    /// The file offset of the tail held in memory.
    pub(crate) tail_at: usize,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("size", &self.size)
            .field("tail_at", &self.tail_at)
            .finish()
    }
}

impl SortedFile {
    /// Maps the file at `path` and verifies it completely: footer, index,
    /// filter, every block checksum and layout, key order and the whole-file
    /// checksum. Errors name the file, the offset and what is wrong.
    ///
    /// A file `fs` reads where it lives ([`FileSystem::remote`]) is opened
    /// with [`SortedFile::open_remote`] instead: its footer, index and
    /// filter checked, each data block when it is read.
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<SortedFile, FileError> {
        if let Some(remote) = fs.remote(path) {
            return SortedFile::open_remote(path, remote.size, remote.checksum, remote.source);
        }
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
        index: BlockIndex,
        filter: Filter,
    ) -> Self {
        SortedFile {
            path,
            meta,
            layout,
            data,
            entries,
            checksum,
            index,
            filter,
            remote: None,
        }
    }

    /// The same file read through `remote` (`data` is its tail).
    pub(crate) fn with_remote(mut self, remote: Remote) -> Self {
        self.remote = Some(remote);
        self
    }

    /// Whether the file's data blocks are read through ranged reads.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
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
        match &self.remote {
            Some(remote) => remote.size,
            None => self.data.len() as u64,
        }
    }

    /// The file's bytes, as mapped (what a publisher uploads: the file
    /// stays readable through them after maintenance deleted it); `None`
    /// for a remote file, which holds only its tail.
    pub fn bytes(&self) -> Option<&Bytes> {
        self.remote.is_none().then_some(&self.data)
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
        self.index.len()
    }

    /// Bytes of memory the block index holds (a sample every
    /// 16 blocks; the rest is read from the mapped file).
    pub fn index_memory_bytes(&self) -> usize {
        self.index.memory_bytes()
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
    /// filter line into cache (used by [`crate::lookup_newest_first`]
    /// to probe many files with overlapping memory accesses).
    #[inline]
    pub(crate) fn first_probe(&self, hash: KeyHash) -> bool {
        self.filter.first_probe(hash)
    }

    /// Looks `key` up (without consulting the filter): its value, a
    /// tombstone, or `None` if the file has no entry for it. The value is a
    /// zero-copy slice of the map that keeps the map alive.
    pub fn get(&self, key: &[u8]) -> Result<Option<FileValue>, FileError> {
        if self.remote.is_some() {
            return self.get_remote(key);
        }
        Ok(self.locate(key)?.map(|(h, value)| match value {
            Some(r) => FileValue::Value(self.block_slice(&h, r)),
            None => FileValue::Tombstone,
        }))
    }

    /// Like [`SortedFile::get`], but borrows the value from the map instead
    /// of taking a reference-counted slice: no shared counter is touched, so
    /// many threads reading one file do not contend on it.
    ///
    /// A remote file lends no values (its blocks are read per lookup):
    /// it refuses with [`FileError::InvalidInput`]; read it with
    /// [`SortedFile::get`].
    pub fn get_ref(&self, key: &[u8]) -> Result<Option<FileValueRef<'_>>, FileError> {
        if self.remote.is_some() {
            return Err(FileError::InvalidInput {
                file: self.path.clone(),
                what: "a remote file lends no values: read it with get".into(),
            });
        }
        Ok(self.locate(key)?.map(|(h, value)| match value {
            Some(r) => FileValueRef::Value(&self.data[h.offset + r.start..h.offset + r.end]),
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
    ) -> Result<Option<(BlockHandle, Option<std::ops::Range<usize>>)>, FileError> {
        let Some(h) = self.block_for(key)? else {
            return Ok(None);
        };
        match self.view(&h)?.get(key) {
            Ok(found) => Ok(found.map(|value| (h, value))),
            Err(()) => Err(self.block_corrupted(&h, "entry layout changed after open")),
        }
    }

    /// The last block whose first key is ≤ `key`, if any: a binary search
    /// over the index's samples, then a few entries of the mapped index.
    #[inline]
    pub(crate) fn block_for(&self, key: &[u8]) -> Result<Option<BlockHandle>, FileError> {
        self.index
            .block_for(&self.data, key)
            .ok_or_else(|| self.index_corrupted())
    }

    /// Block `number`'s handle.
    pub(crate) fn block(&self, number: usize) -> Result<BlockHandle, FileError> {
        self.index
            .block(&self.data, number)
            .ok_or_else(|| self.index_corrupted())
    }

    /// The block after `h`, or `None` after the last one.
    #[inline]
    pub(crate) fn next_block(&self, h: &BlockHandle) -> Result<Option<BlockHandle>, FileError> {
        self.index
            .next(&self.data, h)
            .ok_or_else(|| self.index_corrupted())
    }

    /// The bytes of block `h`: a slice of the map, or read (and checked)
    /// from a remote file's source.
    pub(crate) fn block_bytes(&self, h: &BlockHandle) -> Result<Bytes, FileError> {
        match &self.remote {
            Some(remote) => crate::remote::read_block(self, remote, h),
            None => Ok(self.data.slice(h.offset..h.offset + h.len)),
        }
    }

    /// The layout of the file's blocks.
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// The file's bytes as held: the map, or a remote file's tail.
    pub(crate) fn held(&self) -> &Bytes {
        &self.data
    }

    /// A view of the block `h` (a mapped file's).
    #[inline]
    pub(crate) fn view(&self, h: &BlockHandle) -> Result<Block<'_>, FileError> {
        Block::new(self.layout, &self.data[h.offset..h.offset + h.len])
            .ok_or_else(|| self.block_corrupted(h, "block trailer changed after open"))
    }

    /// Samples the block index every `1 << shift` blocks instead of 16
    /// (benches: a dense index, `shift` 0, beside the default).
    #[cfg(feature = "test-utils")]
    pub fn resample_index(&mut self, shift: u32) -> Result<(), FileError> {
        self.index = self
            .index
            .resampled(&self.data, shift)
            .ok_or_else(|| self.index_corrupted())?;
        Ok(())
    }

    /// Every block's handle, in order.
    #[cfg(any(test, feature = "test-utils"))]
    pub(crate) fn blocks_for_test(&self) -> Vec<BlockHandle> {
        self.index
            .iter(&self.data)
            .map(|h| h.expect("the index was checked at open"))
            .collect()
    }

    #[cfg(any(test, feature = "test-utils"))]
    pub(crate) fn bytes_for_bench(&self) -> &Bytes {
        &self.data
    }

    /// The bytes of `range` in block `h` as a zero-copy slice.
    pub(crate) fn block_slice(&self, h: &BlockHandle, range: std::ops::Range<usize>) -> Bytes {
        self.data
            .slice(h.offset + range.start..h.offset + range.end)
    }

    pub(crate) fn block_corrupted(&self, h: &BlockHandle, what: &str) -> FileError {
        FileError::Corrupted {
            file: self.path.clone(),
            offset: h.offset as u64,
            what: format!("data block {}: {what}", h.number),
        }
    }

    fn index_corrupted(&self) -> FileError {
        FileError::Corrupted {
            file: self.path.clone(),
            offset: self.index.start() as u64,
            what: "index: an entry changed after open".into(),
        }
    }
}

impl AsRef<SortedFile> for SortedFile {
    fn as_ref(&self) -> &SortedFile {
        self
    }
}
