//! Format versions side by side: format-1 files (written by the previous
//! release) still read, compact and verify; format-2 files behave like their
//! model at every restart interval; damaged prefix lengths and restart
//! points are errors naming file and offset; the open releases the pages it
//! has checked as it goes.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;

use super::{Model, mem_fs, meta, sample_model};
use crate::format::{CHECKSUM_LEN, FOOTER_CHECKSUM_AT, FOOTER_LEN, Footer, checksum};
use crate::open::{RELEASE_CHUNK, open_bytes};
use crate::{
    FORMAT_VERSION, FileError, FileLayout, FileSystem, FileValue, SortedFile, SortedFileWriter,
    merge_files,
};
use strata_types::Domain;

const NAME: &str = "storage-0000000000-0000000001.sst";

const LAYOUTS: [FileLayout; 4] = [
    FileLayout::V1,
    FileLayout::V2 {
        restart_interval: 1,
    },
    FileLayout::V2 {
        restart_interval: 16,
    },
    FileLayout::V2 {
        restart_interval: u32::MAX,
    },
];

/// `model` written in `layout` as a storage file in `/db`, opened.
pub(super) fn write_as(fs: &Arc<dyn FileSystem>, layout: FileLayout, model: &Model) -> SortedFile {
    let mut w = SortedFileWriter::new(
        Arc::clone(fs),
        Path::new("/db"),
        meta(Domain::Storage, 0, 1),
    )
    .unwrap()
    .with_layout(layout);
    for (k, v) in model {
        w.push(k, v.as_deref()).unwrap();
    }
    let info = w.finish().unwrap();
    SortedFile::open(&**fs, &info.path).unwrap()
}

fn bytes_as(layout: FileLayout, model: &Model) -> Vec<u8> {
    let (mem, fs) = mem_fs();
    let file = write_as(&fs, layout, model);
    mem.contents(file.path()).unwrap()
}

fn open(bytes: Vec<u8>) -> Result<SortedFile, FileError> {
    SortedFile::from_bytes(&Path::new("/db").join(NAME), Bytes::from(bytes))
}

/// Storage-shaped keys: a few contracts (20-byte addresses) with many slots.
fn storage_model(n: u32) -> Model {
    (0..n)
        .map(|i| {
            let mut key = vec![(i / 300) as u8; 20];
            key.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()).to_be_bytes());
            key.extend_from_slice(&[0x5a; 24]);
            (
                key,
                (i % 11 != 5).then(|| vec![i as u8; 1 + i as usize % 9]),
            )
        })
        .collect()
}

fn all(file: &SortedFile) -> Model {
    file.iter()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.into_value().map(|v| v.to_vec()))
        })
        .collect()
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    // Few distinct bytes and lengths, so keys share long prefixes.
    vec(0u8..4, 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every layout answers gets, seeks and prefix scans like the model.
    #[test]
    fn every_layout_behaves_like_the_model(
        model in proptest::collection::btree_map(key(), proptest::option::of(vec(any::<u8>(), 0..40)), 0..300),
        probes in vec(key(), 0..30),
    ) {
        for layout in LAYOUTS {
            let (_, fs) = mem_fs();
            let file = write_as(&fs, layout, &model);
            prop_assert_eq!(file.format_version(), layout.version());
            super::roundtrip::check_file_against(&model, &file, &probes);
        }
    }
}

#[test]
fn new_files_are_format_2_and_smaller() {
    let model = storage_model(3000);
    let (_, fs) = mem_fs();
    let v1 = write_as(&fs, FileLayout::V1, &model);
    let (_, fs) = mem_fs();
    let w = SortedFileWriter::new(
        Arc::clone(&fs),
        Path::new("/db"),
        meta(Domain::Storage, 0, 1),
    )
    .unwrap();
    let mut w = w;
    for (k, v) in &model {
        w.push(k, v.as_deref()).unwrap();
    }
    let info = w.finish().unwrap();
    let v2 = SortedFile::open(&*fs, &info.path).unwrap();
    assert_eq!(v2.format_version(), FORMAT_VERSION);
    assert_eq!(FORMAT_VERSION, 2);
    assert_eq!(v1.format_version(), 1);
    assert!(
        v2.size_bytes() * 10 < v1.size_bytes() * 8,
        "v2 {} bytes, v1 {} bytes",
        v2.size_bytes(),
        v1.size_bytes()
    );
    assert_eq!(all(&v1), model);
    assert_eq!(all(&v2), model);
}

