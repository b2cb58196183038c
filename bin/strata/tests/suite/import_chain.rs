//! `strata import-chain`: consensus-test chains turned into what a client
//! imports — a geth genesis file (the fork schedule as a geth `config`,
//! the header fields, the `pre` allocation) and a file of RLP blocks —
//! executed over strata: every root, the resume after a partial file, the
//! transitions of the geth config (block forks, a merge by total
//! difficulty, ommers), the trace of the execution replayed without the
//! EVM, the in-memory baseline, and refusals of broken input. Over
//! generated chains: cold runs prefetching each block from the trace of an
//! earlier import (and a trace of another chain refused), and the baseline
//! preloaded from a state dump where the datadir was made by `init --state`.

use std::path::{Path, PathBuf};

use alloy_primitives::{B256, hex};
use serde_json::{Value, json};

use crate::common::{read_json, strata_err, strata_ok};
use crate::gen_chain::{gen_chain, hex_after};

/// A BlockchainTests case written as `genesis.json` and `chain.rlp`.
struct Chain {
    genesis: PathBuf,
    rlp: PathBuf,
    /// Every block's RLP, in order.
    blocks: Vec<Vec<u8>>,
    /// The state root after the last block.
    last_root: B256,
}

/// The geth `config` of a BlockchainTests network.
fn config_of(network: &str) -> Value {
    const BLOCK_FORKS: [&str; 10] = [
        "homesteadBlock",
        "eip150Block",
        "eip155Block",
        "eip158Block",
        "byzantiumBlock",
        "constantinopleBlock",
        "petersburgBlock",
        "istanbulBlock",
        "berlinBlock",
        "londonBlock",
    ];
    let mut config = json!({"chainId": 1});
    let mut through = |last: &str, at: u64| {
        for fork in BLOCK_FORKS {
            if config.get(fork).is_none() {
                config[fork] = json!(at);
            }
            if fork == last {
                break;
            }
        }
    };
    match network {
        "Cancun" => {
            through("londonBlock", 0);
            config["arrowGlacierBlock"] = json!(0);
            config["grayGlacierBlock"] = json!(0);
            config["terminalTotalDifficulty"] = json!(0);
            config["shanghaiTime"] = json!(0);
            config["cancunTime"] = json!(0);
        }
        "ArrowGlacierToParisAtDiffC0000" => {
            through("londonBlock", 0);
            config["arrowGlacierBlock"] = json!(0);
            config["terminalTotalDifficulty"] = json!(0xC0000);
        }
        "EIP158ToByzantiumAt5" => {
            through("eip158Block", 0);
            config["byzantiumBlock"] = json!(5);
        }
        "FrontierToHomesteadAt5" => config["homesteadBlock"] = json!(5),
        other => panic!("no geth config written for {other}"),
    }
    config
}

