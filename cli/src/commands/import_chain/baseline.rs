//! `--baseline memory`: the same blocks executed over revm's in-memory
//! database preloaded with the genesis (reads cost a hash-map lookup, no
//! root), in the same process, so that strata's execution is shown beside
//! the cost of a state layer that is free.

use std::path::Path;
use std::time::Duration;

use strata_executor::{GenesisBlock, MemoryChain};

use super::chain_file::{ChainFile, FileBlock};
use crate::CliError;

/// What the in-memory run measured over the blocks strata executed.
#[derive(Debug, Clone)]
pub(crate) struct BaselineRun {
    /// Blocks timed.
    pub(crate) blocks: u64,
    /// Their gas.
    pub(crate) gas: u64,
    /// The EVM over the in-memory database, summed.
    pub(crate) execution: Duration,
    /// Writing the blocks' changes into it, summed.
    pub(crate) apply: Duration,
}

/// Executes the chain file's blocks over the in-memory database from the
/// genesis; times the blocks after `timed_after` (the ones strata ran).
pub(crate) fn run(
    chain: &Path,
    genesis: &GenesisBlock,
    timed_after: u64,
) -> Result<BaselineRun, CliError> {
    let mut memory = MemoryChain::new(genesis);
    let mut file = ChainFile::open(chain)?;
    let mut run = BaselineRun {
        blocks: 0,
        gas: 0,
        execution: Duration::ZERO,
        apply: Duration::ZERO,
    };
    while let Some(FileBlock { block, offset }) = file.next_block()? {
        let executed = memory
            .execute(&block)
            .map_err(|source| CliError::BlockRefused {
                path: chain.to_owned(),
                number: block.number(),
                hash: block.hash,
                offset,
                source: Box::new(source),
            })?;
        if block.number() > timed_after {
            run.blocks += 1;
            run.gas += executed.gas_used;
            run.execution += executed.execution;
            run.apply += executed.apply;
        }
    }
    Ok(run)
}