/// A format-1 file is read back identically, and merging format-1 inputs
/// (what a compaction of an old datadir does) writes format 2.
#[test]
fn format_1_files_read_and_merge_into_format_2() {
    let old = storage_model(2000);
    let newer: Model = storage_model(2600)
        .into_iter()
        .skip(1500)
        .map(|(k, v)| {
            (
                k,
                v.map(|mut v| {
                    v.push(0xee);
                    v
                }),
            )
        })
        .collect();
    let (_, fs) = mem_fs();
    let dir = Path::new("/db");
    let files: Vec<SortedFile> = [(&newer, 1u64), (&old, 0)]
        .into_iter()
        .map(|(model, step)| {
            let mut w =
                SortedFileWriter::new(Arc::clone(&fs), dir, meta(Domain::Storage, step, step + 1))
                    .unwrap()
                    .with_layout(FileLayout::V1);
            for (k, v) in model {
                w.push(k, v.as_deref()).unwrap();
            }
            SortedFile::open(&*fs, &w.finish().unwrap().path).unwrap()
        })
        .collect();
    assert!(files.iter().all(|f| f.format_version() == 1));
    assert_eq!(all(&files[0]), newer);
    assert_eq!(all(&files[1]), old);
    let writer = SortedFileWriter::new(Arc::clone(&fs), dir, meta(Domain::Storage, 0, 2)).unwrap();
    let refs: Vec<&SortedFile> = files.iter().collect();
    let info = merge_files(&refs, writer, false).unwrap();
    let merged = SortedFile::open(&*fs, &info.path).unwrap();
    assert_eq!(merged.format_version(), 2);
    let mut expected = old.clone();
    expected.extend(newer.clone());
    assert_eq!(all(&merged), expected);
    for (k, v) in &expected {
        let want = v
            .clone()
            .map_or(FileValue::Tombstone, |v| FileValue::Value(v.into()));
        assert_eq!(merged.get(k).unwrap(), Some(want));
    }
}

/// The checked-in format-1 file (as the previous release wrote it) reads
/// back its model exactly.
#[test]
fn the_format_1_fixture_reads_back() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format1_storage.sst");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, format1_fixture(), "the format-1 writer path changed");
    let file = SortedFile::open(&crate::OsFileSystem, &path).unwrap();
    assert_eq!(file.format_version(), 1);
    assert_eq!(all(&file), fixture_model());
    for (k, v) in fixture_model() {
        assert_eq!(
            file.get(&k)
                .unwrap()
                .map(|v| v.into_value().map(|b| b.to_vec())),
            Some(v)
        );
    }
}

pub(super) fn fixture_model() -> Model {
    storage_model(400)
}

pub(super) fn format1_fixture() -> Vec<u8> {
    let (mem, fs) = mem_fs();
    let mut w = SortedFileWriter::new(
        Arc::clone(&fs),
        Path::new("/f"),
        meta(Domain::Storage, 0, 1),
    )
    .unwrap()
    .with_layout(FileLayout::V1);
    for (k, v) in &fixture_model() {
        w.push(k, v.as_deref()).unwrap();
    }
    let info = w.finish().unwrap();
    mem.contents(&info.path).unwrap()
}

fn footer_of(bytes: &[u8]) -> Footer {
    let mut raw = [0u8; FOOTER_LEN];
    raw.copy_from_slice(&bytes[bytes.len() - FOOTER_LEN..]);
    Footer::decode(&raw)
}

/// Recomputes the block, index and whole-file checksums, so that only the
/// structural checks can catch a change.
fn reseal(bytes: &mut [u8], block: (usize, usize)) {
    let (off, len) = block;
    let body = off + len - CHECKSUM_LEN;
    let sum = checksum(&bytes[off..body]);
    bytes[body..off + len].copy_from_slice(&sum.to_le_bytes());
    let covered = bytes.len() - FOOTER_LEN + FOOTER_CHECKSUM_AT;
    let sum = checksum(&bytes[..covered]);
    bytes[covered..covered + 8].copy_from_slice(&sum.to_le_bytes());
}

/// The second block of a format-2 file of `model` with restart points
/// every `interval` entries, and the file's bytes.
fn second_block(interval: u32, model: &Model) -> ((usize, usize), Vec<u8>) {
    let bytes = bytes_as(
        FileLayout::V2 {
            restart_interval: interval,
        },
        model,
    );
    let file = open(bytes.clone()).unwrap();
    let h = file.blocks_for_test()[1];
    ((h.offset, h.len), bytes)
}

