//! The binary: the datadir commands (init, get, root, stats, compact,
//! verify) on a small datadir; errors go to stderr with a non-zero exit code
//! and leave the datadir as it was.

use std::path::Path;

use crate::common::{
    final_root, replay_small_steps, strata, strata_err, strata_ok, testdata, trace_roots,
};

fn assert_fails_with(args: &[&str], needle: &str) {
    let out = strata(args);
    assert!(!out.status.success(), "strata {args:?} succeeded");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(needle),
        "strata {args:?}: expected {needle:?} in stderr:\n{stderr}"
    );
    assert!(out.stdout.is_empty(), "strata {args:?} printed to stdout");
}

#[test]
fn argument_errors_are_reported() {
    assert_fails_with(
        &["get", "--datadir", "x", "account", "0x1234"],
        "expected 20 bytes, found 2",
    );
    assert_fails_with(
        &["replay", "t.jsonl", "--warmers", "0,x"],
        "invalid warmer count",
    );
    assert_fails_with(&["replay", "t.jsonl", "--cache", "fifo"], "fifo");
    assert_fails_with(
        &["replay", "t.jsonl", "--cache", "lru"],
        "sharded, mutex-lru, sharded-lru",
    );
    assert_fails_with(
        &["replay", "t.jsonl", "--observer", "0"],
        "invalid observer rate",
    );
    assert_fails_with(&["frobnicate"], "unrecognized subcommand");
    assert_fails_with(
        &["replay", "t.jsonl", "--warp"],
        "unexpected argument '--warp'",
    );
    assert_fails_with(&["replay"], "TRACE");
    assert_fails_with(&["replay", "/nonexistent/t.jsonl"], "/nonexistent/t.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let genesis = dir.path().join("genesis.json");
    std::fs::write(&genesis, "{\"alloc\": {\n \"0xab\": 1}}").unwrap();
    let datadir = dir.path().join("x");
    assert_fails_with(
        &[
            "init",
            "--genesis",
            genesis.to_str().unwrap(),
            "--datadir",
            datadir.to_str().unwrap(),
        ],
        "invalid address \"0xab\"",
    );
    assert!(!datadir.exists(), "a broken genesis creates no datadir");
}

#[test]
fn check_trace_accepts_the_testdata_and_rejects_tampering() {
    let small = crate::common::testdata().join("small.jsonl");
    let out = strata(&["check-trace", small.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok: 30 blocks, 30 roots"));

    let text = std::fs::read_to_string(&small).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Block 4 (line 5) with another stated root.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let start = lines[4].find("\"state_root\":\"0x").unwrap() + "\"state_root\":\"0x".len();
    lines[4].replace_range(start..start + 64, &"ab".repeat(32));
    let tampered = dir.path().join("root.jsonl");
    std::fs::write(&tampered, lines.join("\n")).unwrap();
    assert_fails_with(
        &["check-trace", tampered.to_str().unwrap()],
        "line 5: block 4: the trace says state root 0xabab",
    );

    // A read of block 2 (line 3) with a wrong balance.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let start = lines[2].find("\"balance\":\"0x").unwrap() + "\"balance\":\"".len();
    lines[2].insert(start + 2, '1');
    let tampered = dir.path().join("read.jsonl");
    std::fs::write(&tampered, lines.join("\n")).unwrap();
    assert_fails_with(
        &["check-trace", tampered.to_str().unwrap()],
        "line 3: block 2: reads 0x",
    );
}

const ADDR_EOA: &str = "0x00000000000000000000000000000000000000aa";
const ADDR_CONTRACT: &str = "0x00000000000000000000000000000000000000bb";

fn write_genesis(dir: &Path) -> std::path::PathBuf {
    let genesis = dir.join("genesis.json");
    std::fs::write(
        &genesis,
        format!(
            r#"{{"config":{{}},"alloc":{{"{ADDR_EOA}":{{"balance":"0x10","nonce":"0x3"}},
               "{ADDR_CONTRACT}":{{"balance":"1","code":"0x6001","storage":{{"0x01":"0x2a"}}}}}}}}"#
        ),
    )
    .unwrap();
    genesis
}

