//! `strata observe` without `--trace`: the keys come from the datadir.

use crate::common::{replay_small_steps, strata, strata_err, strata_ok, testdata};

#[test]
fn observe_without_a_trace_reads_keys_sampled_from_the_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    replay_small_steps(&testdata().join("small.jsonl"), &datadir);
    let db = datadir.to_str().unwrap();
    let stats: serde_json::Value =
        serde_json::from_str(&strata_ok(&["stats", "--datadir", db, "--live", "--json"])).unwrap();
    let live = |domain: usize| stats["live"]["domains"][domain]["keys"].as_u64().unwrap();

    let out = strata(&[
        "observe",
        "--datadir",
        db,
        "--rate",
        "200",
        "--duration",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Fewer live keys than the sample's size: every one of them.
    assert!(
        stderr.contains(&format!(
            "reading {} accounts and {} slots sampled from the datadir",
            live(0),
            live(1)
        )),
        "{stderr}"
    );
    let first = stdout.lines().next().unwrap();
    assert!(first.ends_with("blocks 30..=30, 0 read errors"), "{stdout}");
    for read in ["account", "storage"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(read))
            .unwrap_or_else(|| panic!("no {read} row in\n{stdout}"));
        let n: u64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(n > 50, "{read}: {n} reads in 1 s at 200/s\n{stdout}");
    }

    let stderr = strata_err(&["observe", "--datadir", db, "--genesis", "g.json"]);
    assert!(stderr.contains("--trace <FILE>"), "{stderr}");
}
