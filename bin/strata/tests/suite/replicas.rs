//! `strata publish` and `strata serve --replica` against a three-node
//! Garage cluster (`strata_test_support::garage`): the publisher SIGKILLed
//! at random moments while a chain imports beside it; after each kill a
//! replica started on a fresh cache serves the block the bucket's last
//! manifest names — never another — with the answers a local serve gives
//! at that block; restarted, the publisher takes up where the bucket stood
//! and a replica reaches the writer's head.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use strata_test_support::garage::GarageCluster;
use strata_test_support::json_rpc as call;

use crate::common::strata_ok;
use crate::serve::{start as serve_local, stop};

fn with_store(command: &mut Command, cluster: &GarageCluster) {
    for key in [
        "STRATA_S3_ENDPOINTS",
        "STRATA_S3_KEY_ID",
        "STRATA_S3_SECRET",
        "STRATA_S3_REGION",
    ] {
        command.env(key, &cluster.env()[key]);
    }
}

/// `strata publish` in the background, a round as soon as the last ends
/// and a new base every 3 blocks (so that kills land in uploads), its
/// base streams written in `scratch`.
fn publish(cluster: &GarageCluster, datadir: &Path, url: &str, scratch: &Path) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command
        .args([
            "publish",
            "--interval-ms",
            "0",
            "--base-every",
            "3",
            "--to",
            url,
            "--datadir",
        ])
        .arg(datadir)
        .arg("--scratch")
        .arg(scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    with_store(&mut command, cluster);
    command.spawn().unwrap()
}

/// `strata serve --replica` on a fresh cache: its address, or its error
/// when it cannot start (no manifest yet).
fn serve_replica(
    cluster: &GarageCluster,
    url: &str,
    cache: &Path,
) -> Result<(Child, SocketAddr), String> {
    serve_replica_with(cluster, url, cache, &[]).map(|(child, addr, _)| (child, addr))
}

/// As [`serve_replica`], with `extra` arguments; also the address of its
/// metrics when `extra` asks for them.
fn serve_replica_with(
    cluster: &GarageCluster,
    url: &str,
    cache: &Path,
    extra: &[&str],
) -> Result<(Child, SocketAddr, Option<String>), String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--replica",
            url,
            "--cache",
        ])
        .arg(cache)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    with_store(&mut command, cluster);
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut told = String::new();
    let mut metrics = None;
    loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.wait();
            return Err(told);
        };
        if let Some(rest) = line.split("metrics at http://").nth(1) {
            metrics = Some(rest.trim_end_matches("/metrics").to_owned());
            continue;
        }
        if let Some(rest) = line.split("at http://").nth(1) {
            let addr = rest.split_whitespace().next().unwrap().parse().unwrap();
            std::thread::spawn(move || for _ in lines {});
            return Ok((child, addr, metrics));
        }
        told.push_str(&line);
        told.push('\n');
    }
}

