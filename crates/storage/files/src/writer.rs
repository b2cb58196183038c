//! Writes one immutable sorted file: blocks as keys arrive, then index,
//! filter and footer, under a temp name that is synced, renamed into place
//! and made durable with a directory sync.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use xxhash_rust::xxh3::Xxh3;

use super::error::FileError;
use super::filter::{self, KeyHash};
use super::format::{BLOCK_TARGET, Footer, MAX_KEY_LEN, MAX_VALUE_LEN, checksum};
use super::layout::{Builder, FileLayout};
use super::meta::{FileInfo, FileMeta, TEMP_SUFFIX};
use strata_fs::{FileSystem, WritableFile};

/// Builds one sorted file from strictly increasing keys.
///
/// Nothing is visible under the final name until [`SortedFileWriter::finish`]
/// succeeds; a writer dropped unfinished, or one that fails, removes its temp
/// file (best effort).
pub struct SortedFileWriter {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    meta: FileMeta,
    final_path: PathBuf,
    temp_path: PathBuf,
    out: Box<dyn WritableFile>,
    file_hash: Xxh3,
    offset: u64,
    layout: FileLayout,
    block: Builder,
    pending: Vec<u8>,
    index: Vec<u8>,
    block_count: u32,
    filter: FilterInput,
    /// Bytes at the end of each key the filter leaves out
    /// ([`SortedFileWriter::with_filter_on_prefixes`]).
    filter_suffix: usize,
    last_key: Option<Vec<u8>>,
    entries: u64,
    failed: bool,
    done: bool,
}

/// What the writer keeps for the file's filter: every key's hash (the
/// filter is sized at the end), or a filter sized in advance and filled
/// as keys arrive.
enum FilterInput {
    Hashes(Vec<u64>),
    Sized(filter::FilterBuilder),
}

