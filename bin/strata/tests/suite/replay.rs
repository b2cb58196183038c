//! `strata replay` end to end through the binary: the shipped trace, a
//! warmer × cache sweep with JSON and SVG output, resume after a partial
//! replay, tampered traces and the observer.

use crate::common::{final_root, gen_trace, strata_err, strata_ok, testdata, trace_roots};

#[test]
fn small_trace_replays_to_its_last_root() {
    let small = testdata().join("small.jsonl");
    let stdout = strata_ok(&["replay", small.to_str().unwrap()]);
    let (_, roots) = trace_roots(&small);
    let (last, root) = roots.iter().next_back().unwrap();
    assert_eq!(final_root(&stdout), root.to_string());
    assert!(stdout.contains(&format!("at block {last}")), "{stdout}");
    assert!(stdout.contains("30 roots checked"), "{stdout}");
    assert!(stdout.contains("Mgas/s"), "{stdout}");
    assert!(stdout.contains("peak RSS"), "{stdout}");
    // The read table has exec-regime account reads from the db tier.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("account") && l.contains(" db ") && l.contains("exec")),
        "{stdout}"
    );
}

#[test]
fn sweep_gives_one_table_identical_roots_and_documented_json() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.jsonl", 120, 8, 3);
    let json = dir.path().join("sweep.json");
    let svg = dir.path().join("sweep.svg");
    let stdout = strata_ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--warmers",
        "0,2",
        "--cache",
        "sharded,mutex-lru",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(stdout.matches("== sweep: 4 runs ==").count(), 1, "{stdout}");
    let (_, roots) = trace_roots(&trace);
    let expected = roots[&8].to_string();
    assert_eq!(final_root(&stdout), expected);
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("== sweep"))
        .skip(2)
        .take(4)
        .collect();
    for row in &table {
        assert!(row.ends_with(&expected), "row {row:?} of\n{stdout}");
    }
    let doc = crate::common::read_json(&json);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let combos: Vec<(u64, &str)> = runs
        .iter()
        .map(|r| (r["warmers"].as_u64().unwrap(), r["cache"].as_str().unwrap()))
        .collect();
    assert_eq!(
        combos,
        [
            (0, "sharded"),
            (0, "mutex-lru"),
            (2, "sharded"),
            (2, "mutex-lru")
        ]
    );
    for run in runs {
        assert_eq!(run["blocks"], 8);
        assert!(run["wall_s"].as_f64().unwrap() > 0.0);
        assert!(run["commit_s"].as_f64().unwrap() > 0.0);
        assert_eq!(run["final_root"], expected.as_str());
        let reads = run["reads"].as_array().unwrap();
        assert!(!reads.is_empty());
        for cell in reads {
            for field in ["domain", "tier", "regime"] {
                assert!(cell[field].is_string(), "{cell}");
            }
            for field in ["count", "p50_ns", "p99_ns", "max_ns", "mean_ns"] {
                assert!(cell[field].is_u64(), "{field} in {cell}");
            }
            assert!(cell["p50_ns"].as_u64() <= cell["max_ns"].as_u64());
        }
        assert!(
            reads.iter().any(|c| c["regime"] == "commitment"),
            "no commitment-regime reads in {run}"
        );
    }
    assert_eq!(doc["config"]["warmers"], serde_json::json!([0, 2]));
    assert_eq!(
        doc["config"]["caches"],
        serde_json::json!(["sharded", "mutex-lru"])
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg"), "{svg:.200}");
    for text in [
        "read latency vs warmers",
        "mean block time vs warmers",
        "block time per block",
        "root time per block",
        "sharded p50",
        "mutex-lru p99",
        "0 warmers, sharded",
        "0 warmers, mutex-lru",
        "2 warmers, sharded",
        "2 warmers, mutex-lru",
    ] {
        assert!(svg.contains(text), "no {text:?} in the plot");
    }
    // Each run's line in each of the two per-block charts.
    assert_eq!(long_polylines(&svg, 8), 2 * 4);
}

