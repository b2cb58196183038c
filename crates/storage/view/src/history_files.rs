//! The state's history in immutable files (`history/` in the datadir): per
//! domain, one file for each range of blocks `[from, to)` (the file's
//! name, as [`strata_files::FileMeta`] writes it), holding every change a
//! block of the range made to a key as the key's value before that block.
//!
//! ```text
//! entry key:    key_len u16 BE | key | block u64 BE
//! entry value:  the key's value before the block, or a tombstone (absent)
//! ```
//! The entries of one key are contiguous and in block order (the key's
//! length first, so that a key is never mistaken for a longer one it
//! prefixes: commitment keys differ in length), and each file's filter is
//! built over `key_len ‖ key` without the block, so a read asks each file
//! once whether it holds any change of the key. A read at block `b` finds
//! the key's first change after `b` — in the oldest file whose range ends
//! after `b` that holds one — and returns the value recorded before it:
//! the value at `b`. With none, the value now is.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use strata_files::{FileError, FileValue, SortedFile};

/// Bytes an entry key adds to the key: its length before, the block after.
pub const ENTRY_OVERHEAD: usize = 2 + BLOCK_LEN;

/// The block number's bytes at the end of an entry key.
pub const BLOCK_LEN: usize = 8;

/// The folder of the history files beside a datadir's `files/` folder.
pub fn history_dir_beside(files_dir: &Path) -> PathBuf {
    files_dir
        .parent()
        .unwrap_or(files_dir)
        .join(strata_types::datadir::HISTORY_DIR)
}

/// `key_len ‖ key`: what a file's filter answers for.
pub fn key_prefix(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + ENTRY_OVERHEAD);
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// The entry key of `key`'s change at `block`.
pub fn entry_key(key: &[u8], block: u64) -> Vec<u8> {
    let mut out = key_prefix(key);
    out.extend_from_slice(&block.to_be_bytes());
    out
}

/// The key and block of an entry key; `None` when it is not one.
pub fn parse_entry_key(raw: &[u8]) -> Option<(&[u8], u64)> {
    let (len, rest) = raw.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    if rest.len() != len + BLOCK_LEN {
        return None;
    }
    let (key, block) = rest.split_at(len);
    Some((key, u64::from_be_bytes(block.try_into().ok()?)))
}

/// The value `key` held at `block`, from `files` (one domain's history
/// files, oldest blocks first): the value before its first change after
/// `block` (`Some(None)`: absent), or `None` when the files record no
/// change of it after `block`.
pub fn value_at(
    files: &[Arc<SortedFile>],
    key: &[u8],
    block: u64,
) -> Result<Option<Option<Bytes>>, FileError> {
    let Some(after) = block.checked_add(1) else {
        return Ok(None);
    };
    let prefix = key_prefix(key);
    let mut from = prefix.clone();
    from.extend_from_slice(&after.to_be_bytes());
    for file in files {
        if file.meta().to_step <= after || !file.may_contain(&prefix) {
            continue;
        }
        if let Some(entry) = file.iter_from(&from).next() {
            let (found, value) = entry?;
            if found.len() == from.len() && found.starts_with(&prefix) {
                return Ok(Some(match value {
                    FileValue::Value(value) => Some(value),
                    FileValue::Tombstone => None,
                }));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_files::{FileMeta, FileSystem, MemFileSystem, SortedFileWriter};
    use strata_types::Domain;

    /// A change: the key, its block, the value before it.
    type Change<'a> = (&'a [u8], u64, Option<&'a [u8]>);

    fn file(
        fs: &Arc<dyn FileSystem>,
        from: u64,
        to: u64,
        entries: &[Change<'_>],
    ) -> Arc<SortedFile> {
        let meta = FileMeta {
            domain: Domain::Commitment,
            from_step: from,
            to_step: to,
        };
        let mut writer = SortedFileWriter::new(fs.clone(), Path::new("/h"), meta)
            .unwrap()
            .with_filter_on_prefixes(BLOCK_LEN);
        let mut sorted: Vec<_> = entries
            .iter()
            .map(|(key, block, value)| (entry_key(key, *block), *value))
            .collect();
        sorted.sort();
        for (key, value) in sorted {
            writer.push(&key, value).unwrap();
        }
        let info = writer.finish().unwrap();
        Arc::new(SortedFile::open(fs.as_ref(), &info.path).unwrap())
    }

    #[test]
    fn a_read_finds_the_first_change_after_its_block_across_files() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFileSystem::new());
        // Key `a` changed at blocks 3 (was absent), 5 (was "a3") and 12
        // (was "a5"); `ab` (which `a` prefixes) at 4.
        let older = file(
            &fs,
            1,
            10,
            &[
                (b"a", 3, None),
                (b"a", 5, Some(b"a3")),
                (b"ab", 4, Some(b"x")),
            ],
        );
        let newer = file(&fs, 10, 20, &[(b"a", 12, Some(b"a5"))]);
        let files = [older, newer];
        let at = |key: &[u8], block| value_at(&files, key, block).unwrap();
        assert_eq!(at(b"a", 1), Some(None));
        assert_eq!(at(b"a", 2), Some(None));
        assert_eq!(at(b"a", 3), Some(Some(Bytes::from_static(b"a3"))));
        assert_eq!(at(b"a", 4), Some(Some(Bytes::from_static(b"a3"))));
        assert_eq!(at(b"a", 5), Some(Some(Bytes::from_static(b"a5"))));
        assert_eq!(at(b"a", 11), Some(Some(Bytes::from_static(b"a5"))));
        assert_eq!(at(b"a", 12), None, "no change after 12: the value now");
        assert_eq!(at(b"ab", 3), Some(Some(Bytes::from_static(b"x"))));
        assert_eq!(at(b"ab", 4), None);
        assert_eq!(at(b"b", 0), None);
        assert_eq!(at(b"a", u64::MAX), None);
    }

    #[test]
    fn entry_keys_round_trip_and_foreign_keys_are_refused() {
        let raw = entry_key(b"key", 7);
        assert_eq!(parse_entry_key(&raw), Some((&b"key"[..], 7)));
        assert_eq!(parse_entry_key(&raw[..raw.len() - 1]), None);
        assert_eq!(parse_entry_key(b""), None);
        let mut long = raw.clone();
        long.push(0);
        assert_eq!(parse_entry_key(&long), None);
    }
}
