//! The command line as a user meets it: a closed pipe ends `strata`
//! quietly.

use std::io::{BufRead, BufReader};
use std::process::{Command, ExitStatus, Stdio};

use crate::common::{replay_small_steps, testdata};

/// Runs `strata args` with stdout piped, reads `lines` lines of it, closes
/// the pipe and waits; returns the exit status and stderr.
fn with_stdout_closed_after(args: &[&str], lines: usize) -> (ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strata");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..lines {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(
            !line.is_empty(),
            "strata {args:?} printed fewer than {lines} lines"
        );
    }
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// SIGPIPE's number (13 on Linux, macOS and the BSDs).
#[cfg(unix)]
const SIGPIPE: i32 = 13;

/// Ended the way `cat` ends under `head`: success, or SIGPIPE on Unix.
fn ended_quietly(status: ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(SIGPIPE) {
            return true;
        }
    }
    status.success()
}

#[test]
fn a_closed_stdout_ends_any_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    replay_small_steps(&testdata().join("small.jsonl"), &datadir);
    let db = datadir.to_str().unwrap();
    let small = testdata().join("small.jsonl");
    let small = small.to_str().unwrap();
    let fresh = dir.path().join("fresh");
    let address = "0x0185a7de884625d5e347d9054c17a45b0c9de6ca";
    let cases: [(&[&str], usize); 7] = [
        // Megabytes of trace: the reader goes away mid-write.
        (
            &[
                "gen-trace",
                "--accounts",
                "20000",
                "--contracts",
                "100",
                "--blocks",
                "20",
            ],
            1,
        ),
        // Reports written after the reader has gone: through the checked
        // writer (stats, verify) and through `println!`
        // (replay's report, check-trace, proof), which SIGPIPE ends.
        (&["stats", "--datadir", db, "--live"], 0),
        (&["stats", "--datadir", db, "--json"], 0),
        (&["verify", "--datadir", db], 0),
        (&["replay", small, "--datadir", fresh.to_str().unwrap()], 0),
        (&["check-trace", small], 0),
        (&["proof", "--datadir", db, address], 0),
    ];
    for (args, lines) in cases {
        let (status, stderr) = with_stdout_closed_after(args, lines);
        assert!(
            ended_quietly(status),
            "strata {args:?} | head: {status}\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "strata {args:?}: {stderr}");
        assert!(!stderr.contains("error"), "strata {args:?}: {stderr}");
    }
}
