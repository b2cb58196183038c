//! `strata export`: the last block's state as a line-by-line dump, whose
//! accounts rebuild the datadir's root through the independent model.

use strata_storage::genesis::parse_alloc_json;
use strata_trace::model::WorldState;

use crate::common::{strata, strata_err, strata_ok, testdata};

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
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The mode of a file written with `>` (0666 less the umask), not a temp file's 0600.
        let reference = dir.path().join("reference");
        std::fs::write(&reference, b"").unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&out), mode(&reference));
    }
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

/// `export` → `init --state` is a round trip: the imported datadir has the
/// exported root at the given block and hash, reads the same accounts,
/// exports the same dump and verifies clean; a dump whose root does not
/// match, or that repeats an account, leaves no datadir state behind.
#[test]
fn init_state_imports_what_export_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let s = source.to_str().unwrap();
    let small = testdata().join("small.jsonl");
    strata_ok(&["replay", small.to_str().unwrap(), "--datadir", s]);
    let dump = dir.path().join("state.jsonl");
    let dump_path = dump.to_str().unwrap();
    strata_ok(&["export", "--datadir", s, "--out", dump_path]);
    let text = std::fs::read_to_string(&dump).unwrap();
    let root = text.lines().next().unwrap()[9..75].to_owned();

    let imported = dir.path().join("imported");
    let i = imported.to_str().unwrap();
    let hash = format!("0x{}", "ab".repeat(32));
    let out = strata_ok(&[
        "init",
        "--datadir",
        i,
        "--state",
        dump_path,
        "--block",
        "4242",
        "--block-hash",
        &hash,
    ]);
    assert!(out.contains("imported: 366 accounts"), "{out}");
    assert_eq!(out.lines().last(), Some(root.as_str()), "{out}");
    let head = strata_ok(&["root", "--datadir", i]);
    assert!(head.contains("4242") && head.contains(&root), "{head}");
    let again = strata(&["export", "--datadir", i]);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
    strata_ok(&["verify", "--datadir", i]);
    let err = strata_err(&["init", "--datadir", i, "--state", dump_path]);
    assert!(err.contains("already"), "{err}");

    // A wrong root: refused, nothing written.
    let wrong = dir.path().join("wrong.jsonl");
    let bad_root = format!("0x{}", "11".repeat(32));
    std::fs::write(&wrong, text.replacen(&root, &bad_root, 1)).unwrap();
    let target = dir.path().join("refused");
    let t = target.to_str().unwrap();
    let err = strata_err(&["init", "--datadir", t, "--state", wrong.to_str().unwrap()]);
    assert!(
        err.contains(&root) && err.contains("nothing was written"),
        "{err}"
    );
    // A repeated account line, then a broken one: each refused and named.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.push(lines[5]);
    let repeated = dir.path().join("repeated.jsonl");
    std::fs::write(&repeated, lines.join("\n")).unwrap();
    let err = strata_err(&[
        "init",
        "--datadir",
        t,
        "--state",
        repeated.to_str().unwrap(),
    ]);
    assert!(err.contains("appears twice"), "{err}");
    lines.pop();
    lines.insert(3, "{\"address\": 12}");
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, lines.join("\n")).unwrap();
    let err = strata_err(&["init", "--datadir", t, "--state", broken.to_str().unwrap()]);
    assert!(err.contains("broken.jsonl: line 4"), "{err}");
    let head = strata_ok(&["root", "--datadir", t]);
    assert!(head.starts_with("none "), "still empty: {head}");
    let import_run = strata_ok(&["init", "--datadir", t, "--state", dump_path]);
    assert_eq!(import_run.lines().last(), Some(root.as_str()));
}

