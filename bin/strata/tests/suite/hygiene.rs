//! The command line as a user meets it: a closed pipe ends `strata`
//! quietly, `gen-trace` tells what it wrote in a sentence, `--help` marks
//! what is required, completions and man pages come from the same
//! definitions, and `--version` names the commit.

use std::io::{BufRead, BufReader};
use std::process::{Command, ExitStatus, Stdio};

use clap::CommandFactory;
use strata_cli::commands::Cli;

use crate::common::{replay_small_steps, strata, strata_err, strata_ok, testdata, trace_roots};

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
    let cases: [(&[&str], usize); 9] = [
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
        // writer (stats, verify, completions, man) and through `println!`
        // (replay's report, check-trace, proof), which SIGPIPE ends.
        (&["stats", "--datadir", db, "--live"], 0),
        (&["stats", "--datadir", db, "--json"], 0),
        (&["verify", "--datadir", db], 0),
        (&["completions", "bash"], 1),
        (&["man"], 1),
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

#[test]
fn gen_trace_says_what_it_wrote_in_a_sentence() {
    let args = [
        "gen-trace",
        "--accounts",
        "300",
        "--contracts",
        "20",
        "--blocks",
        "30",
        "--seed",
        "1",
    ];
    let out = strata(&args);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let (genesis, roots) = trace_roots(&testdata().join("small.jsonl"));
    let prefix = "gen-trace: wrote 30 blocks to standard output in ";
    assert!(stderr.starts_with(prefix), "{stderr}");
    assert!(
        stderr.contains("a genesis of 320 accounts and 587 slots"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("(root {})", genesis.unwrap())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("(root {})", roots[&30])),
        "{stderr}"
    );
    assert!(stderr.contains("account reads, "), "{stderr}");
    assert!(stderr.trim_end().ends_with(" s."), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        !stderr.contains('{') && !stderr.contains("BlockShape"),
        "{stderr}"
    );
}

#[test]
fn import_geth_help_marks_the_required_tracer_output() {
    let help = strata_ok(&["import-geth", "--help"]);
    let usage = help.lines().find(|l| l.starts_with("Usage:")).unwrap();
    // Required arguments are in <…> on the usage line; optional in […].
    assert!(
        usage.contains("<--prestate <FILE>|--diff <FILE>>"),
        "{usage}"
    );
    assert!(usage.contains("[OPTIONS]"), "{usage}");
    assert!(help.contains("Required unless --diff is given"), "{help}");
    let stderr = strata_err(&["import-geth"]);
    assert!(
        stderr.contains("the following required arguments were not provided"),
        "{stderr}"
    );
}

#[test]
fn completions_cover_every_subcommand() {
    let bash = strata_ok(&["completions", "bash"]);
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    assert!(names.len() >= 15, "{names:?}");
    // The top level offers every subcommand, and each has its own case.
    let top = bash
        .lines()
        .find(|l| l.trim_start().starts_with("opts=\"-h -V"))
        .expect("the top-level options line");
    for name in &names {
        assert!(
            top.split(['"', ' ']).any(|word| word == name),
            "bash offers no {name}: {top}"
        );
        assert!(
            bash.contains(&format!("strata,{name})")),
            "bash: no case for {name}"
        );
    }
    assert!(
        bash.contains("complete -F _strata"),
        "a bash completion script"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = strata_ok(&["completions", shell]);
        assert!(script.contains("import-geth"), "{shell}:\n{script}");
    }
    assert!(strata_err(&["completions", "tcsh"]).contains("invalid value 'tcsh'"));
}

#[test]
fn man_pages_render_for_strata_and_each_command() {
    let page = strata_ok(&["man"]);
    // clap_mangen puts two lines of roff setup before the title.
    let title = page.lines().position(|l| l.starts_with(".TH strata 1 "));
    let name = page.lines().position(|l| l == ".SH NAME");
    assert!(
        title.is_some_and(|title| title < 3 && name.is_some_and(|name| title < name)),
        "{}",
        &page[..page.len().min(300)]
    );
    assert!(page.contains(&format!("\"strata {}\"", strata_cli::commands::VERSION)));
    for command in ["replay", "observe", "completions", "import\\-geth"] {
        assert!(
            page.contains(command),
            "strata.1 does not mention {command}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let stderr =
        String::from_utf8(strata(&["man", "--out", out.to_str().unwrap()]).stderr).unwrap();
    let mut pages: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for expected in [
        "strata.1",
        "strata-replay.1",
        "strata-get-account.1",
        "strata-man.1",
    ] {
        assert!(
            pages.iter().any(|p| p == expected),
            "{expected} in {pages:?}"
        );
    }
    assert!(
        stderr.contains(&format!("wrote {} pages", pages.len())),
        "{stderr}"
    );
    for name in &pages {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(
            text.lines().take(3).any(|l| l.starts_with(".TH ")),
            "{name}"
        );
    }
    let replay = std::fs::read_to_string(out.join("strata-replay.1")).unwrap();
    assert!(
        replay.contains("\\-\\-warmers"),
        "the replay page lists its options"
    );
}

#[test]
fn version_names_the_commit() {
    let out = strata_ok(&["--version"]);
    let line = out.trim_end();
    let rest = line
        .strip_prefix(&format!("strata {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line:?}"));
    assert!(
        rest == "unknown"
            || (rest.len() == 12
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())),
        "commit {rest:?} in {line:?}"
    );
    assert_eq!(out, format!("strata {}\n", strata_cli::commands::VERSION));
}
