//! The binary: unwired commands say so and fail; errors go to stderr with
//! a non-zero exit code.

use crate::common::strata;

fn assert_fails_with(args: &[&str], needle: &str) {
    let out = strata(args);
    assert!(!out.status.success(), "strata {args:?} succeeded");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(needle),
        "strata {args:?}: expected {needle:?} in stderr:\n{stderr}"
    );
    assert!(out.stdout.is_empty(), "strata {args:?} printed to stdout");
}

#[test]
fn unwired_commands_do_not_pretend() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    let datadir = datadir.to_str().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(&trace, "").unwrap();
    let genesis = dir.path().join("genesis.json");
    std::fs::write(&genesis, r#"{"alloc":{}}"#).unwrap();
    let addr = "0x00000000000000000000000000000000000000aa";
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "replay",
            trace.to_str().unwrap(),
            "--warmers",
            "0,2,4",
            "--cache",
            "sharded,lru",
        ],
        vec![
            "init",
            "--genesis",
            genesis.to_str().unwrap(),
            "--datadir",
            datadir,
        ],
        vec!["get", "--datadir", datadir, "account", addr],
        vec!["get", "--datadir", datadir, "storage", addr, "0x01"],
        vec!["get", "--datadir", datadir, "code", addr],
        vec!["root", "--datadir", datadir],
        vec!["stats", "--datadir", datadir],
        vec!["compact", "--datadir", datadir],
        vec!["verify", "--datadir", datadir],
    ];
    for args in cases {
        assert_fails_with(&args, "not wired yet");
    }
}

#[test]
fn argument_errors_are_reported() {
    assert_fails_with(
        &["get", "--datadir", "x", "account", "0x1234"],
        "expected 20 bytes, found 2",
    );
    assert_fails_with(
        &["replay", "t.jsonl", "--warmers", "0,x"],
        "invalid warmer count",
    );
    assert_fails_with(&["replay", "t.jsonl", "--cache", "fifo"], "fifo");
    assert_fails_with(&["replay", "/nonexistent/t.jsonl"], "/nonexistent/t.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let genesis = dir.path().join("genesis.json");
    std::fs::write(&genesis, "{\"alloc\": {\n \"0xab\": 1}}").unwrap();
    assert_fails_with(
        &[
            "init",
            "--genesis",
            genesis.to_str().unwrap(),
            "--datadir",
            "x",
        ],
        "invalid address \"0xab\"",
    );
}

#[test]
fn check_trace_accepts_the_testdata_and_rejects_tampering() {
    let small = crate::common::testdata().join("small.jsonl");
    let out = strata(&["check-trace", small.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok: 30 blocks, 30 roots"));

    let text = std::fs::read_to_string(&small).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Block 4 (line 5) with another stated root.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let start = lines[4].find("\"state_root\":\"0x").unwrap() + "\"state_root\":\"0x".len();
    lines[4].replace_range(start..start + 64, &"ab".repeat(32));
    let tampered = dir.path().join("root.jsonl");
    std::fs::write(&tampered, lines.join("\n")).unwrap();
    assert_fails_with(
        &["check-trace", tampered.to_str().unwrap()],
        "line 5: block 4: the trace says state root 0xabab",
    );

    // A read of block 2 (line 3) with a wrong balance.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let start = lines[2].find("\"balance\":\"0x").unwrap() + "\"balance\":\"".len();
    lines[2].insert(start + 2, '1');
    let tampered = dir.path().join("read.jsonl");
    std::fs::write(&tampered, lines.join("\n")).unwrap();
    assert_fails_with(
        &["check-trace", tampered.to_str().unwrap()],
        "line 3: block 2: reads 0x",
    );
}