#[test]
fn init_get_root_stats_compact_verify_on_a_small_datadir() {
    let dir = tempfile::tempdir().unwrap();
    let genesis = write_genesis(dir.path());
    let datadir = dir.path().join("db");
    let db = datadir.to_str().unwrap();
    let stdout = strata_ok(&[
        "init",
        "--genesis",
        genesis.to_str().unwrap(),
        "--datadir",
        db,
    ]);
    let root = stdout.lines().last().unwrap().to_owned();
    assert!(root.starts_with("0x") && root.len() == 66, "{stdout}");
    // The same alloc through the independent model gives the same root.
    let alloc =
        strata_storage::genesis::parse_alloc_json(&std::fs::read_to_string(&genesis).unwrap())
            .unwrap();
    let mut model = strata_trace::model::WorldState::from_alloc(&alloc);
    assert_eq!(root, model.state_root().to_string());

    assert_eq!(
        strata_ok(&["root", "--datadir", db]).trim(),
        format!("0 {root}")
    );
    let account = strata_ok(&["get", "--datadir", db, "account", ADDR_EOA]);
    assert!(account.contains("nonce 3\nbalance 16\n"), "{account}");
    let contract = strata_ok(&["get", "--datadir", db, "account", ADDR_CONTRACT]);
    assert!(
        contract.contains(&format!(
            "code_hash {}",
            alloy_primitives::keccak256([0x60, 0x01])
        )),
        "{contract}"
    );
    assert_eq!(
        strata_ok(&["get", "--datadir", db, "storage", ADDR_CONTRACT, "0x1"]).trim(),
        "0x2a"
    );
    assert_eq!(
        strata_ok(&["get", "--datadir", db, "storage", ADDR_CONTRACT, "0x2"]).trim(),
        "0x0"
    );
    assert_eq!(
        strata_ok(&["get", "--datadir", db, "code", ADDR_CONTRACT]).trim(),
        "0x6001"
    );
    assert_eq!(
        strata_ok(&["get", "--datadir", db, "code", ADDR_EOA]).trim(),
        "0x"
    );
    let absent = strata_ok(&[
        "get",
        "--datadir",
        db,
        "account",
        "0x00000000000000000000000000000000000000cc",
    ]);
    assert!(absent.contains("does not exist"), "{absent}");

    let stats = strata_ok(&["stats", "--datadir", db]);
    assert!(stats.contains(&format!("head 0 {root}")), "{stats}");
    assert!(
        stats
            .lines()
            // domain, memory keys, db entries: genesis is written to redb.
            .any(|l| l.starts_with("account ") && l.split_whitespace().nth(2) == Some("2")),
        "{stats}"
    );
    assert!(stats.contains("branch cache:"), "{stats}");
    assert!(stats.contains("memory tier: no blocks"), "{stats}");
    let compact = strata_ok(&["compact", "--datadir", db]);
    assert!(compact.contains("compact:"), "{compact}");
    let verify = strata_ok(&["verify", "--datadir", db]);
    assert!(
        verify.contains("verify: ok") && verify.contains(&format!("computed root {root}")),
        "{verify}"
    );

    // A second init is refused and changes nothing.
    let stderr = strata_err(&[
        "init",
        "--genesis",
        genesis.to_str().unwrap(),
        "--datadir",
        db,
    ]);
    assert!(stderr.contains("already holds block 0"), "{stderr}");
    assert_eq!(
        strata_ok(&["root", "--datadir", db]).trim(),
        format!("0 {root}")
    );
}

#[test]
fn compact_then_verify_after_a_replay_with_small_steps() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    let db = datadir.to_str().unwrap();
    let small = testdata().join("small.jsonl");
    let stdout = replay_small_steps(&small, &datadir);
    let (_, roots) = trace_roots(&small);
    assert_eq!(final_root(&stdout), roots[&30].to_string());
    strata_ok(&["compact", "--datadir", db]);
    let stats = strata_ok(&["stats", "--datadir", db]);
    assert!(stats.contains("step size 4 blocks"), "{stats}");
    assert!(stats.contains("  file "), "collation built files:\n{stats}");
    let verify = strata_ok(&["verify", "--datadir", db]);
    assert!(verify.contains("verify: ok"), "{verify}");
    assert_eq!(
        strata_ok(&["root", "--datadir", db]).trim(),
        format!("30 {}", roots[&30])
    );
}

/// `root` and `get` read a datadir while a writer holds it, when the writer
/// shares it; a writer that keeps it to itself is named as the reason.
#[test]
fn root_and_get_read_beside_a_sharing_writer() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    let db = datadir.to_str().unwrap();
    let small = testdata().join("small.jsonl");
    strata_ok(&["replay", small.to_str().unwrap(), "--datadir", db]);
    let (_, roots) = trace_roots(&small);
    let alone = strata_ok(&["get", "--datadir", db, "account", ADDR_EOA]);

    let shared = strata_storage::Options::default().with_share_with_readers(true);
    let writer = strata_storage::StateDb::open(&datadir, shared).unwrap();
    assert_eq!(
        strata_ok(&["root", "--datadir", db]).trim(),
        format!("30 {}", roots[&30])
    );
    assert_eq!(
        strata_ok(&["get", "--datadir", db, "account", ADDR_EOA]),
        alone
    );
    drop(writer);

    let exclusive = strata_storage::StateDb::open(&datadir, strata_storage::Options::default());
    let _writer = exclusive.unwrap();
    assert_fails_with(&["root", "--datadir", db], "does not share it with readers");
}

