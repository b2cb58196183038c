//! The in-memory part of a file's block index: one sample in every 16
//! blocks ([`SAMPLE_SHIFT`]), its first key's 8-byte prefix and where its
//! index entry lies; the blocks between samples are found by reading the
//! index entries in the mapped file.
//!
//! A file's index holds a first key per ~4 KiB data block. Decoded whole it
//! cost 56 bytes of anonymous memory a block (95 MB for the 7 GB of a
//! 10M-account state, growing with the state); sampled it costs 1 byte a
//! block, and the entries themselves are file pages the kernel may drop.

use super::format::{INDEX_ENTRY_HEADER, read_u16, read_u32, read_u64};

/// log2 of the blocks per sample: a lookup binary-searches the samples,
/// then reads at most 16 index entries forward from its sample.
pub(crate) const SAMPLE_SHIFT: u32 = 4;

/// One data block, as its index entry describes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockHandle {
    /// The block's number in the file (0-based).
    pub(crate) number: usize,
    /// File offset of the block's first key (in the index region).
    key_start: usize,
    key_len: usize,
    /// File offset of the block.
    pub(crate) offset: usize,
    /// The block's length in bytes.
    pub(crate) len: usize,
    /// Entries in the block.
    pub(crate) entries: u32,
}

impl BlockHandle {
    /// The block's first key (`data` is the file the handle was read from).
    #[inline]
    pub(crate) fn first_key<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.key_start..self.key_start + self.key_len]
    }

    /// File offset just past the block's index entry: where the next
    /// block's entry starts.
    #[inline]
    fn entry_end(&self) -> usize {
        self.key_start + self.key_len
    }
}

#[inline]
fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

/// A sampled block index over a mapped file. Every method takes the file's
/// bytes; one that reads an entry no longer describing a block inside the
/// data region (the mapped bytes changed after open) returns `None`, and
/// the caller reports the file as corrupted.
#[derive(Debug)]
pub(crate) struct BlockIndex {
    /// Number of blocks.
    count: usize,
    /// log2 of the blocks per sample.
    shift: u32,
    /// The 8-byte first-key prefix of blocks 0, 16, 32, …:
    /// the binary search runs over this small dense array.
    prefixes: Vec<u64>,
    /// File offset of those blocks' index entries.
    entries_at: Vec<u64>,
    /// File offset where the index entries end.
    index_end: usize,
    /// File offset where the data blocks end (the index starts).
    data_end: usize,
}

impl BlockIndex {
    /// An index of `count` blocks whose entries lie in `[index_start,
    /// index_end)` of the file, blocks in `[0, index_start)`; the blocks
    /// are added in order with [`BlockIndex::push`].
    pub(crate) fn with_capacity(count: usize, index_start: usize, index_end: usize) -> Self {
        Self::sampled(count, index_start, index_end, SAMPLE_SHIFT)
    }

    fn sampled(count: usize, index_start: usize, index_end: usize, shift: u32) -> Self {
        let samples = count.div_ceil(1 << shift);
        BlockIndex {
            count: 0,
            shift,
            prefixes: Vec::with_capacity(samples),
            entries_at: Vec::with_capacity(samples),
            index_end,
            data_end: index_start,
        }
    }

    /// Adds the next block, whose index entry starts at file offset
    /// `entry_at` and whose first key is `first_key`.
    pub(crate) fn push(&mut self, entry_at: usize, first_key: &[u8]) {
        if self.count.is_multiple_of(1 << self.shift) {
            self.prefixes.push(key_prefix(first_key));
            self.entries_at.push(entry_at as u64);
        }
        self.count += 1;
    }

    /// Number of blocks.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// File offset of the index region.
    pub(crate) fn start(&self) -> usize {
        self.data_end
    }