#[test]
fn replay_resumes_a_datadir_after_its_last_block() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "full.jsonl", 100, 12, 5);
    let text = std::fs::read_to_string(&trace).unwrap();
    // The genesis line and the first 6 blocks.
    let half: Vec<&str> = text.lines().take(7).collect();
    let half_path = dir.path().join("half.jsonl");
    std::fs::write(&half_path, half.join("\n") + "\n").unwrap();
    let datadir = dir.path().join("db");
    let datadir = datadir.to_str().unwrap();
    let (_, roots) = trace_roots(&trace);

    let stdout = strata_ok(&["replay", half_path.to_str().unwrap(), "--datadir", datadir]);
    assert_eq!(final_root(&stdout), roots[&6].to_string());
    assert_eq!(
        strata_ok(&["root", "--datadir", datadir]).trim(),
        format!("6 {}", roots[&6])
    );

    let out = crate::common::strata(&["replay", trace.to_str().unwrap(), "--datadir", datadir]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("resuming"));
    assert!(
        stdout.contains("6 blocks =="),
        "only blocks 7..=12 are applied:\n{stdout}"
    );
    assert_eq!(final_root(&stdout), roots[&12].to_string());
    // Replaying again applies nothing and keeps the root.
    let stdout = strata_ok(&["replay", trace.to_str().unwrap(), "--datadir", datadir]);
    assert_eq!(final_root(&stdout), roots[&12].to_string());
    assert!(stdout.contains(": 0 blocks =="), "{stdout}");
}

/// Replace the first occurrence of `field":"0x` value's first hex digit on `line`.
fn tamper(text: &str, line: usize, field: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let needle = format!("\"{field}\":\"0x");
    let at = lines[line].find(&needle).unwrap() + needle.len();
    let digit = lines[line].as_bytes()[at];
    let other = if digit == b'a' { "b" } else { "a" };
    lines[line].replace_range(at..at + 1, other);
    lines.join("\n") + "\n"
}

#[test]
fn tampered_traces_fail_naming_block_and_key() {
    let small = testdata().join("small.jsonl");
    let text = std::fs::read_to_string(&small).unwrap();
    let dir = tempfile::tempdir().unwrap();

    // A read of block 3 (line 4) with another balance.
    let bad_read = dir.path().join("read.jsonl");
    std::fs::write(&bad_read, tamper(&text, 3, "balance")).unwrap();
    let stderr = strata_err(&["replay", bad_read.to_str().unwrap()]);
    assert!(
        stderr.contains("block 3: read of 0x")
            && stderr.contains("field balance: the trace expects"),
        "{stderr}"
    );

    // Block 5 (line 6) with another state root.
    let bad_root = dir.path().join("root.jsonl");
    std::fs::write(&bad_root, tamper(&text, 5, "state_root")).unwrap();
    let stderr = strata_err(&["replay", bad_root.to_str().unwrap()]);
    let (_, roots) = trace_roots(&small);
    assert!(
        stderr.contains("block 5: state root mismatch")
            && stderr.contains(&format!("the store computed {}", roots[&5])),
        "{stderr}"
    );

    // A slot read with another value names the slot.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let (index, at) = lines
        .iter()
        .enumerate()
        .skip(1)
        .find_map(|(i, l)| {
            let reads = l.find("\"reads\"")?;
            let writes = l.find("\"writes\"")?;
            let storage = l[reads..writes].find("\"storage\":{\"0x")? + reads;
            let value = l[storage..].find("\":\"0x")? + storage + 5;
            Some((i, value))
        })
        .unwrap();
    lines[index].insert_str(at, "77");
    let bad_slot = dir.path().join("slot.jsonl");
    std::fs::write(&bad_slot, lines.join("\n") + "\n").unwrap();
    let stderr = strata_err(&["replay", bad_slot.to_str().unwrap()]);
    assert!(
        stderr.contains(&format!("block {index}: read of 0x")) && stderr.contains(" slot 0x"),
        "{stderr}"
    );
}

#[test]
fn broken_first_line_leaves_no_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("bad.jsonl");
    std::fs::write(&trace, "{\"kind\":\"blok\"}\n").unwrap();
    let datadir = dir.path().join("db");
    let stderr = strata_err(&[
        "replay",
        trace.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
    ]);
    assert!(stderr.contains("line 1: unknown kind \"blok\""), "{stderr}");
    assert!(!datadir.exists(), "the datadir was created");
}

/// The (idle n, load n) of each row of observer `name`'s table, checking
/// that it reported no read error and — for the thread, which reads the
/// snapshot the writer publishes, so that it cannot fall behind whatever
/// the scheduler does — no stale observation. The second process follows
/// the journal by polling: how far it lags depends on when it gets a CPU,
/// so its count is reported, not asserted (that it catches up is checked
/// by reading the finished datadir).
fn observer_table(stdout: &str, name: &str) -> Vec<(u64, u64)> {
    let header = format!("observer ({name}) at 400 reads/s");
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with(&header))
        .take(6)
        .collect();
    assert_eq!(table.len(), 6, "no {name} observer table in\n{stdout}");
    assert!(table[5].ends_with("; 0 read errors"), "{}", table[5]);
    if name == "thread" {
        assert!(table[5].contains(": 0 of "), "{}", table[5]);
    }
    ["head", "account", "storage"]
        .iter()
        .zip(&table[2..5])
        .map(|(kind, row)| {
            assert!(row.starts_with(kind), "{row}");
            let fields: Vec<&str> = row.split_whitespace().collect();
            (fields[1].parse().unwrap(), fields[7].parse().unwrap())
        })
        .collect()
}