/// Writes case `name` of fixture `file` into `dir`.
fn chain_of(vectors: &Path, file: &str, name: &str, dir: &Path) -> Chain {
    let fixture = read_json(&vectors.join("ef_blockchain_tests").join(file));
    let case = &fixture[name];
    let header = &case["genesisBlockHeader"];
    let mut genesis = json!({
        "config": config_of(case["network"].as_str().unwrap()),
        "nonce": header["nonce"],
        "timestamp": header["timestamp"],
        "extraData": header["extraData"],
        "gasLimit": header["gasLimit"],
        "difficulty": header["difficulty"],
        "mixHash": header["mixHash"],
        "coinbase": header["coinbase"],
        "alloc": case["pre"],
    });
    for field in ["baseFeePerGas", "excessBlobGas", "blobGasUsed"] {
        if let Some(value) = header.get(field) {
            genesis[field] = value.clone();
        }
    }
    let genesis_path = dir.join("genesis.json");
    std::fs::write(&genesis_path, genesis.to_string()).unwrap();
    let blocks: Vec<Vec<u8>> = case["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| hex::decode(block["rlp"].as_str().unwrap()).unwrap())
        .collect();
    let rlp = dir.join("chain.rlp");
    std::fs::write(&rlp, blocks.concat()).unwrap();
    let last = case["blocks"].as_array().unwrap().last().unwrap();
    Chain {
        genesis: genesis_path,
        rlp,
        blocks,
        last_root: last["blockHeader"]["stateRoot"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
    }
}

fn import(chain: &Path, genesis: &Path, datadir: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "import-chain",
        chain.to_str().unwrap(),
        "--genesis",
        genesis.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    strata_ok(&args)
}

fn final_root(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("final root "))
        .unwrap_or_else(|| panic!("no final root in:\n{stdout}"))
        .to_string()
}

#[test]
fn a_cancun_chain_imports_resumes_and_its_trace_replays_without_the_evm() {
    let Some(vectors) = crate::common::vectors() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let chain = chain_of(
        &vectors,
        "ValidBlocks/bcEIP1559/tips.json",
        "tips_Cancun",
        dir.path(),
    );
    let count = chain.blocks.len();
    let expected = format!("{} at block {count}", chain.last_root);

    // Half the file, then the whole: the second run skips what the
    // datadir holds and resumes after it.
    let half = dir.path().join("half.rlp");
    std::fs::write(&half, chain.blocks[..count / 2].concat()).unwrap();
    let datadir = dir.path().join("data");
    let trace = dir.path().join("trace.jsonl");
    let first = import(
        &half,
        &chain.genesis,
        &datadir,
        &["--trace-out", trace.to_str().unwrap()],
    );
    assert!(
        first.contains(&format!("at block {}", count / 2)),
        "{first}"
    );
    let json = dir.path().join("import.json");
    let second = import(
        &chain.rlp,
        &chain.genesis,
        &datadir,
        &["--baseline", "memory", "--json", json.to_str().unwrap()],
    );
    assert_eq!(final_root(&second), expected);
    assert!(
        second.contains("execution over strata / over memory"),
        "{second}"
    );
    let report = read_json(&json);
    let databases: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["database"].as_str().unwrap())
        .collect();
    assert_eq!(databases, ["strata", "memory"]);
    assert_eq!(report["runs"][0]["blocks"], json!(count - count / 2));
    assert_eq!(report["runs"][1]["blocks"], json!(count - count / 2));
    assert!(report["execution_ratio"].as_f64().unwrap() > 0.0);
    // Where the CPU went: on Linux the process's time over the blocks (in
    // the kernel's ticks, 10 ms here: a short run may show none), its parts
    // by thread summing to it; elsewhere nothing claimed.
    if cfg!(target_os = "linux") {
        assert!(second.contains("CPU over the wall time:"), "{second}");
        assert!(second.contains("cores allow at most"), "{second}");
        let cpu = report["runs"][0]["cpu_s"].as_f64().unwrap();
        let parts = report["runs"][0]["cpu_by_thread_s"].as_object().unwrap();
        assert!(
            parts.contains_key("writer") && parts.contains_key("other"),
            "{parts:?}"
        );
        let sum: f64 = parts.values().map(|v| v.as_f64().unwrap()).sum();
        assert!((sum - cpu).abs() < 1e-6, "{sum} vs {cpu}");
    } else {
        assert!(report["runs"][0]["cpu_s"].is_null());
    }
    assert!(
        report["runs"][1]["cpu_s"].is_null(),
        "the baseline claims none"
    );

    // Rerunning a fully imported file executes nothing and changes nothing.
    let again = import(&chain.rlp, &chain.genesis, &datadir, &[]);
    assert_eq!(final_root(&again), expected);
    assert!(
        again.contains(&format!("0 blocks after block {count}")),
        "{again}"
    );

    // The trace of the first half replays to the same roots.
    let replayed = strata_ok(&["replay", trace.to_str().unwrap()]);
    let half_root = read_json(&vectors.join("ef_blockchain_tests/ValidBlocks/bcEIP1559/tips.json"))
        ["tips_Cancun"]["blocks"][count / 2 - 1]["blockHeader"]["stateRoot"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        replayed.contains(&format!("final root {half_root} at block {}", count / 2)),
        "{replayed}"
    );
}

