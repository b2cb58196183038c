//! Helpers shared by strata's fuzz targets (`fuzz_targets/*.rs`) and the seed
//! writer (`src/bin/write_seeds.rs`). See `testing/fuzz/README.md`.
//!
//! The sorted-file format protects every region with an xxh3-64 checksum, so
//! random bytes almost never get past the first checksum check. To let the
//! fuzzer explore the structural checks behind them, the `sorted_file` target
//! can first [`repair_checksums`]: recompute every checksum the footer and the
//! index point at, as a writer would, leaving every other byte as fuzzed.
#![deny(missing_docs)]

pub mod state_ops;

use strata_storage::files::{FileValue, FileValueRef, SortedFile};
use xxhash_rust::xxh3::xxh3_64;

/// Size of a sorted file's footer (`book/src/reference/formats/sorted-files.md`).
pub const FOOTER_LEN: usize = 88;
/// Offset of the whole-file checksum inside the footer.
const FOOTER_CHECKSUM_AT: usize = 72;
/// Fixed part of an index entry: offset u64, length u32, count u32, key length u16.
const INDEX_ENTRY_HEADER: usize = 18;
/// The trailing magic of every sorted file.
pub const MAGIC: &[u8; 8] = b"STRATSST";

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// Writes xxh3-64 of `data[start..end - 8]` into `data[end - 8..end]`, if
/// the range is inside `data` and at least 8 bytes long.
fn seal(data: &mut [u8], start: usize, end: usize) {
    if start > end || end > data.len() || end - start < 8 {
        return;
    }
    let sum = xxh3_64(&data[start..end - 8]);
    data[end - 8..end].copy_from_slice(&sum.to_le_bytes());
}

/// Best-effort: makes `data` carry the magic, a format version the reader
/// knows (its own when it is 1 or 2, else 1) and correct checksums for whatever regions its footer and index describe — each data
/// block's trailer, the index, the filter and the whole file — in the order
/// a writer computes them. Regions that fall outside the file are skipped;
/// the opener is left to reject everything else.
pub fn repair_checksums(data: &mut [u8]) {
    let Some(footer_start) = data.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    data[footer_start + FOOTER_LEN - 8..].copy_from_slice(MAGIC);
    if !(1..=2).contains(&u32_at(data, footer_start).unwrap_or(0)) {
        data[footer_start..footer_start + 4].copy_from_slice(&1u32.to_le_bytes());
    }
    let field = |at: usize| u64_at(data, footer_start + at).unwrap_or(u64::MAX);
    let block_count = u32_at(data, footer_start + 32).unwrap_or(0);
    let (index_offset, index_len) = (field(40), field(48));
    let (filter_offset, filter_len) = (field(56), field(64));

    // Data blocks, as listed by the index (capped: the fuzzer picks the count).
    if let (Ok(start), Some(end)) = (
        usize::try_from(index_offset),
        index_offset
            .checked_add(index_len)
            .and_then(|e| usize::try_from(e).ok()),
    ) && start <= end
        && end <= footer_start
        && end - start >= 8
    {
        let body_end = end - 8;
        let mut at = start;
        for _ in 0..block_count.min(4096) {
            let (Some(offset), Some(len), Some(key_len)) = (
                u64_at(data, at).filter(|_| at + INDEX_ENTRY_HEADER <= body_end),
                u32_at(data, at + 8),
                u16_at(data, at + 16),
            ) else {
                break;
            };
            if let (Ok(offset), Ok(len)) = (usize::try_from(offset), usize::try_from(len))
                && let Some(block_end) = offset.checked_add(len)
                && block_end <= start
            {
                seal(data, offset, block_end);
            }
            at += INDEX_ENTRY_HEADER + key_len as usize;
        }
        seal(data, start, end);
    }
    if let (Ok(start), Some(end)) = (
        usize::try_from(filter_offset),
        filter_offset
            .checked_add(filter_len)
            .and_then(|e| usize::try_from(e).ok()),
    ) && end <= footer_start
    {
        seal(data, start, end);
    }
    seal(data, 0, footer_start + FOOTER_CHECKSUM_AT + 8);
}

/// Splits off the first byte of a fuzz input (used as a mode/flags byte).
pub fn split_flags(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&flags, rest)) => (flags, rest),
        None => (0, data),
    }
}

/// Reads a sequence of `(key, value-or-tombstone)` pairs from fuzz bytes:
/// each entry is `key_len:u8 value_len:u8 key value`, with `value_len` 255
/// meaning a tombstone. Stops at the first entry that does not fit.
pub fn entries_from_bytes(mut data: &[u8]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    while let [key_len, value_len, rest @ ..] = data {
        let key_len = *key_len as usize;
        let (value_len, tombstone) = match *value_len {
            255 => (0, true),
            n => (n as usize, false),
        };
        if rest.len() < key_len + value_len {
            break;
        }
        let key = rest[..key_len].to_vec();
        let value = (!tombstone).then(|| rest[key_len..key_len + value_len].to_vec());
        out.push((key, value));
        data = &rest[key_len + value_len..];
    }
    out
}