#[test]
fn bad_datadirs_and_files_are_refused_without_changes() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let m = missing.to_str().unwrap();
    for args in [
        vec!["root", "--datadir", m],
        vec!["stats", "--datadir", m],
        vec!["compact", "--datadir", m],
        vec!["verify", "--datadir", m],
        vec!["get", "--datadir", m, "account", ADDR_EOA],
    ] {
        let stderr = strata_err(&args);
        assert!(
            stderr.contains("not a strata datadir"),
            "{args:?}: {stderr}"
        );
        assert!(!missing.exists(), "{args:?} created the datadir");
    }
    let stderr = strata_err(&[
        "init",
        "--genesis",
        "/nonexistent/genesis.json",
        "--datadir",
        m,
    ]);
    assert!(stderr.contains("/nonexistent/genesis.json"), "{stderr}");
    assert!(!missing.exists());
    let small = testdata().join("small.jsonl");
    let stderr = strata_err(&[
        "replay",
        small.to_str().unwrap(),
        "--genesis",
        "/nonexistent/g.json",
        "--datadir",
        m,
    ]);
    assert!(stderr.contains("/nonexistent/g.json"), "{stderr}");
    assert!(!missing.exists());
    // A sweep replays copies of a datadir: it must hold a store.
    let stderr = strata_err(&[
        "replay",
        small.to_str().unwrap(),
        "--warmers",
        "0,1",
        "--datadir",
        m,
    ]);
    assert!(
        stderr.contains("a sweep with --datadir starts every run from a copy"),
        "{stderr}"
    );
    assert!(!missing.exists());
}

