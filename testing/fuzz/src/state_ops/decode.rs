//! The fuzz input as a store configuration and a sequence of operations,
//! and the encoder the seed writer uses (`encode(decode(x))` keeps the
//! meaning of `x`; every byte string decodes).
//!
//! Layout: one configuration byte, then operations. An operation is a tag
//! byte (its value mod 16) followed by its arguments; a block is a write
//! count byte and three bytes per write. Missing bytes read as zero.
//!
//! | tag (mod 16) | operation | arguments |
//! | --- | --- | --- |
//! | 0–6 | [`Op::Block`] | count (mod 16), then 3 bytes per write |
//! | 7 | [`Op::Damage`] | kind byte, then the kind's bytes ([`JournalDamage`]) |
//! | 8 | [`Op::Concurrent`] | task, point, other; a block's writes when the other is a block |
//! | 9 | [`Op::Compact`] | |
//! | 10 | [`Op::Reopen`] | |
//! | 11 | [`Op::Crash`] | |
//! | 12, 13 | [`Op::Unwind`] | blocks back (mod 12) |
//! | 14, 15 | [`Op::Inject`] | kind, and a count for two kinds |

use strata_storage::PausePoint;
use strata_storage::files::fs::Fault;

/// Accounts the operations touch (addresses `0x…01` to `0x…08`).
pub const ADDRESSES: u8 = 8;
/// Slots per account the operations touch.
pub const SLOTS: u8 = 6;
/// Operations decoded at most from one input.
pub const MAX_OPS: usize = 64;
/// Writes per block at most.
pub const MAX_WRITES: u8 = 15;

/// How the store is opened for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Blocks per step (1–3: compaction collates and merges within a few blocks).
    pub step_size: u64,
    /// Steps kept in redb before collation (0–2).
    pub keep_steps_in_db: u64,
    /// Blocks that can be unwound (2–9).
    pub unwind_depth: u64,
    /// Touched keys above which the commitment runs in parallel (2 or 64).
    pub parallel_threshold: usize,
}

impl Config {
    fn from_byte(b: u8) -> Self {
        Config {
            step_size: 1 + u64::from(b & 3) % 3,
            keep_steps_in_db: u64::from(b >> 2 & 3) % 3,
            unwind_depth: 2 + u64::from(b >> 4 & 7),
            parallel_threshold: if b & 0x80 == 0 { 64 } else { 2 },
        }
    }

    fn to_byte(self) -> u8 {
        (self.step_size - 1) as u8
            | (self.keep_steps_in_db as u8) << 2
            | ((self.unwind_depth - 2) as u8) << 4
            | (if self.parallel_threshold == 2 {
                0x80
            } else {
                0
            })
    }
}

/// One write of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// Sets nonce and balance (creating the account).
    Account {
        /// Address index.
        who: u8,
        /// New nonce.
        nonce: u64,
        /// New balance.
        balance: u8,
    },
    /// Sets a slot (zero deletes it; 255 writes `U256::MAX`), creating the account.
    Slot {
        /// Address index.
        who: u8,
        /// Slot index.
        slot: u8,
        /// Value code.
        value: u8,
    },
    /// Sets the code (variant 0: empty) and the account's code hash.
    Code {
        /// Address index.
        who: u8,
        /// Which bytecode.
        variant: u8,
    },
    /// Deletes the account, its code and all of its storage (a storage wipe).
    Delete {
        /// Address index.
        who: u8,
    },
}

/// A failure to inject into the next operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// An immutable-file operation fails (`FaultyFileSystem`).
    File(Fault),
    /// redb's writes fail after this many succeed.
    DbWrite(u8),
    /// redb's `sync_data` fails.
    DbSync,
}

/// One operation of the sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Commit the next block with these writes.
    Block(Vec<Write>),
    /// `StateDb::compact`: collate, merge, prune.
    Compact,
    /// Drop the store and open it again on the same bytes.
    Reopen,
    /// Drop the store and open the image a power cut now would leave.
    Crash,
    /// Unwind this many blocks back (may be out of the window: then refused).
    Unwind(u8),
    /// Arm a failure for the next operation only.
    Inject(Injected),
    /// Close the store (cleanly, or by a power cut), damage its journal,
    /// open it again and check what it serves.
    Damage {
        /// A power cut instead of a clean close (which flushes first).
        crash: bool,
        /// What is done to the journal.
        damage: JournalDamage,
    },
    /// Run `held` on a second thread, hold it at `point`, run `other` on
    /// this one, then let the held task go on.
    Concurrent {
        /// The background task started first.
        held: Held,
        /// Where it is held (whichever task reaches the point first).
        point: PausePoint,
        /// What runs while it is held.
        other: Other,
    },
}

