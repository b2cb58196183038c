//! Opening a sorted file: every structure is checked once — footer, index,
//! filter, each data block (checksum, layout, key order) and the whole-file
//! checksum — so lookups afterwards can trust the immutable map. The check
//! lets the pages it has passed over go as it goes, so opening a file of any
//! size keeps only a few MiB of it resident.

use std::ops::Range;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use xxhash_rust::xxh3::Xxh3;

use super::error::{FileError, HexKey};
use super::filter::{Filter, FilterDefect};
use super::format::{
    BLOCK_TRAILER, CHECKSUM_LEN, FOOTER_CHECKSUM_AT, FOOTER_LEN, FORMAT_VERSION, Footer,
    INDEX_ENTRY_HEADER, MAGIC, footer_at, read_u16, read_u32, read_u64,
};
use super::index::{BlockHandle, BlockIndex};
use super::layout::{Block, Layout};
use super::meta::FileMeta;
use super::prefixed::PREFIXED_TRAILER;
use super::reader::SortedFile;
use strata_fs::file_name_of;

pub(crate) struct Checker<'a> {
    pub(crate) path: &'a Path,
    /// The bytes checked: the whole file, or (a remote file) its tail.
    pub(crate) data: &'a Bytes,
    /// The file offset of `data`'s first byte (0 for the whole file).
    pub(crate) base: usize,
}

impl Checker<'_> {
    fn corrupted(&self, offset: usize, what: impl Into<String>) -> FileError {
        FileError::Corrupted {
            file: self.path.to_path_buf(),
            offset: offset as u64,
            what: what.into(),
        }
    }

    fn mismatch(
        &self,
        offset: usize,
        what: impl Into<String>,
        expected: u64,
        found: u64,
    ) -> FileError {
        FileError::ChecksumMismatch {
            file: self.path.to_path_buf(),
            offset: offset as u64,
            what: what.into(),
            expected,
            found,
        }
    }
}

/// Bytes hashed and checked between two page releases: what an open keeps
/// resident of a file, whatever its size.
pub(crate) const RELEASE_CHUNK: usize = 4 << 20;

/// Hands finished-with byte ranges of the file to the map's owner, which
/// may drop their pages from the resident set (they fault back in on the
/// next read). Ranges are released in increasing order.
pub(crate) type Release<'a> = &'a mut dyn FnMut(Range<usize>);

/// Checks `data` (the whole file) and builds the reader over it.
///
/// One pass over the data blocks: each block is added to the whole-file
/// hash and checked while it is in cache, and every [`RELEASE_CHUNK`] bytes
/// the pages passed over are released. The index and filter (a few percent
/// of the file) are read for their own checks first, then hashed with the
/// rest; their pages are released the same way.
pub(crate) fn open_bytes(
    path: PathBuf,
    data: Bytes,
    release: Release<'_>,
) -> Result<SortedFile, FileError> {
    let c = Checker {
        path: &path,
        data: &data,
        base: 0,
    };
    let len = data.len();
    let footer_start = len.checked_sub(FOOTER_LEN).ok_or_else(|| {
        c.corrupted(
            0,
            format!("file is {len} bytes, shorter than the {FOOTER_LEN}-byte footer"),
        )
    })?;
    let mut raw = [0u8; FOOTER_LEN];
    raw.copy_from_slice(&data[footer_start..]);
    let (footer, layout) = decode_footer(&path, &raw, len as u64)?;
    let meta = check_footer(&c, &footer, &raw, footer_start)?;
    let index = parse_index(&c, &footer, layout, release)?;
    let filter_at = footer.filter_offset as usize;
    let filter = Filter::decode_with(
        data.slice(filter_at..footer_start),
        footer.filter_offset,
        |bits| chunked_checksum(bits, filter_at, release),
    )
    .map_err(|defect| filter_error(&c, filter_at, defect))?;
    let found = check_blocks(&c, &footer, layout, &index, release)?;
    if found != footer.checksum {
        return Err(c.mismatch(0, "whole file", footer.checksum, found));
    }
    Ok(SortedFile::from_parts(
        path,
        meta,
        layout,
        data,
        footer.entry_count,
        footer.checksum,
        index,
        filter,
    ))
}

