//! Files against a `BTreeMap` model: gets, iteration, prefixes, merges and
//! the newest-first lookup.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

use super::{Model, file_of, mem_fs, meta, sample_model, write_model};
use crate::{
    FileError, FileHit, FileValue, FileValueRef, SortedFile, SortedFileWriter, lookup_newest_first,
    merge_files,
};
use strata_types::Domain;

fn to_value(v: &Option<Vec<u8>>) -> FileValue {
    match v {
        Some(v) => FileValue::Value(Bytes::copy_from_slice(v)),
        None => FileValue::Tombstone,
    }
}

fn collect(
    iter: impl Iterator<Item = Result<(Bytes, FileValue), FileError>>,
) -> Vec<(Vec<u8>, FileValue)> {
    iter.map(|e| {
        let (k, v) = e.unwrap();
        (k.to_vec(), v)
    })
    .collect()
}

fn model_entries<'a>(
    it: impl Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)>,
) -> Vec<(Vec<u8>, FileValue)> {
    it.map(|(k, v)| (k.clone(), to_value(v))).collect()
}

/// Keys over a small alphabet so that prefixes are shared and probes for
/// absent keys land between present ones.
fn key() -> impl Strategy<Value = Vec<u8>> {
    vec(0u8..4, 0..12)
}

fn model(max: usize) -> impl Strategy<Value = Model> {
    btree_map(
        key(),
        proptest::option::weighted(0.85, vec(any::<u8>(), 0..300)),
        0..max,
    )
}

