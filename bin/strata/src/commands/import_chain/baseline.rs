//! `--baseline memory`: the same blocks executed over revm's in-memory
//! database preloaded with the state they start from — the genesis
//! allocation (`--genesis`) or a state dump (`--baseline-state`, read by
//! `init --state`'s reader) — in the same process (reads cost a hash-map
//! lookup, no root), so that strata's execution is shown beside the cost
//! of a state layer that is free.

use std::path::Path;
use std::time::Duration;

use strata_executor::{MemoryChain, alloc_state_root};
use strata_storage::genesis::GenesisAlloc;

use super::chain_file::{ChainFile, FileBlock};
use super::start::ChainStart;
use crate::commands::init::Dump;
use crate::error::BaselineStateError;
use crate::{CliError, FlagError};

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
    /// What the database was preloaded with: `genesis`, or the dump's path.
    pub(crate) preloaded: String,
}

/// Where the baseline's state comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BaselineStart<'a> {
    /// The genesis given with `--genesis` ([`ChainStart::genesis`]).
    Genesis,
    /// A state dump of the block the chain file continues from.
    Dump(&'a Path),
}

/// Checks that the dump at `path` is the state of the block `start`
/// describes — its first line names that block's root, and its accounts
/// give it — before anything is imported. The accounts are read again
/// for the baseline's run, after strata's: holding them (gigabytes at
/// millions of accounts) through strata's runs would change what those
/// measure.
pub(crate) fn check_dump(path: &Path, start: &ChainStart) -> Result<(), CliError> {
    read_dump(path, start).map(drop)
}

/// The dump's first line must name the state root of `start`'s block.
fn of_start(dump: &Dump, path: &Path, start: &ChainStart) -> Result<(), CliError> {
    if dump.root() != start.header.state_root {
        return Err(BaselineStateError::OtherBlock {
            path: path.to_owned(),
            dump_root: dump.root(),
            block: start.header.number,
            block_root: start.header.state_root,
        }
        .into());
    }
    Ok(())
}

/// Executes the chain file's blocks over the in-memory database from the
/// block `start` describes; times the blocks after `timed_after` (the ones
/// strata ran).
pub(crate) fn run(
    chain: &Path,
    start: &ChainStart,
    state: BaselineStart<'_>,
    timed_after: u64,
) -> Result<BaselineRun, CliError> {
    let mut memory = match (state, &start.genesis) {
        (BaselineStart::Genesis, Some(genesis)) => MemoryChain::new(genesis),
        (BaselineStart::Dump(path), _) => MemoryChain::with_state(
            &read_dump(path, start)?,
            start.spec.clone(),
            &start.block_hashes,
            start.header.difficulty,
        ),
        (BaselineStart::Genesis, None) => {
            return Err(FlagError::BaselineNeedsState {
                starts: "starts from the genesis allocation or a state dump",
            }
            .into());
        }
    };
    let mut file = ChainFile::open(chain)?;
    let mut run = BaselineRun {
        blocks: 0,
        gas: 0,
        execution: Duration::ZERO,
        apply: Duration::ZERO,
        preloaded: match state {
            BaselineStart::Genesis => "genesis".to_owned(),
            BaselineStart::Dump(path) => path.display().to_string(),
        },
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

/// The accounts of the dump at `path`, read whole by `init --state`'s
/// reader: the state of the block `start` describes (its first line names
/// that block's state root), and its accounts give that root.
fn read_dump(path: &Path, start: &ChainStart) -> Result<GenesisAlloc, CliError> {
    let dump = crate::commands::init::open_dump(path)?;
    of_start(&dump, path, start)?;
    let stated = dump.root();
    let mut alloc = GenesisAlloc::new();
    for entry in dump.whole_accounts() {
        let (address, account) = entry.map_err(|source| BaselineStateError::Read {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        if alloc.insert(address, account).is_some() {
            return Err(BaselineStateError::Repeated {
                path: path.to_owned(),
                address,
            }
            .into());
        }
    }
    let computed = alloc_state_root(&alloc);
    if computed != stated {
        return Err(BaselineStateError::Root {
            path: path.to_owned(),
            stated,
            computed,
        }
        .into());
    }
    Ok(alloc)
}
