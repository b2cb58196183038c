//! `strata gen-chain`: a small generated chain of real transactions
//! imported by `strata import-chain` over strata, ending at the root the
//! generator's own execution gave — from its genesis, or from its state
//! dump and chain file through `init --state --chain` and then with no
//! genesis at all; the same seed gives the same files; settings out of
//! range are refused.

use crate::common::{strata, strata_err, strata_ok};

/// `strata gen-chain` with a small state and 2 Mgas blocks; its stderr.
pub(crate) fn gen_chain(out: &std::path::Path, seed: &str) -> String {
    gen_chain_with(out, seed, &[])
}

/// [`gen_chain`] with `extra` arguments (e.g. `--fork amsterdam`).
pub(crate) fn gen_chain_with(out: &std::path::Path, seed: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "gen-chain",
        "--accounts",
        "300",
        "--contracts",
        "30",
        "--blocks",
        "4",
        "--gas-per-block",
        "2000000",
        "--seed",
        seed,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = strata(&args);
    assert!(
        run.status.success(),
        "gen-chain failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8(run.stderr).expect("utf-8 stderr")
}

/// `strata init` of `datadir` from the `state.jsonl` and `chain.json`
/// that gen-chain wrote to `out`, with the genesis `hash` checked when
/// given; its stdout.
pub(crate) fn init_from(out: &std::path::Path, datadir: &str, hash: Option<&str>) -> String {
    let path = |name: &str| out.join(name).to_str().unwrap().to_owned();
    let (state, chain) = (path("state.jsonl"), path("chain.json"));
    let mut args = vec![
        "init",
        "--state",
        &state,
        "--chain",
        &chain,
        "--datadir",
        datadir,
    ];
    if let Some(hash) = hash {
        args.extend(["--block-hash", hash]);
    }
    strata_ok(&args)
}

/// The 0x… word after `marker` in `text`.
pub(crate) fn hex_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("no `{marker}` in {text}"))
        + marker.len();
    text[start..].split([' ', ',', '\n']).next().unwrap()
}

#[test]
fn a_generated_chain_imports_over_strata_to_the_generators_root() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let told = gen_chain(&out, "3");
    assert!(told.contains("0 reverted"), "{told}");
    let root = hex_after(&told, "state root ");
    assert_eq!(root.len(), 66, "{told}");

    let datadir = dir.path().join("datadir");
    let imported = strata_ok(&[
        "import-chain",
        out.join("chain.rlp").to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        "--genesis",
        out.join("genesis.json").to_str().unwrap(),
        "--root",
        "streamed,after",
        "--senders",
        "ahead,inline",
    ]);
    assert!(
        imported.contains(&format!("final root {root} at block 4")),
        "{imported}"
    );
    // The streamed root folded the blocks' transactions as they ended, the
    // senders were recovered ahead and inline; every run reached the
    // generator's root (a sweep that disagrees fails).
    assert!(
        imported.contains("root streamed, senders ahead,"),
        "{imported}"
    );
    assert!(
        imported.contains("root after, senders inline,"),
        "{imported}"
    );
    assert!(imported.contains("folds per block"), "{imported}");
    assert!(
        imported.contains("senders recovered ahead, on the reading thread"),
        "{imported}"
    );

    let again = dir.path().join("again");
    gen_chain(&again, "3");
    for file in ["genesis.json", "state.jsonl", "chain.json", "chain.rlp"] {
        assert!(
            std::fs::read(out.join(file)).unwrap() == std::fs::read(again.join(file)).unwrap(),
            "{file} differs between two runs of one seed"
        );
    }
}

#[test]
fn a_datadir_made_by_init_from_the_state_dump_imports_the_chain_without_a_genesis() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let told = gen_chain(&out, "5");
    let root = hex_after(&told, "state root ");
    let genesis_hash = hex_after(&told, "hash ").trim_end_matches(')');
    let path = |name: &str| out.join(name).to_str().unwrap().to_owned();

    let datadir = dir.path().join("datadir");
    let datadir = datadir.to_str().unwrap();
    // A hash other than the chain's genesis is refused before anything is written.
    let wrong = strata_err(&[
        "init",
        "--state",
        &path("state.jsonl"),
        "--chain",
        &path("chain.json"),
        "--block-hash",
        &format!("0x{}", "11".repeat(32)),
        "--datadir",
        datadir,
    ]);
    assert!(wrong.contains("is not the hash of the block"), "{wrong}");
    init_from(&out, datadir, Some(genesis_hash));
    // The first half, then the rest: the second run resumes after block 2
    // (the file's first blocks checked against the datadir's hashes).
    let (first, rest) = split_chain(&std::fs::read(path("chain.rlp")).unwrap(), 2);
    let first_file = dir.path().join("first.rlp");
    std::fs::write(&first_file, first).unwrap();
    let imported = strata_ok(&[
        "import-chain",
        first_file.to_str().unwrap(),
        "--datadir",
        datadir,
    ]);
    assert!(imported.contains("at block 2"), "{imported}");
    let rest_file = dir.path().join("rest.rlp");
    std::fs::write(&rest_file, rest).unwrap();
    let imported = strata_ok(&[
        "import-chain",
        rest_file.to_str().unwrap(),
        "--datadir",
        datadir,
    ]);
    assert!(
        imported.contains(&format!("final root {root} at block 4")),
        "{imported}"
    );

    // A datadir that records no chain asks for the genesis.
    let bare = dir.path().join("bare");
    strata_ok(&[
        "init",
        "--state",
        &path("state.jsonl"),
        "--datadir",
        bare.to_str().unwrap(),
    ]);
    let refused = strata_err(&[
        "import-chain",
        &path("chain.rlp"),
        "--datadir",
        bare.to_str().unwrap(),
    ]);
    assert!(
        refused.contains("records no chain configuration"),
        "{refused}"
    );
}