    /// Bytes of memory the index holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        (self.prefixes.capacity() + self.entries_at.capacity()) * size_of::<u64>()
    }

    /// Reads block `number`'s index entry at file offset `at`.
    #[inline]
    fn entry(&self, data: &[u8], number: usize, at: usize) -> Option<BlockHandle> {
        let region = data.get(..self.index_end)?;
        let offset = usize::try_from(read_u64(region, at)?).ok()?;
        let len = read_u32(region, at + 8)? as usize;
        let entries = read_u32(region, at + 12)?;
        let key_len = read_u16(region, at + 16)? as usize;
        let key_start = at + INDEX_ENTRY_HEADER;
        if key_start + key_len > self.index_end || offset.checked_add(len)? > self.data_end {
            return None;
        }
        Some(BlockHandle {
            number,
            key_start,
            key_len,
            offset,
            len,
            entries,
        })
    }

    /// Block `number`: its sample's entry, then the entries after it.
    pub(crate) fn block(&self, data: &[u8], number: usize) -> Option<BlockHandle> {
        if number >= self.count {
            return None;
        }
        let sample = number >> self.shift;
        let mut handle = self.entry(data, sample << self.shift, self.sample_at(sample))?;
        while handle.number < number {
            handle = self.entry(data, handle.number + 1, handle.entry_end())?;
        }
        Some(handle)
    }

    /// The block after `handle`: `Some(None)` after the last one.
    #[inline]
    pub(crate) fn next(&self, data: &[u8], handle: &BlockHandle) -> Option<Option<BlockHandle>> {
        let number = handle.number + 1;
        if number >= self.count {
            return Some(None);
        }
        self.entry(data, number, handle.entry_end()).map(Some)
    }

    #[inline]
    fn sample_at(&self, sample: usize) -> usize {
        self.entries_at[sample] as usize
    }

    /// The last block whose first key is ≤ `key` (`Some(None)` when `key`
    /// is below the first block).
    #[inline]
    pub(crate) fn block_for(&self, data: &[u8], key: &[u8]) -> Option<Option<BlockHandle>> {
        let prefix = key_prefix(key);
        // Samples whose first key has a smaller 8-byte prefix all start
        // before `key`; among those with an equal prefix (many, for storage
        // keys of one contract) the full keys decide.
        let below = self.prefixes.partition_point(|&p| p < prefix);
        let equal = self.prefixes[below..].partition_point(|&p| p == prefix);
        let mut readable = true;
        let ties = &self.entries_at[below..below + equal];
        let after = below
            + ties.partition_point(|&at| match self.entry(data, 0, at as usize) {
                Some(h) => h.first_key(data) <= key,
                None => {
                    readable = false;
                    false
                }
            });
        if !readable {
            return None;
        }
        let Some(sample) = after.checked_sub(1) else {
            return Some(None);
        };
        // The next sample's first key is > `key`: the block is this sample
        // or one of the blocks before the next sample.
        // Only the entries' keys are read on the way; the entry found is
        // decoded (and checked) once.
        let region = data.get(..self.index_end)?;
        let first = sample << self.shift;
        let last = ((sample + 1) << self.shift).min(self.count) - 1;
        let (mut number, mut at) = (first, self.sample_at(sample));
        let mut next_at = at + INDEX_ENTRY_HEADER + read_u16(region, at + 16)? as usize;
        while number < last {
            let key_start = next_at + INDEX_ENTRY_HEADER;
            let key_len = read_u16(region, next_at + 16)? as usize;
            if region.get(key_start..key_start + key_len)? > key {
                break;
            }
            (number, at, next_at) = (number + 1, next_at, key_start + key_len);
        }
        self.entry(data, number, at).map(Some)
    }

    /// The same blocks sampled every `1 << shift` (benches: the cost of
    /// the sampling against a dense index).
    #[cfg(feature = "test-utils")]
    pub(crate) fn resampled(&self, data: &[u8], shift: u32) -> Option<BlockIndex> {
        let mut index = Self::sampled(self.count, self.data_end, self.index_end, shift);
        for handle in self.iter(data) {
            let handle = handle?;
            index.push(
                handle.key_start - INDEX_ENTRY_HEADER,
                handle.first_key(data),
            );
        }
        Some(index)
    }

    /// Every block in order; an unreadable entry is a `None` item, and the
    /// last.
    pub(crate) fn iter<'a>(
        &'a self,
        data: &'a [u8],
    ) -> impl Iterator<Item = Option<BlockHandle>> + 'a {
        let first = (self.count > 0).then(|| self.block(data, 0));
        std::iter::successors(first, move |previous| {
            let previous = previous.as_ref()?;
            match self.next(data, previous) {
                Some(next) => next.map(Some),
                None => Some(None),
            }
        })
    }
}