/// `gen-trace --state-out` writes the genesis as a state dump and the trace
/// without its genesis line; `replay --genesis DUMP` imports it and reaches
/// the same roots as the trace with the genesis line (and `check-trace`'s
/// roots: the replay checks every block's stated root).
#[test]
fn a_trace_with_its_state_in_a_dump_replays_like_one_with_a_genesis_line() {
    let dir = tempfile::tempdir().unwrap();
    let whole = crate::common::gen_trace(dir.path(), "whole.jsonl", 400, 6, 5);
    let split = dir.path().join("split.jsonl");
    let state = dir.path().join("state.jsonl");
    strata_ok(&[
        "gen-trace",
        "--accounts",
        "400",
        "--contracts",
        "20",
        "--blocks",
        "6",
        "--seed",
        "5",
        "--out",
        split.to_str().unwrap(),
        "--state-out",
        state.to_str().unwrap(),
    ]);
    let (genesis_root, roots) = crate::common::trace_roots(&whole);
    let (none, split_roots) = crate::common::trace_roots(&split);
    assert_eq!(none, None, "no genesis line");
    assert_eq!(split_roots, roots);
    let dump = std::fs::read_to_string(&state).unwrap();
    let first = dump.lines().next().unwrap();
    assert!(
        first.contains(&genesis_root.unwrap().to_string()),
        "{first}"
    );

    let from_line = strata_ok(&["replay", whole.to_str().unwrap()]);
    let from_dump = strata_ok(&[
        "replay",
        split.to_str().unwrap(),
        "--genesis",
        state.to_str().unwrap(),
    ]);
    let last = roots.values().last().unwrap().to_string();
    assert_eq!(crate::common::final_root(&from_line), last);
    assert_eq!(crate::common::final_root(&from_dump), last);
}

/// A datadir still at a dump's block resumes only from that dump (another
/// state is refused), and a failed write of `--state-out` names that file.
#[test]
fn a_dump_is_checked_on_resume_and_its_write_errors_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let gen_split = |seed: &str, name: &str| {
        let trace = dir.path().join(format!("{name}.jsonl"));
        let state = dir.path().join(format!("{name}-state.jsonl"));
        strata_ok(&[
            "gen-trace",
            "--accounts",
            "200",
            "--contracts",
            "10",
            "--blocks",
            "3",
            "--seed",
            seed,
            "--out",
            trace.to_str().unwrap(),
            "--state-out",
            state.to_str().unwrap(),
        ]);
        (trace, state)
    };
    let (trace, state) = gen_split("1", "a");
    let (_, other_state) = gen_split("2", "b");
    let datadir = dir.path().join("dd");
    let d = datadir.to_str().unwrap();
    strata_ok(&["init", "--datadir", d, "--state", state.to_str().unwrap()]);
    let t = trace.to_str().unwrap();
    let err = strata_err(&[
        "replay",
        t,
        "--datadir",
        d,
        "--genesis",
        other_state.to_str().unwrap(),
    ]);
    assert!(err.contains("b-state.jsonl"), "{err}");
    let out = strata_ok(&[
        "replay",
        t,
        "--datadir",
        d,
        "--genesis",
        state.to_str().unwrap(),
    ]);
    assert!(out.contains("at block 3"), "{out}");

    if std::path::Path::new("/dev/full").exists() {
        let err = strata_err(&[
            "gen-trace",
            "--accounts",
            "200",
            "--contracts",
            "10",
            "--blocks",
            "1",
            "--out",
            dir.path().join("c.jsonl").to_str().unwrap(),
            "--state-out",
            "/dev/full",
        ]);
        assert!(err.contains("/dev/full"), "{err}");
    }
}