#[test]
fn geth_config_transitions_merge_by_difficulty_and_ommers_import() {
    let Some(vectors) = crate::common::vectors() else {
        return;
    };
    for (file, name) in [
        (
            "TransitionTests/bcArrowGlacierToParis/powToPosTest.json",
            "powToPosTest_ArrowGlacierToParisAtDiffC0000",
        ),
        (
            "TransitionTests/bcEIP158ToByzantium/ByzantiumTransition.json",
            "ByzantiumTransition_EIP158ToByzantiumAt5",
        ),
        (
            "TransitionTests/bcFrontierToHomestead/UnclePopulation.json",
            "UnclePopulation_FrontierToHomesteadAt5",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let chain = chain_of(&vectors, file, name, dir.path());
        let out = import(
            &chain.rlp,
            &chain.genesis,
            &dir.path().join("data"),
            &[
                "--warmers",
                "0,2",
                "--state-path",
                "bundle,writer",
                "--root",
                "streamed,after",
                "--baseline",
                "memory",
            ],
        );
        assert_eq!(
            final_root(&out),
            format!("{} at block {}", chain.last_root, chain.blocks.len()),
            "{name}"
        );
    }
}

#[test]
fn broken_input_is_refused_and_what_was_imported_stays() {
    let Some(vectors) = crate::common::vectors() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let chain = chain_of(
        &vectors,
        "ValidBlocks/bcEIP1559/tips.json",
        "tips_Cancun",
        dir.path(),
    );
    let datadir = dir.path().join("data");
    let (genesis, datadir_arg) = (chain.genesis.to_str().unwrap(), datadir.to_str().unwrap());

    // The file ends inside block 4: blocks 1 to 3 are committed, the
    // error names the offset where block 4 starts.
    let cut = dir.path().join("cut.rlp");
    let mut bytes = chain.blocks[..4].concat();
    bytes.truncate(bytes.len() - 10);
    std::fs::write(&cut, &bytes).unwrap();
    // Read ahead on a thread of their own (the default) or inline, the
    // error is the same; the second run resumes after block 3.
    let offset = chain.blocks[..3].concat().len();
    for senders in ["ahead", "inline"] {
        let error = strata_err(&[
            "import-chain",
            cut.to_str().unwrap(),
            "--genesis",
            genesis,
            "--datadir",
            datadir_arg,
            "--senders",
            senders,
        ]);
        assert!(
            error.contains(&format!(
                "the block at byte offset {offset} does not decode"
            )),
            "{senders}: {error}"
        );
        let root = strata_ok(&["root", "--datadir", datadir_arg]);
        assert!(root.starts_with("3 "), "{senders}: {root}");
    }

    // A block whose state root is wrong is refused by name; nothing of it
    // is written.
    let mut wrong = chain.blocks[3].clone();
    let position = wrong
        .windows(32)
        .position(|w| w == read_root(&vectors, 3).as_slice())
        .unwrap();
    wrong[position] ^= 1;
    let bad = dir.path().join("bad.rlp");
    std::fs::write(&bad, [chain.blocks[..3].concat(), wrong].concat()).unwrap();
    let error = strata_err(&[
        "import-chain",
        bad.to_str().unwrap(),
        "--genesis",
        genesis,
        "--datadir",
        datadir_arg,
    ]);
    assert!(
        error.contains("block 4") && error.contains("header says"),
        "{error}"
    );
    let root = strata_ok(&["root", "--datadir", datadir_arg]);
    assert!(root.starts_with("3 "), "{root}");

    // Another genesis (one balance changed) is not this datadir's chain.
    let text = std::fs::read_to_string(&chain.genesis).unwrap();
    let mut other: Value = serde_json::from_str(&text).unwrap();
    let first = other["alloc"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    other["alloc"][&first]["balance"] = json!("0x1234");
    let other_path = dir.path().join("other.json");
    std::fs::write(&other_path, other.to_string()).unwrap();
    let error = strata_err(&[
        "import-chain",
        chain.rlp.to_str().unwrap(),
        "--genesis",
        other_path.to_str().unwrap(),
        "--datadir",
        datadir_arg,
    ]);
    assert!(error.contains("holds another chain"), "{error}");
}

/// The state root the fixture gives block `index` (0-based).
fn read_root(vectors: &Path, index: usize) -> B256 {
    read_json(&vectors.join("ef_blockchain_tests/ValidBlocks/bcEIP1559/tips.json"))["tips_Cancun"]
        ["blocks"][index]["blockHeader"]["stateRoot"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// SIGKILL at seeded random moments: the datadir always holds a block of
/// the chain with that block's root (a finished import is started again,
/// so that later kills land part way), and a last run completes it.
#[test]
fn a_killed_import_leaves_a_block_of_the_chain_and_resumes() {
    use rand::{Rng, SeedableRng};
    use std::process::{Command, Stdio};
    let Some(vectors) = crate::common::vectors() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (file, name) = ("ValidBlocks/bcGasPricerTest/notxs.json", "notxs_Cancun");
    let chain = chain_of(&vectors, file, name, dir.path());
    let fixture = read_json(&vectors.join("ef_blockchain_tests").join(file));
    let genesis_root: B256 = fixture[name]["genesisBlockHeader"]["stateRoot"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let roots: Vec<B256> = fixture[name]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            b["blockHeader"]["stateRoot"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    let datadir = dir.path().join("data");
    let mut rng = rand::rngs::StdRng::seed_from_u64(29);
    for kill in 0..12 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["import-chain", chain.rlp.to_str().unwrap(), "--genesis"])
            .arg(&chain.genesis)
            .arg("--datadir")
            .arg(&datadir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(rng.random_range(5..120)));
        let _ = child.kill();
        let _ = child.wait();
        if !datadir.join(strata_storage::DB_FILE).exists() {
            continue;
        }
        let db = strata_storage::StateDb::open(&datadir, strata_storage::Options::default())
            .unwrap_or_else(|e| panic!("kill {kill}: reopen: {e}"));
        eprintln!("kill {kill}: the datadir holds block {:?}", db.last_block());
        if let Some(last) = db.last_block() {
            let expected = match last {
                0 => genesis_root,
                n => roots[n as usize - 1],
            };
            assert_eq!(db.root(), expected, "kill {kill}: block {last}");
        }
        let complete = db.last_block() == Some(roots.len() as u64);
        db.close().unwrap();
        if complete {
            // Imported before the kill: start again, to kill a later run
            // part way.
            std::fs::remove_dir_all(&datadir).unwrap();
        }
    }
    let out = import(&chain.rlp, &chain.genesis, &datadir, &[]);
    assert_eq!(
        final_root(&out),
        format!("{} at block {}", chain.last_root, chain.blocks.len())
    );
}

/// The state root a block trace's line for `block` records.
fn traced_root(trace: &Path, block: u64) -> String {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["kind"] == "block" && line["number"] == json!(block))
        .unwrap_or_else(|| panic!("no block {block} in {}", trace.display()))["state_root"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_cold_import_prefetching_its_own_trace_reaches_the_same_root_and_another_chains_trace_is_refused()
 {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let root = hex_after(&gen_chain(&out, "7"), "state root ").to_owned();
    let (rlp, genesis) = (out.join("chain.rlp"), out.join("genesis.json"));
    let expected = format!("{root} at block 4");

    let trace = dir.path().join("trace.jsonl");
    let traced = import(
        &rlp,
        &genesis,
        &dir.path().join("traced"),
        &["--trace-out", trace.to_str().unwrap()],
    );
    assert_eq!(final_root(&traced), expected);
    assert!(traced.contains("cold false"), "{traced}");

    // Both runs of the sweep cold, both prefetching: the warmers load what
    // the trace lists, and only they do.
    let json = dir.path().join("import.json");
    let prefetched = import(
        &rlp,
        &genesis,
        &dir.path().join("prefetched"),
        &[
            "--prefetch",
            trace.to_str().unwrap(),
            "--cold",
            "--warmers",
            "0,2",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(final_root(&prefetched), expected);
    assert!(prefetched.contains("cold true"), "{prefetched}");
    assert!(
        prefetched.contains("(0 warmers: prefetch does nothing)"),
        "{prefetched}"
    );
    let report = read_json(&json);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["cold"], json!(true), "{run}");
        assert_eq!(run["prefetch"], json!(trace.to_str().unwrap()), "{run}");
        assert_eq!(run["blocks"], json!(4), "{run}");
        let per_block: u64 = run["per_block"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["prefetched"].as_u64().unwrap())
            .sum();
        assert_eq!(run["prefetched"].as_u64(), Some(per_block), "{run}");
        // Each block's warmers start loading before its checks and
        // execution; a commit stops them only after those.
        let warmers = run["warmers"].as_u64().unwrap();
        assert_eq!(per_block > 0, warmers > 0, "{warmers} warmers: {run}");
    }

    // Another chain (another seed: other accounts) is refused at its first
    // block, naming the trace, the block and both roots; nothing of the
    // block is written.
    let other = dir.path().join("other");
    gen_chain(&other, "8");
    let datadir = dir.path().join("refused");
    let error = strata_err(&[
        "import-chain",
        other.join("chain.rlp").to_str().unwrap(),
        "--genesis",
        other.join("genesis.json").to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        "--prefetch",
        trace.to_str().unwrap(),
    ]);
    assert!(
        error.contains(&format!("--prefetch {} is not a trace of", trace.display()))
            && error.contains("block 1 has state root")
            && error.contains(&traced_root(&trace, 1)),
        "{error}"
    );
    let at = strata_ok(&["root", "--datadir", datadir.to_str().unwrap()]);
    assert!(at.starts_with("0 "), "{at}");

    // A trace that ends early: the blocks it lists are imported, the first
    // it does not is refused by number.
    let text = std::fs::read_to_string(&trace).unwrap();
    let short = dir.path().join("short.jsonl");
    std::fs::write(&short, text.lines().take(3).collect::<Vec<_>>().join("\n")).unwrap();
    let datadir = dir.path().join("short");
    let error = strata_err(&[
        "import-chain",
        rlp.to_str().unwrap(),
        "--genesis",
        genesis.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        "--prefetch",
        short.to_str().unwrap(),
    ]);
    assert!(
        error.contains("no access list for block 3 (its blocks end at block 2)"),
        "{error}"
    );
    let at = strata_ok(&["root", "--datadir", datadir.to_str().unwrap()]);
    assert!(at.starts_with("2 "), "{at}");
}

#[test]
fn the_memory_baseline_starts_from_the_state_dump_of_a_datadir_made_by_init() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let root = hex_after(&gen_chain(&out, "11"), "state root ").to_owned();
    let path = |name: &str| out.join(name).to_str().unwrap().to_owned();
    let datadir = dir.path().join("datadir");
    let datadir = datadir.to_str().unwrap();
    crate::gen_chain::init_from(&out, datadir, None);
    let rlp = path("chain.rlp");
    let base = ["import-chain", rlp.as_str(), "--datadir", datadir];
    // The import with the in-memory baseline preloaded from `dump`, and more.
    let with_dump = |dump: &str, more: &[&str]| -> Vec<String> {
        [
            &base[..],
            &["--baseline", "memory", "--baseline-state", dump],
            more,
        ]
        .concat()
        .into_iter()
        .map(str::to_owned)
        .collect()
    };
    let refused =
        |args: Vec<String>| strata_err(&args.iter().map(String::as_str).collect::<Vec<_>>());

    // Neither a genesis nor a dump: a usage error before anything runs.
    let error = strata_err(&[&base[..], &["--baseline", "memory"]].concat());
    assert!(
        error.contains("give --genesis, or --baseline-state"),
        "{error}"
    );
    // The dump of another chain is not the state block 1 builds on.
    let other = dir.path().join("other");
    gen_chain(&other, "12");
    let other_dump = other.join("state.jsonl");
    let error = refused(with_dump(other_dump.to_str().unwrap(), &[]));
    assert!(
        error.contains("is the state with root") && error.contains("builds on block 0"),
        "{error}"
    );
    // A dump with a genesis is one start too many.
    let error = refused(with_dump(
        &path("state.jsonl"),
        &["--genesis", &path("genesis.json")],
    ));
    assert!(error.contains("--baseline-state"), "{error}");
    // A dump whose accounts do not give its first line's root is refused
    // before a block is imported.
    let text = std::fs::read_to_string(path("state.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut account: Value = serde_json::from_str(&lines[1]).unwrap();
    account["balance"] = json!("0x1234567");
    lines[1] = account.to_string();
    let tampered = dir.path().join("tampered.jsonl");
    std::fs::write(&tampered, lines.join("\n")).unwrap();
    let error = refused(with_dump(tampered.to_str().unwrap(), &[]));
    assert!(
        error.contains("but its accounts give") && error.contains("tampered.jsonl"),
        "{error}"
    );
    let at = strata_ok(&["root", "--datadir", datadir]);
    assert!(at.starts_with("0 "), "nothing was imported: {at}");

    let json = dir.path().join("import.json");
    let imported = strata_ok(
        &with_dump(&path("state.jsonl"), &["--json", json.to_str().unwrap()])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(final_root(&imported), format!("{root} at block 4"));
    assert!(
        imported.contains(&format!("preloaded from {}", path("state.jsonl")))
            && imported.contains("execution over strata / over memory"),
        "{imported}"
    );
    let report = read_json(&json);
    let databases: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["database"].as_str().unwrap())
        .collect();
    assert_eq!(databases, ["strata", "memory"]);
    assert_eq!(report["runs"][0]["blocks"], json!(4));
    assert_eq!(report["runs"][1]["blocks"], json!(4));
    assert_eq!(report["runs"][1]["preloaded"], json!(path("state.jsonl")));
    assert!(report["execution_ratio"].as_f64().unwrap() > 0.0);
}

/// A datadir made by `init --state` traces its import without a genesis
/// line: the trace replays from the state dump and the genesis file to the
/// chain's roots, a cold import of another such datadir prefetches from it,
/// and a datadir already past the chain's start is refused a trace.
#[test]
fn a_trace_from_a_datadir_made_by_init_replays_from_the_dump_and_prefetches() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let root = hex_after(&gen_chain(&out, "13"), "state root ").to_owned();
    let path = |name: &str| out.join(name).to_str().unwrap().to_owned();
    let rlp = path("chain.rlp");
    let expected = format!("{root} at block 4");

    let traced = dir.path().join("traced");
    let traced = traced.to_str().unwrap();
    crate::gen_chain::init_from(&out, traced, None);
    let trace = dir.path().join("trace.jsonl");
    let trace = trace.to_str().unwrap();
    let imported = strata_ok(&[
        "import-chain",
        &rlp,
        "--datadir",
        traced,
        "--trace-out",
        trace,
    ]);
    assert_eq!(final_root(&imported), expected);
    let kinds: Vec<(String, u64)> = std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|line| {
            (
                line["kind"].as_str().unwrap().to_owned(),
                line["number"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let blocks: Vec<(String, u64)> = (1..=4).map(|n| ("block".to_owned(), n)).collect();
    assert_eq!(kinds, blocks, "block lines only, from block 1");
    assert_eq!(traced_root(Path::new(trace), 4), root);

    // The blocks build on the dump's state, as on the genesis file's.
    let replayed = strata_ok(&["replay", trace, "--genesis", &path("state.jsonl")]);
    assert!(
        replayed.contains(&format!("final root {expected}")),
        "{replayed}"
    );
    let checked = strata_ok(&["check-trace", trace, "--genesis", &path("genesis.json")]);
    assert!(checked.contains("ok: 4 blocks, 4 roots"), "{checked}");

    // Past the chain's start there is no state for the trace to start from.
    let error = strata_err(&[
        "import-chain",
        &rlp,
        "--datadir",
        traced,
        "--trace-out",
        dir.path().join("again.jsonl").to_str().unwrap(),
    ]);
    assert!(
        error.contains("already holds blocks up to 4") && error.contains("--trace-out"),
        "{error}"
    );

    let cold = dir.path().join("cold");
    let cold = cold.to_str().unwrap();
    crate::gen_chain::init_from(&out, cold, None);
    let json = dir.path().join("cold.json");
    let prefetched = strata_ok(&[
        "import-chain",
        &rlp,
        "--datadir",
        cold,
        "--cold",
        "--warmers",
        "2",
        "--prefetch",
        trace,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(final_root(&prefetched), expected);
    let report = read_json(&json);
    assert!(
        report["runs"][0]["prefetched"].as_u64().unwrap() > 0,
        "{report}"
    );
}
