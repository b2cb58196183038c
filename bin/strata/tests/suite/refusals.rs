//! Writer commands refused for a reason a read-only look can tell — `init`
//! into a datadir holding blocks, `unwind --to` outside the window, a
//! replay of another chain's trace or of one that does not follow the
//! datadir's head, `--step-size` other than the datadir's — refuse before
//! the writer opens the datadir: `state.redb`'s bytes and mtime, and every
//! other file, stay as they were.

use std::path::Path;
use std::time::SystemTime;

use strata_test_support::tree_contents;

use crate::common::{gen_trace, replay_small_steps, strata_err, strata_ok};

/// Every file's bytes and `state.redb`'s mtime.
fn fingerprint(
    datadir: &Path,
) -> (
    std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
    SystemTime,
) {
    let mtime = std::fs::metadata(datadir.join(strata_storage::DB_FILE))
        .unwrap()
        .modified()
        .unwrap();
    (tree_contents(datadir), mtime)
}

/// Runs `args`, requires a refusal whose stderr holds every needle, and
/// that the datadir did not change.
fn refused_without_change(datadir: &Path, args: &[&str], needles: &[&str]) {
    let before = fingerprint(datadir);
    // An mtime change within the file system's granularity would hide.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let stderr = strata_err(args);
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: {needle:?} not in\n{stderr}"
        );
    }
    assert!(
        fingerprint(datadir) == before,
        "{args:?} changed the datadir:\n{stderr}"
    );
}

/// The trace's lines without its blocks `from..=to`.
fn without_blocks(trace: &Path, out: &Path, from: u64, to: u64) {
    let text = std::fs::read_to_string(trace).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            !v["number"]
                .as_u64()
                .is_some_and(|n| (from..=to).contains(&n))
        })
        .collect();
    std::fs::write(out, kept.join("\n") + "\n").unwrap();
}

#[test]
fn refused_writer_commands_change_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "a.jsonl", 200, 12, 5);
    let other = gen_trace(dir.path(), "b.jsonl", 200, 12, 6);
    let datadir = dir.path().join("db");
    // Steps of 4 blocks (recorded in the datadir).
    replay_small_steps(&trace, &datadir);
    let d = datadir.to_str().unwrap();

    let genesis = dir.path().join("genesis.json");
    std::fs::write(&genesis, r#"{"alloc":{}}"#).unwrap();
    refused_without_change(
        &datadir,
        &[
            "init",
            "--genesis",
            genesis.to_str().unwrap(),
            "--datadir",
            d,
        ],
        &["already holds block 12"],
    );
    refused_without_change(
        &datadir,
        &["unwind", "--datadir", d, "--to", "13"],
        &["cannot unwind to block 13", "head is block 12"],
    );
    let other_trace = other.to_str().unwrap();
    refused_without_change(
        &datadir,
        &["replay", other_trace, "--datadir", d],
        &["cannot resume datadir", "at block 12"],
    );
    // A trace whose next block after the datadir's head is 15, not 13.
    let gap = dir.path().join("gap.jsonl");
    let longer = gen_trace(dir.path(), "long.jsonl", 200, 20, 5);
    without_blocks(&longer, &gap, 1, 14);
    refused_without_change(
        &datadir,
        &["replay", gap.to_str().unwrap(), "--datadir", d],
        &["block 15 does not follow", "expected block 13"],
    );
    refused_without_change(
        &datadir,
        &[
            "replay",
            trace.to_str().unwrap(),
            "--datadir",
            d,
            "--step-size",
            "8",
        ],
        &["--step-size 4", "--step-size 8"],
    );
    // The datadir's own step size, or none, is fine.
    for extra in [&["--step-size", "4"][..], &[]] {
        let mut args = vec!["replay", trace.to_str().unwrap(), "--datadir", d];
        args.extend_from_slice(extra);
        strata_ok(&args);
    }
}

#[test]
fn unwind_below_the_window_changes_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.jsonl", 60, 131, 7);
    let datadir = dir.path().join("db");
    strata_ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
    ]);
    refused_without_change(
        &datadir,
        &[
            "unwind",
            "--datadir",
            datadir.to_str().unwrap(),
            "--to",
            "2",
        ],
        &["cannot unwind to block 2", "the last 128 blocks"],
    );
}
