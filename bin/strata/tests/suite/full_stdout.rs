//! B8: a full standard output (`> /dev/full`) is a clear error (exit 1,
//! `cannot write the output: No space left on device`) for every command
//! that prints, never `println!`'s panic (exit 101).

#![cfg(target_os = "linux")]

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{replay_small_steps, testdata};

const ADDR_EOA: &str = "0x00000000000000000000000000000000000000aa";

/// Runs strata with `args` and stdout on /dev/full; requires exit 1 and
/// the output error on stderr.
fn fails_on_full_stdout(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdout(Stdio::from(File::create("/dev/full").unwrap()))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "strata {args:?}:\n{stderr}");
    assert_eq!(out.status.code(), Some(1), "strata {args:?}:\n{stderr}");
    assert!(
        stderr.contains("cannot write the output: No space left on device"),
        "strata {args:?}:\n{stderr}"
    );
}

fn genesis(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("genesis.json");
    std::fs::write(
        &path,
        format!(r#"{{"alloc":{{"{ADDR_EOA}":{{"balance":"0x10"}}}}}}"#),
    )
    .unwrap();
    path
}

#[test]
fn every_command_fails_cleanly_on_a_full_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let small = testdata().join("small.jsonl");
    let trace = small.to_str().unwrap();
    let datadir = dir.path().join("db");
    replay_small_steps(&small, &datadir);
    let d = datadir.to_str().unwrap();
    let genesis = genesis(dir.path());
    let fresh = dir.path().join("fresh");
    for args in [
        vec!["proof", "--datadir", d, ADDR_EOA],
        vec!["check-trace", trace],
        vec!["replay", trace],
        vec!["observe", "--datadir", d, "--duration", "0.2"],
        vec!["compact", "--datadir", d],
        vec![
            "init",
            "--genesis",
            genesis.to_str().unwrap(),
            "--datadir",
            fresh.to_str().unwrap(),
        ],
        // Those that already said so.
        vec!["root", "--datadir", d],
        vec!["get", "--datadir", d, "account", ADDR_EOA],
        vec!["stats", "--datadir", d],
        vec!["verify", "--datadir", d],
        vec!["export", "--datadir", d],
        // Last: it changes the head.
        vec!["unwind", "--datadir", d, "--to", "29"],
    ] {
        fails_on_full_stdout(&args);
    }
}