#[test]
fn observer_reports_idle_and_load_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.jsonl", 150, 10, 9);
    let stdout = strata_ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--observer",
        "400",
        "--warmers",
        "2",
    ]);
    for (idle_n, load_n) in observer_table(&stdout, "thread") {
        assert!(idle_n > 100 && load_n > 0, "{idle_n} idle, {load_n} load");
    }
    assert!(!stdout.contains("observer (process)"), "{stdout}");
}

#[test]
fn a_second_process_follows_the_replay_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.jsonl", 150, 10, 9);
    let datadir = dir.path().join("dd");
    let stdout = strata_ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        "--step-size",
        "2",
        "--keep-steps",
        "1",
        "--observer",
        "400",
        "--observer-process",
    ]);
    for name in ["thread", "process"] {
        for (idle_n, load_n) in observer_table(&stdout, name) {
            assert!(
                idle_n > 100 && load_n > 0,
                "{name}: {idle_n} idle, {load_n} load"
            );
        }
    }
    // Standalone, on the finished datadir: it sees the last block.
    let summary = strata_ok(&[
        "observe",
        "--datadir",
        datadir.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--rate",
        "200",
        "--duration",
        "0.3",
    ]);
    assert!(
        summary.contains("blocks 10..=10, 0 read errors"),
        "{summary}"
    );
    // A writer that keeps the datadir to itself refuses it, saying why.
    let stderr = strata_err(&[
        "replay",
        trace.to_str().unwrap(),
        "--observer",
        "400",
        "--observer-process",
        "--sync-every",
        "4",
    ]);
    assert!(
        stderr.contains("--observer-process needs every commit durable"),
        "{stderr}"
    );
    let stderr = strata_err(&[
        "replay",
        trace.to_str().unwrap(),
        "--share",
        "--sync-every",
        "4",
    ]);
    assert!(
        stderr.contains("--share needs every commit durable"),
        "{stderr}"
    );
}

/// One entry of the report's per-block series (every field required).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockEntry {
    block: u64,
    wall_ms: f64,
    parse_ms: f64,
    exec_read_ms: f64,
    stage_ms: f64,
    commit_ms: f64,
    root_ms: f64,
    journal_ms: f64,
    flush_wait_ms: f64,
    keys_written: u64,
    trace_keys: u64,
    journal_bytes: u64,
    warmed: u64,
    prefetched: u64,
    root_wait_ms: Option<f64>,
    durable: bool,
    gas_used: Option<u64>,
}

/// Polylines of an SVG with at least `points` points (a series, not a dash).
fn long_polylines(svg: &str, points: usize) -> usize {
    svg.split("<polyline")
        .skip(1)
        .filter(|element| {
            let Some(start) = element.find("points=\"") else {
                return false;
            };
            let list = &element[start + 8..];
            let list = &list[..list.find('"').unwrap_or(list.len())];
            list.split_whitespace().count() >= points
        })
        .count()
}

