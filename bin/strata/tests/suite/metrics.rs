//! `replay --metrics ADDR`: the endpoint serves every family (and every
//! metric the Grafana dashboard queries) while blocks commit and no counter
//! goes back between scrapes; a taken port is a clear error. Logs: stderr only, text or JSON, filtered by RUST_LOG.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use prometheus_parse::{Scrape, Value};

use crate::common::{strata, strata_ok, testdata};

/// Every family the endpoint must serve (sample names as exposed).
const FAMILIES: &[&str] = &[
    "strata_read_duration_seconds",
    "strata_block_commit_duration_seconds",
    "strata_block_root_duration_seconds",
    "strata_block_journal_write_duration_seconds",
    "strata_flush_duration_seconds",
    "strata_maintenance_duration_seconds",
    "strata_blocks_committed_total",
    "strata_keys_written_total",
    "strata_journal_written_bytes_total",
    "strata_flushed_blocks_total",
    "strata_flush_waits_total",
    "strata_flush_wait_seconds_total",
    "strata_pruned_entries_total",
    "strata_warmer_loads_total",
    "strata_warmer_errors_total",
    "strata_head_block",
    "strata_memory_tier_bytes",
    "strata_warmers",
    "strata_branch_cache_hits_total",
    "strata_branch_cache_misses_total",
    "strata_branch_cache_inserts_total",
    "strata_branch_cache_evictions_total",
    "strata_branch_cache_bytes",
    "strata_branch_cache_entries",
    "strata_branch_cache_capacity_bytes",
    "strata_files",
    "strata_file_bytes",
    "strata_poisoned",
];

/// A blocking `GET path`: (status, body). HTTP/1.0, so the body comes
/// whole up to the close (an HTTP/1.1 answer of this size is chunked).
pub(crate) fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read the response");
    let (head, body) = response.split_once("\r\n\r\n").expect("headers end");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    (status, body.to_owned())
}

fn scrape(addr: &str) -> Scrape {
    let (status, body) = http_get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    Scrape::parse(body.lines().map(|line| Ok(line.to_owned()))).expect("exposition parses")
}

/// Every counter-like figure of a scrape by `name{labels}`: counters,
/// histogram `_count`s and each cumulative bucket.
fn counters(scrape: &Scrape) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for sample in &scrape.samples {
        let mut labels: Vec<_> = sample.labels.iter().collect();
        labels.sort();
        let key = format!("{}{labels:?}", sample.metric);
        match &sample.value {
            Value::Counter(v) => {
                out.insert(key, *v);
            }
            Value::Untyped(v) if sample.metric.ends_with("_count") => {
                out.insert(key, *v);
            }
            Value::Histogram(buckets) => {
                for bucket in buckets {
                    out.insert(format!("{key} le={}", bucket.less_than), bucket.count);
                }
            }
            _ => {}
        }
    }
    out
}

fn value(scrape: &Scrape, metric: &str) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == metric)
        .and_then(|s| match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
            _ => None,
        })
}

/// Kills the replay if the test fails midway.
struct Replay(Child);