/// Encodes entries in the form [`entries_from_bytes`] reads (keys and
/// values longer than 254 bytes are cut).
pub fn entries_to_bytes(entries: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (key, value) in entries {
        let key = &key[..key.len().min(255)];
        out.push(key.len() as u8);
        match value {
            Some(v) => {
                let v = &v[..v.len().min(254)];
                out.push(v.len() as u8);
                out.extend_from_slice(key);
                out.extend_from_slice(v);
            }
            None => {
                out.push(255);
                out.extend_from_slice(key);
            }
        }
    }
    out
}

/// Panics unless everything an opened file serves agrees with its own
/// iteration: `entries()` entries, keys strictly ascending, no iteration
/// error, and `get`, `get_ref`, `iter_from` and `iter_prefix` finding each
/// iterated key (and a key just after each one absent unless it is the next).
pub fn check_consistent(file: &SortedFile) {
    let mut previous: Option<bytes::Bytes> = None;
    let mut count = 0u64;
    for item in file.iter() {
        let (key, value) = item.expect("iteration of a verified file cannot fail");
        if let Some(prev) = &previous {
            assert!(
                prev < &key,
                "keys not strictly ascending: {prev:?} then {key:?}"
            );
        }
        assert_eq!(
            file.get(&key).expect("get"),
            Some(value.clone()),
            "get({key:?})"
        );
        let by_ref = file.get_ref(&key).expect("get_ref");
        match (&value, by_ref) {
            (FileValue::Value(v), Some(FileValueRef::Value(r))) => assert_eq!(&v[..], r),
            (FileValue::Tombstone, Some(FileValueRef::Tombstone)) => {}
            (v, r) => panic!("get_ref({key:?}) = {r:?}, iteration gave {v:?}"),
        }
        let first = file.iter_from(&key).next().map(|r| r.expect("iter_from").0);
        assert_eq!(first.as_ref(), Some(&key), "iter_from({key:?})");
        let first = file
            .iter_prefix(&key)
            .next()
            .map(|r| r.expect("iter_prefix").0);
        assert_eq!(first.as_ref(), Some(&key), "iter_prefix({key:?})");
        // A key between this one and the next is absent.
        let mut between = key.to_vec();
        between.push(0);
        if file
            .iter_from(&between)
            .next()
            .map(|r| r.expect("iter_from").0)
            != Some(bytes::Bytes::from(between.clone()))
        {
            assert_eq!(file.get(&between).expect("get"), None, "get({between:?})");
        }
        previous = Some(key);
        count += 1;
    }
    assert_eq!(
        count,
        file.entries(),
        "iteration count vs footer entry count"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let e = vec![
            (b"a".to_vec(), Some(b"1".to_vec())),
            (b"".to_vec(), None),
            (b"bb".to_vec(), Some(Vec::new())),
        ];
        assert_eq!(entries_from_bytes(&entries_to_bytes(&e)), e);
        assert_eq!(entries_from_bytes(&[3, 0, b'x']), Vec::new());
    }

    /// A file written by strata with every checksum zeroed is repaired back
    /// to its exact bytes, and opens.
    #[test]
    fn repair_restores_every_checksum() {
        use std::path::Path;
        use std::sync::Arc;

        use strata_storage::Domain;
        use strata_storage::files::{
            FileMeta, FileSystem, MemFileSystem, SortedFile, SortedFileWriter,
        };

        let fs: Arc<dyn FileSystem> = Arc::new(MemFileSystem::new());
        let meta = FileMeta {
            domain: Domain::Storage,
            from_step: 2,
            to_step: 3,
        };
        let mut w = SortedFileWriter::new(Arc::clone(&fs), Path::new("/t"), meta).unwrap();
        for i in 0u32..600 {
            let value = i.to_le_bytes().repeat(3);
            w.push(&i.to_be_bytes(), (i % 4 != 0).then_some(&value[..]))
                .unwrap();
        }
        let info = w.finish().unwrap();
        let original = fs.read(&info.path).unwrap();
        let file = SortedFile::from_bytes(&info.path, original.clone().into()).unwrap();
        assert!(file.block_count() >= 2);

        let footer = original.len() - FOOTER_LEN;
        let field = |at: usize| u64_at(&original, footer + at).unwrap() as usize;
        let mut broken = original.clone();
        // Block trailers: offsets from the index.
        let (index, index_len) = (field(40), field(48));
        let mut at = index;
        for _ in 0..file.block_count() {
            let offset = u64_at(&original, at).unwrap() as usize;
            let len = u32_at(&original, at + 8).unwrap() as usize;
            broken[offset + len - 8..offset + len].fill(0);
            at += INDEX_ENTRY_HEADER + u16_at(&original, at + 16).unwrap() as usize;
        }
        broken[index + index_len - 8..index + index_len].fill(0);
        let (filter, filter_len) = (field(56), field(64));
        broken[filter + filter_len - 8..filter + filter_len].fill(0);
        broken[footer + 72..].fill(0);
        assert!(SortedFile::from_bytes(&info.path, broken.clone().into()).is_err());
        repair_checksums(&mut broken);
        assert_eq!(broken, original);
    }

    #[test]
    fn repair_is_a_no_op_on_short_inputs() {
        let mut short = vec![7u8; FOOTER_LEN - 1];
        repair_checksums(&mut short);
        assert_eq!(short, vec![7u8; FOOTER_LEN - 1]);
    }
}
