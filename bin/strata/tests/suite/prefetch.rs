//! `replay --prefetch` and `--cold`: every root still checked against the
//! trace, the same final root with and without prefetch, the report says
//! which run did what, and a sweep over a datadir replays copies of it.

use crate::common::{final_root, read_json, strata_ok, testdata, trace_roots};

#[test]
fn prefetch_and_plain_runs_reach_the_same_roots_and_the_report_tells_them_apart() {
    let dir = tempfile::tempdir().unwrap();
    let small = testdata().join("small.jsonl");
    let json = dir.path().join("r.json");
    let stdout = strata_ok(&[
        "replay",
        small.to_str().unwrap(),
        "--warmers",
        "0,2",
        "--prefetch",
        "off,on",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (_, roots) = trace_roots(&small);
    let last = roots.keys().max().unwrap();
    assert_eq!(final_root(&stdout), roots[last].to_string());
    assert!(stdout.contains("prefetch on"), "{stdout}");
    assert!(
        stdout.contains("roots computed alongside the reads"),
        "{stdout}"
    );
    let report = read_json(&json);
    let runs = report["runs"].as_array().unwrap();
    let shape: Vec<(u64, bool)> = runs
        .iter()
        .map(|r| {
            (
                r["warmers"].as_u64().unwrap(),
                r["prefetch"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, [(0, false), (0, true), (2, false), (2, true)]);
    for run in runs {
        assert_eq!(run["roots_checked"].as_u64(), Some(30));
        let prefetch = run["prefetch"].as_bool().unwrap();
        for block in run["per_block"].as_array().unwrap() {
            assert_eq!(block["root_wait_ms"].is_number(), prefetch, "{block}");
        }
        let loads: u64 = run["per_block"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["prefetched"].as_u64().unwrap())
            .sum();
        // Only warmers prefetch.
        let warmers = run["warmers"].as_u64().unwrap();
        assert_eq!(
            loads > 0,
            prefetch && warmers > 0,
            "{warmers} warmers: {loads} loads"
        );
        assert!(run["value_cache_stats"]["hits"].as_u64().unwrap() > 0);
    }
    let tiers: Vec<&str> = runs[3]["reads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tier"].as_str().unwrap())
        .collect();
    assert!(tiers.contains(&"value_cache"), "{tiers:?}");
}

#[test]
fn a_cold_sweep_over_a_datadir_replays_copies_and_leaves_it_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let small = testdata().join("small.jsonl");
    // The datadir after block 10: the genesis line and 10 blocks.
    let text = std::fs::read_to_string(&small).unwrap();
    let part = dir.path().join("part.jsonl");
    let lines: Vec<&str> = text.lines().take(11).collect();
    std::fs::write(&part, lines.join("\n") + "\n").unwrap();
    let datadir = dir.path().join("dd");
    let d = datadir.to_str().unwrap();
    strata_ok(&["replay", part.to_str().unwrap(), "--datadir", d]);
    let before = strata_ok(&["root", "--datadir", d]);

    let json = dir.path().join("r.json");
    let stdout = strata_ok(&[
        "replay",
        small.to_str().unwrap(),
        "--datadir",
        d,
        "--warmers",
        "0,2",
        "--prefetch",
        "--cold",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(stdout.contains("cold start"), "{stdout}");
    let report = read_json(&json);
    for run in report["runs"].as_array().unwrap() {
        assert_eq!(run["cold"].as_bool(), Some(true));
        assert_eq!(
            run["blocks"].as_u64(),
            Some(20),
            "each run resumed at block 10"
        );
        assert_eq!(run["final_block"].as_u64(), Some(30));
    }
    assert_eq!(
        strata_ok(&["root", "--datadir", d]),
        before,
        "the datadir itself is untouched"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".strata-sweep-")
        })
        .collect();
    assert!(leftovers.is_empty(), "copies removed");
}