/// Damage done to a journal segment between a close and the next open.
///
/// `segment` picks one of the segments (mod their number, counted from the
/// newest back: 0 is the newest). An offset is the start of frame `frame`
/// (mod the segment's frames, counted from its last frame back) plus
/// `within` (mod the bytes from that start to the end of the segment), so
/// every offset can be chosen and frame headers are near at hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalDamage {
    /// XOR `1 << bit` into the byte at the offset.
    Flip {
        /// Which segment.
        segment: u8,
        /// Which frame's start the offset counts from.
        frame: u8,
        /// Bytes after that start.
        within: u16,
        /// Which bit (mod 8).
        bit: u8,
    },
    /// Cut the segment to the offset.
    Truncate {
        /// Which segment.
        segment: u8,
        /// Which frame's start the offset counts from.
        frame: u8,
        /// Bytes after that start.
        within: u16,
    },
    /// Remove the segment.
    Delete {
        /// Which segment.
        segment: u8,
    },
    /// Copy the segment under the name of another first block (mod the
    /// last block + 3, the segment's own name skipped), over a segment of
    /// that name if there is one.
    Duplicate {
        /// Which segment.
        segment: u8,
        /// The first block of the copy's name.
        name: u8,
    },
    /// Put in a segment of the harness's foreign store (the same block
    /// numbers, another workload; one block per segment, genesis not
    /// offered): with `over`, the foreign segment of the same first block
    /// as our segment `segment` (of block 1 for our genesis segment) under
    /// our segment's name; else the foreign segment of block `segment`
    /// (mod the last block + 3, at least 1) under its own name, beside or
    /// over ours.
    ///
    /// (Here `segment` counts blocks from 0 up, not segments back.)
    Foreign {
        /// Replace one of our segments rather than pick a block.
        over: bool,
        /// Which of our segments, or which block.
        segment: u8,
    },
}

/// The task [`Op::Concurrent`] starts on a second thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// `StateDb::compact` (a flush, then collate, merge, prune).
    Compact,
    /// `StateDb::flush`.
    Flush,
}

/// What [`Op::Concurrent`] runs while the other task is held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Other {
    /// Commit the next block with these writes.
    Block(Vec<Write>),
    /// Unwind this many blocks back.
    Unwind(u8),
    /// Read every account, code and slot.
    Read,
}

/// Every pause point, in the order the decoder numbers them.
pub const PAUSE_POINTS: [PausePoint; 11] = PausePoint::ALL;

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
}

/// Decodes `data` into a configuration and at most [`MAX_OPS`] operations.
pub fn decode(data: &[u8]) -> (Config, Vec<Op>) {
    let mut input = Bytes(data);
    let config = Config::from_byte(input.next());
    let mut ops = Vec::new();
    while !input.0.is_empty() && ops.len() < MAX_OPS {
        let op = match input.next() % 16 {
            0..=6 => Op::Block(decode_writes(&mut input)),
            7 => decode_damage(&mut input),
            8 => decode_concurrent(&mut input),
            9 => Op::Compact,
            10 => Op::Reopen,
            11 => Op::Crash,
            12 | 13 => Op::Unwind(input.next() % 12),
            _ => Op::Inject(decode_injected(&mut input)),
        };
        ops.push(op);
    }
    (config, ops)
}

fn decode_writes(input: &mut Bytes<'_>) -> Vec<Write> {
    let count = input.next() % (MAX_WRITES + 1);
    (0..count).map(|_| decode_write(input)).collect()
}

fn decode_u16(input: &mut Bytes<'_>) -> u16 {
    u16::from_le_bytes([input.next(), input.next()])
}