#[test]
fn the_replay_report_carries_config_host_build_and_a_series_per_block() {
    let small = testdata().join("small.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let svg = dir.path().join("report.svg");
    let args = [
        "replay",
        small.to_str().unwrap(),
        "--warmers",
        "2",
        "--step-size",
        "8",
        "--keep-steps",
        "1",
        "--sync-every",
        "3",
        "--cache-mib",
        "32",
        "--flush-mib",
        "2",
        "--memory-mib",
        "8",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ];
    let stdout = strata_ok(&args);
    let (_, roots) = trace_roots(&small);
    let doc = crate::common::read_json(&json);

    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["strata"]["version"], env!("CARGO_PKG_VERSION"));
    let commit = doc["strata"]["git_commit"].as_str().unwrap();
    assert!(!commit.is_empty());
    let version = strata_ok(&["--version"]);
    assert!(version.contains(commit), "{version} vs {commit}");

    let config = &doc["config"];
    assert_eq!(config["trace"], small.to_str().unwrap());
    assert_eq!(config["warmers"], serde_json::json!([2]));
    assert_eq!(config["caches"], serde_json::json!(["sharded"]));
    for (field, value) in [
        ("step_size", 8),
        ("keep_steps", 1),
        ("sync_every", 3),
        ("cache_mib", 32),
        ("flush_mib", 2),
        ("memory_mib", 8),
    ] {
        assert_eq!(config[field], value, "config.{field} in {config}");
    }
    assert_eq!(config["json"], json.to_str().unwrap());
    assert_eq!(config["plot"], svg.to_str().unwrap());
    assert!(config["datadir"].is_null() && config["metrics"].is_null());
    assert_eq!(config["share"], false);

    let host = &doc["host"];
    assert_eq!(host["os"], std::env::consts::OS);
    if cfg!(target_os = "linux") {
        assert!(host["cores"].as_u64().unwrap() >= 1, "{host}");
        assert!(host["memory_bytes"].as_u64().unwrap() > 1 << 20, "{host}");
        let load = host["load_average"].as_array().unwrap();
        assert_eq!(load.len(), 3, "{host}");
        assert!(load.iter().all(|v| v.as_f64().unwrap() >= 0.0), "{host}");
        assert!(doc["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);
    }

    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["final_root"], roots[&30].to_string().as_str());
    let options = &run["options"];
    for (field, value) in [
        ("step_size", 8),
        ("keep_steps_in_db", 1),
        ("fsync_every_blocks", 3),
        ("cache_bytes", 32 << 20),
        ("warmers", 2),
        ("flush_batch_bytes", 2 << 20),
        ("memory_budget_bytes", 8 << 20),
    ] {
        assert_eq!(options[field], value, "options.{field} in {options}");
    }
    assert_eq!(options["cache_kind"], "sharded");
    let cache = &run["cache_stats"];
    let lookups = cache["hits"].as_u64().unwrap() + cache["misses"].as_u64().unwrap();
    assert!(lookups > 0, "{cache}");
    let hit_rate = cache["hit_rate"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&hit_rate), "{cache}");
    assert!(cache["bytes"].as_u64().unwrap() > 0, "{cache}");
    assert_eq!(cache["capacity_bytes"], 32 << 20);

    let blocks: Vec<BlockEntry> = serde_json::from_value(run["per_block"].clone()).unwrap();
    assert_eq!(blocks.len(), 30);
    assert_eq!(run["blocks"], 30);
    for (entry, number) in blocks.iter().zip(1..) {
        assert_eq!(entry.block, number);
        for (name, ms) in [
            ("wall_ms", entry.wall_ms),
            ("exec_read_ms", entry.exec_read_ms),
            ("stage_ms", entry.stage_ms),
            ("commit_ms", entry.commit_ms),
            ("root_ms", entry.root_ms),
            ("journal_ms", entry.journal_ms),
        ] {
            assert!(ms > 0.0, "{name} of {entry:?}");
        }
        assert!(
            entry.parse_ms >= 0.0 && entry.flush_wait_ms >= 0.0,
            "{entry:?}"
        );
        assert!(entry.commit_ms >= entry.root_ms, "{entry:?}");
        assert!(
            entry.wall_ms >= entry.commit_ms + entry.exec_read_ms,
            "{entry:?}"
        );
        assert!(entry.keys_written > 0 && entry.trace_keys > 0, "{entry:?}");
        assert!(entry.journal_bytes > 0, "{entry:?}");
    }
    let gas: u64 = blocks.iter().map(|b| b.gas_used.unwrap()).sum();
    assert_eq!(run["gas"], gas);
    let keys: u64 = blocks.iter().map(|b| b.trace_keys).sum();
    assert_eq!(run["keys"], keys);
    // --sync-every 3: every third commit is fsynced.
    let durable: Vec<u64> = blocks
        .iter()
        .filter(|b| b.durable)
        .map(|b| b.block)
        .collect();
    assert_eq!(durable, (1..=10).map(|i| 3 * i).collect::<Vec<_>>());
    // Without --prefetch: nothing prefetched, every root computed in the commit.
    assert!(
        blocks
            .iter()
            .all(|b| b.prefetched == 0 && b.root_wait_ms.is_none())
    );
    let warmed: u64 = blocks.iter().map(|b| b.warmed).sum();
    assert_eq!(run["warmer_loads"], warmed);
    let walls: f64 = blocks.iter().map(|b| b.wall_ms).sum();
    assert!(walls <= run["wall_s"].as_f64().unwrap() * 1e3, "{walls} ms");

    // The plot of a single run: both per-block charts, the run's line in
    // each, its p99 level told apart in the legend.
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg"), "{svg:.200}");
    for text in [
        "block time per block",
        "root time per block",
        "2 warmers, sharded",
        "p99 ",
        "ms (log scale)",
    ] {
        assert!(svg.contains(text), "no {text:?} in the plot");
    }
    assert!(
        !svg.contains("vs warmers"),
        "a single run has no sweep chart"
    );
    assert_eq!(long_polylines(&svg, 30), 2, "one line per chart");
    assert!(svg.matches("<circle").count() >= 60, "a marker per point");
    assert!(stdout.contains("peak RSS "), "{stdout}");
}
