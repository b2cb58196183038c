//! `--json` of `root`, `get`, `stats` and `verify`: one JSON document on
//! stdout whose figures equal the text output's and the trace's known
//! values; `verify --json` still fails on a damaged datadir and says what.

use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use serde_json::Value;
use strata_trace::{TraceLine, TraceReader};

use crate::common::{replay_small_steps, strata, strata_ok, testdata, trace_roots};

/// The shipped trace replayed (with small steps, so files exist) into `dir/db`.
fn replayed(dir: &Path) -> PathBuf {
    let datadir = dir.join("db");
    replay_small_steps(&testdata().join("small.jsonl"), &datadir);
    datadir
}

fn json(args: &[&str]) -> Value {
    let out = strata_ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("strata {args:?}: {e}:\n{out}"))
}

/// A contract of the shipped trace's genesis.
fn contract_with_code() -> Address {
    let file = std::fs::File::open(testdata().join("small.jsonl")).unwrap();
    let first = TraceReader::new(std::io::BufReader::new(file))
        .next()
        .unwrap()
        .unwrap();
    let TraceLine::Genesis { alloc, .. } = first else {
        panic!("the shipped trace starts with its genesis")
    };
    alloc
        .iter()
        .find(|(_, account)| !account.code.is_empty())
        .map(|(address, _)| *address)
        .expect("a contract")
}

/// A slot the shipped trace's last block sets: address, slot, value as
/// the trace writes them (0x hex; the value minimal).
fn last_block_slot() -> (String, String, String) {
    let text = std::fs::read_to_string(testdata().join("small.jsonl")).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let writes = last["writes"].as_object().unwrap();
    writes
        .iter()
        .find_map(|(address, write)| {
            let (slot, value) = write["storage"]
                .as_object()?
                .iter()
                .find(|(_, value)| *value != "0x0")?;
            Some((address.clone(), slot.clone(), value.as_str()?.to_owned()))
        })
        .expect("the last block sets a slot")
}

#[test]
fn root_json_is_the_text_root_and_the_traces_last_root() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let db = datadir.to_str().unwrap();
    let (_, roots) = trace_roots(&testdata().join("small.jsonl"));
    let (&last, &root) = roots.last_key_value().unwrap();
    let doc = json(&["root", "--datadir", db, "--json"]);
    assert_eq!(doc["block"], last);
    assert_eq!(doc["root"], root.to_string());
    assert_eq!(
        strata_ok(&["root", "--datadir", db]),
        format!("{last} {root}\n")
    );
    assert_eq!(doc.as_object().unwrap().len(), 2, "{doc}");
}

#[test]
fn get_json_carries_what_the_text_prints() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let db = datadir.to_str().unwrap();
    let address = contract_with_code().to_string();

    let text = strata_ok(&["get", "--datadir", db, "account", &address]);
    let doc = json(&["get", "--datadir", db, "--json", "account", &address]);
    assert_eq!(doc["block"], 30);
    assert!(
        doc["address"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case(&address)
    );
    let account = &doc["account"];
    assert_eq!(
        text,
        format!(
            "nonce {}\nbalance {}\ncode_hash {}\n",
            account["nonce"].as_u64().expect("nonce is a number"),
            account["balance"]
                .as_str()
                .expect("balance is a decimal string"),
            account["code_hash"].as_str().unwrap()
        )
    );

    let (written, slot, value) = last_block_slot();
    let text = strata_ok(&["get", "--datadir", db, "storage", &written, &slot]);
    let doc = json(&["get", "--datadir", db, "--json", "storage", &written, &slot]);
    assert_eq!(doc["slot"], slot);
    assert_eq!(doc["value"], value, "the value the last block wrote");
    assert_eq!(text, format!("{value}\n"));

    let text = strata_ok(&["get", "--datadir", db, "code", &address]);
    let doc = json(&["get", "--datadir", db, "--json", "code", &address]);
    let code = doc["code"].as_str().unwrap();
    assert_eq!(text, format!("{code}\n"));
    assert_eq!(
        doc["bytes"].as_u64().unwrap() as usize,
        (code.len() - 2) / 2
    );
    assert!(doc["bytes"].as_u64().unwrap() > 0);

    // An account that does not exist, at an older block.
    let absent = Address::repeat_byte(0xde).to_string();
    let doc = json(&[
        "get",
        "--datadir",
        db,
        "--block",
        "29",
        "--json",
        "account",
        &absent,
    ]);
    assert_eq!(doc["block"], 29);
    assert!(doc["account"].is_null(), "{doc}");
}