/// `rlp` (blocks one after the other) cut after its first `blocks` blocks.
fn split_chain(rlp: &[u8], blocks: usize) -> (Vec<u8>, Vec<u8>) {
    let mut offset = 0;
    for _ in 0..blocks {
        let header = alloy_rlp::Header::decode(&mut &rlp[offset..]).unwrap();
        offset += header.length_with_payload();
    }
    (rlp[..offset].to_vec(), rlp[offset..].to_vec())
}

#[test]
fn settings_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let out = out.to_str().unwrap();
    let base = ["gen-chain", "--contracts", "1", "--out", out];
    let too_little_gas = strata_err(
        &[
            &base[..],
            &["--accounts", "5", "--blocks", "1", "--gas-per-block", "10"],
        ]
        .concat(),
    );
    assert!(
        too_little_gas.contains("--gas-per-block"),
        "{too_little_gas}"
    );
    let nobody = strata_err(&[&base[..], &["--accounts", "0", "--blocks", "1"]].concat());
    assert!(nobody.contains("--accounts"), "{nobody}");
    assert!(!std::path::Path::new(out).join("chain.rlp").exists());
}

/// `gen-chain --fork amsterdam` writes each block's access list beside the
/// chain; `import-chain --access-lists` takes them with the blocks (used
/// and ignored, swept in one run, to the same root), and refuses a file
/// whose list is another block's, naming the file, the offset and the
/// block, with nothing of that block written.
#[test]
fn an_amsterdam_chain_imports_with_its_access_lists_and_a_wrong_list_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chain");
    let stderr = gen_chain_with(&out, "1", &["--fork", "amsterdam"]);
    assert!(stderr.contains("access-lists.rlp"), "{stderr}");
    let expected_root = hex_after(&stderr, "state root ").to_string();
    let lists = out.join("access-lists.rlp");
    let datadir = dir.path().join("dd");
    let stdout = strata_ok(&[
        "import-chain",
        out.join("chain.rlp").to_str().unwrap(),
        "--genesis",
        out.join("genesis.json").to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        "--access-lists",
        lists.to_str().unwrap(),
        "--access-list",
        "use,ignore",
        "--warmers",
        "2",
        "--transaction-workers",
        "0,2",
        // The smallest memory tier and flush batch the flags take.
        "--flush-mib",
        "1",
        "--memory-mib",
        "2",
    ]);
    assert!(stdout.contains("access lists use"), "{stdout}");
    assert!(stdout.contains("access lists ignore"), "{stdout}");
    // With the lists used, two workers run every transaction ahead and
    // each is committed as run: the lists are right.
    assert!(
        stdout.contains("(2 workers): ") && stdout.contains(" executed again in their turn"),
        "{stdout}"
    );
    let ahead_line = stdout
        .lines()
        .find(|line| line.starts_with("transactions ahead of their turn"))
        .expect("the run with workers reports them");
    assert!(
        ahead_line.ends_with(", 0 executed again in their turn"),
        "{ahead_line}"
    );
    assert!(
        stdout.contains(&format!("final root {expected_root}")),
        "{stdout}"
    );

    // A memory tier smaller than its flush batch is refused before the
    // datadir is made.
    let small = dir.path().join("small");
    let stderr = strata_err(&[
        "import-chain",
        out.join("chain.rlp").to_str().unwrap(),
        "--genesis",
        out.join("genesis.json").to_str().unwrap(),
        "--datadir",
        small.to_str().unwrap(),
        "--flush-mib",
        "4",
        "--memory-mib",
        "2",
    ]);
    assert!(
        stderr.contains("--memory-mib 2 is below --flush-mib 4"),
        "{stderr}"
    );
    assert!(!small.exists());

    // The file with its first two lists swapped: block 1 meets block 2's.
    let bytes = std::fs::read(&lists).unwrap();
    let mut items = crate::common::rlp_items(&bytes);
    items.swap(0, 1);
    let swapped = dir.path().join("swapped.rlp");
    std::fs::write(&swapped, items.concat()).unwrap();
    let fresh = dir.path().join("fresh");
    let stderr = strata_err(&[
        "import-chain",
        out.join("chain.rlp").to_str().unwrap(),
        "--genesis",
        out.join("genesis.json").to_str().unwrap(),
        "--datadir",
        fresh.to_str().unwrap(),
        "--access-lists",
        swapped.to_str().unwrap(),
    ]);
    assert!(
        stderr.contains("swapped.rlp, offset 0: block 1's access list")
            && stderr.contains("not this block's list"),
        "{stderr}"
    );
    let info = strata_ok(&["verify", "--datadir", fresh.to_str().unwrap()]);
    assert!(info.contains("block 0"), "{info}");
}