fn block_number(addr: SocketAddr) -> u64 {
    let answer = call(addr, "eth_blockNumber", "[]");
    let hex = answer["result"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    u64::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap()
}

/// The replica at `replica` answers as the local serve at `local` does at
/// `block`: balances, nonces and proofs of `addresses`.
fn same_answers(replica: SocketAddr, local: SocketAddr, block: u64, addresses: &[String]) {
    let tag = format!("\"0x{block:x}\"");
    for address in addresses {
        for (method, params) in [
            ("eth_getBalance", format!("[\"{address}\",{tag}]")),
            ("eth_getTransactionCount", format!("[\"{address}\",{tag}]")),
            (
                "eth_getProof",
                format!("[\"{address}\",[\"0x0\",\"0x1\"],{tag}]"),
            ),
        ] {
            let (a, b) = (call(replica, method, &params), call(local, method, &params));
            assert!(a.get("result").is_some(), "{method} {params}: {a}");
            assert_eq!(
                a["result"], b["result"],
                "{method} {params} at block {block}"
            );
        }
    }
}

#[test]
fn publish_killed_at_random_moments_leaves_a_bucket_replicas_serve() {
    let Some(cluster) = GarageCluster::start("publish_killed_at_random_moments") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let o = out.to_str().unwrap();
    strata_ok(&[
        "gen-chain",
        "--accounts",
        "300",
        "--contracts",
        "30",
        "--blocks",
        "40",
        "--gas-per-block",
        "2000000",
        "--seed",
        "47",
        "--out",
        o,
    ]);
    let datadir = dir.path().join("data");
    let d = datadir.to_str().unwrap();
    let (state, chain_json, chain) = (
        format!("{o}/state.jsonl"),
        format!("{o}/chain.json"),
        format!("{o}/chain.rlp"),
    );
    strata_ok(&[
        "init",
        "--state",
        &state,
        "--chain",
        &chain_json,
        "--datadir",
        d,
        "--history",
        "full",
    ]);
    let addresses: Vec<String> = std::fs::read_to_string(&state)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|v| v["address"].as_str().map(str::to_string))
        .step_by(25)
        .collect();
    let (mut local, local_addr) = serve_local(&datadir);
    let url = cluster.url("killed");
    // The chain in five parts, imported one after another (each run
    // skips the blocks the datadir holds) while a publisher runs and is
    // SIGKILLed at a random moment.
    let bytes = std::fs::read(&chain).unwrap();
    let blocks = crate::common::rlp_items(&bytes);
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(47);
    let mut served = Vec::new();
    for kill in 0..5 {
        let upto = blocks.len() * (kill + 1) / 5;
        let part = dir.path().join(format!("part-{kill}.rlp"));
        std::fs::write(&part, blocks[..upto].concat()).unwrap();
        let mut publisher = publish(&cluster, &datadir, &url, &scratch);
        strata_ok(&[
            "import-chain",
            part.to_str().unwrap(),
            "--share",
            "--datadir",
            d,
        ]);
        std::thread::sleep(Duration::from_millis(rng.random_range(300..1500)));
        publisher.kill().unwrap();
        publisher.wait().unwrap();
        let cache = dir.path().join(format!("cache-{kill}"));
        match serve_replica(&cluster, &url, &cache) {
            Ok((mut replica, addr)) => {
                let block = block_number(addr);
                assert!(
                    block <= upto as u64,
                    "the replica claims block {block} of {upto}"
                );
                same_answers(addr, local_addr, block, &addresses);
                served.push(block);
                stop(&mut replica);
            }
            // Killed before its first manifest: nothing to serve yet.
            Err(told) => assert!(
                served.is_empty() && told.contains("manifest.json is missing"),
                "{told}"
            ),
        }
    }
    assert!(!served.is_empty(), "no kill left a bucket to serve");
    eprintln!("replicas after each kill served blocks {served:?}");
    // The publisher restarted takes up where the bucket stood; a replica
    // then reaches the writer's head.
    let mut once = Command::new(env!("CARGO_BIN_EXE_strata"));
    once.args(["publish", "--once", "--to", &url, "--datadir", d]);
    once.arg("--scratch").arg(&scratch);
    with_store(&mut once, &cluster);
    let done = once.output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let (mut replica, addr, metrics) = serve_replica_with(
        &cluster,
        &url,
        &dir.path().join("cache-last"),
        &["--metrics", "127.0.0.1:0"],
    )
    .unwrap();
    let head = block_number(local_addr);
    // It answers at once, at the block it holds, and catches up behind.
    let started = std::time::Instant::now();
    while block_number(addr) < head && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(block_number(addr), head);
    for block in [head, head / 2, 1] {
        same_answers(addr, local_addr, block, &addresses);
    }
    // Its metrics name the block it serves and its range cache, which
    // its first reads went through.
    let metrics = metrics.expect("serve --metrics printed its address");
    // (refreshed four times a second: read until the refresh after the
    // replica reached the head)
    let scrape = || {
        let (status, body) = crate::metrics::http_get(&metrics, "/metrics");
        assert_eq!(status, 200, "{body}");
        body
    };
    let started = std::time::Instant::now();
    let mut body = scrape();
    while gauge(&body, "strata_replica_head") != head as i64
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(50));
        body = scrape();
    }
    assert_eq!(gauge(&body, "strata_replica_head"), head as i64, "{body}");
    assert_eq!(gauge(&body, "strata_replica_blocks_behind"), 0, "{body}");
    assert!(
        gauge(&body, "strata_replica_range_fetched_chunks") > 0,
        "{body}"
    );
    // What it read is on its disk: in chunks, or in the files it
    // downloaded whole since (their chunks let go).
    assert!(
        gauge(&body, "strata_replica_range_cache_bytes")
            + gauge(&body, "strata_replica_base_whole_bytes")
            > 0,
        "{body}"
    );
    stop(&mut replica);
    stop(&mut local);
}

/// The value of the gauge `name` in a Prometheus text exposition.
fn gauge(body: &str, name: &str) -> i64 {
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in {body}"))
        .trim()
        .parse()
        .unwrap()
}
