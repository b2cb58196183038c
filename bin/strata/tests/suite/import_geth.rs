//! import-geth on the go-ethereum prestateTracer fixtures: the reads agree
//! with the fixture's genesis (the pre-transaction state), the writes
//! applied to it give the diff's post values, deletions and creations come
//! out right; a synthetic multi-transaction block checks the merge rules.

use alloy_primitives::{B256, U256, keccak256};
use serde_json::{Value, json};
use strata_storage::genesis::{
    alloc_from_value, parse_address, parse_u64, parse_u256, parse_word, parse_word_value,
};
use strata_trace::geth::{diff_frames, merge_block, prestate_frames};
use strata_trace::model::WorldState;
use strata_trace::{TraceBlock, TraceLine, parse_line};

use crate::common::{read_json, strata, vectors};
use strata_test_support::json_files;

fn import(args: &[&str]) -> TraceBlock {
    let out = strata(&[&["import-geth"][..], args].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "import-geth {args:?} failed: {stderr}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one block line");
    match parse_line(text.trim_end(), 1).unwrap() {
        TraceLine::Block(block) => block,
        other => panic!("not a block: {other:?}"),
    }
}

fn genesis_state(fixture: &Value) -> WorldState {
    WorldState::from_alloc(&alloc_from_value(&fixture["genesis"]).unwrap())
}

/// After applying the block, every account in the diff's `post` holds the
/// printed values, cleared slots are zero and accounts only in `pre` are gone.
fn assert_post_state(state: &WorldState, result: &Value, name: &str) {
    let pre = result["pre"].as_object().unwrap();
    let post = result["post"].as_object().unwrap();
    for (key, after) in post {
        let address = parse_address(key).unwrap();
        let account = state
            .account(&address)
            .unwrap_or_else(|| panic!("{name}: {key} missing"));
        if let Some(b) = after.get("balance") {
            assert_eq!(
                account.balance(),
                parse_u256(b).unwrap(),
                "{name}: {key} balance"
            );
        }
        if let Some(n) = after.get("nonce") {
            assert_eq!(
                account.nonce(),
                parse_u64(n).unwrap(),
                "{name}: {key} nonce"
            );
        }
        if let Some(h) = after.get("codeHash") {
            assert_eq!(
                account.code_hash(),
                parse_word(h.as_str().unwrap()).unwrap(),
                "{name}: {key} code hash"
            );
        }
        for (slot, value) in after
            .get("storage")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let slot = parse_word(slot).unwrap();
            assert_eq!(
                state.slot(&address, &slot),
                parse_word_value(value).unwrap(),
                "{name}: {key} slot"
            );
        }
        let before_slots = pre
            .get(key)
            .and_then(|p| p.get("storage"))
            .and_then(Value::as_object);
        for slot in before_slots.into_iter().flatten().map(|(s, _)| s) {
            if after.get("storage").and_then(|s| s.get(slot)).is_none() {
                assert_eq!(
                    state.slot(&address, &parse_word(slot).unwrap()),
                    U256::ZERO,
                    "{name}: {key} cleared slot"
                );
            }
        }
    }
    for key in pre.keys().filter(|k| !post.contains_key(*k)) {
        assert!(
            state.account(&parse_address(key).unwrap()).is_none(),
            "{name}: {key} should be deleted"
        );
    }
}

#[test]
fn default_mode_fixtures_read_the_genesis_values() {
    let Some(dir) = vectors() else { return };
    for file in json_files(&dir.join("prestate_tracer")) {
        let fixture = read_json(&file);
        let block = import(&["--prestate", file.to_str().unwrap()]);
        let number = parse_u64(&fixture["context"]["number"]).unwrap();
        assert_eq!(block.number, number, "{}", file.display());
        assert!(block.writes.is_empty());
        assert_eq!(
            block.reads.len(),
            fixture["result"].as_object().unwrap().len(),
            "{}",
            file.display()
        );
        genesis_state(&fixture)
            .check_reads(&block)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

#[test]
fn diff_mode_fixtures_reach_the_post_values() {
    let Some(dir) = vectors() else { return };
    let mut imported = 0;
    for file in json_files(&dir.join("prestate_tracer_with_diff_mode")) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let fixture = read_json(&file);
        let out = strata(&["import-geth", "--diff", file.to_str().unwrap()]);
        if name == "inner_create_disable_code_and_storage.json" {
            // disableCode: a created contract's code is not in the output.
            assert!(!out.status.success());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("post has codeHash") && stderr.contains("disableCode"),
                "{stderr}"
            );
            continue;
        }
        let block = import(&["--diff", file.to_str().unwrap()]);
        let mut state = genesis_state(&fixture);
        state
            .check_reads(&block)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        state.apply_block(&block);
        assert_post_state(&state, &fixture["result"], &name);
        imported += 1;
    }
    assert!(imported >= 6);
}