/// Kind byte: bit 0 a power cut (else a clean close), the rest the damage
/// (mod 5).
fn decode_damage(input: &mut Bytes<'_>) -> Op {
    let kind = input.next();
    let crash = kind & 1 == 1;
    let damage = match (kind >> 1) % 5 {
        0 => JournalDamage::Flip {
            segment: input.next(),
            frame: input.next(),
            within: decode_u16(input),
            bit: input.next() % 8,
        },
        1 => JournalDamage::Truncate {
            segment: input.next(),
            frame: input.next(),
            within: decode_u16(input),
        },
        2 => JournalDamage::Delete {
            segment: input.next(),
        },
        3 => JournalDamage::Duplicate {
            segment: input.next(),
            name: input.next(),
        },
        _ => JournalDamage::Foreign {
            over: input.next() & 1 == 1,
            segment: input.next(),
        },
    };
    Op::Damage { crash, damage }
}

/// Task byte: bit 0 a flush (else a compaction), bits 1–2 the other
/// operation (mod 3); then the point (mod 11) and the other's arguments.
fn decode_concurrent(input: &mut Bytes<'_>) -> Op {
    let task = input.next();
    let held = if task & 1 == 1 {
        Held::Flush
    } else {
        Held::Compact
    };
    let point = PAUSE_POINTS[usize::from(input.next()) % PAUSE_POINTS.len()];
    let other = match (task >> 1) % 3 {
        0 => Other::Block(decode_writes(input)),
        1 => Other::Unwind(input.next() % 12),
        _ => Other::Read,
    };
    Op::Concurrent { held, point, other }
}

fn decode_write(input: &mut Bytes<'_>) -> Write {
    let (kind, a, b) = (input.next(), input.next(), input.next());
    let who = a % ADDRESSES;
    match kind % 8 {
        0 | 1 => Write::Account {
            who,
            nonce: u64::from(a >> 3 & 3),
            balance: b,
        },
        2..=4 => Write::Slot {
            who,
            slot: (a >> 3) % SLOTS,
            value: b,
        },
        5 => Write::Code {
            who,
            variant: b % 3,
        },
        _ => Write::Delete { who },
    }
}

fn decode_injected(input: &mut Bytes<'_>) -> Injected {
    let kind = input.next();
    match kind % 8 {
        0 => Injected::File(Fault::Create),
        1 => Injected::File(Fault::WriteAfter(u64::from(input.next()) * 64)),
        2 => Injected::File(Fault::Sync),
        3 => Injected::File(Fault::Rename),
        4 => Injected::File(Fault::SyncDir),
        5 => Injected::File(Fault::Map),
        6 => Injected::DbWrite(input.next() % 32),
        _ => Injected::DbSync,
    }
}

/// Encodes a configuration and operations so that [`decode`] returns them
/// (for the seed writer). Values outside the decoder's ranges are reduced
/// the way the decoder reduces them.
pub fn encode(config: Config, ops: &[Op]) -> Vec<u8> {
    let mut out = vec![config.to_byte()];
    for op in ops {
        match op {
            Op::Block(writes) => {
                out.push(0);
                encode_writes(writes, &mut out);
            }
            Op::Damage { crash, damage } => {
                out.push(7);
                encode_damage(*crash, *damage, &mut out);
            }
            Op::Concurrent { held, point, other } => {
                out.push(8);
                encode_concurrent(*held, *point, other, &mut out);
            }
            Op::Compact => out.push(9),
            Op::Reopen => out.push(10),
            Op::Crash => out.push(11),
            Op::Unwind(back) => out.extend([12, *back]),
            Op::Inject(injected) => {
                out.push(14);
                out.extend(encode_injected(*injected));
            }
        }
    }
    out
}

fn encode_writes(writes: &[Write], out: &mut Vec<u8>) {
    out.push(writes.len() as u8);
    for write in writes {
        out.extend(encode_write(*write));
    }
}

fn encode_damage(crash: bool, damage: JournalDamage, out: &mut Vec<u8>) {
    let kind = |k: u8| k << 1 | u8::from(crash);
    match damage {
        JournalDamage::Flip {
            segment,
            frame,
            within,
            bit,
        } => {
            out.extend([kind(0), segment, frame]);
            out.extend(within.to_le_bytes());
            out.push(bit);
        }
        JournalDamage::Truncate {
            segment,
            frame,
            within,
        } => {
            out.extend([kind(1), segment, frame]);
            out.extend(within.to_le_bytes());
        }
        JournalDamage::Delete { segment } => out.extend([kind(2), segment]),
        JournalDamage::Duplicate { segment, name } => out.extend([kind(3), segment, name]),
        JournalDamage::Foreign { over, segment } => {
            out.extend([kind(4), u8::from(over), segment]);
        }
    }
}

