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
//!
//! A commitment record's versions differ from one block to the next in a
//! cell or two (one child's reference along each changed path), so in a
//! domain whose values are versioned ([`Versions`]) an entry may hold its
//! value as the difference from the entry before it (same key, the
//! previous change): `0xd1 ‖ base block u64 BE ‖ prefix varint ‖ suffix
//! varint ‖ middle` — the value is the previous one's first `prefix` bytes,
//! `middle`, and its last `suffix` bytes; `base block` names the key's
//! nearest earlier entry held whole, where a read starts applying
//! differences. Every [`WHOLE_EVERY`]th entry of a key (and each key's
//! first in a file, and the one after an absent value) is whole, so a
//! read applies at most that many. A whole value that starts with `0xd0`
//! or `0xd1` is stored behind a `0xd0`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use strata_files::{FileError, FileValue, SortedFile};

/// Bytes an entry key adds to the key: its length before, the block after.
pub const ENTRY_OVERHEAD: usize = 2 + BLOCK_LEN;

/// The block number's bytes at the end of an entry key.
pub const BLOCK_LEN: usize = 8;

/// The first byte of a value held as a difference from the entry before it.
const DIFF_TAG: u8 = 0xd1;
/// The first byte of a whole value that would otherwise start with a tag.
const ESCAPE_TAG: u8 = 0xd0;

/// A key's entries between two whole values, at most (a read at any block
/// applies at most this many differences).
pub const WHOLE_EVERY: u32 = 16;

/// Whether `domain`'s history files may hold values as differences from
/// the version before ([`Versions`]): the commitment's records, whose
/// versions differ in a cell or two.
pub fn versioned(domain: strata_types::Domain) -> bool {
    domain == strata_types::Domain::Commitment
}

/// A writer of the history file `meta` in `dir`: its filter built over each
/// entry's key without the block, as [`value_at`] asks it.
pub fn writer(
    fs: Arc<dyn strata_files::FileSystem>,
    dir: &Path,
    meta: strata_files::FileMeta,
) -> Result<strata_files::SortedFileWriter, FileError> {
    Ok(strata_files::SortedFileWriter::new(fs, dir, meta)?.with_filter_on_prefixes(BLOCK_LEN))
}

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
/// files, oldest blocks first; `versions`: the domain's values may be held
/// as differences): the value before its first change after `block`
/// (`Some(None)`: absent), or `None` when the files record no change of it
/// after `block`.
pub fn value_at(
    files: &[Arc<SortedFile>],
    versions: bool,
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
                    FileValue::Value(value) if versions => Some(resolve(file, &found, value)?),
                    FileValue::Value(value) => Some(value),
                    FileValue::Tombstone => None,
                }));
            }
        }
    }
    Ok(None)
}

/// The value at `block` of every key of `key_len` bytes in `[from, to)`
/// (`to` = `None`: to the end) that `files` (one domain's history files,
/// oldest blocks first, values whole) record a change of after `block`,
/// in key order: the value before its first change after `block` (`None`:
/// absent). What a range read at an old block merges above the state at
/// redb's head (a domain whose keys have one length). Lazy: one entry per
/// file held at a time.
pub fn changed_after<'a>(
    files: &'a [Arc<SortedFile>],
    key_len: usize,
    from: &[u8],
    to: Option<&'a [u8]>,
    block: u64,
) -> ChangedAfter<'a> {
    // Entry keys start with their key's length: from `key_len ‖ from`.
    let mut start = (key_len as u16).to_be_bytes().to_vec();
    start.extend_from_slice(from);
    let heads = files
        .iter()
        .filter(|file| file.meta().to_step > block.saturating_add(1))
        .map(|file| FirstChanges {
            file,
            entries: file.iter_from(&start),
            key_len,
            to,
            block,
            pending: None,
        })
        .map(|mut changes| {
            let head = changes.next();
            (changes, head)
        })
        .collect();
    ChangedAfter { heads }
}

/// A key and its value at a block (`None`: absent), or why it was not read.
type Change = Result<(Bytes, Option<Bytes>), FileError>;

/// One file's first change after a block of each key, in key order.
struct FirstChanges<'a> {
    file: &'a SortedFile,
    entries: strata_files::FileIter<'a>,
    key_len: usize,
    to: Option<&'a [u8]>,
    block: u64,
    /// An entry read past the last key yielded (the next key's first).
    pending: Option<(Bytes, FileValue)>,
}

