//! `strata export`: the last block's state as a line-by-line dump, whose
//! accounts rebuild the datadir's root through the independent model.

use strata_cli::model::WorldState;
use strata_storage::genesis::parse_alloc_json;

use crate::common::{strata, strata_ok, testdata};

#[test]
fn the_dump_rebuilds_the_datadirs_root_and_stdout_equals_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("dd");
    let d = datadir.to_str().unwrap();
    let small = testdata().join("small.jsonl");
    strata_ok(&["replay", small.to_str().unwrap(), "--datadir", d]);
    let head = strata_ok(&["root", "--datadir", d]);
    let root = head.split_whitespace().nth(1).unwrap().to_owned();

    let out = dir.path().join("state.jsonl");
    strata_ok(&["export", "--datadir", d, "--out", out.to_str().unwrap()]);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    let first: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(first["root"].as_str(), Some(root.as_str()));

    // Every account line as a genesis alloc entry: the model's root of
    // what was exported must be the datadir's root.
    let mut alloc = serde_json::Map::new();
    let mut previous = String::new();
    for line in lines {
        let mut account: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).unwrap();
        let address = account
            .remove("address")
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned();
        assert!(address > previous, "accounts in address order");
        previous = address.clone();
        assert!(account.remove("codeHash").is_some());
        alloc.insert(address, serde_json::Value::Object(account));
    }
    let alloc = parse_alloc_json(&serde_json::Value::Object(alloc).to_string()).unwrap();
    assert_eq!(alloc.len(), 366, "the trace's final state has 366 accounts");
    assert_eq!(
        WorldState::from_alloc(&alloc).state_root().to_string(),
        root
    );

    let stdout = strata(&["export", "--datadir", d]);
    assert!(stdout.status.success());
    assert_eq!(String::from_utf8(stdout.stdout).unwrap(), text);
    let stderr = String::from_utf8(stdout.stderr).unwrap();
    assert!(stderr.contains("exported 366 accounts"), "{stderr}");
}
