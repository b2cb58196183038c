//! Every numeric argument is range-checked: a value out of range is a
//! usage error naming the value and the limit, never a panic or an
//! overflow.

use crate::common::strata;

/// Run strata, require a clean failure (exit code 2 for clap, 1 for the
/// command itself, never 101 = panic) whose stderr holds every needle.
fn refused(args: &[&str], needles: &[&str]) {
    let out = strata(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "strata {args:?}: exit {:?}\n{stderr}",
        out.status.code()
    );
    assert!(!stderr.contains("panicked"), "strata {args:?}:\n{stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "strata {args:?}: expected {needle:?} in\n{stderr}"
        );
    }
}

#[test]
fn transaction_workers_are_limited_to_64() {
    refused(
        &[
            "import-chain",
            "c.rlp",
            "--datadir",
            "d",
            "--transaction-workers",
            "0,65",
        ],
        &["65 transaction workers", "limit of 64"],
    );
    refused(
        &["ef-test", "f.json", "--transaction-workers", "100000"],
        &["100000 transaction workers", "limit of 64"],
    );
    refused(
        &["ef-test", "f.json", "--transaction-workers", "two"],
        &["invalid transaction worker count", "0 to 64"],
    );
}

#[test]
fn replay_warmers_are_limited_to_1024() {
    refused(
        &["replay", "t.jsonl", "--warmers", "0,1025"],
        &["warmer count 1025", "limit of 1024"],
    );
    refused(
        &["replay", "t.jsonl", "--warmers", "18446744073709551615"],
        &["18446744073709551615", "1024"],
    );
    refused(
        &["replay", "t.jsonl", "--warmers", "99999999999999999999999"],
        &["invalid warmer count", "at most 1024"],
    );
}

#[test]
fn replay_numbers_are_range_checked() {
    let max = u64::MAX.to_string();
    for (flag, value, limit) in [
        ("--cache-mib", max.as_str(), "1..=1048576"),
        ("--cache-mib", "17592186044416", "1..=1048576"),
        ("--cache-mib", "0", "1..=1048576"),
        ("--step-size", "0", "1..=1000000"),
        ("--step-size", max.as_str(), "1..=1000000"),
        ("--keep-steps", max.as_str(), "0..=1000000"),
        ("--sync-every", "0", "1..=1000000"),
        ("--sync-every", "-1", "--sync-every"),
    ] {
        let arg = format!("{flag}={value}");
        refused(&["replay", "t.jsonl", &arg], &[flag, value, limit]);
    }
}

#[test]
fn gen_trace_sizes_are_bounded_before_anything_is_allocated() {
    let max = u64::MAX.to_string();
    refused(
        &[
            "gen-trace",
            "--accounts",
            &max,
            "--contracts",
            "1",
            "--blocks",
            "1",
        ],
        &["--accounts", &max, "0..=10000000"],
    );
    refused(
        &[
            "gen-trace",
            "--accounts",
            "1",
            "--contracts",
            &max,
            "--blocks",
            "1",
        ],
        &["--contracts", "0..=10000000"],
    );
    refused(
        &[
            "gen-trace",
            "--accounts",
            "6000000",
            "--contracts",
            "6000000",
            "--blocks",
            "1",
        ],
        &[
            "--accounts 6000000 + --contracts 6000000",
            "10000000",
            "in memory",
        ],
    );
    refused(
        &[
            "gen-trace",
            "--accounts",
            "1",
            "--contracts",
            "1",
            "--blocks",
            &max,
        ],
        &["--blocks", "0..=100000000"],
    );
    for flag in [
        "--account-reads",
        "--account-writes",
        "--slot-reads",
        "--slot-writes",
    ] {
        refused(
            &[
                "gen-trace",
                "--accounts",
                "10",
                "--contracts",
                "2",
                "--blocks",
                "1",
                flag,
                &max,
            ],
            &[flag, "0..=1000000"],
        );
    }
}

#[test]
fn observe_duration_is_range_checked() {
    for value in ["0", "-1", "inf", "NaN", "1e300"] {
        refused(
            &[
                "observe",
                "--datadir",
                "d",
                "--trace",
                "t",
                &format!("--duration={value}"),
            ],
            &["invalid duration", value],
        );
    }
}

#[test]
fn replay_total_gas_overflow_names_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let max = u64::MAX;
    std::fs::write(
        &trace,
        format!(
            "{{\"kind\":\"block\",\"number\":1,\"gas_used\":{max},\"reads\":{{}},\"writes\":{{}}}}\n\
             {{\"kind\":\"block\",\"number\":2,\"gas_used\":\"0x1\",\"reads\":{{}},\"writes\":{{}}}}\n"
        ),
    )
    .unwrap();
    refused(
        &["replay", trace.to_str().unwrap()],
        &[
            "block 2: gas_used 1 makes the replay's total gas overflow 64 bits",
            &format!("total before it {max}"),
        ],
    );
}

/// B9: `verify --sort-memory` is range-checked like the other MiB options,
/// and a budget beyond the machine's memory (allocated at once) is refused
/// before anything is opened or created — no abort, no scratch folder.
#[test]
fn verify_sort_memory_is_range_checked() {
    let temp = tempfile::tempdir().unwrap();
    let t = temp.path().to_str().unwrap();
    for value in ["0", "99999999999", "1048577"] {
        refused(
            &[
                "verify",
                "--datadir",
                "d",
                "--temp-dir",
                t,
                &format!("--sort-memory={value}"),
            ],
            &["--sort-memory", value, "1..=1048576"],
        );
    }
    #[cfg(target_os = "linux")]
    refused(
        &[
            "verify",
            "--datadir",
            "d",
            "--temp-dir",
            t,
            "--sort-memory",
            "1048576",
        ],
        &["--sort-memory 1048576 MiB is more than this machine's memory"],
    );
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}

/// `init --block` is bounded before the dump is read (far beyond it the
/// files' step numbers overflow, found only after the whole import).
#[test]
fn init_block_is_range_checked() {
    let max = u64::MAX.to_string();
    for value in [max.as_str(), "1000000001"] {
        refused(
            &[
                "init",
                "--state",
                "s.jsonl",
                "--datadir",
                "d",
                "--block",
                value,
            ],
            &["--block", value, "0..=1000000000"],
        );
    }
}