fn encode_concurrent(held: Held, point: PausePoint, other: &Other, out: &mut Vec<u8>) {
    let point = PAUSE_POINTS
        .iter()
        .position(|p| *p == point)
        .unwrap_or_default() as u8;
    let task = |k: u8| k << 1 | u8::from(held == Held::Flush);
    match other {
        Other::Block(writes) => {
            out.extend([task(0), point]);
            encode_writes(writes, out);
        }
        Other::Unwind(back) => out.extend([task(1), point, *back]),
        Other::Read => out.extend([task(2), point]),
    }
}

fn encode_write(write: Write) -> [u8; 3] {
    match write {
        Write::Account {
            who,
            nonce,
            balance,
        } => [0, who | (nonce as u8 & 3) << 3, balance],
        Write::Slot { who, slot, value } => [2, who | slot << 3, value],
        Write::Code { who, variant } => [5, who, variant],
        Write::Delete { who } => [6, who, 0],
    }
}

fn encode_injected(injected: Injected) -> Vec<u8> {
    match injected {
        Injected::File(Fault::Create) => vec![0],
        Injected::File(Fault::WriteAfter(n)) => vec![1, (n / 64) as u8],
        Injected::File(Fault::Sync) => vec![2],
        Injected::File(Fault::Rename) => vec![3],
        Injected::File(Fault::SyncDir) => vec![4],
        Injected::File(_) => vec![5],
        Injected::DbWrite(n) => vec![6, n],
        Injected::DbSync => vec![7],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_inverts_decode() {
        let config = Config {
            step_size: 2,
            keep_steps_in_db: 1,
            unwind_depth: 5,
            parallel_threshold: 2,
        };
        let ops = vec![
            Op::Block(vec![
                Write::Account {
                    who: 7,
                    nonce: 3,
                    balance: 200,
                },
                Write::Slot {
                    who: 1,
                    slot: 5,
                    value: 255,
                },
                Write::Code { who: 2, variant: 2 },
                Write::Delete { who: 3 },
            ]),
            Op::Compact,
            Op::Inject(Injected::File(Fault::WriteAfter(128))),
            Op::Inject(Injected::DbWrite(9)),
            Op::Inject(Injected::DbSync),
            Op::Reopen,
            Op::Crash,
            Op::Unwind(11),
            Op::Damage {
                crash: true,
                damage: JournalDamage::Flip {
                    segment: 3,
                    frame: 250,
                    within: 40_000,
                    bit: 7,
                },
            },
            Op::Damage {
                crash: false,
                damage: JournalDamage::Truncate {
                    segment: 1,
                    frame: 2,
                    within: 17,
                },
            },
            Op::Damage {
                crash: true,
                damage: JournalDamage::Delete { segment: 9 },
            },
            Op::Damage {
                crash: false,
                damage: JournalDamage::Duplicate {
                    segment: 0,
                    name: 4,
                },
            },
            Op::Damage {
                crash: true,
                damage: JournalDamage::Foreign {
                    over: true,
                    segment: 2,
                },
            },
            Op::Concurrent {
                held: Held::Flush,
                point: PausePoint::FlushPart,
                other: Other::Block(vec![Write::Delete { who: 1 }]),
            },
            Op::Concurrent {
                held: Held::Compact,
                point: PausePoint::UnwindCommitted,
                other: Other::Unwind(3),
            },
            Op::Concurrent {
                held: Held::Compact,
                point: PausePoint::CollateBuilt,
                other: Other::Read,
            },
        ];
        assert_eq!(decode(&encode(config, &ops)), (config, ops));
    }

    #[test]
    fn any_bytes_decode_within_bounds() {
        let data: Vec<u8> = (0..=255u8).cycle().take(2000).collect();
        let (config, ops) = decode(&data);
        assert!((1..=3).contains(&config.step_size));
        assert_eq!(ops.len(), MAX_OPS);
        assert!(ops.iter().all(|op| match op {
            Op::Block(w) => w.len() <= usize::from(MAX_WRITES),
            Op::Unwind(back) => *back < 12,
            _ => true,
        }));
    }
}
