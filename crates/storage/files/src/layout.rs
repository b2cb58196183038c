//! The data-block layouts a file may use, chosen by its format version:
//! format 1 stores every key whole behind an offset array
//! ([`super::block`]), format 2 shares key prefixes ([`super::prefixed`]).
//! Readers, the iterator and `open` go through [`Block`]; the writer through
//! [`Builder`].

use std::ops::Range;

use super::block::{BlockBuilder, BlockView, entry_cost};
use super::format::{BLOCK_TRAILER, ENTRY_HEADER};
use super::prefixed::{Decoded, MIN_PREFIXED_BLOCK, PrefixedBuilder, PrefixedView};

/// Version 1: whole keys and an offset array.
pub(crate) const VERSION_PLAIN: u32 = 1;
/// Version 2: shared key prefixes and restart points.
pub(crate) const VERSION_PREFIXED: u32 = 2;

/// Entries between restart points in a format-2 block written by default
/// (`cargo bench -p strata-benches --bench file_format`: against 16, 11 %
/// more bytes per storage entry and 1 % per record, for gets ~10–20 %
/// faster).
pub(crate) const DEFAULT_RESTART_INTERVAL: u32 = 4;

/// How a file's data blocks are laid out (the footer's version says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    Plain,
    Prefixed,
}

impl Layout {
    /// The layout of a format version this build reads.
    pub(crate) fn of_version(version: u32) -> Option<Layout> {
        match version {
            VERSION_PLAIN => Some(Layout::Plain),
            VERSION_PREFIXED => Some(Layout::Prefixed),
            _ => None,
        }
    }

    /// The smallest well-formed block.
    pub(crate) fn min_block_len(self) -> usize {
        match self {
            Layout::Plain => ENTRY_HEADER + 4 + BLOCK_TRAILER,
            Layout::Prefixed => MIN_PREFIXED_BLOCK,
        }
    }
}

/// How a writer lays out its file (tests and benches write the older
/// format and other restart intervals through
/// [`super::SortedFileWriter::with_layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileLayout {
    /// Format 1: whole keys, offset array.
    V1,
    /// Format 2: shared key prefixes, a restart point every
    /// `restart_interval` entries (`u32::MAX`: only at the block start).
    V2 {
        /// Entries from one restart point to the next.
        restart_interval: u32,
    },
}

impl Default for FileLayout {
    fn default() -> Self {
        FileLayout::V2 {
            restart_interval: DEFAULT_RESTART_INTERVAL,
        }
    }
}

impl FileLayout {
    /// The layout new files of `domain` are written in. Accounts and codes
    /// are keyed by addresses, random 20-byte strings that share almost no
    /// prefix: format 2 saves them ~8 bytes an entry (0.82× format 1) but
    /// its restart search made a get 1.7–2.3× slower, so they keep format
    /// 1's whole keys. Storage keys (address ‖ slot) and commitment record
    /// keys (nibble paths) share long prefixes: format 2 (0.68× and 0.95×).
    pub fn for_domain(domain: strata_types::Domain) -> Self {
        match domain {
            strata_types::Domain::Account | strata_types::Domain::Code => FileLayout::V1,
            strata_types::Domain::Storage | strata_types::Domain::Commitment => {
                FileLayout::default()
            }
        }
    }

    pub(crate) fn version(self) -> u32 {
        match self {
            FileLayout::V1 => VERSION_PLAIN,
            FileLayout::V2 { .. } => VERSION_PREFIXED,
        }
    }
}

