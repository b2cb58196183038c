//! The corrupt files checked in under `files/tests/fixtures/`: each is
//! opened through the real file system (memory-mapped) and must give its
//! specific error. The files are produced by [`generate`]; run with
//! `STRATA_REGEN_FIXTURES=1` to rewrite them after a format change.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::meta;
use crate::format::{FOOTER_LEN, Footer};
use crate::{
    FileError, FileLayout, FileSystem, MemFileSystem, OsFileSystem, SortedFile, SortedFileWriter,
};
use strata_types::Domain;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The valid file every fixture is damaged from: 120 account-like entries
/// (20-byte keys), steps [0, 1), a few blocks, in format 1 (these fixtures
/// predate format 2 and stay byte-identical: the format-1 writer path is
/// the previous release's).
fn base() -> Vec<u8> {
    let model: super::Model = (0u8..120)
        .map(|i| {
            let mut key = vec![0xa0u8; 20];
            key[19] = i;
            (key, (i % 10 != 9).then(|| vec![i; 70]))
        })
        .collect();
    let mem = MemFileSystem::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let mut w = SortedFileWriter::new(
        Arc::clone(&fs),
        Path::new("/f"),
        meta(Domain::Account, 0, 1),
    )
    .unwrap()
    .with_layout(FileLayout::V1);
    for (k, v) in &model {
        w.push(k, v.as_deref()).unwrap();
    }
    let info = w.finish().unwrap();
    mem.contents(&info.path).unwrap()
}

/// Every fixture: its file name and its bytes.
fn generate() -> Vec<(&'static str, Vec<u8>)> {
    let good = base();
    let footer = good.len() - FOOTER_LEN;

    let mut bumped_version = good.clone();
    bumped_version[footer..footer + 4].copy_from_slice(&3u32.to_le_bytes());

    let truncated = good[..good.len() - 100].to_vec();

    let mut flipped_block = good.clone();
    let mut raw = [0u8; FOOTER_LEN];
    raw.copy_from_slice(&good[footer..]);
    let second_block_start = {
        // The index's second entry holds the offset of block 1.
        let index = Footer::decode(&raw).index_offset as usize;
        let first_key_len = u16::from_le_bytes([good[index + 16], good[index + 17]]) as usize;
        let entry = index + 18 + first_key_len;
        u64::from_le_bytes(good[entry..entry + 8].try_into().unwrap()) as usize
    };
    flipped_block[second_block_start + 30] ^= 0x04;

    let mut flipped_footer = good.clone();
    // Entry count (footer offset 24): caught by the cross-check with the blocks.
    flipped_footer[footer + 24] ^= 0x01;

    vec![
        ("unsupported_version.sst", bumped_version),
        ("truncated.sst", truncated),
        ("flipped_block.sst", flipped_block),
        ("flipped_footer.sst", flipped_footer),
        ("format1_storage.sst", super::layouts::format1_fixture()),
    ]
}

#[test]
fn fixtures_match_their_generator() {
    let dir = fixtures_dir();
    let regenerate = std::env::var_os("STRATA_REGEN_FIXTURES").is_some();
    for (name, bytes) in generate() {
        let path = dir.join(name);
        if regenerate {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (run with STRATA_REGEN_FIXTURES=1)", path.display())
        });
        assert!(
            committed == bytes,
            "{} differs from its generator: the format changed; rerun with STRATA_REGEN_FIXTURES=1",
            path.display()
        );
    }
}

fn open_fixture(name: &str) -> FileError {
    let path = fixtures_dir().join(name);
    let err = SortedFile::open(&OsFileSystem, &path).expect_err(name);
    assert!(err.to_string().contains(name), "{name}: {err}");
    err
}

#[test]
fn unsupported_version_fixture() {
    let err = open_fixture("unsupported_version.sst");
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
}

#[test]
fn truncated_fixture() {
    let err = open_fixture("truncated.sst");
    assert!(matches!(err, FileError::Corrupted { .. }), "{err}");
    assert!(err.to_string().contains("bad magic"), "{err}");
}

#[test]
fn flipped_block_fixture() {
    let err = open_fixture("flipped_block.sst");
    match &err {
        FileError::ChecksumMismatch {
            what,
            offset,
            expected,
            found,
            ..
        } => {
            assert_eq!(what, "data block 1", "{err}");
            assert!(*offset > 0 && expected != found, "{err}");
        }
        other => panic!("expected a block checksum mismatch, got {other}"),
    }
}

#[test]
fn flipped_footer_fixture() {
    let err = open_fixture("flipped_footer.sst");
    assert!(matches!(err, FileError::Corrupted { .. }), "{err}");
    assert!(err.to_string().contains("the footer says"), "{err}");
}

#[test]
fn the_base_of_the_fixtures_is_valid() {
    let file = SortedFile::from_bytes(Path::new("base.sst"), bytes::Bytes::from(base())).unwrap();
    assert_eq!(file.entries(), 120);
    assert!(file.block_count() >= 3, "{} blocks", file.block_count());
}