impl Iterator for FirstChanges<'_> {
    type Item = Change;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (raw, value) = match self.pending.take() {
                Some(entry) => entry,
                None => match self.entries.next()? {
                    Ok(entry) => entry,
                    Err(error) => return Some(Err(error)),
                },
            };
            let Some((key, at)) = parse_entry_key(&raw) else {
                return Some(Err(FileError::Corrupted {
                    file: self.file.path().to_path_buf(),
                    offset: 0,
                    what: format!(
                        "history entry 0x{} is not a key and a block",
                        alloy_primitives::hex::encode(&raw)
                    ),
                }));
            };
            // Keys of another length sort after (their length first).
            if key.len() != self.key_len || self.to.is_some_and(|to| key >= to) {
                return None;
            }
            if at <= self.block {
                continue;
            }
            let key = raw.slice(2..2 + key.len());
            // The rest of this key's entries are later changes: skip them,
            // keeping the next key's first entry.
            loop {
                match self.entries.next() {
                    None => break,
                    Some(Err(error)) => return Some(Err(error)),
                    Some(Ok((next, next_value))) => {
                        let same = parse_entry_key(&next).is_some_and(|(k, _)| k == key.as_ref());
                        if !same {
                            self.pending = Some((next, next_value));
                            break;
                        }
                    }
                }
            }
            return Some(Ok((key, value.into_value())));
        }
    }
}

/// [`changed_after`]: the files' first changes merged, the oldest file's
/// deciding a key several hold.
pub struct ChangedAfter<'a> {
    heads: Vec<(FirstChanges<'a>, Option<Change>)>,
}

impl Iterator for ChangedAfter<'_> {
    type Item = Change;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(at) = self
            .heads
            .iter()
            .position(|(_, head)| matches!(head, Some(Err(_))))
        {
            let (changes, head) = &mut self.heads[at];
            let failed = head.take();
            *head = changes.next();
            return failed;
        }
        // `min_by` keeps the first of equal keys: the oldest file's.
        let key = self
            .heads
            .iter()
            .filter_map(|(_, head)| match head {
                Some(Ok((key, _))) => Some(key.clone()),
                _ => None,
            })
            .min()?;
        let mut found = None;
        for (changes, head) in &mut self.heads {
            if matches!(head, Some(Ok((at, _))) if *at == key) {
                let taken = head.take();
                *head = changes.next();
                if found.is_none() {
                    found = taken;
                }
            }
        }
        found
    }
}

/// Merges history files of a versioned domain (oldest blocks first, of
/// adjacent block ranges) into `writer`, each value decoded whole and
/// encoded again ([`Versions`]): a key's first entry of a newer file
/// becomes a difference from its last version in the older one, so
/// records that change once per flush still shrink as files merge.
pub fn merge_versioned(
    inputs: &[&SortedFile],
    mut writer: strata_files::SortedFileWriter,
) -> Result<strata_files::FileInfo, FileError> {
    struct Input<'a> {
        file: &'a SortedFile,
        entries: strata_files::FileIter<'a>,
        head: Option<(Bytes, FileValue)>,
        wholes: WholeVersions,
    }
    let mut inputs: Vec<Input<'_>> = inputs
        .iter()
        .map(|file| {
            let mut entries = file.iter();
            let head = entries.next().transpose()?;
            Ok(Input {
                file,
                entries,
                head,
                wholes: WholeVersions::default(),
            })
        })
        .collect::<Result<_, FileError>>()?;
    let mut versions = Versions::default();
    // Entry keys are unique across the inputs (their blocks differ).
    while let Some(at) = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, input)| input.head.as_ref().map(|(key, _)| (i, key)))
        .min_by(|a, b| a.1.cmp(b.1))
        .map(|(i, _)| i)
    {
        let input = &mut inputs[at];
        let (raw, stored) = input.head.take().expect("chosen above");
        input.head = input.entries.next().transpose()?;
        let corrupt = |what: &str| FileError::Corrupted {
            file: input.file.path().to_path_buf(),
            offset: 0,
            what: format!(
                "history entry 0x{}: {what}",
                alloy_primitives::hex::encode(&raw)
            ),
        };
        let Some((key, _)) = parse_entry_key(&raw) else {
            return Err(corrupt("not a key and a block"));
        };
        let whole = input.wholes.decode(key, &stored).map_err(corrupt)?;
        writer.push(&raw, versions.encode(&raw, whole).as_deref())?;
    }
    writer.finish()
}

