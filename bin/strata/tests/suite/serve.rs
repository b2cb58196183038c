//! `strata serve`: a datadir served over JSON-RPC by the binary, asked over
//! HTTP while another `serve` process serves the same datadir, and
//! stopped by SIGTERM; `eth_call` over a chain `gen-chain` wrote and
//! `import-chain` imported (which records the chain's configuration), and
//! refused over a replayed datadir, which records none.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use alloy_primitives::{Address, B256};
use strata_chain_gen::contracts::{BALANCE_OF_SELECTOR, ContractKind, balance_slot, runtime_code};
use strata_test_support::json_rpc as call;

use crate::common::{gen_trace, read_json, replay_small_steps, strata_ok};

/// Starts `strata serve` on a free port; returns the child and its address.
pub(crate) fn start(datadir: &std::path::Path) -> (Child, SocketAddr) {
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
        // No chain configuration recorded, no --genesis: eth_call is
        // refused, saying what is missing.
        let refused = call(
            addr,
            "eth_call",
            r#"[{"to": "0x0000000000000000000000000000000000000001"}, "latest"]"#,
        );
        assert_eq!(refused["error"]["code"], -32000, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("chain configuration"), "{message}");
        assert!(message.contains("--genesis"), "{message}");
    }
    stop(&mut first);
    stop(&mut second);
}

/// SIGTERM, then a clean exit.
pub(crate) fn stop(child: &mut Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn eth_call_reads_a_token_balance_of_an_imported_generated_chain() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let datadir = dir.path().join("data");
    strata_ok(&[
        "gen-chain",
        "--accounts",
        "60",
        "--contracts",
        "10",
        "--blocks",
        "3",
        "--gas-per-block",
        "1000000",
        "--seed",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    let genesis = out.join("genesis.json");
    strata_ok(&[
        "import-chain",
        out.join("chain.rlp").to_str().unwrap(),
        "--genesis",
        genesis.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
    ]);
    // A token of the genesis and a holder of it.
    let alloc = read_json(&genesis)["alloc"].clone();
    let alloc = alloc.as_object().unwrap();
    let token_code = runtime_code(ContractKind::Token).unwrap().to_string();
    let (token, storage) = alloc
        .iter()
        .find(|(_, account)| account["code"].as_str() == Some(token_code.as_str()))
        .map(|(address, account)| (address.parse::<Address>().unwrap(), &account["storage"]))
        .expect("a token in the genesis");
    let holder = alloc
        .keys()
        .map(|address| address.parse::<Address>().unwrap())
        .find(|address| {
            let slot = B256::from(balance_slot(*address));
            storage
                .as_object()
                .unwrap()
                .keys()
                .any(|key| key.parse::<B256>().unwrap() == slot)
        })
        .expect("a holder of the token");
    let slot = B256::from(balance_slot(holder));
    let mut data = BALANCE_OF_SELECTOR.to_vec();
    data.extend_from_slice(B256::left_padding_from(holder.as_slice()).as_slice());
    let data = alloy_primitives::hex::encode_prefixed(data);

    let (mut server, addr) = start(&datadir);
    assert_eq!(call(addr, "eth_chainId", "[]")["result"], "0x539");
    for block in ["0x0", "0x1", "latest"] {
        let answer = call(
            addr,
            "eth_call",
            &format!(r#"[{{"to": "{token}", "data": "{data}"}}, "{block}"]"#),
        );
        let stored = call(
            addr,
            "eth_getStorageAt",
            &format!(r#"["{token}", "{slot}", "{block}"]"#),
        );
        assert!(answer.get("result").is_some(), "{answer}");
        assert_eq!(answer["result"], stored["result"], "block {block}");
    }
    let estimate = call(
        addr,
        "eth_estimateGas",
        &format!(r#"[{{"to": "{token}", "data": "{data}"}}, "latest"]"#),
    );
    let gas = u64::from_str_radix(
        estimate["result"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    assert!(gas > 21_000, "{estimate}");
    let list = call(
        addr,
        "eth_createAccessList",
        &format!(r#"[{{"to": "{token}", "data": "{data}"}}, "latest"]"#),
    );
    assert_eq!(
        list["result"]["accessList"][0]["storageKeys"][0],
        slot.to_string(),
        "{list}"
    );
    stop(&mut server);
}

/// `import-chain --share` writes a datadir that `strata serve` is
/// serving: the server follows each block the import commits.
#[test]
fn serve_follows_an_import_that_shares_the_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let told = crate::gen_chain::gen_chain(&out, "7");
    let genesis_hash = crate::gen_chain::hex_after(&told, "hash ").trim_end_matches(')');
    let datadir = dir.path().join("data");
    let path = |name: &str| out.join(name).to_str().unwrap().to_owned();
    crate::gen_chain::init_from(&out, datadir.to_str().unwrap(), Some(genesis_hash));
    let (mut server, addr) = start(&datadir);
    assert_eq!(call(addr, "eth_blockNumber", "[]")["result"], "0x0");
    let chain = path("chain.rlp");
    let data = datadir.to_str().unwrap();
    let import = ["import-chain", chain.as_str(), "--datadir", data];
    // Without --share the writer cannot open beside the server.
    let refused = crate::common::strata_err(&import);
    assert!(refused.contains("share"), "{refused}");
    let imported = strata_ok(&[&import[..], &["--share"]].concat());
    assert!(imported.contains("at block 4"), "{imported}");
    assert_eq!(call(addr, "eth_blockNumber", "[]")["result"], "0x4");
    stop(&mut server);
}
