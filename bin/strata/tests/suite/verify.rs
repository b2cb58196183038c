//! `strata verify` reads only (no byte of the datadir changes) and never
//! panics on damaged redb pages: it exits non-zero with a message naming
//! what is damaged, never with Rust's panic exit code 101.

use std::path::{Path, PathBuf};

use strata_test_support::tree_contents;

use crate::common::{replay_small_steps, strata, strata_ok, testdata};

/// Bytes of a redb page.
const PAGE: u64 = 4096;

/// A datadir made by replaying the small test trace with small steps and a
/// compaction, so `files/` holds files.
fn replayed_datadir(dir: &Path) -> PathBuf {
    let datadir = dir.join("db");
    let db = datadir.to_str().unwrap();
    replay_small_steps(&testdata().join("small.jsonl"), &datadir);
    strata_ok(&["compact", "--datadir", db]);
    datadir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn verify_changes_no_byte_of_the_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed_datadir(dir.path());
    let before = tree_contents(&datadir);
    assert!(
        before
            .keys()
            .any(|p| p.extension().is_some_and(|e| e == "sst")),
        "files were collated: {:?}",
        before.keys()
    );
    let out = strata_ok(&["verify", "--datadir", datadir.to_str().unwrap()]);
    assert!(out.contains("verify: ok"), "{out}");
    assert!(out.contains("redb integrity check of "), "{out}");
    assert!(out.contains("commitment records checked"), "{out}");
    let after = tree_contents(&datadir);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "verify added or removed files"
    );
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "verify changed {}", path.display());
    }
}

#[test]
fn verify_reports_zeroed_redb_pages_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = replayed_datadir(dir.path());
    let pages = std::fs::metadata(pristine.join("state.redb"))
        .unwrap()
        .len()
        / PAGE;
    assert!(pages > 12, "{pages} pages");
    // The header page, then pages spread over the file.
    let positions: Vec<u64> = (0..12).map(|i| i * (pages - 1) / 11).collect();
    let mut detected = 0;
    for page in &positions {
        let datadir = dir.path().join(format!("zeroed-{page}"));
        copy_tree(&pristine, &datadir);
        let db_file = datadir.join("state.redb");
        let mut bytes = std::fs::read(&db_file).unwrap();
        let at = usize::try_from(page * PAGE).unwrap();
        bytes[at..at + PAGE as usize].fill(0);
        std::fs::write(&db_file, &bytes).unwrap();

        let out = strata(&["verify", "--datadir", datadir.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(
            out.status.code(),
            Some(101),
            "page {page}: verify panicked:\n{stdout}\n{stderr}"
        );
        assert!(
            !stderr.contains("panicked at"),
            "page {page}: a panic was printed:\n{stderr}"
        );
        if !out.status.success() {
            detected += 1;
            assert!(
                stdout.contains("problem: ") || stderr.contains("state.redb"),
                "page {page}: no message naming what is damaged:\n{stdout}\n{stderr}"
            );
        }
        assert_eq!(
            std::fs::read(&db_file).unwrap(),
            bytes,
            "page {page}: verify changed state.redb"
        );
    }
    eprintln!("zeroed pages {positions:?} of {pages}: {detected} reported, 0 panics");
    assert!(detected > 0, "no zeroed page was noticed");
}