/// The whole value of the entry `entry` of `file`, whose stored value is
/// `stored` (whole, escaped, or a difference resolved from its base entry
/// on).
fn resolve(file: &SortedFile, entry: &[u8], stored: Bytes) -> Result<Bytes, FileError> {
    match stored.first() {
        Some(&ESCAPE_TAG) => return Ok(stored.slice(1..)),
        Some(&DIFF_TAG) => {}
        _ => return Ok(stored),
    }
    let corrupt = |what: String| FileError::Corrupted {
        file: file.path().to_path_buf(),
        offset: 0,
        what: format!(
            "history entry 0x{}: {what}",
            alloy_primitives::hex::encode(entry)
        ),
    };
    let base = stored
        .get(1..9)
        .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| corrupt("a difference without its base block".into()))?;
    let key_part = &entry[..entry.len() - BLOCK_LEN];
    let mut start = key_part.to_vec();
    start.extend_from_slice(&base.to_be_bytes());
    let mut value: Option<Vec<u8>> = None;
    for item in file.iter_from(&start) {
        let (at, stored) = item?;
        if !at.starts_with(key_part) || at.len() != entry.len() {
            break;
        }
        let stored = match stored {
            FileValue::Value(stored) => stored,
            FileValue::Tombstone => return Err(corrupt("an absent value inside a chain".into())),
        };
        value = Some(decode_after(value.as_deref(), &stored).map_err(|what| corrupt(what.into()))?);
        if *at == *entry {
            return Ok(Bytes::from(value.expect("set above")));
        }
    }
    Err(corrupt(format!(
        "its chain from block {base} does not reach it"
    )))
}

/// The whole value of an entry stored as `stored`, after an entry of the
/// same key whose whole value is `previous` (`None`: none, or an absent
/// value); what is wrong when it does not decode.
pub fn decode_after(previous: Option<&[u8]>, stored: &[u8]) -> Result<Vec<u8>, &'static str> {
    match (previous, stored.first()) {
        (None, Some(&DIFF_TAG)) => Err("a difference without a whole value before it"),
        (Some(previous), Some(&DIFF_TAG)) => {
            apply_diff(previous, stored).ok_or("a difference that does not apply")
        }
        (_, Some(&ESCAPE_TAG)) => Ok(stored[1..].to_vec()),
        _ => Ok(stored.to_vec()),
    }
}

/// The whole values of a versioned file's entries, read in the file's
/// order: each difference applied to the value of the key's entry before
/// it.
#[derive(Default)]
pub struct WholeVersions {
    /// The key of the last entry decoded and its whole value (`None`:
    /// absent, or undecodable).
    previous: Option<(Vec<u8>, Option<Vec<u8>>)>,
}

impl WholeVersions {
    /// The whole value of the next entry, of `key`, stored as `stored`
    /// (`None`: absent); what is wrong when it does not decode.
    pub fn decode(
        &mut self,
        key: &[u8],
        stored: &FileValue,
    ) -> Result<Option<&[u8]>, &'static str> {
        let before = self
            .previous
            .as_ref()
            .filter(|(k, _)| k.as_slice() == key)
            .and_then(|(_, v)| v.as_deref());
        let whole = match stored {
            FileValue::Value(v) => decode_after(before, v).map(Some),
            FileValue::Tombstone => Ok(None),
        };
        let (whole, failed) = match whole {
            Ok(whole) => (whole, None),
            Err(what) => (None, Some(what)),
        };
        let (_, kept) = self.previous.insert((key.to_vec(), whole));
        match failed {
            Some(what) => Err(what),
            None => Ok(kept.as_deref()),
        }
    }
}

