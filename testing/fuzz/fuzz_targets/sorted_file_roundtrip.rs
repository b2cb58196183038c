//! Fuzz target for the sorted-file writer and reader together
//! (`strata_storage::files`).
//!
//! Input: one flags byte (bits 0–1 the domain, bits 2–4 the first step),
//! then a list of entries (`strata_fuzz::entries_from_bytes`). They are
//! written with `SortedFileWriter` (sorted, the first of equal keys kept),
//! reopened with `SortedFile::open`, and the file must hold exactly those
//! entries: iteration, `get`, absent keys, the existence filter (no false
//! negatives) and `iter_prefix` against a `BTreeMap`, then
//! `strata_fuzz::check_consistent`.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_fuzz::{check_consistent, entries_from_bytes, split_flags};
use strata_storage::Domain;
use strata_storage::files::{FileMeta, FileSystem, MemFileSystem, SortedFile, SortedFileWriter};

const DIR: &str = "/fuzz";

fuzz_target!(|data: &[u8]| {
    let (flags, rest) = split_flags(data);
    round_trip(flags, rest);
});

fn round_trip(flags: u8, rest: &[u8]) {
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
