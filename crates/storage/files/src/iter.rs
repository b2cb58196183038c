//! Ordered iteration over a file: all entries, from a key, or under a prefix.

use bytes::Bytes;

use super::error::FileError;
use super::index::BlockHandle;
use super::layout::Block;
use super::reader::{FileValue, SortedFile};

/// One entry of a file: the key (a zero-copy slice) and its value or tombstone.
pub type FileEntry = (Bytes, FileValue);

/// Iterator over a file's entries in key order. Yields an error at most once
/// (if the mapped bytes changed after open) and then ends.
#[derive(Debug)]
pub struct FileIter<'a> {
    file: &'a SortedFile,
    /// The block being read; `None` past the last one.
    block: Option<BlockHandle>,
    /// Offset in the block of the next entry to decode.
    at: usize,
    /// The key of the entry decoded last in this block: the next entry's
    /// shared prefix comes from it.
    key: Vec<u8>,
    /// The bytes of the block being read, once read.
    current: Option<Bytes>,
    prefix: Option<Vec<u8>>,
    pending: Option<FileError>,
    done: bool,
}

impl SortedFile {
    /// All entries in key order.
    pub fn iter(&self) -> FileIter<'_> {
        FileIter::from_first(self, None)
    }

    /// Entries with key ≥ `start`, in key order; seeks through the index.
    pub fn iter_from(&self, start: &[u8]) -> FileIter<'_> {
        self.seek(start, None)
    }

    /// Entries whose key starts with `prefix`, in key order (e.g. one
    /// account's storage slots: prefix = address). Seeks through the index
    /// and stops at the first key past the prefix.
    pub fn iter_prefix(&self, prefix: &[u8]) -> FileIter<'_> {
        self.seek(prefix, Some(prefix.to_vec()))
    }

    fn seek(&self, start: &[u8], prefix: Option<Vec<u8>>) -> FileIter<'_> {
        let block = match self.block_for(start) {
            Ok(Some(block)) => block,
            Ok(None) => return FileIter::from_first(self, prefix),
            Err(e) => return FileIter::failed(self, prefix, e),
        };
        let mut it = FileIter::new(self, Some(block), prefix);
        let mut key = Vec::new();
        let sought = self.block_bytes(&block).and_then(|bytes| {
            let at = Block::new(self.layout(), &bytes)
                .and_then(|view| view.seek(start, &mut key))
                .ok_or_else(|| self.block_corrupted(&block, "entry layout changed after open"))?;
            Ok((bytes, at))
        });
        match sought {
            Ok((bytes, at)) => {
                it.at = at;
                it.key = key;
                it.current = Some(bytes);
            }
            Err(e) => it.pending = Some(e),
        }
        it
    }
}

impl<'a> FileIter<'a> {
    /// From the file's first entry.
    fn from_first(file: &'a SortedFile, prefix: Option<Vec<u8>>) -> Self {
        if file.block_count() == 0 {
            return FileIter::new(file, None, prefix);
        }
        match file.block(0) {
            Ok(first) => FileIter::new(file, Some(first), prefix),
            Err(e) => FileIter::failed(file, prefix, e),
        }
    }

    /// An iterator that yields `error` and ends.
    fn failed(file: &'a SortedFile, prefix: Option<Vec<u8>>, error: FileError) -> Self {
        let mut it = FileIter::new(file, None, prefix);
        it.pending = Some(error);
        it
    }

    fn new(file: &'a SortedFile, block: Option<BlockHandle>, prefix: Option<Vec<u8>>) -> Self {
        FileIter {
            file,
            block,
            at: 0,
            key: Vec::new(),
            current: None,
            prefix,
            pending: None,
            done: false,
        }
    }

    fn next_entry(&mut self) -> Result<Option<FileEntry>, FileError> {
        loop {
            let Some(block) = self.block else {
                return Ok(None);
            };
            // Taken out while an entry is decoded, put back after: no
            // shared counter touched per entry.
            let bytes = match self.current.take() {
                Some(bytes) => bytes,
                None => self.file.block_bytes(&block)?,
            };
            let view = Block::new(self.file.layout(), &bytes).ok_or_else(|| {
                self.file
                    .block_corrupted(&block, "block trailer changed after open")
            })?;
            if self.at >= view.entries_end() {
                self.block = self.file.next_block(&block)?;
                self.at = 0;
                self.key.clear();
                self.current = None;
                continue;
            }
            let raw = view
                .decode_at(self.at)
                .filter(|d| d.shared <= self.key.len())
                .ok_or_else(|| {
                    self.file
                        .block_corrupted(&block, "entry layout changed after open")
                })?;
            self.at = raw.end;
            let suffix = bytes.slice(raw.suffix);
            self.key.truncate(raw.shared);
            self.key.extend_from_slice(&suffix);
            // A key stored whole stays a zero-copy slice of the map.
            let key = if raw.shared == 0 {
                suffix
            } else {
                Bytes::copy_from_slice(&self.key)
            };
            let value = match raw.value {
                Some(r) => FileValue::Value(bytes.slice(r)),
                None => FileValue::Tombstone,
            };
            self.current = Some(bytes);
            return Ok(Some((key, value)));
        }
    }
}

impl Iterator for FileIter<'_> {
    type Item = Result<FileEntry, FileError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Some(Err(e));
        }
        match self.next_entry() {
            Ok(Some((key, value))) => {
                if let Some(prefix) = &self.prefix
                    && !key.starts_with(prefix)
                {
                    self.done = true;
                    return None;
                }
                Some(Ok((key, value)))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