pub(super) fn check_file_against(model: &Model, file: &SortedFile, probes: &[Vec<u8>]) {
    assert_eq!(file.entries(), model.len() as u64);
    for (k, v) in model {
        assert_eq!(file.get(k).unwrap(), Some(to_value(v)), "key {k:?}");
        let borrowed = match file.get_ref(k).unwrap() {
            Some(FileValueRef::Value(b)) => Some(b.to_vec()),
            Some(FileValueRef::Tombstone) => None,
            None => panic!("get_ref lost key {k:?}"),
        };
        assert_eq!(&borrowed, v);
        assert!(file.may_contain(k), "filter lost key {k:?}");
    }
    for p in probes {
        assert_eq!(
            file.get(p).unwrap(),
            model.get(p).map(to_value),
            "probe {p:?}"
        );
        let expected = model_entries(model.iter().filter(|(k, _)| k.starts_with(p)));
        assert_eq!(collect(file.iter_prefix(p)), expected, "prefix {p:?}");
        let expected = model_entries(model.range(p.clone()..));
        assert_eq!(collect(file.iter_from(p)), expected, "from {p:?}");
    }
    assert_eq!(collect(file.iter()), model_entries(model.iter()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn file_behaves_like_its_model(model in model(400), probes in vec(key(), 0..40)) {
        let file = file_of(&model);
        check_file_against(&model, &file, &probes);
    }

    #[test]
    fn merge_keeps_the_newest_version(
        layers in vec(model(120), 1..5),
        drop_tombstones in any::<bool>(),
        probes in vec(key(), 0..20),
    ) {
        // layers[0] is the newest.
        let (_, fs) = mem_fs();
        let dir = Path::new("/db");
        let n = layers.len() as u64;
        let files: Vec<Arc<SortedFile>> = layers
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let i = i as u64;
                let info = write_model(&fs, dir, meta(Domain::Account, n - i - 1, n - i), m);
                Arc::new(SortedFile::open(&*fs, &info.path).unwrap())
            })
            .collect();

        let mut expected = Model::new();
        for layer in layers.iter().rev() {
            expected.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if drop_tombstones {
            expected.retain(|_, v| v.is_some());
        }
        let writer = SortedFileWriter::new(Arc::clone(&fs), dir, meta(Domain::Account, 0, n + 10)).unwrap();
        let refs: Vec<&SortedFile> = files.iter().map(|f| &**f).collect();
        let info = merge_files(&refs, writer, drop_tombstones).unwrap();
        let merged = SortedFile::open(&*fs, &info.path).unwrap();
        check_file_against(&expected, &merged, &probes);

        // The newest-first lookup agrees with the layered model.
        let mut keys: Vec<Vec<u8>> = layers.iter().flat_map(|l| l.keys().cloned()).collect();
        keys.extend(probes);
        for k in keys {
            let want = layers.iter().enumerate().find_map(|(position, l)| {
                l.get(&k).map(|v| FileHit { position, value: to_value(v) })
            });
            prop_assert_eq!(lookup_newest_first(&files, &k).unwrap(), want);
        }
    }
}

#[test]
fn many_blocks_and_every_key_found() {
    let model = sample_model(20_000, 70);
    let file = file_of(&model);
    assert!(file.block_count() > 300, "{} blocks", file.block_count());
    for (k, v) in &model {
        assert_eq!(file.get(k).unwrap(), Some(to_value(v)));
        // Keys are spaced by 3: the neighbours are absent.
        let n = u64::from_be_bytes(k.as_slice().try_into().unwrap());
        assert_eq!(file.get(&(n + 1).to_be_bytes()).unwrap(), None);
    }
    assert_eq!(file.get(&[]).unwrap(), None);
    assert_eq!(file.get(&[0xff; 9]).unwrap(), None);
}

/// A filter sized in advance for the right count gives the very same file
/// as one sized from the kept hashes; a wrong count still finds every key.
#[test]
fn a_filter_sized_in_advance_is_the_same_filter() {
    let model = sample_model(5_000, 20);
    let write = |expected: Option<u64>| {
        let (mem, fs) = mem_fs();
        let mut w = SortedFileWriter::new(
            Arc::clone(&fs),
            Path::new("/db"),
            meta(Domain::Account, 0, 1),
        )
        .unwrap();
        if let Some(keys) = expected {
            w = w.with_expected_keys(keys);
        }
        for (k, v) in &model {
            w.push(k, v.as_deref()).unwrap();
        }
        let info = w.finish().unwrap();
        let bytes = mem.read(&info.path).unwrap();
        (bytes, SortedFile::open(&*fs, &info.path).unwrap())
    };
    let (plain, _) = write(None);
    let (sized, _) = write(Some(model.len() as u64));
    assert!(plain == sized, "same bytes");
    for guess in [1, model.len() as u64 * 4] {
        let (_, file) = write(Some(guess));
        for (k, v) in &model {
            assert_eq!(file.get(k).unwrap(), Some(to_value(v)), "guess {guess}");
        }
    }
}

#[test]
fn values_are_zero_copy_slices_of_the_map() {
    let model = sample_model(100, 10);
    let file = file_of(&model);
    let (k, _) = model.iter().find(|(_, v)| v.is_some()).unwrap();
    let Some(FileValue::Value(v)) = file.get(k).unwrap() else {
        panic!("expected a value");
    };
    let again = file.get(k).unwrap().unwrap().into_value().unwrap();
    assert_eq!(
        v.as_ptr(),
        again.as_ptr(),
        "values must point into the same map"
    );
}

#[test]
fn values_larger_than_a_block_get_their_own_block() {
    let mut model = Model::new();
    model.insert(b"a".to_vec(), Some(vec![1; 10]));
    model.insert(b"code".to_vec(), Some(vec![0x60; 100_000]));
    model.insert(b"z".to_vec(), None);
    let file = file_of(&model);
    check_file_against(
        &model,
        &file,
        &[b"c".to_vec(), b"co".to_vec(), b"zz".to_vec()],
    );
}

#[test]
fn empty_file_is_valid() {
    let file = file_of(&Model::new());
    assert_eq!(file.entries(), 0);
    assert_eq!(file.block_count(), 0);
    assert_eq!(file.get(b"x").unwrap(), None);
    assert!(!file.may_contain(b"x"));
    assert_eq!(file.iter().count(), 0);
    assert_eq!(file.iter_prefix(b"").count(), 0);
}

#[test]
fn writer_rejects_unsorted_and_oversized_input_and_stays_usable() {
    let (_, fs) = mem_fs();
    let dir = Path::new("/db");
    let mut w = SortedFileWriter::new(Arc::clone(&fs), dir, meta(Domain::Code, 3, 4)).unwrap();
    w.push(b"b", Some(b"1")).unwrap();
    let err = w.push(b"a", Some(b"2")).unwrap_err();
    assert!(matches!(err, FileError::UnsortedKeys { .. }), "{err}");
    assert!(
        err.to_string().contains("code-0000000003-0000000004.sst"),
        "{err}"
    );
    assert!(matches!(
        w.push(b"b", None),
        Err(FileError::UnsortedKeys { .. })
    ));
    let big = vec![0u8; crate::MAX_KEY_LEN + 1];
    assert!(matches!(
        w.push(&big, None),
        Err(FileError::TooLarge { what: "key", .. })
    ));
    w.push(b"c", None).unwrap();
    let info = w.finish().unwrap();
    assert_eq!(info.entries, 2);
    assert_eq!(info.name, "code-0000000003-0000000004.sst");
    let file = SortedFile::open(&*fs, &info.path).unwrap();
    assert_eq!(file.get(b"c").unwrap(), Some(FileValue::Tombstone));
    assert_eq!(file.checksum(), info.checksum);
    assert_eq!(file.size_bytes(), info.size);
    assert_eq!(file.meta(), meta(Domain::Code, 3, 4));
}

#[test]
fn writer_rejects_an_empty_step_range() {
    let (_, fs) = mem_fs();
    let err = SortedFileWriter::new(fs, Path::new("/db"), meta(Domain::Account, 5, 5)).unwrap_err();
    assert!(matches!(err, FileError::InvalidInput { .. }), "{err}");
}

#[test]
fn unfinished_writer_leaves_nothing_behind() {
    let (mem, fs) = mem_fs();
    let dir = Path::new("/db");
    let mut w = SortedFileWriter::new(Arc::clone(&fs), dir, meta(Domain::Account, 0, 1)).unwrap();
    w.push(b"k", Some(b"v")).unwrap();
    assert_eq!(
        mem.list_dir(dir).unwrap().len(),
        1,
        "the temp file exists while writing"
    );
    drop(w);
    assert!(mem.list_dir(dir).unwrap().is_empty());
}

#[test]
fn merge_refuses_other_domains() {
    let (_, fs) = mem_fs();
    let dir = Path::new("/db");
    let info = write_model(&fs, dir, meta(Domain::Code, 0, 1), &sample_model(10, 4));
    let code = SortedFile::open(&*fs, &info.path).unwrap();
    let w = SortedFileWriter::new(Arc::clone(&fs), dir, meta(Domain::Account, 0, 2)).unwrap();
    let err = merge_files(&[&code], w, false).unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot merge a file of domain code into a file of domain account"),
        "{err}"
    );
}