#[test]
fn a_shared_length_longer_than_the_previous_key_is_an_error() {
    let model = storage_model(2000);
    let ((off, len), good) = second_block(u32::MAX, &model);
    // Entry 1 of the block starts after entry 0 (20 + 32-byte key): its
    // first byte is its shared length, a one-byte varint.
    let view = crate::prefixed::PrefixedView::new(&good[off..off + len]).unwrap();
    let first = view.decode_at(0).unwrap();
    let second = off + first.end;
    assert!(good[second] < 0x80 && good[second] > 0);
    for shared in [53u8, 0x7f] {
        let mut bad = good.clone();
        bad[second] = shared;
        reseal(&mut bad, (off, len));
        let err = open(bad).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, FileError::Corrupted { offset, .. } if offset == second as u64),
            "{msg}"
        );
        assert!(msg.contains(NAME) && msg.contains("data block 1"), "{msg}");
        assert!(
            msg.contains(&format!(
                "shares {shared} bytes with a previous key of 52 bytes"
            )),
            "{msg}"
        );
    }
    // A shared length at a block's start is refused too.
    let mut bad = good.clone();
    bad[off] = 1;
    reseal(&mut bad, (off, len));
    let msg = open(bad).unwrap_err().to_string();
    assert!(
        msg.contains("data block 1") && msg.contains("restart point"),
        "{msg}"
    );
}

#[test]
fn a_damaged_restart_point_is_an_error() {
    let model = storage_model(2000);
    let ((off, len), good) = second_block(16, &model);
    let view = crate::prefixed::PrefixedView::new(&good[off..off + len]).unwrap();
    assert!(view.restart_count() >= 2);
    let restart_at = off + view.entries_end() + 4;
    let cases: [(u32, &str); 3] = [
        // Not at an entry boundary.
        (
            view.restart(1).unwrap() as u32 + 1,
            "is not at the start of an entry",
        ),
        // At an entry that shares a prefix.
        (
            view.decode_at(0).unwrap().end as u32,
            "is a restart point but shares",
        ),
        // Past the entries.
        (u32::MAX, "is not at the start of an entry"),
    ];
    for (value, expect) in cases {
        let mut bad = good.clone();
        bad[restart_at..restart_at + 4].copy_from_slice(&value.to_le_bytes());
        reseal(&mut bad, (off, len));
        let err = open(bad).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(NAME) && msg.contains("data block 1") && msg.contains(expect),
            "{msg}"
        );
    }
    let mut bad = good.clone();
    bad[off..off + 4].fill(0xff);
    reseal(&mut bad, (off, len));
    assert!(open(bad).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any byte of a format-2 block changed (checksums resealed): open
    /// refuses or the file still answers every read, never panics.
    #[test]
    fn resealed_prefixed_blocks_never_panic(
        picks in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        interval in prop::sample::select(vec![1u32, 4, 16, u32::MAX]),
    ) {
        let model = storage_model(600);
        let ((off, len), mut bytes) = second_block(interval, &model);
        for (pick, value) in picks {
            bytes[off + pick.index(len - CHECKSUM_LEN)] = value;
        }
        reseal(&mut bytes, (off, len));
        if let Ok(opened) = open(bytes) {
            for k in model.keys() {
                let _ = opened.get(k);
                let _ = opened.get_ref(k);
                let _ = opened.iter_from(k).take(3).count();
                let _ = opened.iter_prefix(&k[..21]).count();
            }
            let _ = opened.iter().count();
        }
    }
}

#[test]
fn an_unknown_version_is_refused() {
    let mut bytes = bytes_as(FileLayout::default(), &sample_model(20, 4));
    let footer = bytes.len() - FOOTER_LEN;
    bytes[footer..footer + 4].copy_from_slice(&3u32.to_le_bytes());
    let err = open(bytes).unwrap_err();
    assert!(
        matches!(
            err,
            FileError::UnsupportedVersion {
                found: 3,
                supported: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("supported: 1 to 2"), "{err}");
}

/// The open hands back what it has checked in increasing, contiguous
/// ranges no larger than a release chunk (plus a block), covering the file.
#[test]
fn the_open_releases_checked_pages_as_it_goes() {
    let model = storage_model(300_000);
    let bytes = bytes_as(FileLayout::default(), &model);
    assert!(bytes.len() > 2 * RELEASE_CHUNK, "{} bytes", bytes.len());
    let f = footer_of(&bytes);
    let mut released: Vec<std::ops::Range<usize>> = Vec::new();
    let file = open_bytes(
        Path::new("/db").join(NAME),
        Bytes::from(bytes.clone()),
        &mut |r| released.push(r),
    )
    .unwrap();
    assert_eq!(file.entries(), model.len() as u64);
    // The index and filter are checked first, then everything from 0.
    let data = released.iter().position(|r| r.start == 0).unwrap();
    let (regions, pass) = released.split_at(data);
    assert!(regions.iter().all(|r| r.start >= f.index_offset as usize));
    let mut at = 0;
    for r in pass {
        assert_eq!(r.start, at, "{released:?}");
        assert!(r.len() <= RELEASE_CHUNK + 8192, "{r:?}");
        at = r.end;
    }
    assert_eq!(at, bytes.len() - FOOTER_LEN + FOOTER_CHECKSUM_AT);
}