/// `value` as the difference from `previous` (see the module's format).
fn encode_diff(base: u64, previous: &[u8], value: &[u8]) -> Vec<u8> {
    let prefix = previous
        .iter()
        .zip(value)
        .take_while(|(a, b)| a == b)
        .count();
    let room = previous.len().min(value.len()) - prefix;
    let suffix = previous
        .iter()
        .rev()
        .zip(value.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let middle = &value[prefix..value.len() - suffix];
    let mut out = Vec::with_capacity(middle.len() + 16);
    out.push(DIFF_TAG);
    out.extend_from_slice(&base.to_be_bytes());
    put_varint(&mut out, prefix as u64);
    put_varint(&mut out, suffix as u64);
    out.extend_from_slice(middle);
    out
}

/// The value a difference made from `previous` gives; `None` when it does
/// not decode or does not fit `previous`.
fn apply_diff(previous: &[u8], diff: &[u8]) -> Option<Vec<u8>> {
    let mut rest = diff.get(9..)?;
    let prefix = usize::try_from(take_varint(&mut rest)?).ok()?;
    let suffix = usize::try_from(take_varint(&mut rest)?).ok()?;
    if prefix.checked_add(suffix)? > previous.len() {
        return None;
    }
    let mut out = Vec::with_capacity(prefix + rest.len() + suffix);
    out.extend_from_slice(&previous[..prefix]);
    out.extend_from_slice(rest);
    out.extend_from_slice(&previous[previous.len() - suffix..]);
    Some(out)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take_varint(input: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = input.split_first()?;
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Encodes the values of a versioned domain's entries as a history file
/// takes them, in the file's order: each key's first entry, every
/// [`WHOLE_EVERY`]th and the one after an absent value whole, the others
/// as differences from the entry before them where that is smaller.
#[derive(Default)]
pub struct Versions {
    key: Vec<u8>,
    /// The value of the key's last entry and the block of its chain's
    /// whole entry (`None` after an absent value or a new key).
    previous: Option<(Vec<u8>, u64)>,
    since_whole: u32,
}

impl Versions {
    /// The stored value of the entry `entry` (key and block) whose value is
    /// `value`; entries must come in the file's order.
    pub fn encode(&mut self, entry: &[u8], value: Option<&[u8]>) -> Option<Vec<u8>> {
        let (key, block) = entry.split_at(entry.len().saturating_sub(BLOCK_LEN));
        let block = u64::from_be_bytes(block.try_into().unwrap_or_default());
        if key != self.key.as_slice() {
            self.key.clear();
            self.key.extend_from_slice(key);
            self.previous = None;
        }
        let Some(value) = value else {
            self.previous = None;
            return None;
        };
        let diff = match &self.previous {
            Some((previous, base)) if self.since_whole + 1 < WHOLE_EVERY => {
                Some(encode_diff(*base, previous, value)).filter(|d| d.len() < value.len())
            }
            _ => None,
        };
        let (stored, base) = match diff {
            Some(diff) => {
                self.since_whole += 1;
                let base = self.previous.as_ref().map_or(block, |p| p.1);
                (diff, base)
            }
            None => {
                self.since_whole = 0;
                let whole = match value.first() {
                    Some(&DIFF_TAG | &ESCAPE_TAG) => [&[ESCAPE_TAG][..], value].concat(),
                    _ => value.to_vec(),
                };
                (whole, block)
            }
        };
        self.previous = Some((value.to_vec(), base));
        Some(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_files::{FileMeta, FileSystem, MemFileSystem};
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
        let mut writer = writer(fs.clone(), Path::new("/h"), meta).unwrap();
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
        let at = |key: &[u8], block| value_at(&files, false, key, block).unwrap();
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
        let changed = |from: &[u8], block| -> Vec<(Bytes, Option<Bytes>)> {
            changed_after(&files, from.len(), from, None, block)
                .collect::<Result<_, _>>()
                .unwrap()
        };
        // Keys of one length: `a` then (length 2) `ab` never mixed in.
        assert_eq!(changed(b"a", 2), vec![(Bytes::from_static(b"a"), None)]);
        assert_eq!(
            changed(b"a", 4),
            vec![(Bytes::from_static(b"a"), Some(Bytes::from_static(b"a3")))]
        );
        assert_eq!(
            changed(b"a", 11),
            vec![(Bytes::from_static(b"a"), Some(Bytes::from_static(b"a5")))]
        );
        assert!(changed(b"a", 12).is_empty());
        assert_eq!(
            changed(b"aa", 0),
            vec![(Bytes::from_static(b"ab"), Some(Bytes::from_static(b"x")))]
        );
        assert!(changed(b"b", 0).is_empty());
        // From the start: every key of one length.
        let all = |key_len| -> Vec<Bytes> {
            changed_after(&files, key_len, b"", None, 0)
                .map(|entry| entry.unwrap().0)
                .collect()
        };
        assert_eq!(all(1), vec![Bytes::from_static(b"a")]);
        assert_eq!(all(2), vec![Bytes::from_static(b"ab")]);
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

    #[test]
    fn versions_held_as_differences_read_back_whole_at_every_block() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFileSystem::new());
        // Key [0x10]: 40 versions of a 530-byte record, one 32-byte cell
        // changed each block; absent before block 20; one version starts
        // with the tag a difference starts with.
        let version = |i: u64| -> Option<Vec<u8>> {
            if i == 20 {
                return None;
            }
            let mut record = vec![1u8; 530];
            let at = 2 + (i as usize % 16) * 32;
            record[at..at + 32].fill(i as u8);
            if i == 30 {
                record[0] = DIFF_TAG;
            }
            Some(record)
        };
        let meta = FileMeta {
            domain: Domain::Commitment,
            from_step: 1,
            to_step: 41,
        };
        let mut writer = writer(fs.clone(), Path::new("/h"), meta).unwrap();
        let mut versions = Versions::default();
        let mut stored_bytes = 0;
        for block in 1..41u64 {
            let key = entry_key(&[0x10], block);
            let value = version(block - 1);
            let stored = versions.encode(&key, value.as_deref());
            stored_bytes += stored.as_ref().map_or(0, Vec::len);
            writer.push(&key, stored.as_deref()).unwrap();
        }
        let info = writer.finish().unwrap();
        let files = [Arc::new(SortedFile::open(fs.as_ref(), &info.path).unwrap())];
        assert!(stored_bytes < 39 * 530 / 3, "{stored_bytes} bytes stored");
        for at in 0..40u64 {
            let read = value_at(&files, true, &[0x10], at).unwrap();
            assert_eq!(read, Some(version(at).map(Bytes::from)), "at block {at}");
        }
        assert_eq!(value_at(&files, true, &[0x10], 40).unwrap(), None);
    }

    #[test]
    fn a_difference_applies_only_to_what_it_fits() {
        let diff = encode_diff(3, b"abcdef", b"abXYef");
        assert_eq!(apply_diff(b"abcdef", &diff), Some(b"abXYef".to_vec()));
        assert_eq!(apply_diff(b"ab", &diff), None);
        assert_eq!(apply_diff(b"abcdef", &diff[..9]), None);
        let grown = encode_diff(0, b"aa", b"aaaa");
        assert_eq!(apply_diff(b"aa", &grown), Some(b"aaaa".to_vec()));
        let shrunk = encode_diff(0, b"aaaa", b"a");
        assert_eq!(apply_diff(b"aaaa", &shrunk), Some(b"a".to_vec()));
    }

    /// A versioned file of key [0x10]'s changes at blocks `[from, to)`,
    /// the value before block `b` being `version(b - 1)`.
    fn versioned_file(
        fs: &Arc<dyn FileSystem>,
        from: u64,
        to: u64,
        version: impl Fn(u64) -> Option<Vec<u8>>,
    ) -> Arc<SortedFile> {
        let meta = FileMeta {
            domain: Domain::Commitment,
            from_step: from,
            to_step: to,
        };
        let mut writer = writer(fs.clone(), Path::new("/v"), meta).unwrap();
        let mut versions = Versions::default();
        for block in from..to {
            let key = entry_key(&[0x10], block);
            let value = version(block - 1);
            writer
                .push(&key, versions.encode(&key, value.as_deref()).as_deref())
                .unwrap();
        }
        let info = writer.finish().unwrap();
        Arc::new(SortedFile::open(fs.as_ref(), &info.path).unwrap())
    }

    #[test]
    fn a_merge_of_versioned_files_continues_each_keys_chain() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFileSystem::new());
        let version = |i: u64| -> Option<Vec<u8>> {
            let mut record = vec![3u8; 530];
            record[100 + (i as usize % 8) * 40] = i as u8;
            Some(record)
        };
        // Three flushes of 3 blocks each: every key's first entry whole.
        let parts: Vec<_> = [(1, 4), (4, 7), (7, 10)]
            .into_iter()
            .map(|(from, to)| versioned_file(&fs, from, to, version))
            .collect();
        let meta = FileMeta {
            domain: Domain::Commitment,
            from_step: 1,
            to_step: 10,
        };
        let writer = writer(fs.clone(), Path::new("/v"), meta).unwrap();
        let inputs: Vec<&SortedFile> = parts.iter().map(|f| f.as_ref()).collect();
        let info = merge_versioned(&inputs, writer).unwrap();
        let merged = [Arc::new(SortedFile::open(fs.as_ref(), &info.path).unwrap())];
        let sizes: u64 = parts.iter().map(|f| f.size_bytes()).sum();
        assert!(
            info.size < sizes,
            "merged {} bytes, inputs {sizes}",
            info.size
        );
        for at in 0..9u64 {
            let read = value_at(&merged, true, &[0x10], at).unwrap();
            assert_eq!(read, Some(version(at).map(Bytes::from)), "at block {at}");
            assert_eq!(read, value_at(&parts, true, &[0x10], at).unwrap());
        }
    }
}
