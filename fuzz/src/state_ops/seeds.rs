//! Hand-written operation sequences: the seed corpus of the `state_ops`
//! target (written by `src/bin/write_seeds.rs` to `fuzz/seeds/state_ops/`).
//! Each reaches a part of the store the fuzzer should start from: files
//! made by collation and merged, storage wiped while it sits in files,
//! unwinds in and out of the window, power cuts, and each injected failure.

use strata_storage::files::fs::Fault;

use super::decode::{Config, Injected, Op, Write, encode};

const CONFIG: Config = Config {
    step_size: 1,
    keep_steps_in_db: 1,
    unwind_depth: 6,
    parallel_threshold: 64,
};

fn account(who: u8, balance: u8) -> Write {
    Write::Account {
        who,
        nonce: 1,
        balance,
    }
}

fn slot(who: u8, slot: u8, value: u8) -> Write {
    Write::Slot { who, slot, value }
}

/// Blocks that touch every address, so that files exist after a compaction.
fn warm_up(blocks: u8) -> Vec<Op> {
    (0..blocks)
        .map(|b| {
            Op::Block(vec![
                account(b % 8, b),
                slot(b % 8, b % 6, b + 1),
                slot((b + 3) % 8, (b + 1) % 6, 255),
                Write::Code {
                    who: (b + 5) % 8,
                    variant: b % 3,
                },
            ])
        })
        .collect()
}

/// Every failure the harness can inject, against a block and a compaction.
fn failures() -> Vec<Injected> {
    vec![
        Injected::File(Fault::Create),
        Injected::File(Fault::WriteAfter(64)),
        Injected::File(Fault::Sync),
        Injected::File(Fault::Rename),
        Injected::File(Fault::SyncDir),
        Injected::DbWrite(0),
        Injected::DbWrite(5),
        Injected::DbSync,
    ]
}

/// The seeds, by name.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut ops = warm_up(8);
    ops.extend([Op::Compact, Op::Compact]);
    ops.extend(warm_up(6));
    ops.extend([Op::Compact, Op::Reopen, Op::Unwind(3), Op::Compact]);
    out.push(("collate-merge-unwind".to_string(), encode(CONFIG, &ops)));

    // Storage pushed into files, then the account deleted and re-created
    // (the wipe must reach the slots in files), then unwound.
    let mut ops = vec![Op::Block(vec![slot(0, 0, 7), slot(0, 1, 8)])];
    ops.extend((0..6).map(|b| Op::Block(vec![account(1, b)])));
    ops.extend([
        Op::Compact,
        Op::Block(vec![Write::Delete { who: 0 }, slot(0, 1, 9)]),
        Op::Compact,
        Op::Unwind(1),
        Op::Reopen,
    ]);
    out.push(("wipe-in-files".to_string(), encode(CONFIG, &ops)));

    let mut ops = warm_up(4);
    ops.extend([Op::Unwind(11), Op::Unwind(5), Op::Crash, Op::Unwind(0)]);
    let config = Config {
        unwind_depth: 2,
        ..CONFIG
    };
    out.push(("unwind-window".to_string(), encode(config, &ops)));

    for (i, failure) in failures().into_iter().enumerate() {
        let mut ops = warm_up(5);
        ops.extend([Op::Inject(failure), Op::Compact]);
        ops.extend(warm_up(2));
        ops.extend([Op::Inject(failure)]);
        ops.extend(warm_up(1));
        ops.extend([Op::Inject(failure), Op::Unwind(2)]);
        out.push((format!("failure-{i}"), encode(CONFIG, &ops)));
    }

    let mut ops = warm_up(6);
    ops.extend([
        Op::Compact,
        Op::Inject(Injected::File(Fault::Map)),
        Op::Reopen,
        Op::Crash,
    ]);
    let config = Config {
        step_size: 2,
        keep_steps_in_db: 0,
        parallel_threshold: 2,
        ..CONFIG
    };
    out.push(("map-failure-at-open".to_string(), encode(config, &ops)));
    out
}
