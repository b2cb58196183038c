//! Resuming a datadir safely: a trace that does not lead to the datadir's
//! head is refused before anything is written, a block whose root differs
//! from the trace's is not committed, and `strata unwind` takes back a bad
//! block (as an older version committed it) so that the replay can resume.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_primitives::{Address, U256};
use strata_storage::{Account, Options, StateDb};
use strata_test_support::tree_contents;

use crate::common::{final_root, gen_trace, strata_err, strata_ok, trace_roots};

/// The genesis line and the first `blocks` blocks of `trace`, as `name`.
fn prefix(trace: &Path, blocks: usize, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(trace).unwrap();
    let lines: Vec<&str> = text.lines().take(blocks + 1).collect();
    let path = trace.with_file_name(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// Every file and folder under `dir` but redb's own file (a writable open
/// and close of redb rewrites its header even when no transaction is
/// committed; the head and root are compared instead).
fn contents_but_redb(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = tree_contents(dir);
    all.remove(&dir.join(strata_storage::DB_FILE));
    all
}

#[test]
fn resuming_with_another_seeds_trace_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ours = gen_trace(dir.path(), "ours.jsonl", 100, 8, 5);
    let theirs = gen_trace(dir.path(), "theirs.jsonl", 100, 8, 6);
    let (_, our_roots) = trace_roots(&ours);
    let (_, their_roots) = trace_roots(&theirs);
    let datadir = dir.path().join("db");
    let datadir_arg = datadir.to_str().unwrap();
    let half = prefix(&ours, 4, "half.jsonl");
    strata_ok(&[
        "replay",
        half.to_str().unwrap(),
        "--datadir",
        datadir_arg,
        "--step-size",
        "1",
        "--keep-steps",
        "1",
    ]);
    let before = contents_but_redb(&datadir);
    assert!(
        before.keys().filter(|p| p.is_file()).count() > 1,
        "the datadir holds files: {:?}",
        before.keys()
    );
    let head_before = strata_ok(&["root", "--datadir", datadir_arg]);

    let stderr = strata_err(&["replay", theirs.to_str().unwrap(), "--datadir", datadir_arg]);
    assert!(
        stderr.contains("cannot resume datadir")
            && stderr.contains("at block 4")
            && stderr.contains(&their_roots[&4].to_string())
            && stderr.contains(&our_roots[&4].to_string()),
        "{stderr}"
    );
    assert_eq!(
        contents_but_redb(&datadir),
        before,
        "the refused resume changed the datadir"
    );
    assert_eq!(strata_ok(&["root", "--datadir", datadir_arg]), head_before);
    assert_eq!(head_before.trim(), format!("4 {}", our_roots[&4]));
    // Our own trace still resumes.
    let stdout = strata_ok(&["replay", ours.to_str().unwrap(), "--datadir", datadir_arg]);
    assert_eq!(final_root(&stdout), our_roots[&8].to_string());
}

#[test]
fn a_block_off_the_traces_root_is_not_committed() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.jsonl", 100, 6, 7);
    let (_, roots) = trace_roots(&trace);
    let text = std::fs::read_to_string(&trace).unwrap();
    // Block 4 (line 5) states another root.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let needle = "\"state_root\":\"0x";
    let at = lines[4].find(needle).unwrap() + needle.len();
    let digit = if lines[4].as_bytes()[at] == b'a' {
        "b"
    } else {
        "a"
    };
    lines[4].replace_range(at..at + 1, digit);
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();

    let datadir = dir.path().join("db");
    let datadir_arg = datadir.to_str().unwrap();
    let stderr = strata_err(&["replay", bad.to_str().unwrap(), "--datadir", datadir_arg]);
    assert!(
        stderr.contains("block 4: state root mismatch")
            && stderr.contains(&format!("the store computed {}", roots[&4])),
        "{stderr}"
    );
    assert_eq!(
        strata_ok(&["root", "--datadir", datadir_arg]).trim(),
        format!("3 {}", roots[&3]),
        "the refused block 4 is not committed"
    );
    let stdout = strata_ok(&["replay", trace.to_str().unwrap(), "--datadir", datadir_arg]);
    assert_eq!(final_root(&stdout), roots[&6].to_string());
}

#[test]
fn unwind_repairs_a_bad_block_committed_by_an_older_version() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.jsonl", 100, 8, 9);
    let (_, roots) = trace_roots(&trace);
    let datadir = dir.path().join("db");
    let datadir_arg = datadir.to_str().unwrap();
    let half = prefix(&trace, 4, "half.jsonl");
    strata_ok(&["replay", half.to_str().unwrap(), "--datadir", datadir_arg]);

    // An older version committed block 5 without checking its root.
    {
        let db = StateDb::open(&datadir, Options::default()).unwrap();
        let mut writer = db.begin_block(5).unwrap();
        writer.put_account(
            Address::with_last_byte(0xee),
            &Account {
                balance: U256::from(1),
                ..Account::default()
            },
        );
        let info = writer.commit().unwrap();
        assert_ne!(info.root, roots[&5]);
    }
    let stderr = strata_err(&["replay", trace.to_str().unwrap(), "--datadir", datadir_arg]);
    assert!(
        stderr.contains("at block 5") && stderr.contains(&roots[&5].to_string()),
        "{stderr}"
    );

    let stderr = strata_err(&["unwind", "--datadir", datadir_arg, "--to", "6"]);
    assert!(stderr.contains("cannot unwind to block 6"), "{stderr}");
    let stdout = strata_ok(&["unwind", "--datadir", datadir_arg, "--to", "4"]);
    assert_eq!(stdout.trim(), format!("4 {}", roots[&4]));
    let stdout = strata_ok(&["replay", trace.to_str().unwrap(), "--datadir", datadir_arg]);
    assert_eq!(final_root(&stdout), roots[&8].to_string());
    assert!(stdout.contains("at block 8"), "{stdout}");
}