impl std::fmt::Debug for SortedFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SortedFileWriter")
            .field("path", &self.final_path)
            .field("entries", &self.entries)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl SortedFileWriter {
    /// Starts a file for `meta` in `dir` (which must exist), creating its
    /// temp file `{name}.tmp`. The step range must be non-empty. Only one
    /// writer per `meta` may run at a time; a finished file replaces an
    /// existing file of the same name (readers that mapped the old one keep
    /// reading it).
    pub fn new(fs: Arc<dyn FileSystem>, dir: &Path, meta: FileMeta) -> Result<Self, FileError> {
        let final_path = dir.join(meta.file_name());
        if !meta.is_valid() {
            return Err(FileError::InvalidInput {
                file: final_path,
                what: format!(
                    "step range [{}, {}) is empty or beyond {}",
                    meta.from_step,
                    meta.to_step,
                    FileMeta::MAX_STEP
                ),
            });
        }
        let temp_path = dir.join(format!("{}{TEMP_SUFFIX}", meta.file_name()));
        let out = fs.create(&temp_path).map_err(|source| FileError::Io {
            file: temp_path.clone(),
            op: "create",
            source,
        })?;
        Ok(SortedFileWriter {
            fs,
            dir: dir.to_path_buf(),
            meta,
            final_path,
            temp_path,
            out,
            file_hash: Xxh3::new(),
            offset: 0,
            layout: FileLayout::for_domain(meta.domain),
            block: Builder::new(FileLayout::for_domain(meta.domain)),
            pending: Vec::with_capacity(2 * BLOCK_TARGET),
            index: Vec::new(),
            block_count: 0,
            filter: FilterInput::Hashes(Vec::new()),
            filter_suffix: 0,
            last_key: None,
            entries: 0,
            failed: false,
            done: false,
        })
    }

    /// Sizes the file's filter for `keys` keys now and fills it as keys
    /// arrive, instead of keeping each key's 64-bit hash until the end: a
    /// large file (an import) then holds 10 bits per key in memory rather
    /// than 64. More keys than said only raise the filter's false-positive
    /// rate; call it before the first [`SortedFileWriter::push`].
    pub fn with_expected_keys(mut self, keys: u64) -> Self {
        if self.entries == 0 {
            self.filter = FilterInput::Sized(filter::FilterBuilder::for_keys(keys));
        }
        self
    }

    /// Builds the file's filter over each key without its last
    /// `suffix_len` bytes: a key's history file holds `key ‖ block` entries,
    /// and a read asks whether the file holds any entry of `key` (through
    /// [`crate::SortedFile::may_contain`] with the key alone). Such a file's
    /// filter no longer answers for whole keys; only readers that know it
    /// ask it. Call it before the first [`SortedFileWriter::push`]; later
    /// it is ignored.
    pub fn with_filter_on_prefixes(mut self, suffix_len: usize) -> Self {
        if self.entries == 0 {
            self.filter_suffix = suffix_len;
        }
        self
    }

    /// Writes the file in `layout` instead of the current format (tests
    /// and benches: a format-1 file, another restart interval). Call it
    /// before the first [`SortedFileWriter::push`]; later it is ignored.
    #[cfg(any(test, feature = "test-utils"))]
    pub fn with_layout(mut self, layout: FileLayout) -> Self {
        if self.entries == 0 {
            self.layout = layout;
            self.block = Builder::new(layout);
        }
        self
    }

    /// The file being built.
    pub fn meta(&self) -> FileMeta {
        self.meta
    }

    /// Entries accepted so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Adds `key` with `value`, or a tombstone when `value` is `None`. Keys
    /// must be strictly increasing; a rejected key leaves the writer usable.
    pub fn push(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), FileError> {
        self.check_usable()?;
        if key.len() > MAX_KEY_LEN {
            return Err(self.too_large("key", key.len(), MAX_KEY_LEN));
        }
        if let Some(v) = value
            && v.len() > MAX_VALUE_LEN
        {
            return Err(self.too_large("value", v.len(), MAX_VALUE_LEN));
        }
        if let Some(prev) = &self.last_key
            && key <= prev.as_slice()
        {
            return Err(FileError::UnsortedKeys {
                file: self.final_path.clone(),
                previous: prev.clone(),
                key: key.to_vec(),
            });
        }
        if !self.block.is_empty()
            && self.block.encoded_len() + self.block.cost(key, value) > BLOCK_TARGET
        {
            self.flush_block()?;
        }
        self.block.add(key, value);
        let filtered = &key[..key.len().saturating_sub(self.filter_suffix)];
        match &mut self.filter {
            FilterInput::Hashes(hashes) => hashes.push(KeyHash::of(filtered).0),
            FilterInput::Sized(builder) => builder.insert(KeyHash::of(filtered)),
        }
        match &mut self.last_key {
            Some(prev) => {
                prev.clear();
                prev.extend_from_slice(key);
            }
            None => self.last_key = Some(key.to_vec()),
        }
        self.entries += 1;
        Ok(())
    }

    /// Writes index, filter and footer, syncs, renames the temp file to its
    /// final name and syncs the directory. On error nothing stays visible
    /// under either name (best effort) and the error is returned.
    pub fn finish(mut self) -> Result<FileInfo, FileError> {
        self.check_usable()?;
        match self.finish_inner() {
            Ok(info) => {
                self.done = true;
                Ok(info)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn finish_inner(&mut self) -> Result<FileInfo, FileError> {
        if !self.block.is_empty() {
            self.flush_block()?;
        }
        debug_assert_eq!(
            self.block_count == 0,
            self.entries == 0,
            "{}: blocks exist exactly when entries do",
            self.final_path.display()
        );
        let index_offset = self.offset;
        let mut index = std::mem::take(&mut self.index);
        let sum = checksum(&index);
        index.extend_from_slice(&sum.to_le_bytes());
        self.write(&index)?;
        let filter_offset = self.offset;
        let filter = match std::mem::replace(&mut self.filter, FilterInput::Hashes(Vec::new())) {
            FilterInput::Hashes(hashes) => filter::build(&hashes, filter_offset),
            FilterInput::Sized(builder) => builder.finish(filter_offset),
        };
        self.write(&filter)?;
        let mut footer = Footer {
            version: self.layout.version(),
            domain_id: Footer::domain_id_of(self.meta.domain),
            from_step: self.meta.from_step,
            to_step: self.meta.to_step,
            entry_count: self.entries,
            block_count: self.block_count,
            index_offset,
            index_len: index.len() as u64,
            filter_offset,
            filter_len: filter.len() as u64,
            checksum: 0,
        };
        self.write(&footer.encode_fields())?;
        footer.checksum = self.file_hash.digest();
        self.write(&footer.encode_tail())?;
        let size = self.offset;

        self.out.sync().map_err(|source| FileError::Io {
            file: self.temp_path.clone(),
            op: "sync",
            source,
        })?;
        self.fs
            .rename(&self.temp_path, &self.final_path)
            .map_err(|source| FileError::Io {
                file: self.temp_path.clone(),
                op: "rename",
                source,
            })?;
        if let Err(source) = self.fs.sync_dir(&self.dir) {
            // The rename may or may not survive a crash: take the file back so
            // the caller never sees a file whose creation reported failure.
            let _ = self.fs.remove(&self.final_path);
            return Err(FileError::Io {
                file: self.dir.clone(),
                op: "directory sync",
                source,
            });
        }
        Ok(FileInfo {
            name: self.meta.file_name(),
            path: self.final_path.clone(),
            meta: self.meta,
            entries: self.entries,
            size,
            checksum: footer.checksum,
        })
    }

    /// Writes the current block and records its index entry:
    /// `block_offset(u64) | block_len(u32) | entry_count(u32) |
    /// first_key_len(u16) | first_key`.
    fn flush_block(&mut self) -> Result<(), FileError> {
        debug_assert!(
            !self.block.is_empty(),
            "{}: only a non-empty block is flushed",
            self.final_path.display()
        );
        let block_offset = self.offset;
        let first_key = self.block.first_key().to_vec();
        let count = self.block.entry_count();
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        self.block.finish_into(&mut pending);
        let result = self.write(&pending);
        debug_assert!(
            u32::try_from(pending.len()).is_ok(),
            "{}: a block's length fits its u32 index field",
            self.final_path.display()
        );
        let block_len = pending.len() as u32;
        self.pending = pending;
        result?;
        self.index.extend_from_slice(&block_offset.to_le_bytes());
        self.index.extend_from_slice(&block_len.to_le_bytes());
        self.index.extend_from_slice(&count.to_le_bytes());
        self.index
            .extend_from_slice(&(first_key.len() as u16).to_le_bytes());
        self.index.extend_from_slice(&first_key);
        self.block_count += 1;
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        if let Err(source) = self.out.write_all(bytes) {
            self.failed = true;
            return Err(FileError::Io {
                file: self.temp_path.clone(),
                op: "write",
                source,
            });
        }
        self.file_hash.update(bytes);
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn check_usable(&self) -> Result<(), FileError> {
        if self.failed {
            return Err(FileError::InvalidInput {
                file: self.final_path.clone(),
                what: "the writer failed earlier and cannot continue".into(),
            });
        }
        Ok(())
    }

    fn too_large(&self, what: &'static str, len: usize, max: usize) -> FileError {
        FileError::TooLarge {
            file: self.final_path.clone(),
            what,
            len,
            max,
        }
    }
}

impl Drop for SortedFileWriter {
    fn drop(&mut self) {
        if !self.done {
            // Best effort: a leftover temp file is harmless (never opened) and
            // is removed at the next start-up scan.
            let _ = self.fs.remove(&self.temp_path);
        }
    }
}
