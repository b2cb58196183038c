//! The fuzz input as a store configuration and a sequence of operations,
//! and the encoder the seed writer uses (`encode(decode(x))` keeps the
//! meaning of `x`; every byte string decodes).
//!
//! Layout: one configuration byte, then operations. An operation is a tag
//! byte (its value mod 16) followed by its arguments; a block is a write
//! count byte and three bytes per write. Missing bytes read as zero.

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
}

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
            0..=8 => {
                let count = input.next() % (MAX_WRITES + 1);
                Op::Block((0..count).map(|_| decode_write(&mut input)).collect())
            }
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
                out.extend([0, writes.len() as u8]);
                for write in writes {
                    out.extend(encode_write(*write));
                }
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