/// The footer `raw` of the `len`-byte file `path` (its last bytes): its
/// magic checked, its fields and the block layout its version gives.
pub(crate) fn decode_footer(
    path: &Path,
    raw: &[u8; FOOTER_LEN],
    len: u64,
) -> Result<(Footer, Layout), FileError> {
    if raw[FOOTER_LEN - 8..] != MAGIC {
        return Err(FileError::Corrupted {
            file: path.to_path_buf(),
            offset: len - 8,
            what: format!(
                "bad magic: expected {}, found {}",
                HexKey(&MAGIC),
                HexKey(&raw[FOOTER_LEN - 8..])
            ),
        });
    }
    let footer = Footer::decode(raw);
    let layout =
        Layout::of_version(footer.version).ok_or_else(|| FileError::UnsupportedVersion {
            file: path.to_path_buf(),
            found: footer.version,
            supported: FORMAT_VERSION,
        })?;
    Ok((footer, layout))
}

/// xxh3-64 of `bytes` (which start at file offset `at`), computed chunk by
/// chunk, each chunk released once hashed.
fn chunked_checksum(bytes: &[u8], at: usize, release: Release<'_>) -> u64 {
    let mut hash = Xxh3::new();
    for (i, chunk) in bytes.chunks(RELEASE_CHUNK).enumerate() {
        hash.update(chunk);
        let from = at + i * RELEASE_CHUNK;
        release(from..from + chunk.len());
    }
    hash.digest()
}

/// Checks the footer's values and returns the file's identity.
pub(crate) fn check_footer(
    c: &Checker<'_>,
    f: &Footer,
    raw: &[u8; FOOTER_LEN],
    footer_start: usize,
) -> Result<FileMeta, FileError> {
    if !Footer::reserved_are_zero(raw) {
        return Err(c.corrupted(footer_start, "reserved footer bytes are not zero"));
    }
    let domain = f.domain().ok_or_else(|| {
        c.corrupted(
            footer_start + footer_at::DOMAIN,
            format!("unknown domain id {}", f.domain_id),
        )
    })?;
    let meta = FileMeta {
        domain,
        from_step: f.from_step,
        to_step: f.to_step,
    };
    if !meta.is_valid() {
        return Err(c.corrupted(
            footer_start + footer_at::FROM_STEP,
            format!("invalid step range [{}, {})", f.from_step, f.to_step),
        ));
    }
    let index_end = f.index_offset.checked_add(f.index_len);
    let filter_end = f.filter_offset.checked_add(f.filter_len);
    if index_end != Some(f.filter_offset)
        || filter_end != Some(footer_start as u64)
        || f.index_len < CHECKSUM_LEN as u64
    {
        return Err(c.corrupted(
            footer_start + footer_at::INDEX_OFFSET,
            format!(
                "regions do not tile the file: index {}+{}, filter {}+{}, footer at {footer_start}",
                f.index_offset, f.index_len, f.filter_offset, f.filter_len
            ),
        ));
    }
    if let Some(named) = file_name_of(c.path).and_then(FileMeta::parse_file_name)
        && named != meta
    {
        return Err(c.corrupted(
            footer_start,
            format!(
                "footer describes {} steps [{}, {}) but the file name says {} [{}, {})",
                meta.domain,
                meta.from_step,
                meta.to_step,
                named.domain,
                named.from_step,
                named.to_step
            ),
        ));
    }
    Ok(meta)
}

