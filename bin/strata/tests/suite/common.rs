//! Shared helpers: the vector directory, the testdata directory, the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Ethereum test vectors, or `None` when the test skips.
pub(crate) fn vectors() -> Option<PathBuf> {
    strata_test_support::vectors("")
}

/// The repository's testdata directory.
pub(crate) fn testdata() -> PathBuf {
    strata_test_support::repo_root().join("testdata")
}

/// Run the `strata` binary.
pub(crate) fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run strata")
}

/// Read a JSON file.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Run the `strata` binary and require success; returns stdout.
pub(crate) fn strata_ok(args: &[&str]) -> String {
    let out = strata(args);
    assert!(
        out.status.success(),
        "strata {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Run the `strata` binary and require failure; returns stderr.
/// `strata replay TRACE --datadir DATADIR --step-size 4 --keep-steps 1`
/// (small steps, so a short trace leaves immutable files); its stdout.
pub(crate) fn replay_small_steps(trace: &Path, datadir: &Path) -> String {
    strata_ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        "--step-size",
        "4",
        "--keep-steps",
        "1",
    ])
}

pub(crate) fn strata_err(args: &[&str]) -> String {
    let out = strata(args);
    assert!(
        !out.status.success(),
        "strata {args:?} succeeded:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).expect("utf-8 stderr")
}

/// Generate a trace with `strata gen-trace` into `dir/name`.
pub(crate) fn gen_trace(
    dir: &Path,
    name: &str,
    accounts: usize,
    blocks: u64,
    seed: u64,
) -> PathBuf {
    let out = dir.join(name);
    strata_ok(&[
        "gen-trace",
        "--accounts",
        &accounts.to_string(),
        "--contracts",
        &(accounts / 20).max(1).to_string(),
        "--blocks",
        &blocks.to_string(),
        "--seed",
        &seed.to_string(),
        "--out",
        out.to_str().unwrap(),
    ]);
    out
}

/// The genesis root (if stated) and every block's stated root of a trace.
pub(crate) fn trace_roots(
    path: &Path,
) -> (
    Option<alloy_primitives::B256>,
    std::collections::BTreeMap<u64, alloy_primitives::B256>,
) {
    use strata_trace::{TraceLine, TraceReader};
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut genesis = None;
    let mut roots = std::collections::BTreeMap::new();
    for line in TraceReader::new(file) {
        match line.unwrap() {
            TraceLine::Genesis { state_root, .. } => genesis = state_root,
            TraceLine::Block(block) => {
                if let Some(root) = block.state_root {
                    roots.insert(block.number, root);
                }
            }
        }
    }
    (genesis, roots)
}

/// The `final root 0x… at block N` line of a replay's stdout.
pub(crate) fn final_root(stdout: &str) -> String {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("final root "))
        .unwrap_or_else(|| panic!("no final root line in:\n{stdout}"));
    line["final root ".len().."final root ".len() + 66].to_owned()
}

/// The top-level RLP items of `bytes` (a file of blocks or access lists),
/// each with its header.
pub(crate) fn rlp_items(bytes: &[u8]) -> Vec<&[u8]> {
    let mut rest = bytes;
    let mut items = Vec::new();
    while !rest.is_empty() {
        let start = rest;
        let header = alloy_rlp::Header::decode(&mut rest).unwrap();
        rest = &rest[header.payload_length..];
        items.push(&start[..start.len() - rest.len()]);
    }
    items
}
