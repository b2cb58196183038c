//! gen-trace: determinism (also of the committed testdata trace) and that
//! every block's reads and root agree with the model replaying the trace
//! from scratch.

use std::path::Path;

use strata_trace::generator::{GenConfig, generate};
use strata_trace::model::WorldState;
use strata_trace::{TraceLine, TraceReader, TraceWriter};

use crate::common::{strata, testdata};

/// The arguments `testdata/small.jsonl` was generated with (see testdata/README.md).
const SMALL_ARGS: [&str; 8] = [
    "--accounts",
    "300",
    "--contracts",
    "20",
    "--blocks",
    "30",
    "--seed",
    "1",
];

fn config(accounts: usize, contracts: usize, blocks: u64, seed: u64) -> GenConfig {
    GenConfig {
        accounts,
        contracts,
        blocks,
        seed,
        account_reads: None,
        account_writes: None,
        slot_reads: None,
        slot_writes: None,
    }
}

fn generate_bytes(config: &GenConfig) -> Vec<u8> {
    let mut writer = TraceWriter::new(Vec::new());
    generate(config, &mut writer, None).unwrap();
    writer.finish().unwrap()
}

/// What replaying a trace through the model saw.
#[derive(Debug, Default)]
struct Replay {
    blocks: usize,
    deletions: usize,
    recreations: usize,
    cleared_slots: usize,
    code_reads: usize,
    created_accounts: usize,
}

/// Replay `bytes` from scratch: check the genesis root, each block's reads
/// against the state before it and its root against the state after it.
fn replay(bytes: &[u8]) -> Replay {
    let mut seen = Replay::default();
    let mut lines = TraceReader::new(bytes);
    let Some(Ok(TraceLine::Genesis { alloc, state_root })) = lines.next() else {
        panic!("no genesis line")
    };
    let mut state = WorldState::from_alloc(&alloc);
    assert_eq!(Some(state.state_root()), state_root, "genesis root");
    for line in lines {
        let TraceLine::Block(block) = line.unwrap() else {
            panic!("second genesis")
        };
        state.check_reads(&block).unwrap();
        for (address, write) in &block.writes {
            seen.deletions += usize::from(write.deleted);
            seen.recreations += usize::from(write.deleted && write.has_fields());
            seen.created_accounts += usize::from(state.account(address).is_none());
            seen.cleared_slots += write.storage.values().filter(|v| v.is_zero()).count();
        }
        seen.code_reads += block.reads.values().filter(|r| r.code.is_some()).count();
        state.apply_block(&block);
        assert_eq!(
            Some(state.state_root()),
            block.state_root,
            "root after block {}",
            block.number
        );
        seen.blocks += 1;
    }
    seen
}

#[test]
fn same_config_same_bytes_other_seed_other_bytes() {
    let a = generate_bytes(&config(200, 10, 5, 42));
    let b = generate_bytes(&config(200, 10, 5, 42));
    let c = generate_bytes(&config(200, 10, 5, 43));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn committed_small_trace_is_reproducible() {
    let path = testdata().join("small.jsonl");
    let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let out = strata(&[&["gen-trace"][..], &SMALL_ARGS[..]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout == committed,
        "regenerating testdata/small.jsonl gave different bytes"
    );
}

#[test]
fn committed_small_trace_replays_with_its_roots() {
    let committed = std::fs::read(testdata().join("small.jsonl")).unwrap();
    let seen = replay(&committed);
    assert_eq!(seen.blocks, 30);
    assert!(seen.deletions > 0 && seen.recreations > 0, "{seen:?}");
    assert!(
        seen.cleared_slots > 0 && seen.code_reads > 0 && seen.created_accounts > 0,
        "{seen:?}"
    );
}

#[test]
fn a_medium_trace_replays_with_its_roots_and_has_the_requested_shape() {
    let mut cfg = config(3_000, 60, 8, 7);
    cfg.slot_reads = Some(400);
    cfg.slot_writes = Some(150);
    let bytes = generate_bytes(&cfg);
    let seen = replay(&bytes);
    assert_eq!(seen.blocks, 8);
    assert!(seen.deletions > 0 && seen.cleared_slots > 0, "{seen:?}");
    // The flags are honoured: count slot reads/writes per block.
    for line in TraceReader::new(&bytes[..]).skip(1) {
        let TraceLine::Block(block) = line.unwrap() else {
            unreachable!()
        };
        let slot_reads: usize = block.reads.values().map(|r| r.storage.len()).sum();
        let slot_writes: usize = block.writes.values().map(|w| w.storage.len()).sum();
        assert_eq!(slot_reads, 400, "block {}", block.number);
        assert!(
            (150..=160).contains(&slot_writes),
            "block {}: {slot_writes} slot writes",
            block.number
        );
        assert!(
            block.reads.len() >= 3_060 / 8 - 10,
            "block {}: {} account reads",
            block.number,
            block.reads.len()
        );
        assert!(block.gas_used.unwrap() > 21_000);
    }
}

#[test]
fn defaults_scale_down_for_small_states() {
    let small = config(300, 20, 1, 1).shape(600);
    assert!(
        small.account_reads <= 40 && small.slot_reads <= 40,
        "{small:?}"
    );
    let big = config(100_000, 1_000, 1, 1).shape(200_000);
    assert_eq!(
        (
            big.account_reads,
            big.account_writes,
            big.slot_reads,
            big.slot_writes
        ),
        (1_500, 700, 5_000, 1_500)
    );
}

#[test]
fn gen_trace_out_file_equals_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.jsonl");
    let args = [
        "gen-trace",
        "--accounts",
        "50",
        "--contracts",
        "3",
        "--blocks",
        "3",
        "--seed",
        "9",
    ];
    let to_stdout = strata(&args);
    assert!(to_stdout.status.success());
    let to_file = strata(&[&args[..], &["--out", file.to_str().unwrap()]].concat());
    assert!(
        to_file.status.success(),
        "{}",
        String::from_utf8_lossy(&to_file.stderr)
    );
    assert_eq!(std::fs::read(Path::new(&file)).unwrap(), to_stdout.stdout);
    let summary = String::from_utf8_lossy(&to_file.stderr);
    assert!(summary.contains("3 blocks"), "{summary}");
}
