//! What a mistyped flag may not do: an output flag named at a file of the
//! datadir or at an input of the same command is refused before anything
//! is read or written (the file's bytes unchanged, the datadir still at its
//! root); a configuration whose forks are out of order is refused before a
//! datadir is made; `serve --genesis` of another chain is refused; a final
//! flush that fails says the blocks are safe in the journal, and they are.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{read_json, strata_err, strata_ok};
use crate::gen_chain::gen_chain;

/// A generated chain (`chain/`) imported into `data/`; the import's stdout.
fn imported(dir: &Path) -> (PathBuf, PathBuf, String) {
    let out = dir.join("chain");
    gen_chain(&out, "1");
    let datadir = dir.join("data");
    let stdout = strata_ok(&[
        "import-chain",
        out.join("chain.rlp").to_str().unwrap(),
        "--genesis",
        out.join("genesis.json").to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
    ]);
    (out, datadir, stdout)
}

/// `args` as the `&str`s the command runners take.
fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Every file under `dir` with its bytes, sorted by path.
fn files_of(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_owned()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn output_flags_named_at_the_datadir_or_an_input_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (out, datadir, _) = imported(dir.path());
    let root = strata_ok(&["root", "--datadir", datadir.to_str().unwrap()]);
    let chain = out.join("chain.rlp");
    let genesis = out.join("genesis.json");
    let state_redb = datadir.join("state.redb");
    let segment = std::fs::read_dir(datadir.join("journal"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let before = files_of(&datadir);
    let inputs = (
        std::fs::read(&chain).unwrap(),
        std::fs::read(&genesis).unwrap(),
    );

    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let import = |flag: &str, target: &Path| {
        strata_err(&[
            "import-chain",
            &s(&chain),
            "--datadir",
            &s(&datadir),
            flag,
            &s(target),
        ])
    };
    for (flag, target) in [
        ("--trace-out", &state_redb),
        ("--trace-out", &segment),
        ("--json", &state_redb),
        ("--json", &datadir.join("journal").join("report.json")),
    ] {
        let refused = import(flag, target);
        assert!(
            refused.contains("is inside the datadir") && refused.contains(flag),
            "{flag} {target:?}: {refused}"
        );
    }
    // The input chain, also through a symlink to it, and the genesis.
    let link = dir.path().join("link.rlp");
    std::os::unix::fs::symlink(&chain, &link).unwrap();
    for (flag, target, input) in [
        ("--trace-out", &chain, "FILE.rlp"),
        ("--trace-out", &link, "FILE.rlp"),
        ("--json", &genesis, "--genesis"),
    ] {
        let refused = strata_err(&[
            "import-chain",
            &s(&chain),
            "--datadir",
            &s(&dir.path().join("new")),
            "--genesis",
            &s(&genesis),
            flag,
            &s(target),
        ]);
        assert!(
            refused.contains(&format!("this command reads ({input})")),
            "{flag} {target:?}: {refused}"
        );
    }
    assert!(!dir.path().join("new").exists(), "a refusal made a datadir");
    // Two outputs of one file.
    let both = dir.path().join("both");
    let refused = strata_err(&[
        "import-chain",
        &s(&chain),
        "--datadir",
        &s(&datadir),
        "--trace-out",
        &s(&both),
        "--json",
        &s(&both),
    ]);
    assert!(refused.contains("is also --trace-out's file"), "{refused}");

    // replay's outputs: the trace it reads, the datadir it writes.
    let trace = dir.path().join("t.jsonl");
    std::fs::copy(crate::common::testdata().join("small.jsonl"), &trace).unwrap();
    let replayed = dir.path().join("replayed");
    for (flag, target) in [("--json", &trace), ("--plot", &replayed.join("state.redb"))] {
        let refused = strata_err(&[
            "replay",
            &s(&trace),
            "--datadir",
            &s(&replayed),
            flag,
            &s(target),
        ]);
        assert!(refused.contains(flag), "{refused}");
    }
    // export's: inside the datadir it reads.
    let refused = strata_err(&[
        "export",
        "--datadir",
        &s(&datadir),
        "--out",
        &s(&state_redb),
    ]);
    assert!(refused.contains("is inside the datadir"), "{refused}");

    assert_eq!(
        files_of(&datadir),
        before,
        "a refused command changed the datadir"
    );
    assert_eq!(
        (
            std::fs::read(&chain).unwrap(),
            std::fs::read(&genesis).unwrap()
        ),
        inputs
    );
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        std::fs::read(crate::common::testdata().join("small.jsonl")).unwrap()
    );
    assert_eq!(strata_ok(&["root", "--datadir", &s(&datadir)]), root);
}

#[test]
fn reports_and_traces_appear_whole_beside_a_successful_import_only() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, _) = imported(dir.path());
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let report = dir.path().join("report.json");
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&report, "an older report").unwrap();
    // An import into `second` from `genesis`, writing the report and the trace.
    let import = |genesis: &Path| -> Vec<String> {
        [
            "import-chain",
            &s(&out.join("chain.rlp")),
            "--datadir",
            &s(&dir.path().join("second")),
            "--genesis",
            &s(genesis),
            "--json",
            &s(&report),
            "--trace-out",
            &s(&trace),
        ]
        .map(str::to_owned)
        .to_vec()
    };
    strata_ok(&strs(&import(&out.join("genesis.json"))));
    assert_eq!(read_json(&report)["command"], "import-chain");
    strata_ok(&["check-trace", &s(&trace)]);
    // A refused import (another chain's genesis) leaves both as they were.
    let other = dir.path().join("other");
    gen_chain(&other, "2");
    let (report_bytes, trace_bytes) = (
        std::fs::read(&report).unwrap(),
        std::fs::read(&trace).unwrap(),
    );
    strata_err(&strs(&import(&other.join("genesis.json"))));
    assert_eq!(std::fs::read(&report).unwrap(), report_bytes);
    assert_eq!(std::fs::read(&trace).unwrap(), trace_bytes);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".strata-"))
        .collect();
    assert!(names.is_empty(), "temporaries left: {names:?}");
}