/// Checks the index checksum and every entry, and samples them into the
/// in-memory [`BlockIndex`]; the blocks must tile the data region exactly.
pub(crate) fn parse_index(
    c: &Checker<'_>,
    f: &Footer,
    layout: Layout,
    release: Release<'_>,
) -> Result<BlockIndex, FileError> {
    let start = f.index_offset as usize;
    // Where the index lies in `c.data` (the entries' positions the
    // index keeps are positions in it).
    let local = start - c.base;
    let region = &c.data[local..f.filter_offset as usize - c.base];
    let body = region.len() - CHECKSUM_LEN;
    let expected = read_u64(region, body).unwrap_or(0);
    let found = chunked_checksum(&region[..body], start, release);
    if expected != found {
        return Err(c.mismatch(start, "index", expected, found));
    }
    let count = f.block_count as usize;
    let mut index =
        BlockIndex::with_capacity(count.min(body / INDEX_ENTRY_HEADER), start, local + body);
    let (mut at, mut next_block, mut released) = (0usize, 0usize, 0usize);
    for i in 0..count {
        if at - released >= RELEASE_CHUNK {
            release(start + released..start + at);
            released = at;
        }
        let bad = |what: &str| c.corrupted(start + at, format!("index entry {i}: {what}"));
        let (Some(offset), Some(len), Some(entries), Some(key_len)) = (
            read_u64(&region[..body], at),
            read_u32(&region[..body], at + 8),
            read_u32(&region[..body], at + 12),
            read_u16(&region[..body], at + 16),
        ) else {
            return Err(bad("runs past the end of the index"));
        };
        let key_start = at + INDEX_ENTRY_HEADER;
        let key_end = key_start + key_len as usize;
        if key_end > body {
            return Err(bad("first key runs past the end of the index"));
        }
        if offset != next_block as u64 {
            return Err(bad(&format!(
                "block offset {offset}, expected {next_block}"
            )));
        }
        let len = len as usize;
        let end = next_block + len;
        if len < layout.min_block_len() || end as u64 > f.index_offset {
            return Err(bad(&format!(
                "block length {len} does not fit the data region"
            )));
        }
        if entries == 0 {
            return Err(bad("block has no entries"));
        }
        index.push(local + at, &region[key_start..key_end]);
        next_block = end;
        at = key_end;
    }
    release(start + released..start + at);
    if at != body {
        return Err(c.corrupted(
            start + at,
            format!("{} unused bytes after the last index entry", body - at),
        ));
    }
    if next_block as u64 != f.index_offset {
        return Err(c.corrupted(
            next_block,
            format!(
                "blocks end at {next_block} but the index starts at {}",
                f.index_offset
            ),
        ));
    }
    Ok(index)
}

pub(crate) fn filter_error(c: &Checker<'_>, at: usize, defect: FilterDefect) -> FileError {
    match defect {
        FilterDefect::Checksum(expected, found) => c.mismatch(at, "filter", expected, found),
        FilterDefect::Short => c.corrupted(at, "filter region is shorter than its trailer"),
        FilterDefect::Padding => c.corrupted(at, "filter alignment padding is not zero"),
        FilterDefect::Probes(k) => {
            c.corrupted(at, format!("filter probe count {k} is out of range"))
        }
        FilterDefect::Length { lines, len } => c.corrupted(
            at,
            format!("filter of {lines} lines does not fit its {len}-byte region"),
        ),
    }
}

/// Checks every block — checksum, entry layout, key order (across blocks
/// too), first key against the index — and the total entry count, while
/// hashing the whole file; returns that hash. Pages are released every
/// [`RELEASE_CHUNK`] bytes, once both the hash and the checks are past them.
fn check_blocks(
    c: &Checker<'_>,
    f: &Footer,
    layout: Layout,
    index: &BlockIndex,
    release: Release<'_>,
) -> Result<u64, FileError> {
    let mut hash = Xxh3::new();
    let mut keys = KeyOrder::default();
    let mut total = 0u64;
    let mut released = 0usize;
    for (i, h) in index.iter(c.data).enumerate() {
        let h = h.ok_or_else(|| {
            c.corrupted(
                index.start(),
                format!("index entry {i} cannot be read back"),
            )
        })?;
        let block = &c.data[h.offset..h.offset + h.len];
        hash.update(block);
        check_block(c, layout, i, &h, &mut keys)?;
        total += u64::from(h.entries);
        let done = h.offset + h.len;
        if done - released >= RELEASE_CHUNK {
            release(released..done);
            released = done;
        }
    }
    if total != f.entry_count {
        return Err(c.corrupted(
            c.data.len() - FOOTER_LEN + footer_at::ENTRY_COUNT,
            format!(
                "blocks hold {total} entries, the footer says {}",
                f.entry_count
            ),
        ));
    }
    // The index, filter and footer fields close the whole-file hash.
    let from = f.index_offset as usize;
    let covered = c.data.len() - FOOTER_LEN + FOOTER_CHECKSUM_AT;
    release(released..from);
    for (n, chunk) in c.data[from..covered].chunks(RELEASE_CHUNK).enumerate() {
        hash.update(chunk);
        let at = from + n * RELEASE_CHUNK;
        release(at..at + chunk.len());
    }
    Ok(hash.digest())
}

