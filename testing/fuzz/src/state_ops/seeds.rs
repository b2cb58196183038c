//! Hand-written operation sequences: the seed corpus of the `state_ops`
//! target (written by `src/bin/write_seeds.rs` to `testing/fuzz/seeds/state_ops/`).
//! Each reaches a part of the store the fuzzer should start from: files
//! made by collation and merged, storage wiped while it sits in files,
//! unwinds in and out of the window, power cuts, each injected failure,
//! each kind of journal damage, and each pause point with a task beside it.

use strata_storage::files::fs::Fault;

use strata_storage::PausePoint;

use super::decode::{Config, Held, Injected, JournalDamage, Op, Other, Write, encode};

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
    out.extend(damage_seeds());
    out.extend(concurrent_seeds());
    out
}

/// Blocks flushed by a compaction, then blocks only the journal holds
/// (several segments of a few frames each), then `damage`, after a power
/// cut and after a clean close, with blocks committed after each.
fn damaged(damage: JournalDamage) -> Vec<Op> {
    let mut ops = warm_up(4);
    ops.push(Op::Compact);
    ops.extend(warm_up(7));
    for crash in [true, false] {
        ops.push(Op::Damage { crash, damage });
        ops.extend(warm_up(2));
    }
    ops
}

/// `damage` after [`damaged`]'s blocks: a regression input.
pub fn damage_input(damage: JournalDamage) -> Vec<u8> {
    encode(CONFIG, &damaged(damage))
}

/// One seed per kind of journal damage (a few places for flips and cuts:
/// the newest segment's last frame, a frame before it, an older segment).
fn damage_seeds() -> Vec<(String, Vec<u8>)> {
    let flip = |segment, frame, within, bit| JournalDamage::Flip {
        segment,
        frame,
        within,
        bit,
    };
    let cut = |segment, frame, within| JournalDamage::Truncate {
        segment,
        frame,
        within,
    };
    // Segments and frames count back from the newest: 0 is the last.
    let kinds = [
        ("damage-flip-last-frame", flip(0, 0, 40, 3)),
        ("damage-flip-older-segment", flip(1, 1, 100, 5)),
        ("damage-cut-last-frame", cut(0, 0, 20)),
        ("damage-cut-middle-frame", cut(0, 2, 30)),
        ("damage-cut-frame-boundary", cut(0, 1, 0)),
        ("damage-cut-older-segment", cut(1, 0, 300)),
        ("damage-delete-older", JournalDamage::Delete { segment: 1 }),
        ("damage-delete-newest", JournalDamage::Delete { segment: 0 }),
        (
            "damage-duplicate",
            JournalDamage::Duplicate {
                segment: 1,
                name: 14,
            },
        ),
        (
            "damage-foreign-over",
            JournalDamage::Foreign {
                over: true,
                segment: 0,
            },
        ),
        (
            "damage-foreign-next",
            JournalDamage::Foreign {
                over: false,
                segment: 12,
            },
        ),
    ];
    kinds
        .into_iter()
        .map(|(name, damage)| (name.to_string(), encode(CONFIG, &damaged(damage))))
        .collect()
}

/// Each pause point held with a commit, an unwind or reads beside it, on a
/// store with files to merge and blocks in memory to flush and collate.
fn concurrent_seeds() -> Vec<(String, Vec<u8>)> {
    let cases = [
        (
            "concurrent-collate-commit",
            Held::Compact,
            PausePoint::CollateBuilt,
            0,
        ),
        (
            "concurrent-start-unwind",
            Held::Compact,
            PausePoint::MaintenanceStart,
            1,
        ),
        (
            "concurrent-merge-read",
            Held::Compact,
            PausePoint::MergeBuilt,
            2,
        ),
        (
            "concurrent-flush-commit",
            Held::Flush,
            PausePoint::FlushCommitted,
            0,
        ),
        (
            "concurrent-flush-unwind",
            Held::Flush,
            PausePoint::FlushBatch,
            1,
        ),
    ];
    let config = Config {
        step_size: 2,
        ..CONFIG
    };
    cases
        .into_iter()
        .map(|(name, held, point, other)| {
            let mut ops = warm_up(4);
            ops.push(Op::Compact);
            ops.extend(warm_up(5));
            for b in 0..3u8 {
                let other = match other {
                    0 => Other::Block(vec![account(b, 50 + b), slot(b + 1, b, 9)]),
                    1 => Other::Unwind(1),
                    _ => Other::Read,
                };
                ops.push(Op::Concurrent { held, point, other });
                ops.extend(warm_up(2));
            }
            (name.to_string(), encode(config, &ops))
        })
        .collect()
}