/// An account too large to hold whole (120,000 slots: a 16.6 MB line, longer
/// than the default import holds) goes through `init --state` streamed and
/// comes back from `export` byte for byte; that export imports again to the
/// same root.
#[test]
fn a_large_account_round_trips_through_init_and_export() {
    use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
    use strata_storage::dump::DumpWriter;
    use strata_storage::genesis::{GenesisAccount, GenesisAlloc};

    let mut alloc = GenesisAlloc::new();
    alloc.insert(
        Address::repeat_byte(0x11),
        GenesisAccount {
            nonce: 3,
            balance: U256::from(10),
            ..GenesisAccount::default()
        },
    );
    alloc.insert(
        Address::repeat_byte(0x22),
        GenesisAccount {
            nonce: 1,
            code: Bytes::from_static(&[0x60, 0x01, 0x00]),
            storage: (1..=120_000u64)
                .map(|i| (keccak256(i.to_be_bytes()), U256::from(i)))
                .collect(),
            ..GenesisAccount::default()
        },
    );
    let root: B256 = WorldState::from_alloc(&alloc).state_root();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("large.jsonl");
    let mut writer = DumpWriter::new(Vec::new(), root).unwrap();
    for (address, account) in &alloc {
        let storage = account.storage.iter().map(|(s, v)| (*s, *v));
        writer
            .account(
                *address,
                account.nonce,
                account.balance,
                &account.code,
                storage,
            )
            .unwrap();
    }
    let text = writer.into_inner();
    assert!(text.len() > 16_000_000, "{} bytes", text.len());
    std::fs::write(&dump, &text).unwrap();

    let first = dir.path().join("first");
    let f = first.to_str().unwrap();
    let out = strata_ok(&["init", "--datadir", f, "--state", dump.to_str().unwrap()]);
    assert!(out.contains("120000 slots"), "{out}");
    assert!(out.contains("1 accounts streamed"), "{out}");
    assert_eq!(out.lines().last(), Some(root.to_string().as_str()), "{out}");
    let exported = dir.path().join("exported.jsonl");
    let e = exported.to_str().unwrap();
    strata_ok(&["export", "--datadir", f, "--out", e]);
    assert!(
        std::fs::read(&exported).unwrap() == text,
        "export differs from the dump"
    );

    let second = dir.path().join("second");
    let out = strata_ok(&["init", "--datadir", second.to_str().unwrap(), "--state", e]);
    assert_eq!(out.lines().last(), Some(root.to_string().as_str()), "{out}");
}

/// The root line of a dump and the root the independent model gives its
/// accounts.
fn dump_roots(text: &str) -> (String, String) {
    let mut lines = text.lines();
    let first: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let mut alloc = serde_json::Map::new();
    for line in lines {
        let mut account: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).unwrap();
        let address = account.remove("address").unwrap();
        account.remove("codeHash");
        alloc.insert(address.as_str().unwrap().to_owned(), account.into());
    }
    let alloc = parse_alloc_json(&serde_json::Value::Object(alloc).to_string()).unwrap();
    (
        first["root"].as_str().unwrap().to_owned(),
        WorldState::from_alloc(&alloc).state_root().to_string(),
    )
}

/// `export --block N` of a datadir made with history: each block's dump
/// rebuilds, through the independent model, the root the block had —
/// read below redb's head through the history files (a flush every block).
#[test]
fn export_at_an_old_block_of_a_history_datadir_rebuilds_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain");
    crate::gen_chain::gen_chain(&chain, "9");
    let datadir = dir.path().join("dd");
    let d = datadir.to_str().unwrap();
    strata_ok(&[
        "import-chain",
        chain.join("chain.rlp").to_str().unwrap(),
        "--datadir",
        d,
        "--genesis",
        chain.join("genesis.json").to_str().unwrap(),
        "--history",
        "full",
        "--flush-mib",
        "1",
        "--memory-mib",
        "1",
    ]);
    let mut roots = Vec::new();
    for block in 0..=4u64 {
        let text = strata_ok(&["export", "--datadir", d, "--block", &block.to_string()]);
        let (stored, model) = dump_roots(&text);
        assert_eq!(stored, model, "block {block}");
        roots.push(stored);
    }
    roots.dedup();
    assert_eq!(roots.len(), 5, "every block its own state: {roots:?}");
    let head = strata_ok(&["root", "--datadir", d]);
    assert!(head.contains(&roots[4]), "{head}");
}
