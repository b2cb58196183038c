//! `strata serve`: a datadir served over JSON-RPC by the binary, asked over
//! HTTP while another `serve` process serves the same datadir, and
//! stopped by SIGTERM.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use strata_test_support::json_rpc as call;

use crate::common::{gen_trace, replay_small_steps};

/// Starts `strata serve` on a free port; returns the child and its address.
fn start(datadir: &std::path::Path) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--http", "127.0.0.1:0", "--datadir"])
        .arg(datadir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(rest) = line.split("at http://").nth(1) {
            break rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

#[test]
fn two_serve_processes_answer_over_one_datadir_and_stop_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "trace.jsonl", 200, 6, 3);
    let datadir = dir.path().join("data");
    replay_small_steps(&trace, &datadir);
    let (mut first, first_addr) = start(&datadir);
    let (mut second, second_addr) = start(&datadir);
    for addr in [first_addr, second_addr] {
        assert_eq!(call(addr, "eth_blockNumber", "[]")["result"], "0x6");
        let root = call(
            addr,
            "debug_accountRange",
            r#"["latest", null, 2, true, true]"#,
        );
        assert_eq!(
            root["result"]["accounts"].as_object().unwrap().len(),
            2,
            "{root}"
        );
        let old = call(
            addr,
            "eth_getBalance",
            r#"["0x0000000000000000000000000000000000000001", "0x2"]"#,
        );
        assert!(old.get("result").is_some(), "{old}");
    }
    for child in [&mut first, &mut second] {
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}
