//! Issue 6: `strata replay --datadir DIR` killed with SIGKILL at random
//! (seeded) moments while collate/merge/prune are busy; after every kill the
//! datadir, opened through the library, holds exactly a block of the trace
//! (its root is the trace's root of `last_block()`), `verify()` finds
//! nothing wrong, and the next replay resumes. After all kills a final
//! replay ends at the trace's final root.
//!
//! CI runs 20 kills; `cargo test -p strata-cli --release -- --ignored kill`
//! runs 500 (see bin/strata/TESTING.md).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_storage::{Options, StateDb};

use crate::common::{final_root, gen_trace, strata_ok, trace_roots};

/// Options that keep maintenance busy in a 60-block replay: a step of 2
/// blocks, one step kept in redb.
const REPLAY_FLAGS: [&str; 4] = ["--step-size", "2", "--keep-steps", "1"];

/// The empty trie's root (the store's root before its genesis).
const EMPTY_ROOT: B256 = alloy_trie::EMPTY_ROOT_HASH;

fn replay_command(trace: &Path, datadir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command
        .arg("replay")
        .arg(trace)
        .arg("--datadir")
        .arg(datadir)
        .args(REPLAY_FLAGS)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Open the datadir through the library and check it holds a block of the
/// trace, intact. Returns the last block.
fn check_datadir(
    datadir: &Path,
    genesis_root: B256,
    roots: &std::collections::BTreeMap<u64, B256>,
    kill: usize,
) -> Option<u64> {
    let options = Options::default()
        .with_step_size(2)
        .with_keep_steps_in_db(1)
        .with_background_maintenance(false);
    let db = StateDb::open(datadir, options)
        .unwrap_or_else(|e| panic!("kill {kill}: reopen {}: {e}", datadir.display()));
    let last = db.last_block();
    let expected = match last {
        None => EMPTY_ROOT,
        Some(0) => genesis_root,
        Some(block) => roots[&block],
    };
    assert_eq!(db.root(), expected, "kill {kill}: root of block {last:?}");
    let report = db
        .verify(&Default::default())
        .unwrap_or_else(|e| panic!("kill {kill}: verify: {e}"));
    assert!(
        report.is_ok(),
        "kill {kill}: block {last:?}: {:?}",
        report.problems
    );
    last
}

fn kill_loop(kills: usize, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "kill.jsonl", 200, 60, 11);
    let (genesis_root, roots) = trace_roots(&trace);
    let genesis_root = genesis_root.expect("generated traces state the genesis root");
    let final_block = *roots.keys().next_back().unwrap();
    let datadir = dir.path().join("db");

    // How long an uninterrupted replay takes here: kills land within it.
    let started = Instant::now();
    let status = replay_command(&trace, &datadir).status().unwrap();
    assert!(status.success());
    let full = started.elapsed();
    std::fs::remove_dir_all(&datadir).unwrap();

    let mut rng = StdRng::seed_from_u64(seed);
    let mut rounds = 0;
    let mut mid_replay = 0;
    let mut done: Option<u64> = None;
    for kill in 0..kills {
        let mut child = replay_command(&trace, &datadir).spawn().unwrap();
        // A resumed replay has only the rest of the blocks to do: kills land
        // within that (plus a quarter of a full run for start-up), so most
        // of them interrupt a replay rather than find it finished.
        let remaining = final_block.saturating_sub(done.unwrap_or(0)) as f64 / final_block as f64;
        let window = full.as_micros() as f64 * (0.25 + 0.75 * remaining);
        let delay = rng.random_range(0..(window as u64).max(1));
        std::thread::sleep(Duration::from_micros(delay));
        // SIGKILL on unix; an already finished child is fine.
        let _ = child.kill();
        child.wait().unwrap();
        let last = check_datadir(&datadir, genesis_root, &roots, kill);
        done = last;
        if last == Some(final_block) {
            // Complete: start over so later kills hit a busy replay again.
            std::fs::remove_dir_all(&datadir).unwrap();
            rounds += 1;
            done = None;
        } else if last.is_some_and(|b| b > 0) {
            mid_replay += 1;
        }
    }
    eprintln!(
        "{kills} kills: {mid_replay} left a datadir between genesis and the last block, {rounds} found it complete; a full replay takes {full:?}"
    );
    let stdout = strata_ok(&[
        "replay",
        trace.to_str().unwrap(),
        "--datadir",
        datadir.to_str().unwrap(),
        REPLAY_FLAGS[0],
        REPLAY_FLAGS[1],
        REPLAY_FLAGS[2],
        REPLAY_FLAGS[3],
    ]);
    assert_eq!(final_root(&stdout), roots[&final_block].to_string());
    assert_eq!(
        check_datadir(&datadir, genesis_root, &roots, kills),
        Some(final_block)
    );
}

#[test]
fn kill_replay_20_times_and_resume() {
    kill_loop(20, 0x5eed);
}

/// The long version: `cargo test -p strata-cli --release -- --ignored kill`.
#[test]
#[ignore = "500 kills: run with --release -- --ignored kill"]
fn kill_replay_500_times_and_resume() {
    kill_loop(500, 0x5eed_0500);
}