/// The last key checked (decoded from shared prefixes), across blocks.
#[derive(Default)]
struct KeyOrder {
    previous: Vec<u8>,
    any: bool,
}

/// Checks one block; `keys.previous` holds the file's last key so far.
fn check_block(
    c: &Checker<'_>,
    layout: Layout,
    number: usize,
    handle: &BlockHandle,
    keys: &mut KeyOrder,
) -> Result<(), FileError> {
    check_block_bytes(
        c,
        layout,
        number,
        handle,
        &c.data[handle.offset..handle.offset + handle.len],
        keys,
    )
}

/// Checks one data block read apart from the file (a remote file's ranged
/// read): its checksum, entry layout, key order and first key, the index
/// in `c`.
pub(crate) fn check_fetched_block(
    c: &Checker<'_>,
    layout: Layout,
    handle: &BlockHandle,
    bytes: &[u8],
) -> Result<(), FileError> {
    check_block_bytes(
        c,
        layout,
        handle.number,
        handle,
        bytes,
        &mut KeyOrder::default(),
    )
}

fn check_block_bytes(
    c: &Checker<'_>,
    layout: Layout,
    number: usize,
    handle: &BlockHandle,
    bytes: &[u8],
    keys: &mut KeyOrder,
) -> Result<(), FileError> {
    let block = BlockCheck {
        c,
        number,
        handle,
        bytes,
    };
    let view = block.header(layout)?;
    let end = block.entries(view, keys)?;
    block.tail(view, end)
}

/// One data block being checked: where it is, for the errors.
struct BlockCheck<'a> {
    c: &'a Checker<'a>,
    /// The block's number in the file.
    number: usize,
    handle: &'a BlockHandle,
    bytes: &'a [u8],
}

/// How far [`BlockCheck::entries`] got: the end of the last entry and the
/// restart points met on the way.
struct EntriesEnd {
    next: usize,
    restarts_seen: usize,
}

impl<'a> BlockCheck<'a> {
    /// An error at `at` bytes into the block.
    fn bad(&self, at: usize, what: String) -> FileError {
        self.c.corrupted(
            self.handle.offset + at,
            format!("data block {}: {what}", self.number),
        )
    }

