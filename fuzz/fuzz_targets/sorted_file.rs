//! Fuzz target for the sorted-file reader (`strata_storage::files`).
//!
//! Input: one flags byte, then the rest.
//! * flags bit 7 clear — **reader mode**: the rest is a file. Bit 0 repairs
//!   its checksums first (so the structural checks behind them are reached),
//!   bit 1 names it after its own footer (so the name cross-check passes).
//!   The bytes are written to a `MemFileSystem` and opened with
//!   `SortedFile::open`, which must return `Ok` or an error naming the file —
//!   never panic. When it opens, iteration yields `entries()` entries with
//!   strictly ascending keys and no error, and `get`, `get_ref`, `iter_from`
//!   and `may_contain`-free lookups agree with the iteration.
//! * flags bit 7 set — **writer mode**: the rest is a list of entries
//!   (`strata_fuzz::entries_from_bytes`); they are written with
//!   `SortedFileWriter` (sorted, first of equal keys kept), reopened, and the
//!   file must hold exactly those entries: iteration, `get`, the existence
//!   filter (no false negatives) and `iter_prefix` against a `BTreeMap`.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_fuzz::{FOOTER_LEN, entries_from_bytes, repair_checksums, split_flags};
use strata_storage::Domain;
use strata_storage::files::{
    FileMeta, FileSystem, FileValue, FileValueRef, MemFileSystem, SortedFile, SortedFileWriter,
};

const DIR: &str = "/fuzz";

fuzz_target!(|data: &[u8]| {
    let (flags, rest) = split_flags(data);
    if flags & 0x80 == 0 {
        reader_mode(flags, rest);
    } else {
        writer_mode(flags, rest);
    }
});

/// The file name the footer of `bytes` describes, if it names a known domain.
fn name_from_footer(bytes: &[u8]) -> Option<String> {
    let footer = &bytes[bytes.len().checked_sub(FOOTER_LEN)?..];
    let domain = *Domain::ALL.get(usize::from(footer[4]))?;
    let step = |at: usize| u64::from_le_bytes(footer[at..at + 8].try_into().expect("8 bytes"));
    let meta = FileMeta {
        domain,
        from_step: step(8),
        to_step: step(16),
    };
    meta.is_valid().then(|| meta.file_name())
}

fn reader_mode(flags: u8, rest: &[u8]) {
    let mut bytes = rest.to_vec();
    if flags & 1 != 0 {
        repair_checksums(&mut bytes);
    }
    let name = match flags & 2 {
        0 => None,
        _ => name_from_footer(&bytes),
    }
    .unwrap_or_else(|| "fuzz.sst".to_owned());
    let fs = MemFileSystem::new();
    let path = Path::new(DIR).join(&name);
    write_file(&fs, &path, &bytes);
    let file = match SortedFile::open(&fs, &path) {
        Ok(file) => file,
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&name),
                "error does not name the file {name}: {msg}"
            );
            return;
        }
    };
    check_consistent(&file);
}

fn write_file(fs: &MemFileSystem, path: &Path, bytes: &[u8]) {
    let mut f = fs.create(path).expect("create in memory");
    f.write_all(bytes).expect("write in memory");
    f.sync().expect("sync in memory");
}

/// Everything an opened file serves must agree with its own iteration.
fn check_consistent(file: &SortedFile) {
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

fn writer_mode(flags: u8, rest: &[u8]) {
    let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    for (key, value) in entries_from_bytes(rest) {
        model.entry(key).or_insert(value);
    }
    let meta = FileMeta {
        domain: Domain::ALL[usize::from(flags & 3)],
        from_step: u64::from(flags >> 2 & 7),
        to_step: u64::from(flags >> 2 & 7) + 1,
    };
    let fs: Arc<dyn FileSystem> = Arc::new(MemFileSystem::new());
    let mut writer = SortedFileWriter::new(Arc::clone(&fs), Path::new(DIR), meta).expect("writer");
    for (key, value) in &model {
        writer.push(key, value.as_deref()).expect("push in order");
    }
    let info = writer.finish().expect("finish");
    let expected: PathBuf = Path::new(DIR).join(meta.file_name());
    assert_eq!(info.path, expected);
    let file = SortedFile::open(&*fs, &info.path).expect("a written file opens");
    assert_eq!(file.meta(), meta);
    assert_eq!(file.entries(), model.len() as u64);
    let got: Vec<(Vec<u8>, Option<Vec<u8>>)> = file
        .iter()
        .map(|r| {
            let (k, v) = r.expect("iterate");
            (k.to_vec(), v.value().map(|b| b.to_vec()))
        })
        .collect();
    let want: Vec<(Vec<u8>, Option<Vec<u8>>)> =
        model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want, "iteration differs from what was written");
    for (key, value) in &model {
        assert!(file.may_contain(key), "filter false negative for {key:?}");
        let v = file.get(key).expect("get");
        assert_eq!(
            v.map(|v| v.value().map(|b| b.to_vec())),
            Some(value.clone())
        );
        let mut absent = key.clone();
        absent.push(0);
        if !model.contains_key(&absent) {
            assert_eq!(file.get(&absent).expect("get"), None);
        }
    }
    // Prefix scans against the model: the empty prefix, then each of the
    // first keys' one-byte prefix and the key itself.
    let mut prefixes = vec![Vec::new()];
    for key in model.keys().take(16) {
        prefixes.push(key[..key.len().min(1)].to_vec());
        prefixes.push(key.clone());
    }
    for prefix in &prefixes {
        {
            let got: Vec<Vec<u8>> = file
                .iter_prefix(prefix)
                .map(|r| r.expect("iter_prefix").0.to_vec())
                .collect();
            let want: Vec<Vec<u8>> = model
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(got, want, "iter_prefix({prefix:?})");
        }
    }
    check_consistent(&file);
}
