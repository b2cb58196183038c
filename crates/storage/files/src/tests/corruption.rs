//! Corruption: flipped bits in every region and truncations at many lengths
//! must give an error that names the file — never a panic, never a value.

use std::path::Path;

use bytes::Bytes;
use proptest::prelude::*;

use super::{Model, file_of, mem_fs, meta, sample_model, write_model};
use crate::format::{CHECKSUM_LEN, FOOTER_CHECKSUM_AT, FOOTER_LEN, Footer, checksum};
use crate::{FileError, SortedFile};
use strata_types::Domain;

const NAME: &str = "storage-0000000000-0000000001.sst";

/// A file of several blocks with values and tombstones, and its bytes.
fn sample_bytes() -> (Model, Vec<u8>) {
    let model = sample_model(600, 40);
    let (mem, fs) = mem_fs();
    let info = write_model(&fs, Path::new("/db"), meta(Domain::Storage, 0, 1), &model);
    (model, mem.contents(&info.path).unwrap())
}

fn footer_of(bytes: &[u8]) -> Footer {
    let mut raw = [0u8; FOOTER_LEN];
    raw.copy_from_slice(&bytes[bytes.len() - FOOTER_LEN..]);
    Footer::decode(&raw)
}

fn open(bytes: Vec<u8>) -> Result<SortedFile, FileError> {
    SortedFile::from_bytes(&Path::new("/db").join(NAME), Bytes::from(bytes))
}

fn assert_names_file(err: &FileError, context: &str) {
    let msg = err.to_string();
    assert!(
        msg.contains(NAME),
        "{context}: message does not name the file: {msg}"
    );
}

/// Offsets to damage: all of the footer and index, a stride through the
/// blocks and the filter, and the edges of every region.
fn offsets_to_damage(bytes: &[u8]) -> Vec<usize> {
    let f = footer_of(bytes);
    let (index, filter, footer) = (
        f.index_offset as usize,
        f.filter_offset as usize,
        bytes.len() - FOOTER_LEN,
    );
    let mut offsets: Vec<usize> = (0..index).step_by(7).collect();
    offsets.extend(index..filter);
    offsets.extend((filter..footer).step_by(5));
    offsets.extend(footer..bytes.len());
    offsets.extend([0, index - 1, filter - 1, filter + 1, footer - 1]);
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

#[test]
fn every_flipped_byte_is_detected_at_open() {
    let (_, bytes) = sample_bytes();
    let f = footer_of(&bytes);
    assert!(
        f.block_count >= 5,
        "want several blocks, got {}",
        f.block_count
    );
    let mut kinds = std::collections::BTreeSet::new();
    for at in offsets_to_damage(&bytes) {
        for mask in [0x01u8, 0x80] {
            let mut damaged = bytes.clone();
            damaged[at] ^= mask;
            let err = open(damaged).expect_err(&format!("flip {mask:#x} at {at} went unnoticed"));
            assert_names_file(&err, &format!("flip at {at}"));
            kinds.insert(match err {
                FileError::Corrupted { .. } => "corrupted",
                FileError::ChecksumMismatch { .. } => "checksum",
                FileError::UnsupportedVersion { .. } => "version",
                _ => "other",
            });
        }
    }
    assert!(!kinds.contains("other"), "{kinds:?}");
    assert_eq!(kinds.len(), 3, "every kind of defect shows up: {kinds:?}");
}

#[test]
fn flips_are_attributed_to_their_region() {
    let (_, bytes) = sample_bytes();
    let f = footer_of(&bytes);
    let cases = [
        (10usize, "data block 0"),
        (f.index_offset as usize + 3, "index"),
        (f.filter_offset as usize + 20, "filter"),
    ];
    for (at, region) in cases {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        let err = open(damaged).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, FileError::ChecksumMismatch { .. }) && msg.contains(region),
            "flip at {at}: expected a checksum mismatch in {region}, got {msg}"
        );
    }
    // A plausible step range [0, 17): the file name catches it, and without a
    // sorted-file name the whole-file checksum does.
    let mut damaged = bytes.clone();
    damaged[bytes.len() - FOOTER_LEN + 16] ^= 0x10;
    let msg = open(damaged.clone()).unwrap_err().to_string();
    assert!(
        msg.contains("the file name says account") || msg.contains("the file name says storage"),
        "{msg}"
    );
    let err = SortedFile::from_bytes(Path::new("/copy.bin"), Bytes::from(damaged)).unwrap_err();
    assert!(
        matches!(err, FileError::ChecksumMismatch { .. }) && err.to_string().contains("whole file"),
        "{err}"
    );
    let mut damaged = bytes.clone();
    let at = bytes.len() - 3;
    damaged[at] ^= 1;
    let msg = open(damaged).unwrap_err().to_string();
    assert!(msg.contains("bad magic"), "{msg}");
}

