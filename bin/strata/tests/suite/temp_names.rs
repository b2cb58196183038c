//! What killed commands leave — `.strata-output-XXXXXX` beside an output's
//! target, `.strata-sweep-XXXXXX` beside a sweep's datadir,
//! `strata-verify-XXXXXX` in verify's temp folder, `strata-ef-test-XXXXXX`
//! in ef-test's — is removed at the next
//! start of that command; a name that is not strata's exact shape, or one
//! a running process holds (its lock), is left alone.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::common::{strata_ok, testdata, vectors};

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// A file at `dir/name`.
fn file(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, b"left behind").unwrap();
    path
}

/// A folder at `dir/name` holding a file.
fn folder(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir(&path).unwrap();
    file(&path, "run-0.run");
    path
}

/// Names no sweep may take: not strata's shape, or another prefix.
const OTHERS: [&str; 4] = [
    "notes.txt",
    "strata-output-abc123",
    "x.strata-sweep-abc123",
    "strata-verify-abc12",
];

fn replayed(dir: &Path) -> PathBuf {
    let datadir = dir.join("db");
    strata_ok(&[
        "replay",
        testdata().join("small.jsonl").to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
    ]);
    datadir
}

#[test]
fn export_removes_the_temporaries_killed_exports_left_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    file(&out, ".strata-output-abc123");
    file(&out, ".strata-output-Z9y8X7");
    for other in OTHERS
        .iter()
        .chain(&[".strata-output-abc1234", ".strata-output-abc12"])
    {
        file(&out, other);
    }
    // One a running export holds.
    let held = File::open(file(&out, ".strata-output-HELD00")).unwrap();
    held.lock().unwrap();
    let before = names(&out);

    strata_ok(&[
        "export",
        "--datadir",
        datadir.to_str().unwrap(),
        "--out",
        out.join("state.jsonl").to_str().unwrap(),
    ]);
    let mut expected: Vec<_> = before
        .into_iter()
        .filter(|n| n != ".strata-output-abc123" && n != ".strata-output-Z9y8X7")
        .collect();
    expected.push("state.jsonl".into());
    expected.sort();
    assert_eq!(names(&out), expected);
    drop(held);
}

#[test]
fn verify_removes_the_scratch_folders_killed_runs_left_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let temp = dir.path().join("tmp");
    std::fs::create_dir(&temp).unwrap();
    folder(&temp, "strata-verify-abc123");
    for other in OTHERS {
        folder(&temp, other);
    }
    let held_dir = folder(&temp, "strata-verify-HELD00");
    let held = File::open(&held_dir).unwrap();
    held.lock().unwrap();
    let before = names(&temp);

    strata_ok(&[
        "verify",
        "--datadir",
        datadir.to_str().unwrap(),
        "--temp-dir",
        temp.to_str().unwrap(),
    ]);
    let expected: Vec<_> = before
        .into_iter()
        .filter(|n| n != "strata-verify-abc123")
        .collect();
    assert_eq!(names(&temp), expected, "verify's own folder is gone too");
    assert!(held_dir.join("run-0.run").exists());
    drop(held);
}

#[test]
fn a_sweep_removes_the_copies_killed_sweeps_left_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    folder(dir.path(), ".strata-sweep-abc123");
    for other in OTHERS {
        folder(dir.path(), other);
    }
    let before = names(dir.path());

    strata_ok(&[
        "replay",
        testdata().join("small.jsonl").to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        "--warmers",
        "0,1",
    ]);
    let expected: Vec<_> = before
        .into_iter()
        .filter(|n| n != ".strata-sweep-abc123")
        .collect();
    assert_eq!(names(dir.path()), expected);
}

#[test]
fn ef_test_removes_the_store_folders_killed_runs_left_and_nothing_else() {
    let Some(vectors) = vectors() else { return };
    let fixture = vectors.join("ef_blockchain_tests/ValidBlocks/bcEIP1559/tips.json");
    let dir = tempfile::tempdir().unwrap();
    let temp = dir.path().join("tmp");
    std::fs::create_dir(&temp).unwrap();
    folder(&temp, "strata-ef-test-abc123");
    for other in OTHERS {
        folder(&temp, other);
    }
    let held_dir = folder(&temp, "strata-ef-test-HELD00");
    let held = File::open(&held_dir).unwrap();
    held.lock().unwrap();
    let before = names(&temp);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["ef-test", fixture.to_str().unwrap()])
        .env("TMPDIR", &temp)
        .output()
        .expect("run strata");
    assert!(
        out.status.success(),
        "ef-test failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: Vec<_> = before
        .into_iter()
        .filter(|n| n != "strata-ef-test-abc123")
        .collect();
    assert_eq!(names(&temp), expected, "ef-test's own folder is gone too");
    assert!(held_dir.join("run-0.run").exists());
    drop(held);
}