    /// The trailer: counts that fit, the block checksum, the entry count
    /// the index gives, and (format 2) a first restart point at 0.
    fn header(&self, layout: Layout) -> Result<Block<'a>, FileError> {
        let trailer = match layout {
            Layout::Plain => BLOCK_TRAILER,
            Layout::Prefixed => PREFIXED_TRAILER,
        };
        let view = Block::new(layout, self.bytes).ok_or_else(|| {
            self.bad(
                self.handle.len - trailer,
                "entry or restart count does not fit the block".into(),
            )
        })?;
        let (expected, found) = view.checksums();
        if expected != found {
            return Err(self.c.mismatch(
                self.handle.offset,
                format!("data block {}", self.number),
                expected,
                found,
            ));
        }
        if view.len() != self.handle.entries as usize {
            return Err(self.bad(
                self.handle.len - trailer,
                format!(
                    "{} entries, the index says {}",
                    view.len(),
                    self.handle.entries
                ),
            ));
        }
        if let Block::Prefixed(v) = view
            && v.restart(0) != Some(0)
        {
            return Err(self.bad(
                v.entries_end(),
                "the first entry is not a restart point".into(),
            ));
        }
        Ok(view)
    }

    /// Every entry in turn: laid out where the previous one ends, a
    /// restart point sharing nothing, a shared prefix no longer than the
    /// previous key, keys in strictly increasing order (across blocks too,
    /// through `keys`), the first key the index's.
    fn entries(&self, view: Block<'_>, keys: &mut KeyOrder) -> Result<EntriesEnd, FileError> {
        let mut end = EntriesEnd {
            next: 0,
            restarts_seen: 0,
        };
        for entry_number in 0..view.len() {
            let next = end.next;
            let laid_out = match view {
                Block::Plain(v) => v.entry_offset(entry_number) == Some(next),
                Block::Prefixed(_) => next < view.entries_end(),
            };
            let entry = laid_out
                .then(|| view.decode_at(next))
                .flatten()
                .ok_or_else(|| {
                    self.bad(
                        next,
                        format!("entry {entry_number} is not laid out where expected"),
                    )
                })?;
            if let Block::Prefixed(v) = view
                && v.restart(end.restarts_seen) == Some(next)
            {
                if entry.shared != 0 {
                    return Err(self.bad(
                        next,
                        format!(
                            "entry {entry_number} is a restart point but shares {} bytes with the previous key",
                            entry.shared
                        ),
                    ));
                }
                end.restarts_seen += 1;
            }
            // A block decodes on its own: its first entry shares nothing.
            let base_len = if entry_number == 0 {
                0
            } else {
                keys.previous.len()
            };
            if entry.shared > base_len {
                return Err(self.bad(
                    next,
                    format!(
                        "entry {entry_number} shares {} bytes with a previous key of {base_len} bytes",
                        entry.shared
                    ),
                ));
            }
            self.in_order(&self.bytes[entry.suffix.clone()], entry.shared, next, keys)?;
            if entry_number == 0 && keys.previous != self.handle.first_key(self.c.data) {
                return Err(self.bad(0, "first key differs from the index".into()));
            }
            end.next = entry.end;
        }
        Ok(end)
    }

    /// The key made of the previous key's first `shared` bytes and
    /// `suffix` must be greater than the previous key; it becomes the
    /// previous key. It is greater exactly when the suffix is greater than
    /// the rest of the previous key, so only the suffix is compared and
    /// copied.
    fn in_order(
        &self,
        suffix: &[u8],
        shared: usize,
        at: usize,
        keys: &mut KeyOrder,
    ) -> Result<(), FileError> {
        if keys.any && suffix <= &keys.previous[shared..] {
            let mut key = keys.previous[..shared].to_vec();
            key.extend_from_slice(suffix);
            return Err(self.bad(
                at,
                format!(
                    "key {} is not greater than the previous key {}",
                    HexKey(&key),
                    HexKey(&keys.previous)
                ),
            ));
        }
        keys.previous.truncate(shared);
        keys.previous.extend_from_slice(suffix);
        keys.any = true;
        Ok(())
    }

    /// After the entries: every restart point met, no unused bytes.
    fn tail(&self, view: Block<'_>, end: EntriesEnd) -> Result<(), FileError> {
        let restarts = match view {
            Block::Prefixed(v) => v.restart_count(),
            Block::Plain(_) => 0,
        };
        if end.restarts_seen != restarts {
            let at = match view {
                Block::Prefixed(v) => v.entries_end() + 4 * end.restarts_seen,
                Block::Plain(_) => view.entries_end(),
            };
            return Err(self.bad(
                at,
                format!(
                    "restart point {} is not at the start of an entry",
                    end.restarts_seen
                ),
            ));
        }
        if end.next != view.entries_end() {
            return Err(self.bad(
                end.next,
                format!(
                    "{} unused bytes after the last entry",
                    view.entries_end() - end.next
                ),
            ));
        }
        Ok(())
    }
}