#[test]
fn a_datadir_of_another_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    std::fs::create_dir_all(&datadir).unwrap();
    let file = datadir.join(strata_storage::DB_FILE);
    {
        let db = redb::Database::create(&file).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let table: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
            let mut meta = txn.open_table(table).unwrap();
            meta.insert("format_version", 999u32.to_be_bytes().as_slice())
                .unwrap();
            meta.insert("step_size", 64u64.to_be_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let db = datadir.to_str().unwrap();
    for args in [
        vec!["root", "--datadir", db],
        vec!["verify", "--datadir", db],
        vec![
            "replay",
            testdata()
                .join("small.jsonl")
                .to_str()
                .unwrap()
                .to_owned()
                .leak(),
            "--datadir",
            db,
        ],
    ] {
        let stderr = strata_err(&args);
        assert!(
            stderr.contains("format version 999 is not supported"),
            "{args:?}: {stderr}"
        );
    }
    // The meta table is as it was: nothing was written over the foreign format.
    let db = redb::Database::create(&file).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let table: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
    let meta = txn.open_table(table).unwrap();
    let version = meta
        .get("format_version")
        .unwrap()
        .unwrap()
        .value()
        .to_vec();
    assert_eq!(version, 999u32.to_be_bytes());
    assert!(meta.get("head").unwrap().is_none());
    assert_eq!(redb::ReadableTableMetadata::len(&meta).unwrap(), 2);
}

/// `get --block N` reads the state after block N: each account a later
/// block's trace says it read (its prestate, the state after the block
/// before) is what `get --block` prints; outside the window the error names
/// the blocks that can be read.
#[test]
fn get_at_a_recent_block_reads_what_the_next_block_found() {
    use strata_trace::{TraceLine, TraceReader};
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    let db = datadir.to_str().unwrap();
    let small = testdata().join("small.jsonl");
    strata_ok(&["replay", small.to_str().unwrap(), "--datadir", db]);
    let file = std::io::BufReader::new(std::fs::File::open(&small).unwrap());
    let mut checked = 0;
    for line in TraceReader::new(file) {
        let TraceLine::Block(block) = line.unwrap() else {
            continue;
        };
        let before = (block.number - 1).to_string();
        for (address, read) in block.reads.iter().take(3) {
            let address = address.to_string();
            let shown = strata_ok(&[
                "get",
                "--datadir",
                db,
                "--block",
                &before,
                "account",
                &address,
            ]);
            assert!(
                shown.contains(&format!("nonce {}\nbalance {}\n", read.nonce, read.balance)),
                "block {before}, {address}: {shown}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} reads checked");
    let too_old = strata(&["get", "--datadir", db, "--block", "31", "account", ADDR_EOA]);
    assert!(!too_old.status.success());
    let stderr = String::from_utf8_lossy(&too_old.stderr);
    assert!(stderr.contains("is not retained"), "{stderr}");
}

/// Checks an `eth_getProof` JSON answer against `root` with alloy-trie:
/// the account (present or not) and every storage proof.
fn verify_proof_json(text: &str, root: alloy_primitives::B256, exists: bool) {
    use alloy_primitives::{B256, Bytes, U256, keccak256};
    use alloy_rlp::Encodable;
    use alloy_trie::Nibbles;
    use alloy_trie::proof::verify_proof;
    let json: serde_json::Value = serde_json::from_str(text).unwrap();
    let nodes = |value: &serde_json::Value| -> Vec<Bytes> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().parse().unwrap())
            .collect()
    };
    let quantity = |value: &serde_json::Value| -> U256 { value.as_str().unwrap().parse().unwrap() };
    let hash = |value: &serde_json::Value| -> B256 { value.as_str().unwrap().parse().unwrap() };
    let storage_hash = hash(&json["storageHash"]);
    let account = exists.then(|| {
        let mut payload = Vec::new();
        quantity(&json["nonce"]).to::<u64>().encode(&mut payload);
        quantity(&json["balance"]).encode(&mut payload);
        storage_hash.encode(&mut payload);
        hash(&json["codeHash"]).encode(&mut payload);
        let mut rlp = Vec::new();
        alloy_rlp::Header {
            list: true,
            payload_length: payload.len(),
        }
        .encode(&mut rlp);
        rlp.extend(payload);
        rlp
    });
    let address: alloy_primitives::Address = json["address"].as_str().unwrap().parse().unwrap();
    verify_proof(
        root,
        Nibbles::unpack(keccak256(address)),
        account,
        &nodes(&json["accountProof"]),
    )
    .unwrap_or_else(|e| panic!("{address}: {e}\n{text}"));
    for slot in json["storageProof"].as_array().unwrap() {
        let value = quantity(&slot["value"]);
        let expected = (!value.is_zero()).then(|| alloy_rlp::encode(value));
        verify_proof(
            storage_hash,
            Nibbles::unpack(keccak256(hash(&slot["key"]))),
            expected,
            &nodes(&slot["proof"]),
        )
        .unwrap_or_else(|e| panic!("{address} {}: {e}", slot["key"]));
    }
}

/// `strata proof` prints eth_getProof JSON whose account and storage proofs
/// alloy-trie verifies against the datadir's root, for present and absent
/// accounts and slots.
#[test]
fn proof_prints_eth_get_proof_json_that_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let genesis = write_genesis(dir.path());
    let datadir = dir.path().join("db");
    let db = datadir.to_str().unwrap();
    strata_ok(&[
        "init",
        "--genesis",
        genesis.to_str().unwrap(),
        "--datadir",
        db,
    ]);
    let root = strata_ok(&["root", "--datadir", db])
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let absent = "0x00000000000000000000000000000000000000cc";
    for (address, exists) in [(ADDR_CONTRACT, true), (ADDR_EOA, true), (absent, false)] {
        let text = strata_ok(&["proof", "--datadir", db, address, "0x01", "0x02"]);
        assert!(
            text.contains(&format!("\"address\": \"{address}\"")),
            "{text}"
        );
        verify_proof_json(&text, root, exists);
    }
    let text = strata_ok(&["proof", "--datadir", db, ADDR_CONTRACT, "0x01"]);
    assert!(text.contains("\"value\": \"0x2a\""), "{text}");
}

/// `strata proof --block N` after a replay verifies against the trace's
/// root of block N, for accounts the next block read (their fields the
/// trace's prestate).
#[test]
fn proof_at_a_recent_block_verifies_against_that_blocks_root() {
    use strata_trace::{TraceLine, TraceReader};
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    let db = datadir.to_str().unwrap();
    let small = testdata().join("small.jsonl");
    strata_ok(&["replay", small.to_str().unwrap(), "--datadir", db]);
    let (_, roots) = trace_roots(&small);
    let file = std::io::BufReader::new(std::fs::File::open(&small).unwrap());
    let mut checked = 0;
    for line in TraceReader::new(file) {
        let TraceLine::Block(block) = line.unwrap() else {
            continue;
        };
        let before = block.number - 1;
        let Some(root) = roots.get(&before) else {
            continue;
        };
        for (address, read) in block.reads.iter().take(2) {
            let slots: Vec<String> = read.storage.keys().take(2).map(|s| s.to_string()).collect();
            let mut args = vec!["proof", "--datadir", db, "--block"];
            let before_text = before.to_string();
            let address_text = address.to_string();
            args.extend([before_text.as_str(), address_text.as_str()]);
            args.extend(slots.iter().map(String::as_str));
            let text = strata_ok(&args);
            assert!(
                text.contains(&format!("\"balance\": \"{:#x}\"", read.balance)),
                "{text}"
            );
            verify_proof_json(&text, *root, true);
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} proofs checked");
}