#[test]
fn every_truncation_is_detected() {
    let (_, bytes) = sample_bytes();
    let len = bytes.len();
    let mut lengths: Vec<usize> = (0..len).step_by(11).collect();
    lengths.extend(len.saturating_sub(2 * FOOTER_LEN)..len);
    for cut in lengths {
        let err =
            open(bytes[..cut].to_vec()).expect_err(&format!("truncation to {cut} went unnoticed"));
        assert_names_file(&err, &format!("truncated to {cut}"));
        assert!(
            matches!(err, FileError::Corrupted { .. }),
            "truncated to {cut}: {err}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(open(longer), Err(FileError::Corrupted { .. })));
}

#[test]
fn a_file_under_another_name_is_refused() {
    let (_, bytes) = sample_bytes();
    let err = SortedFile::from_bytes(
        Path::new("/db/storage-0000000000-0000000002.sst"),
        Bytes::from(bytes.clone()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("the file name says"), "{err}");
    // A name that is not a sorted-file name is not cross-checked.
    assert!(SortedFile::from_bytes(Path::new("/elsewhere/copy.bin"), Bytes::from(bytes)).is_ok());
}

/// Recomputes every checksum after a mutation (using the original block
/// boundaries), so the structural checks — not the checksums — must catch
/// the damage.
fn reseal(bytes: &mut [u8], blocks: &[(usize, usize)]) {
    let f = footer_of(bytes);
    for &(off, len) in blocks {
        let body = off + len - CHECKSUM_LEN;
        let sum = checksum(&bytes[off..body]);
        bytes[body..off + len].copy_from_slice(&sum.to_le_bytes());
    }
    for (start, end) in [
        (f.index_offset as usize, f.filter_offset as usize),
        (f.filter_offset as usize, bytes.len() - FOOTER_LEN),
    ] {
        let body = end - CHECKSUM_LEN;
        let sum = checksum(&bytes[start..body]);
        bytes[body..end].copy_from_slice(&sum.to_le_bytes());
    }
    let covered = bytes.len() - FOOTER_LEN + FOOTER_CHECKSUM_AT;
    let sum = checksum(&bytes[..covered]);
    bytes[covered..covered + 8].copy_from_slice(&sum.to_le_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Mutations that keep every checksum valid exercise the bounds checks:
    /// open and every lookup must return, never panic.
    #[test]
    fn resealed_mutations_never_panic(
        picks in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        into_index in any::<bool>(),
    ) {
        let model = sample_model(200, 20);
        let file = file_of(&model);
        let blocks: Vec<(usize, usize)> = (0..file.block_count())
            .map(|b| {
                let h = &file.blocks_for_test()[b];
                (h.offset, h.len)
            })
            .collect();
        let (mem, fs) = mem_fs();
        let info = write_model(&fs, Path::new("/db"), meta(Domain::Storage, 0, 1), &model);
        let mut bytes = mem.contents(&info.path).unwrap();
        let f = footer_of(&bytes);
        let range = if into_index {
            f.index_offset as usize..f.filter_offset as usize - CHECKSUM_LEN
        } else {
            0..f.index_offset as usize
        };
        for (pick, value) in picks {
            let at = range.start + pick.index(range.len());
            bytes[at] = value;
        }
        reseal(&mut bytes, &blocks);
        if let Ok(opened) = open(bytes) {
            for k in model.keys() {
                let _ = opened.get(k);
                let _ = opened.iter_prefix(&k[..4]).count();
            }
            let _ = opened.iter().count();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Random footer fields (with a valid magic and version) send the opener
    /// to arbitrary offsets and counts: it must refuse, never panic or
    /// allocate without bound.
    #[test]
    fn random_footers_are_refused(fields in proptest::collection::vec(any::<u8>(), FOOTER_CHECKSUM_AT - 4)) {
        let model = sample_model(50, 8);
        let (mem, fs) = mem_fs();
        let info = write_model(&fs, Path::new("/db"), meta(Domain::Storage, 0, 1), &model);
        let mut bytes = mem.contents(&info.path).unwrap();
        let footer = bytes.len() - FOOTER_LEN;
        bytes[footer + 4..footer + FOOTER_CHECKSUM_AT].copy_from_slice(&fields);
        let err = open(bytes).unwrap_err();
        prop_assert!(err.to_string().contains(NAME), "{}", err);
    }
}

#[test]
fn files_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SortedFile>();
    assert_send_sync::<crate::FileValue>();
    assert_send_sync::<FileError>();
}
