//! B7: `export --out` writes into a FIFO in place (a device goes the same
//! way; not tried here, a failure would replace a real device node) and through a
//! symlink to the file it leads to, never replacing either with a regular
//! file; a folder is refused.

#![cfg(unix)]

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{strata, strata_err, strata_ok, testdata};

/// A datadir replayed from the small trace, and its dump on stdout.
fn datadir_and_dump(dir: &Path) -> (PathBuf, Vec<u8>) {
    let datadir = dir.join("db");
    let d = datadir.to_str().unwrap();
    strata_ok(&[
        "replay",
        testdata().join("small.jsonl").to_str().unwrap(),
        "--datadir",
        d,
    ]);
    let out = strata(&["export", "--datadir", d]);
    assert!(out.status.success());
    (datadir, out.stdout)
}

#[test]
fn a_fifo_is_written_in_place_and_stays_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let (datadir, dump) = datadir_and_dump(dir.path());
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    strata_ok(&[
        "export",
        "--datadir",
        datadir.to_str().unwrap(),
        "--out",
        fifo.to_str().unwrap(),
    ]);
    // Checked before the join: a FIFO replaced by a file leaves the
    // reader waiting for a writer for good.
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the FIFO is still a FIFO: {kind:?}");
    assert_eq!(
        reader.join().unwrap(),
        dump,
        "the reader got the whole dump"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".strata-output-")),
        "no temporary left: {names:?}"
    );
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let (datadir, dump) = datadir_and_dump(dir.path());
    let d = datadir.to_str().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let real = elsewhere.join("state.jsonl");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink("elsewhere/state.jsonl", &link).unwrap();
    strata_ok(&["export", "--datadir", d, "--out", link.to_str().unwrap()]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is still a link"
    );
    assert_eq!(
        std::fs::read(&real).unwrap(),
        dump,
        "its target holds the dump"
    );

    // A link to a file not there yet creates that file.
    let dangling = dir.path().join("dangling.jsonl");
    std::os::unix::fs::symlink("elsewhere/new.jsonl", &dangling).unwrap();
    strata_ok(&[
        "export",
        "--datadir",
        d,
        "--out",
        dangling.to_str().unwrap(),
    ]);
    assert!(
        std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(elsewhere.join("new.jsonl")).unwrap(), dump);
}

#[test]
fn a_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (datadir, _) = datadir_and_dump(dir.path());
    let folder = dir.path().join("out");
    std::fs::create_dir(&folder).unwrap();
    let stderr = strata_err(&[
        "export",
        "--datadir",
        datadir.to_str().unwrap(),
        "--out",
        folder.to_str().unwrap(),
    ]);
    assert!(stderr.contains("is a folder"), "{stderr}");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
}