#[test]
fn a_configuration_with_forks_out_of_order_is_refused_before_a_datadir_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    gen_chain(&out, "1");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let datadir = dir.path().join("data");
    // London at block 5 while Shanghai and Cancun are active at genesis:
    // before the (optional) glacier forks set at 0, and after the forks
    // active at the genesis once those are moved too.
    for (moved, later) in [
        (&["londonBlock"][..], "arrowGlacierBlock"),
        (
            &["londonBlock", "arrowGlacierBlock", "grayGlacierBlock"][..],
            "shanghaiTime",
        ),
    ] {
        let mut chain = read_json(&out.join("chain.json"));
        let mut genesis = read_json(&out.join("genesis.json"));
        for fork in moved {
            chain["config"][*fork] = 5.into();
            genesis["config"][*fork] = 5.into();
        }
        let bad_chain = dir.path().join("chain-london5.json");
        std::fs::write(&bad_chain, chain.to_string()).unwrap();
        let bad_genesis = dir.path().join("genesis-london5.json");
        std::fs::write(&bad_genesis, genesis.to_string()).unwrap();
        let refused = strata_err(&[
            "init",
            "--state",
            &s(&out.join("state.jsonl")),
            "--chain",
            &s(&bad_chain),
            "--datadir",
            &s(&datadir),
        ]);
        assert!(
            refused.contains("unsupported fork ordering")
                && refused.contains("londonBlock")
                && refused.contains(later),
            "{refused}"
        );
        let refused = strata_err(&[
            "import-chain",
            &s(&out.join("chain.rlp")),
            "--genesis",
            &s(&bad_genesis),
            "--datadir",
            &s(&datadir),
        ]);
        assert!(
            refused.contains("londonBlock") && refused.contains(later),
            "{refused}"
        );
    }
    assert!(!datadir.exists(), "a refused configuration made a datadir");
}

#[test]
fn serve_refuses_the_genesis_of_another_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (out, datadir, _) = imported(dir.path());
    let other = dir.path().join("other");
    gen_chain(&other, "2");
    let refused = strata_err(&[
        "serve",
        "--datadir",
        datadir.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--genesis",
        other.join("genesis.json").to_str().unwrap(),
    ]);
    assert!(refused.contains("holds another chain"), "{refused}");
    // Its own genesis is taken: the server starts (and is stopped).
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--http", "127.0.0.1:0", "--datadir"])
        .arg(&datadir)
        .arg("--genesis")
        .arg(out.join("genesis.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let started = std::io::BufRead::lines(stderr)
        .map_while(Result::ok)
        .any(|line| line.contains("at http://"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        started,
        "serve with the datadir's own genesis did not start"
    );
}

/// A datadir at the chain's first block, then the whole chain imported
/// under a file-size limit just above its database: the blocks go into the
/// journal, the final flush into state.redb fails.
#[test]
fn a_failed_final_flush_says_the_blocks_are_safe_in_the_journal_and_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    gen_chain(&out, "1");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let rlp = std::fs::read(out.join("chain.rlp")).unwrap();
    let first = alloy_rlp::Header::decode(&mut rlp.as_slice())
        .unwrap()
        .length_with_payload();
    let first_file = dir.path().join("first.rlp");
    std::fs::write(&first_file, &rlp[..first]).unwrap();
    let datadir = dir.path().join("data");
    strata_ok(&[
        "import-chain",
        &s(&first_file),
        "--genesis",
        &s(&out.join("genesis.json")),
        "--datadir",
        &s(&datadir),
    ]);
    let limit_kib = std::fs::metadata(datadir.join("state.redb")).unwrap().len() / 1024;
    // SIGXFSZ ignored (kept across exec): a write past the limit fails
    // with EFBIG instead of killing the process.
    let limited = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {limit_kib}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_strata"))
        .args([
            "import-chain",
            &s(&out.join("chain.rlp")),
            "--datadir",
            &s(&datadir),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&limited.stderr);
    assert!(!limited.status.success(), "{stderr}");
    assert!(
        stderr.contains("the final flush into state.redb failed")
            && stderr.contains("every committed block is safe in the journal"),
        "{stderr}"
    );
    // Without the limit the datadir opens at the chain's last block.
    let whole = tempfile::tempdir().unwrap();
    let (_, reference, _) = imported(whole.path());
    assert_eq!(
        strata_ok(&["root", "--datadir", &s(&datadir)]),
        strata_ok(&["root", "--datadir", &s(&reference)])
    );
    strata_ok(&["verify", "--datadir", &s(&datadir)]);
}
