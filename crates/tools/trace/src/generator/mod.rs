//! `strata gen-trace`: a deterministic, mainnet-shaped synthetic trace.
//!
//! The genesis holds EOAs and contracts (a few distinct bytecodes, some
//! shared) with ERC-20-like storage: balance slots
//! `keccak(holder ‖ mapping index)`, more holders for popular contracts.
//! Each block touches contracts chosen by a Zipf law (hot tokens and
//! exchanges), sends value between EOAs, creates accounts and contracts,
//! self-destructs (and sometimes re-creates) cold contracts and clears
//! slots. The block's `reads` are the true pre-block values from the
//! [`WorldState`] model, and its `state_root` is the model's root after the
//! writes — an oracle independent of strata's commitment.

mod block;
mod world;
mod zipf;

use std::io::Write;
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use rand::SeedableRng;
use rand::rngs::StdRng;
use strata_storage::dump::DumpWriter;

use crate::model::WorldState;
use crate::{TraceLine, TraceWriter};

pub use zipf::{Exponent, Zipf};

/// Default per-block shape (a busy mainnet block, as the prestateTracer sees it).
pub const DEFAULT_ACCOUNT_READS: usize = 1_500;
/// Default accounts written per block.
pub const DEFAULT_ACCOUNT_WRITES: usize = 700;
/// Default storage slots read per block.
pub const DEFAULT_SLOT_READS: usize = 5_000;
/// Default storage slots written per block.
pub const DEFAULT_SLOT_WRITES: usize = 1_500;

/// The most genesis accounts (EOAs + contracts) the generator accepts. It
/// keeps the whole state and its model trie in memory: about 250 bytes an
/// account and 100 a slot at peak (10 million accounts with 30.3 million
/// slots peaked at 5.1 GiB).
pub const MAX_GENESIS_ACCOUNTS: usize = 10_000_000;
/// The most genesis slots per genesis account [`SlotDensity::PerAccount`] accepts.
pub const MAX_SLOTS_PER_ACCOUNT: f64 = 100.0;
/// The most blocks one run generates (the block numbers then stay far from
/// overflow, and the run is already weeks long at mainnet-sized blocks).
pub const MAX_BLOCKS: u64 = 100_000_000;
/// The most accounts or slots read or written per block (a mainnet block
/// touches a few thousand; the builder's retry budgets multiply these).
pub const MAX_PER_BLOCK: usize = 1_000_000;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    /// Externally owned accounts in the genesis.
    pub accounts: usize,
    /// Contracts in the genesis.
    pub contracts: usize,
    /// Number of blocks.
    pub blocks: u64,
    /// RNG seed; equal configs give equal bytes.
    pub seed: u64,
    /// Accounts read per block (`None` = default, scaled to the state size).
    pub account_reads: Option<usize>,
    /// Accounts written per block (`None` = default, scaled).
    pub account_writes: Option<usize>,
    /// Slots read per block (`None` = default, scaled).
    pub slot_reads: Option<usize>,
    /// Slots written per block (`None` = default, scaled).
    pub slot_writes: Option<usize>,
}

/// How many storage slots the genesis holds: contracts get holders
/// (balance slots `keccak(holder ‖ mapping index)`) in proportion to their
/// popularity (Zipf, s = 1), plus 1 to 5 fixed slots each.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SlotDensity {
    /// Twice as many holder draws as EOAs: about 2 slots per account (the
    /// traces of earlier versions, byte for byte).
    #[default]
    Default,
    /// About this many non-zero slots per genesis account (EOAs and
    /// contracts): `round(x × accounts)` holder draws. A holder drawn twice
    /// for one contract is one slot, and each contract adds its fixed
    /// slots, so the count found differs by a few percent.
    PerAccount(f64),
}

impl SlotDensity {
    /// Holder draws over all contracts.
    fn holder_draws(self, config: &GenConfig) -> usize {
        match self {
            Self::Default => 2 * config.accounts,
            Self::PerAccount(x) => {
                (x * (config.accounts + config.contracts) as f64).round() as usize
            }
        }
    }
}