use crate::FileSystem as _;

#[test]
fn newest_first_lookup_across_probe_batches() {
    let (_, fs) = mem_fs();
    let dir = Path::new("/db");
    let depth = 21u64;
    // File i (0 = newest) holds key j when (i + j) % 7 == 0; every third of
    // those entries is a tombstone.
    let files: Vec<Arc<SortedFile>> = (0..depth)
        .map(|i| {
            let model: Model = (0..100u64)
                .filter(|j| (i + j) % 7 == 0)
                .map(|j| {
                    (
                        j.to_be_bytes().to_vec(),
                        ((i + j) % 3 != 0).then(|| i.to_be_bytes().to_vec()),
                    )
                })
                .collect();
            let info = write_model(
                &fs,
                dir,
                meta(Domain::Account, depth - i - 1, depth - i),
                &model,
            );
            Arc::new(SortedFile::open(&*fs, &info.path).unwrap())
        })
        .collect();
    for j in 0..100u64 {
        let newest = (0..depth).find(|i| (i + j) % 7 == 0).unwrap();
        let expected = FileHit {
            position: newest as usize,
            value: if (newest + j) % 3 != 0 {
                FileValue::Value(Bytes::copy_from_slice(&newest.to_be_bytes()))
            } else {
                FileValue::Tombstone
            },
        };
        assert_eq!(
            lookup_newest_first(&files, &j.to_be_bytes()).unwrap(),
            Some(expected)
        );
        // Without the newest holders the next one (7 files older) answers.
        let older = &files[newest as usize + 1..];
        let hit = lookup_newest_first(older, &j.to_be_bytes()).unwrap();
        assert_eq!(
            hit.map(|h| h.position + newest as usize + 1),
            (newest + 7 < depth).then_some(newest as usize + 7)
        );
    }
    assert_eq!(lookup_newest_first(&files, b"absent").unwrap(), None);
    assert_eq!(
        lookup_newest_first::<Arc<SortedFile>>(&[], b"x").unwrap(),
        None
    );
}

