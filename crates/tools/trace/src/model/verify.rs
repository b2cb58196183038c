//! Replaying a whole trace through the model: every read must be the value
//! before its block and every stated root must be the model's root. This is
//! `strata check-trace`, and the oracle the replay's roots can be held to.

use std::io::BufRead;
use std::time::{Duration, Instant};

use alloy_primitives::{B256, hex};
use strata_storage::genesis::GenesisAlloc;

use super::{ReadMismatch, WorldState};
use crate::{TraceError, TraceLine, TraceReader};

/// Why a trace does not check out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The trace is malformed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A read disagrees with the state before its block.
    #[error("line {line}: {source}")]
    Reads {
        /// 1-based line of the block.
        line: usize,
        /// The first disagreement.
        #[source]
        source: ReadMismatch,
    },
    /// A stated root differs from the model's.
    #[error(
        "line {line}: {what}: the trace says state root {expected}, the model computes {computed}"
    )]
    Root {
        /// 1-based line.
        line: usize,
        /// "genesis" or "block N".
        what: String,
        /// The root in the trace.
        expected: String,
        /// The model's root.
        computed: String,
    },
    /// A genesis line and a genesis file were both given.
    #[error("line {line}: the trace has a genesis line, but a genesis file was given too")]
    TwoGeneses {
        /// 1-based line of the genesis line.
        line: usize,
    },
}

/// What a verified trace held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyReport {
    /// Blocks replayed.
    pub blocks: u64,
    /// Blocks whose root was stated and matched.
    pub roots_checked: u64,
    /// Account and slot reads checked.
    pub reads_checked: u64,
    /// The root after the last block.
    pub final_root: B256,
    /// Time spent in the model's root computation.
    pub root_time: Duration,
}

fn root_error(line: usize, what: String, expected: B256, computed: B256) -> VerifyError {
    VerifyError::Root {
        line,
        what,
        expected: hex::encode_prefixed(expected),
        computed: hex::encode_prefixed(computed),
    }
}

/// Replay `input` from `genesis` (or from the trace's genesis line, or from
/// the empty state), checking reads and roots.
pub fn verify_trace<R: BufRead>(
    input: R,
    genesis: Option<&GenesisAlloc>,
) -> Result<VerifyReport, VerifyError> {
    let mut state = genesis.map(WorldState::from_alloc).unwrap_or_default();
    let mut report = VerifyReport::default();
    let mut reader = TraceReader::new(input);
    while let Some(line) = reader.next() {
        let at = reader.line();
        match line? {
            TraceLine::Genesis { alloc, state_root } => {
                if genesis.is_some() {
                    return Err(VerifyError::TwoGeneses { line: at });
                }
                state = WorldState::from_alloc(&alloc);
                if let Some(expected) = state_root {
                    let computed = state.state_root();
                    if computed != expected {
                        return Err(root_error(at, "genesis".to_owned(), expected, computed));
                    }
                }
            }
            TraceLine::Block(block) => {
                state
                    .check_reads(&block)
                    .map_err(|source| VerifyError::Reads { line: at, source })?;
                report.reads_checked += block
                    .reads
                    .values()
                    .map(|r| 1 + r.storage.len() as u64)
                    .sum::<u64>();
                state.apply_block(&block);
                if let Some(expected) = block.state_root {
                    let start = Instant::now();
                    let computed = state.state_root();
                    report.root_time += start.elapsed();
                    if computed != expected {
                        return Err(root_error(
                            at,
                            format!("block {}", block.number),
                            expected,
                            computed,
                        ));
                    }
                    report.roots_checked += 1;
                }
                report.blocks += 1;
            }
        }
    }
    report.final_root = state.state_root();
    Ok(report)
}