/// The per-block targets after scaling to the state size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockShape {
    /// Accounts read per block.
    pub account_reads: usize,
    /// Accounts written per block.
    pub account_writes: usize,
    /// Slots read per block.
    pub slot_reads: usize,
    /// Slots written per block.
    pub slot_writes: usize,
}

impl GenConfig {
    /// The per-block targets: the flags when given, otherwise the mainnet
    /// defaults scaled down so a small state is not touched almost entirely
    /// every block (at most 1/8 of the accounts and 1/16 of the slots).
    pub fn shape(&self, genesis_slots: usize) -> BlockShape {
        let total = self.accounts + self.contracts;
        let account_reads = self
            .account_reads
            .unwrap_or(DEFAULT_ACCOUNT_READS.min((total / 8).max(4)));
        let account_writes = self
            .account_writes
            .unwrap_or(DEFAULT_ACCOUNT_WRITES.min((account_reads * 7 / 15).max(2)));
        let slot_reads = self
            .slot_reads
            .unwrap_or(DEFAULT_SLOT_READS.min((genesis_slots / 16).max(4)));
        let slot_writes = self
            .slot_writes
            .unwrap_or(DEFAULT_SLOT_WRITES.min((slot_reads * 3 / 10).max(1)));
        BlockShape {
            account_reads,
            account_writes,
            slot_reads,
            slot_writes,
        }
    }
}

/// A write that failed while generating, and to which output.
#[derive(Debug, thiserror::Error)]
pub enum GenOutputError {
    /// Writing the trace failed.
    #[error("writing the trace: {0}")]
    Trace(#[source] std::io::Error),
    /// Writing the state dump (`--state-out`) failed.
    #[error("writing the state dump: {0}")]
    State(#[source] std::io::Error),
}

/// What a generation run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct GenSummary {
    /// Per-block targets used.
    pub shape: BlockShape,
    /// Accounts in the genesis.
    pub genesis_accounts: usize,
    /// Non-zero slots in the genesis.
    pub genesis_slots: usize,
    /// Root of the genesis.
    pub genesis_root: B256,
    /// Blocks written.
    pub blocks: u64,
    /// Accounts after the last block.
    pub final_accounts: usize,
    /// Root after the last block.
    pub final_root: B256,
    /// Mean accounts read / written and slots read / written per block.
    pub mean_touches: [f64; 4],
    /// Time spent computing state roots in the model.
    pub root_time: Duration,
    /// Total time.
    pub total_time: Duration,
}

/// Generate a trace into `out`: a genesis line, then `config.blocks` block
/// lines numbered from 1. With `state_out`, the genesis goes there as a
/// line-by-line state dump instead ([`strata_storage::dump`]), and the trace
/// has no genesis line.
pub fn generate<W: Write>(
    config: &GenConfig,
    out: &mut TraceWriter<W>,
    state_out: Option<&mut dyn Write>,
) -> Result<GenSummary, GenOutputError> {
    generate_with(config, SlotDensity::Default, out, state_out)
}

/// [`generate`] with a genesis of `density` slots.
pub fn generate_with<W: Write>(
    config: &GenConfig,
    density: SlotDensity,
    out: &mut TraceWriter<W>,
    state_out: Option<&mut dyn Write>,
) -> Result<GenSummary, GenOutputError> {
    let start = Instant::now();
    let mut rng = StdRng::seed_from_u64(config.seed);
    let (mut state, mut meta) = world::genesis(config, density, &mut rng);
    let genesis_slots = state.slot_count();
    let shape = config.shape(genesis_slots);
    let root_start = Instant::now();
    let genesis_root = state.state_root();
    let mut root_time = root_start.elapsed();
    match state_out {
        Some(state_out) => {
            write_dump(&state, genesis_root, state_out).map_err(GenOutputError::State)?
        }
        None => out
            .write(&TraceLine::Genesis {
                alloc: state.to_alloc(),
                state_root: Some(genesis_root),
            })
            .map_err(GenOutputError::Trace)?,
    }
    let genesis_accounts = state.len();

    let mut sums = [0usize; 4];
    let mut builder = block::BlockBuilder::new(shape, &meta);
    for number in 1..=config.blocks {
        let mut trace_block = builder.build(number, &state, &mut meta, &mut rng);
        sums[0] += trace_block.reads.len();
        sums[1] += trace_block.writes.len();
        sums[2] += trace_block
            .reads
            .values()
            .map(|r| r.storage.len())
            .sum::<usize>();
        sums[3] += trace_block
            .writes
            .values()
            .map(|w| w.storage.len())
            .sum::<usize>();
        state.apply_block(&trace_block);
        let root_start = Instant::now();
        trace_block.state_root = Some(state.state_root());
        root_time += root_start.elapsed();
        out.write(&TraceLine::Block(trace_block))
            .map_err(GenOutputError::Trace)?;
    }
    let blocks = config.blocks.max(1) as f64;
    Ok(GenSummary {
        shape,
        genesis_accounts,
        genesis_slots,
        genesis_root,
        blocks: config.blocks,
        final_accounts: state.len(),
        final_root: state.state_root(),
        mean_touches: sums.map(|s| s as f64 / blocks),
        root_time,
        total_time: start.elapsed(),
    })
}

/// The state as a dump with its root, accounts in address order.
fn write_dump(state: &WorldState, root: B256, out: &mut dyn Write) -> std::io::Result<()> {
    let mut dump = DumpWriter::new(out, root)?;
    for (address, account) in state.accounts() {
        dump.account(
            *address,
            account.nonce(),
            account.balance(),
            account.code(),
            account.storage(),
        )?;
    }
    dump.into_inner().flush()
}

#[cfg(test)]
mod tests {
    use super::{GenConfig, SlotDensity, generate, generate_with};
    use crate::TraceWriter;
    use crate::model::verify_trace;