#[test]
fn suicide_deletes_the_account_and_create_creates_one() {
    let Some(dir) = vectors() else { return };
    let suicide = dir.join("prestate_tracer_with_diff_mode/suicide.json");
    let block = import(&["--diff", suicide.to_str().unwrap(), "--number", "7"]);
    assert_eq!(block.number, 7, "--number overrides the fixture context");
    let gone = parse_address("0x2861bf89b6c640c79040d357c1e9513693ef5d3f").unwrap();
    assert!(block.writes[&gone].deleted && !block.writes[&gone].has_fields());

    let create = dir.join("prestate_tracer_with_diff_mode/create.json");
    let block = import(&["--diff", create.to_str().unwrap()]);
    let created = parse_address("0x40f2f445da6c9047554683fb382fba6769717116").unwrap();
    assert!(
        !block.reads.contains_key(&created),
        "a created account did not exist before"
    );
    let write = &block.writes[&created];
    assert!(!write.deleted);
    let code = write.code.as_ref().expect("code written");
    assert_eq!(
        keccak256(code),
        parse_word("0x19463d2ef23c9fcb3f853199279ecc9b21fa4147112bfe85664141ffbffd1a37").unwrap()
    );
    assert!(!write.storage.is_empty());
}

#[test]
fn prestate_and_diff_of_the_same_block_merge() {
    let Some(dir) = vectors() else { return };
    let prestate = dir.join("prestate_tracer/simple.json");
    let diff = dir.join("prestate_tracer_with_diff_mode/simple.json");
    let block = import(&[
        "--prestate",
        prestate.to_str().unwrap(),
        "--diff",
        diff.to_str().unwrap(),
    ]);
    let fixture = read_json(&diff);
    assert_eq!(block.reads.len(), 3);
    let mut state = genesis_state(&fixture);
    state.check_reads(&block).unwrap();
    state.apply_block(&block);
    assert_post_state(&state, &fixture["result"], "simple");
    // The miner is only in post: credited from nothing.
    let miner = parse_address("0x1585936b53834b021f68cc13eeefdec2efc8e724").unwrap();
    assert!(block.writes[&miner].balance.is_some() && !block.reads.contains_key(&miner));
}

#[test]
fn block_header_supplies_number_gas_and_root() {
    let Some(dir) = vectors() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let header = tmp.path().join("header.json");
    let root = format!("0x{}", "ab".repeat(32));
    std::fs::write(
        &header,
        json!({"result": {"number": "0x10", "gasUsed": "0x5208", "stateRoot": root}}).to_string(),
    )
    .unwrap();
    let diff = dir.join("prestate_tracer_with_diff_mode/simple.json");
    let block = import(&[
        "--diff",
        diff.to_str().unwrap(),
        "--block-header",
        header.to_str().unwrap(),
    ]);
    assert_eq!((block.number, block.gas_used), (16, Some(21_000)));
    assert_eq!(block.state_root, Some(B256::repeat_byte(0xab)));
}

const X: &str = "0x00000000000000000000000000000000000000aa";
const Y: &str = "0x00000000000000000000000000000000000000bb";
const S: &str = "0x0000000000000000000000000000000000000000000000000000000000000001";
const T: &str = "0x0000000000000000000000000000000000000000000000000000000000000002";

#[test]
fn multi_tx_merge_rules() {
    // tx0 creates X (slot S = 5) and changes Y.T from 1 to 2.
    // tx1 reads X (created: not a pre-block read) and Y.T (pre-block value: 1),
    //     then deletes Y and sets X.S to 6.
    let prestate = json!([
        {"txHash": "0x01", "result": {Y: {"balance": "0x9", "nonce": 1, "storage": {}}}},
        {"txHash": "0x02", "result": {X: {"balance": "0x0", "storage": {S: "0x5"}}, Y: {"balance": "0x9", "nonce": 1, "storage": {T: "0x2"}}}},
    ]);
    let diff = json!([
        {"txHash": "0x01", "result": {"pre": {Y: {"balance": "0x9", "nonce": 1, "storage": {T: "0x1"}}},
                                      "post": {X: {"nonce": 1, "storage": {S: "0x5"}}, Y: {"storage": {T: "0x2"}}}}},
        {"txHash": "0x02", "result": {"pre": {X: {"balance": "0x0", "nonce": 1, "storage": {S: "0x5"}}, Y: {"balance": "0x9", "nonce": 1}},
                                      "post": {X: {"storage": {S: "0x6"}}}}},
    ]);
    let p = prestate_frames(&prestate).unwrap();
    let d = diff_frames(&diff).unwrap();
    let block = merge_block(3, Some(&p), Some(&d)).unwrap();
    let (x, y) = (parse_address(X).unwrap(), parse_address(Y).unwrap());
    let (s, t) = (parse_word(S).unwrap(), parse_word(T).unwrap());
    assert!(
        !block.reads.contains_key(&x),
        "X did not exist before the block"
    );
    assert_eq!(
        block.reads[&y].storage[&t],
        U256::from(1),
        "pre-block value, not tx1's"
    );
    assert!(block.writes[&y].deleted && !block.writes[&y].has_fields());
    assert_eq!(block.writes[&x].nonce, Some(1));
    assert_eq!(
        block.writes[&x].storage[&s],
        U256::from(6),
        "last write wins"
    );

    // The binary reads the same from files: a JSON-RPC response and a bare array.
    let tmp = tempfile::tempdir().unwrap();
    let (pfile, dfile) = (tmp.path().join("p.json"), tmp.path().join("d.json"));
    std::fs::write(
        &pfile,
        json!({"jsonrpc": "2.0", "id": 1, "result": prestate}).to_string(),
    )
    .unwrap();
    std::fs::write(&dfile, diff.to_string()).unwrap();
    let from_files = import(&[
        "--prestate",
        pfile.to_str().unwrap(),
        "--diff",
        dfile.to_str().unwrap(),
        "--number",
        "3",
    ]);
    assert_eq!(from_files, block);

    // The two inputs must describe the same transactions.
    let one = json!([prestate[0].clone()]);
    let err = merge_block(3, Some(&prestate_frames(&one).unwrap()), Some(&d)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the prestate has 1 transactions but the diff has 2"
    );
    let mut swapped = diff.clone();
    swapped[0]["txHash"] = json!("0x03");
    let err = merge_block(3, Some(&p), Some(&diff_frames(&swapped).unwrap())).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tx 0: prestate is for 0x01 but diff is for 0x03"
    );
}