#[test]
fn stats_json_has_the_figures_of_the_text_report() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let db = datadir.to_str().unwrap();
    let text = strata_ok(&["stats", "--datadir", db, "--live"]);
    let doc = json(&["stats", "--datadir", db, "--live", "--json"]);

    let head = text.lines().next().unwrap();
    assert_eq!(
        head,
        format!("head {} {}", doc["block"], doc["root"].as_str().unwrap())
    );
    let names: Vec<&str> = doc["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["domain"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["account", "storage", "code", "commitment"]);
    for domain in doc["domains"].as_array().unwrap() {
        let number = |field: &str| domain[field].as_u64().expect("a number");
        let row = format!(
            "{:<11} {:>11} {:>11} {:>6} {:>12} {:>14}",
            domain["domain"].as_str().unwrap(),
            number("memory_keys"),
            number("db_entries"),
            domain["files"].as_array().unwrap().len(),
            number("file_entries"),
            number("file_bytes")
        );
        assert!(text.lines().any(|l| l == row), "no row {row:?} in\n{text}");
    }
    let files_total = doc["files_total"].as_u64().unwrap();
    assert!(files_total > 0, "small steps leave files");
    assert!(text.contains(&format!(
        "files total {files_total}, {} bytes",
        doc["file_bytes_total"]
    )));
    let live = &doc["live"];
    let account = &live["domains"][0];
    assert_eq!(account["domain"], "account");
    let number = |field: &str| account[field].as_u64().expect("a number");
    let row = format!(
        "{:<11} {:>11} {:>14} {:>14}",
        "account",
        number("keys"),
        number("key_bytes"),
        number("value_bytes")
    );
    assert!(text.lines().any(|l| l == row), "no row {row:?} in\n{text}");
    assert!(text.contains(&format!(
        "live raw {} bytes; datadir {} bytes on disk",
        live["raw_bytes"], live["disk_bytes"]
    )));
    assert!(doc["branch_cache"]["hit_rate"].is_number());
    // Without --live there is no "live" member.
    let doc = json(&["stats", "--datadir", db, "--json"]);
    assert!(doc.get("live").is_none(), "{doc}");
}

#[test]
fn verify_json_reports_ok_and_a_failure_with_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = replayed(dir.path());
    let db = datadir.to_str().unwrap();
    let doc = json(&["verify", "--datadir", db, "--json"]);
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["block"], 30);
    assert_eq!(doc["problems"], serde_json::json!([]));
    assert_eq!(doc["stored_root"], doc["computed_root"]);
    let root = strata_ok(&["root", "--datadir", db]);
    assert_eq!(
        root,
        format!("30 {}\n", doc["stored_root"].as_str().unwrap())
    );
    assert!(doc["accounts"].as_u64().unwrap() > 300, "{doc}");
    assert!(doc["integrity"]["db_bytes"].as_u64().unwrap() > 0);

    // One account's newest value removed from redb: the files' older value
    // (or none) shows through, and the root from the values moves.
    delete_account_entry(&datadir);
    let out = strata(&["verify", "--datadir", db, "--json"]);
    assert!(!out.status.success(), "verify passed a damaged datadir");
    assert_ne!(out.status.code(), Some(101), "verify panicked");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document on stdout");
    assert_eq!(doc["ok"], false);
    let problems = doc["problems"].as_array().unwrap();
    assert!(!problems.is_empty(), "{doc}");
    assert_ne!(doc["stored_root"], doc["computed_root"], "{doc}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("verify found {} problem(s)", problems.len())),
        "{stderr}"
    );
}

/// Removes the first entry of the redb account table.
fn delete_account_entry(datadir: &Path) {
    use redb::ReadableTable;
    const ACCOUNT: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("account");
    let db = redb::Database::create(datadir.join("state.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(ACCOUNT).unwrap();
        let key = table
            .first()
            .unwrap()
            .expect("an account in redb")
            .0
            .value()
            .to_vec();
        table.remove(key.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}