    fn config(accounts: usize, contracts: usize, blocks: u64) -> GenConfig {
        GenConfig {
            accounts,
            contracts,
            blocks,
            seed: 3,
            account_reads: None,
            account_writes: None,
            slot_reads: None,
            slot_writes: None,
        }
    }

    #[test]
    fn slots_per_account_sets_the_genesis_density() {
        let config = config(20_000, 230, 0);
        for x in [1.0, 3.0, 5.5] {
            let mut out = TraceWriter::new(Vec::new());
            let summary =
                generate_with(&config, SlotDensity::PerAccount(x), &mut out, None).unwrap();
            let mean = summary.genesis_slots as f64 / summary.genesis_accounts as f64;
            assert!((mean - x).abs() < 0.05 * x, "asked {x}, got {mean}");
        }
    }

    #[test]
    fn default_density_is_what_generate_makes() {
        let config = config(3_000, 40, 3);
        let mut plain = TraceWriter::new(Vec::new());
        generate(&config, &mut plain, None).unwrap();
        let mut with = TraceWriter::new(Vec::new());
        generate_with(&config, SlotDensity::Default, &mut with, None).unwrap();
        assert_eq!(plain.finish().unwrap(), with.finish().unwrap());
    }

    /// A denser trace still checks out against the model replayed from its
    /// genesis line (reads are the pre-block values, roots match).
    #[test]
    fn a_dense_trace_checks_out() {
        let config = config(3_000, 40, 4);
        let mut out = TraceWriter::new(Vec::new());
        let summary = generate_with(&config, SlotDensity::PerAccount(4.0), &mut out, None).unwrap();
        let trace = out.finish().unwrap();
        let report = verify_trace(trace.as_slice(), None).unwrap();
        assert_eq!((report.blocks, report.roots_checked), (4, 4));
        assert_eq!(report.final_root, summary.final_root);
    }
}