#[test]
fn input_errors_are_named() {
    let failed =
        json!([{"txHash": "0x01", "result": {}}, {"txHash": "0x02", "error": "execution timeout"}]);
    let err = prestate_frames(&failed).unwrap_err().to_string();
    assert_eq!(
        err,
        "prestate: tx 1 (0x02): the tracer failed: execution timeout"
    );
    let diff_as_prestate = json!({"pre": {}, "post": {}});
    let err = prestate_frames(&diff_as_prestate).unwrap_err().to_string();
    assert!(err.contains("pass it with --diff"), "{err}");
    let err = diff_frames(&json!({X: {"balance": "0x1"}}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("diff, tx 0: expected a diffMode result"),
        "{err}"
    );
    let bad = json!({"pre": {X: {"balance": "0xzz"}}, "post": {}});
    let err = diff_frames(&bad).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("diff, tx 0, pre: account {X}: field \"balance\": invalid number \"0xzz\"")
    );

    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken.json");
    std::fs::write(&broken, "[\n {\"txHash\": }\n]").unwrap();
    let out = strata(&[
        "import-geth",
        "--prestate",
        broken.to_str().unwrap(),
        "--number",
        "1",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("broken.json: invalid JSON at line 2"),
        "{stderr}"
    );
    let plain = tmp.path().join("plain.json");
    std::fs::write(&plain, json!({X: {"balance": "0x1"}}).to_string()).unwrap();
    let out = strata(&["import-geth", "--prestate", plain.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --number N"));
}

/// Tracer output with a repeated key used to be read with the last value
/// winning; the import now names the key, both spellings and the line.
#[test]
fn repeated_keys_in_tracer_output_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let upper = X.to_uppercase().replacen("0X", "0x", 1);
    let cases = [
        (
            format!(
                "{{\"{X}\": {{\"balance\": \"0x1\"}},\n \"{upper}\": {{\"balance\": \"0x2\"}}}}"
            ),
            "invalid JSON at line 2, column".to_owned(),
            format!("key \"{upper}\" repeats \"{X}\""),
        ),
        (
            format!("{{\"{X}\": {{\"storage\": {{\"0x1\": \"0x1\", \"0x01\": \"0x2\"}}}}}}"),
            "line 1".to_owned(),
            "key \"0x01\" repeats \"0x1\"".to_owned(),
        ),
        (
            format!("{{\"{X}\": {{\"balance\": \"0x1\", \"balance\": \"0x2\"}}}}"),
            "line 1".to_owned(),
            "key \"balance\" repeats \"balance\"".to_owned(),
        ),
    ];
    for (index, (text, place, what)) in cases.iter().enumerate() {
        let path = tmp.path().join(format!("repeat{index}.json"));
        std::fs::write(&path, text).unwrap();
        let out = strata(&[
            "import-geth",
            "--prestate",
            path.to_str().unwrap(),
            "--number",
            "1",
        ]);
        assert!(!out.status.success(), "{text}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("repeat{index}.json")) && stderr.contains(place.as_str()),
            "{stderr}"
        );
        assert!(stderr.contains(what.as_str()), "{text}\n{stderr}");
    }
    // `null` is refused by the shared account parser, as in genesis files.
    let bad = json!({"pre": {X: {"nonce": null}}, "post": {}});
    let err = diff_frames(&bad).unwrap_err().to_string();
    assert!(
        err.contains(&format!("account {X}: field \"nonce\": expected a number")),
        "{err}"
    );
}
