//! Opening a sorted file: every structure is checked once — footer, index,
//! filter, each data block (checksum, layout, key order) and the whole-file
//! checksum — so lookups afterwards can trust the immutable map.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::block::BlockView;
use super::error::{FileError, HexKey};
use super::filter::{Filter, FilterDefect};
use super::format::{
    BLOCK_TRAILER, CHECKSUM_LEN, ENTRY_HEADER, FOOTER_CHECKSUM_AT, FOOTER_LEN, FORMAT_VERSION,
    Footer, INDEX_ENTRY_HEADER, MAGIC, checksum, read_u16, read_u32, read_u64,
};
use super::fs::file_name_of;
use super::meta::FileMeta;
use super::reader::{BlockHandle, SortedFile};

/// Smallest possible block: one entry with an empty key, its offset, trailer.
const MIN_BLOCK_LEN: usize = ENTRY_HEADER + 4 + BLOCK_TRAILER;

struct Checker<'a> {
    path: &'a Path,
    data: &'a Bytes,
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

/// Checks `data` (the whole file) and builds the reader over it.
pub(crate) fn open_bytes(path: PathBuf, data: Bytes) -> Result<SortedFile, FileError> {
    let c = Checker {
        path: &path,
        data: &data,
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
    if raw[FOOTER_LEN - 8..] != MAGIC {
        return Err(c.corrupted(
            len - 8,
            format!(
                "bad magic: expected {}, found {}",
                HexKey(&MAGIC),
                HexKey(&raw[FOOTER_LEN - 8..])
            ),
        ));
    }
    let footer = Footer::decode(&raw);
    if footer.version != FORMAT_VERSION {
        return Err(FileError::UnsupportedVersion {
            file: path.clone(),
            found: footer.version,
            supported: FORMAT_VERSION,
        });
    }
    let meta = check_footer(&c, &footer, &raw, footer_start)?;
    let blocks = parse_index(&c, &footer)?;
    let filter_at = footer.filter_offset as usize;
    let filter = Filter::decode(data.slice(filter_at..footer_start), footer.filter_offset)
        .map_err(|defect| filter_error(&c, filter_at, defect))?;
    check_blocks(&c, &footer, &blocks)?;
    let covered = footer_start + FOOTER_CHECKSUM_AT;
    let found = checksum(&data[..covered]);
    if found != footer.checksum {
        return Err(c.mismatch(0, "whole file", footer.checksum, found));
    }
    Ok(SortedFile::from_parts(
        path,
        meta,
        data,
        footer.entry_count,
        footer.checksum,
        blocks,
        filter,
    ))
}

/// Checks the footer's values and returns the file's identity.
fn check_footer(
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
            footer_start + 4,
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
            footer_start + 8,
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
            footer_start + 40,
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

/// Checks the index checksum and decodes one handle per block; the blocks
/// must tile the data region exactly.
fn parse_index(c: &Checker<'_>, f: &Footer) -> Result<Vec<BlockHandle>, FileError> {
    let start = f.index_offset as usize;
    let region = &c.data[start..f.filter_offset as usize];
    let body = region.len() - CHECKSUM_LEN;
    let expected = read_u64(region, body).unwrap_or(0);
    let found = checksum(&region[..body]);
    if expected != found {
        return Err(c.mismatch(start, "index", expected, found));
    }
    let count = f.block_count as usize;
    let mut blocks = Vec::with_capacity(count.min(body / INDEX_ENTRY_HEADER));
    let (mut at, mut next_block) = (0usize, 0usize);
    for i in 0..count {
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
        if len < MIN_BLOCK_LEN || end as u64 > f.index_offset {
            return Err(bad(&format!(
                "block length {len} does not fit the data region"
            )));
        }
        if entries == 0 {
            return Err(bad("block has no entries"));
        }
        blocks.push(BlockHandle::new(
            &c.data[start + key_start..start + key_end],
            start + key_start,
            next_block,
            len,
            entries,
        ));
        next_block = end;
        at = key_end;
    }
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
    Ok(blocks)
}

fn filter_error(c: &Checker<'_>, at: usize, defect: FilterDefect) -> FileError {
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

/// Checks every block: checksum, entry layout, key order (across blocks
/// too), first key against the index, and the total entry count.
fn check_blocks(c: &Checker<'_>, f: &Footer, blocks: &[BlockHandle]) -> Result<(), FileError> {
    let mut previous: Option<&[u8]> = None;
    let mut total = 0u64;
    for (i, h) in blocks.iter().enumerate() {
        let block = &c.data[h.offset..h.offset + h.len];
        let bad =
            |at: usize, what: String| c.corrupted(h.offset + at, format!("data block {i}: {what}"));
        let view = BlockView::new(block).ok_or_else(|| {
            bad(
                h.len - BLOCK_TRAILER,
                "entry count does not fit the block".into(),
            )
        })?;
        let (expected, found) = view.checksums();
        if expected != found {
            return Err(c.mismatch(h.offset, format!("data block {i}"), expected, found));
        }
        if view.len() != h.entries as usize {
            return Err(bad(
                h.len - BLOCK_TRAILER,
                format!("{} entries, the index says {}", view.len(), h.entries),
            ));
        }
        let mut next = 0usize;
        for j in 0..view.len() {
            let entry = match view.entry_offset(j) {
                Some(off) if off == next => view.entry(j),
                _ => None,
            }
            .ok_or_else(|| bad(next, format!("entry {j} is not laid out where expected")))?;
            let key = &block[entry.key.clone()];
            if j == 0 && key != h.first_key(c.data) {
                return Err(bad(0, "first key differs from the index".into()));
            }
            if let Some(prev) = previous
                && key <= prev
            {
                return Err(bad(
                    next,
                    format!(
                        "key {} is not greater than the previous key {}",
                        HexKey(key),
                        HexKey(prev)
                    ),
                ));
            }
            previous = Some(key);
            next = entry.value.map_or(entry.key.end, |v| v.end);
        }
        if next != view.entries_end() {
            return Err(bad(
                next,
                format!(
                    "{} unused bytes after the last entry",
                    view.entries_end() - next
                ),
            ));
        }
        total += u64::from(h.entries);
    }
    if total != f.entry_count {
        return Err(c.corrupted(
            c.data.len() - FOOTER_LEN + 24,
            format!(
                "blocks hold {total} entries, the footer says {}",
                f.entry_count
            ),
        ));
    }
    Ok(())
}