#[test]
fn one_contract_spanning_many_blocks() {
    // Storage keys address ‖ slot: hundreds of blocks share the first 8
    // bytes, so the index search must go past the integer prefixes.
    let slot_key = |addr: u8, slot: u64| {
        let mut k = vec![addr; 20];
        k.extend_from_slice(&[0; 24]);
        k.extend_from_slice(&(slot * 2).to_be_bytes());
        k
    };
    let mut model = Model::new();
    for addr in [0x11u8, 0x22, 0x33] {
        let slots = if addr == 0x22 { 8_000 } else { 10 };
        for slot in 0..slots {
            model.insert(
                slot_key(addr, slot),
                (slot % 5 != 0).then(|| vec![addr; 32]),
            );
        }
    }
    let file = file_of(&model);
    assert!(file.block_count() > 50, "{}", file.block_count());
    for (k, v) in &model {
        assert_eq!(file.get(k).unwrap(), Some(to_value(v)));
    }
    for slot in [0u64, 1, 999, 7_999, 8_000] {
        let mut absent = slot_key(0x22, slot);
        *absent.last_mut().unwrap() |= 1;
        assert_eq!(file.get(&absent).unwrap(), None);
    }
    for addr in [0x11u8, 0x22, 0x33, 0x44] {
        let expected = model_entries(model.iter().filter(|(k, _)| k[..20] == [addr; 20]));
        assert_eq!(
            collect(file.iter_prefix(&[addr; 20])),
            expected,
            "address {addr:#x}"
        );
    }
}

/// The sampled block index agrees with a walk of every block: each block's
/// first key finds that block, the key just before it the block before,
/// a key below the file none; numbered access and the chain of next blocks
/// give the same handles; memory is a sample per 16 blocks.
#[test]
fn sampled_index_finds_every_block_boundary() {
    let mut tied = Model::new();
    for slot in 0..12_000u64 {
        let mut key = vec![0x22; 20];
        key.extend_from_slice(&slot.to_be_bytes());
        tied.insert(key, Some(vec![7; 40]));
    }
    for model in [sample_model(30_000, 40), tied] {
        let file = file_of(&model);
        let handles = file.blocks_for_test();
        assert!(handles.len() > 100, "{} blocks", handles.len());
        assert_eq!(handles.len(), file.block_count());
        let data = file.bytes_for_bench();
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        let mut next = 0;
        for (b, h) in handles.iter().enumerate() {
            assert_eq!(h.number, b);
            let first = h.first_key(data);
            let at = keys[next..]
                .iter()
                .position(|k| k.as_slice() == first)
                .unwrap()
                + next;
            next = at + h.entries as usize;
            assert_eq!(file.block_for(first).unwrap().unwrap().number, b);
            let before = file.block_for(keys.get(at.wrapping_sub(1)).map_or(&[][..], |k| k));
            assert_eq!(before.unwrap().map(|h| h.number), b.checked_sub(1));
            assert_eq!(file.block(b).unwrap().offset, h.offset);
            let following = file.next_block(h).unwrap().map(|n| n.number);
            assert_eq!(following, (b + 1 < handles.len()).then_some(b + 1));
        }
        assert_eq!(next, model.len());
        assert!(file.index_memory_bytes() <= handles.len().div_ceil(16) * 16);
    }
}