impl Drop for Replay {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Scrapes until `done` holds, failing if the replay ends first.
fn scrape_until(
    replay: &mut Replay,
    addr: &str,
    what: &str,
    done: impl Fn(&Scrape) -> bool,
) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(status) = replay.0.try_wait().expect("poll the replay") {
            panic!("the replay ended ({status}) before {what}: make the trace longer");
        }
        let scrape = scrape(addr);
        if done(&scrape) {
            return scrape;
        }
        assert!(Instant::now() < deadline, "no {what} within 300 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn metrics_endpoint_serves_every_family_while_blocks_commit() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let trace_arg = trace.to_str().unwrap();
    // Long enough to scrape between commits (several seconds of replay).
    strata_ok(&[
        "gen-trace",
        "--accounts",
        "3000",
        "--contracts",
        "30",
        "--blocks",
        "300",
        "--seed",
        "11",
        "--out",
        trace_arg,
    ]);
    let mut replay = Replay(
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args([
                "replay",
                trace_arg,
                "--warmers",
                "2",
                "--metrics",
                "127.0.0.1:0",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the replay"),
    );
    // Drain stderr on a thread (the pipe must not fill); hand over the address.
    let stderr = replay.0.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    let drain = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.expect("stderr line");
            if let Some(rest) = line.strip_prefix("metrics: listening on http://") {
                let _ = tx.send(rest.trim_end_matches("/metrics").to_owned());
            }
            lines.push(line);
        }
        lines
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the replay prints where the endpoint listens");

    let (status, body) = http_get(&addr, "/nothing");
    assert_eq!(status, 404, "{body}");
    let first = scrape_until(&mut replay, &addr, "a committed block", |s| {
        value(s, "strata_blocks_committed_total").is_some_and(|n| n >= 1.0)
    });
    let blocks_first = value(&first, "strata_blocks_committed_total").unwrap_or(0.0);
    let second = scrape_until(&mut replay, &addr, "a later block", |s| {
        value(s, "strata_blocks_committed_total").is_some_and(|n| n > blocks_first)
    });

    for scrape in [&first, &second] {
        for family in FAMILIES {
            assert!(
                scrape.samples.iter().any(|s| s.metric == *family),
                "family {family} missing"
            );
        }
        assert_eq!(value(scrape, "strata_poisoned"), Some(0.0));
        assert_eq!(value(scrape, "strata_warmers"), Some(2.0));
    }
    // Every metric the Grafana dashboard queries is served.
    crate::dashboard::assert_dashboard_metrics_served(crate::dashboard::Exporter::Store, &second);
    let exec_account_reads = second.samples.iter().find(|s| {
        s.metric == "strata_read_duration_seconds"
            && s.labels.get("domain") == Some("account")
            && s.labels.get("regime") == Some("exec")
    });
    assert!(exec_account_reads.is_some(), "no exec account reads");
    assert!(value(&second, "strata_head_block") >= value(&first, "strata_head_block"));

    let (before, after) = (counters(&first), counters(&second));
    assert!(before.len() > 100, "{} counters", before.len());
    for (key, old) in &before {
        let new = after
            .get(key)
            .unwrap_or_else(|| panic!("{key} gone in the second scrape"));
        assert!(new >= old, "{key} went back: {old} -> {new}");
    }
    assert!(after["strata_blocks_committed_total[]"] > before["strata_blocks_committed_total[]"]);

    let status = replay.0.wait().expect("wait for the replay");
    let mut stdout = String::new();
    replay
        .0
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let stderr = drain.join().expect("stderr thread").join("\n");
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("final root 0x"), "{stdout}");
    assert!(!stdout.contains("metrics:"), "{stdout}");
}

#[test]
fn a_taken_metrics_port_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let small = testdata().join("small.jsonl");
    let out = strata(&["replay", small.to_str().unwrap(), "--metrics", &addr]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("metrics endpoint {addr}")),
        "{stderr}"
    );
    let out = strata(&["replay", small.to_str().unwrap(), "--metrics", "nowhere"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--metrics <ADDR>"), "{stderr}");
}

fn replay_small(env: &[(&str, &str)], extra: &[&str]) -> std::process::Output {
    let small = testdata().join("small.jsonl");
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command.env_remove("RUST_LOG");
    for (k, v) in env {
        command.env(k, v);
    }
    command
        .args(extra)
        .args(["replay", small.to_str().unwrap()])
        .output()
        .expect("run strata")
}

#[test]
fn logs_go_to_stderr_as_text_or_json() {
    let plain = replay_small(&[], &[]);
    assert!(plain.status.success());
    let stderr = String::from_utf8_lossy(&plain.stderr);
    assert!(stderr.contains("INFO strata::flush: flushed"), "{stderr}");
    assert!(
        !stderr.contains("block committed"),
        "debug by default: {stderr}"
    );

    let json = replay_small(&[("RUST_LOG", "strata=debug")], &["--log-format", "json"]);
    assert!(json.status.success());
    let stderr = String::from_utf8_lossy(&json.stderr);
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let commits: Vec<_> = events
        .iter()
        .filter(|e| e["fields"]["message"] == "block committed")
        .collect();
    assert_eq!(commits.len(), 30, "{stderr}");
    assert_eq!(commits[29]["fields"]["block"], 30);
    assert_eq!(commits[29]["level"], "DEBUG");
    assert!(commits[29]["fields"]["root_ms"].as_f64().is_some());

    // The logs never reach stdout: same lines as without them, timings aside.
    let stdout = |out: &std::process::Output| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("final root"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(stdout(&plain), stdout(&json));
    assert!(!String::from_utf8_lossy(&json.stdout).contains('{'));

    let bad = replay_small(&[("RUST_LOG", "strata=loudly")], &[]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("RUST_LOG=\"strata=loudly\" is not a valid filter"),
        "{stderr}"
    );
}

/// `strata serve --metrics` exports what the dashboard's JSON-RPC row
/// queries, once a call has been answered.
#[test]
fn serve_exports_the_metrics_of_the_dashboards_json_rpc_row() {
    let dir = tempfile::tempdir().unwrap();
    let trace = crate::common::gen_trace(dir.path(), "trace.jsonl", 100, 3, 2);
    let datadir = dir.path().join("data");
    crate::common::replay_small_steps(&trace, &datadir);
    let mut serve = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--datadir",
        ])
        .arg(&datadir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strata serve");
    let mut lines = BufReader::new(serve.stderr.take().unwrap()).lines();
    let (mut metrics, mut rpc) = (None, None);
    while metrics.is_none() || rpc.is_none() {
        let line = lines.next().expect("serve prints its addresses").unwrap();
        if let Some(rest) = line.strip_prefix("serve: metrics at http://") {
            metrics = Some(rest.trim_end_matches("/metrics").to_owned());
        } else if let Some(rest) = line.split(" at http://").nth(1) {
            rpc = Some(rest.split_whitespace().next().unwrap().to_owned());
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let rpc: std::net::SocketAddr = rpc.unwrap().parse().unwrap();
    let answer = strata_test_support::json_rpc(rpc, "eth_blockNumber", "[]");
    assert_eq!(answer["result"], "0x3", "{answer}");
    let unknown = strata_test_support::json_rpc(rpc, "eth_noSuchMethod", "[]");
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let scraped = scrape(metrics.as_deref().unwrap());
    crate::dashboard::assert_dashboard_metrics_served(crate::dashboard::Exporter::Serve, &scraped);
    let _ = serve.kill();
    let _ = serve.wait();
}