/// A view of one data block in either layout.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Block<'a> {
    Plain(BlockView<'a>),
    Prefixed(PrefixedView<'a>),
}

impl<'a> Block<'a> {
    /// Reads the block's trailer; `None` if it does not fit.
    #[inline]
    pub(crate) fn new(layout: Layout, bytes: &'a [u8]) -> Option<Self> {
        match layout {
            Layout::Plain => BlockView::new(bytes).map(Block::Plain),
            Layout::Prefixed => PrefixedView::new(bytes).map(Block::Prefixed),
        }
    }

    /// Number of entries (the trailer's count).
    pub(crate) fn len(&self) -> usize {
        match self {
            Block::Plain(v) => v.len(),
            Block::Prefixed(v) => v.len(),
        }
    }

    /// Where the entries end (the offset or restart array starts).
    #[inline]
    pub(crate) fn entries_end(&self) -> usize {
        match self {
            Block::Plain(v) => v.entries_end(),
            Block::Prefixed(v) => v.entries_end(),
        }
    }

    /// The stored checksum and the checksum of the bytes it covers.
    pub(crate) fn checksums(&self) -> (u64, u64) {
        match self {
            Block::Plain(v) => v.checksums(),
            Block::Prefixed(v) => v.checksums(),
        }
    }

    /// Decodes the entry starting at byte `at` (`shared` is always 0 in
    /// format 1); `None` if it does not fit the entries.
    #[inline]
    pub(crate) fn decode_at(&self, at: usize) -> Option<Decoded> {
        match self {
            Block::Plain(v) => v.decode_at(at),
            Block::Prefixed(v) => v.decode_at(at),
        }
    }

    /// Finds `key`: `Ok(Some(value))` when present (`value` is `None` for a
    /// tombstone), `Ok(None)` when absent, `Err(())` when the block is
    /// malformed.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Option<Range<usize>>>, ()> {
        match self {
            Block::Plain(v) => match v.search(key) {
                Some(Ok(i)) => v.entry(i).map(|e| Some(e.value)).ok_or(()),
                Some(Err(_)) => Ok(None),
                None => Err(()),
            },
            Block::Prefixed(v) => v.search(key).map(|d| d.map(|d| d.value)),
        }
    }

    /// The offset of the first entry whose key is ≥ `key` (or the end of
    /// the entries), with `prev` set to the key before it (what the next
    /// decode shares from). `None` if the block is malformed.
    pub(crate) fn seek(&self, key: &[u8], prev: &mut Vec<u8>) -> Option<usize> {
        match self {
            Block::Plain(v) => {
                prev.clear();
                match v.search(key)? {
                    Ok(i) | Err(i) if i < v.len() => v.entry_offset(i),
                    Ok(_) | Err(_) => Some(v.entries_end()),
                }
            }
            Block::Prefixed(v) => v.seek(key, prev),
        }
    }
}

/// The block builder of either layout.
#[derive(Debug)]
pub(crate) enum Builder {
    Plain(BlockBuilder),
    Prefixed(PrefixedBuilder),
}

impl Builder {
    pub(crate) fn new(layout: FileLayout) -> Self {
        match layout {
            FileLayout::V1 => Builder::Plain(BlockBuilder::default()),
            FileLayout::V2 { restart_interval } => {
                Builder::Prefixed(PrefixedBuilder::new(restart_interval))
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Builder::Plain(b) => b.is_empty(),
            Builder::Prefixed(b) => b.is_empty(),
        }
    }

    /// The encoded size of the block if it were finished now.
    pub(crate) fn encoded_len(&self) -> usize {
        match self {
            Builder::Plain(b) => b.encoded_len(),
            Builder::Prefixed(b) => b.encoded_len(),
        }
    }

    /// What adding the entry would add to the encoded size.
    pub(crate) fn cost(&self, key: &[u8], value: Option<&[u8]>) -> usize {
        match self {
            Builder::Plain(_) => entry_cost(key, value),
            Builder::Prefixed(b) => b.cost(key, value),
        }
    }

    pub(crate) fn add(&mut self, key: &[u8], value: Option<&[u8]>) {
        match self {
            Builder::Plain(b) => b.add(key, value),
            Builder::Prefixed(b) => b.add(key, value),
        }
    }

    pub(crate) fn first_key(&self) -> &[u8] {
        match self {
            Builder::Plain(b) => b.first_key(),
            Builder::Prefixed(b) => b.first_key(),
        }
    }

    pub(crate) fn entry_count(&self) -> u32 {
        match self {
            Builder::Plain(b) => b.entry_count(),
            Builder::Prefixed(b) => b.entry_count(),
        }
    }

    pub(crate) fn finish_into(&mut self, out: &mut Vec<u8>) {
        match self {
            Builder::Plain(b) => b.finish_into(out),
            Builder::Prefixed(b) => b.finish_into(out),
        }
    }
}
