//! Why a chain file and a datadir (or a genesis) do not go together: each
//! case of `strata import-chain` a user can meet, with the files and the
//! blocks it concerns.

use std::path::PathBuf;

use alloy_primitives::{Address, B256};
use strata_storage::dump::DumpError;

use super::CliError;

/// A chain file and a datadir (or genesis) that do not belong together.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportChainError {
    /// An `--access-lists` file's entry for a block is missing, malformed,
    /// or another block's.
    #[error("{file}, offset {offset}: block {block}'s access list: {reason}")]
    AccessList {
        /// The access-lists file.
        file: PathBuf,
        /// Where the block's entry starts.
        offset: usize,
        /// The block.
        block: u64,
        /// What is wrong.
        reason: String,
    },
    /// The datadir cannot continue the chain file without its genesis.
    #[error(
        "{datadir} {why}: give the chain's genesis with --genesis (or create the datadir with `strata init --state … --chain …`)"
    )]
    CannotContinue {
        /// The datadir.
        datadir: PathBuf,
        /// What it lacks.
        why: ContinueProblem,
    },
    /// The importer refused a block for a reason this build does not name.
    #[error("{chain}, the block at byte offset {offset}: {source}")]
    Importer {
        /// The chain file.
        chain: PathBuf,
        /// Where the block starts.
        offset: usize,
        /// The importer's refusal.
        #[source]
        source: strata_executor::ImportError,
    },
    /// The chain file holds no block.
    #[error("{chain} holds no block")]
    EmptyChain {
        /// The chain file.
        chain: PathBuf,
    },
    /// The datadir's recorded chain configuration is not one.
    #[error("{datadir}: {source}")]
    RecordedConfig {
        /// The datadir.
        datadir: PathBuf,
        /// Why.
        #[source]
        source: strata_executor::ChainSpecError,
    },
    /// A chain file from block 0 given without a genesis.
    #[error("{chain} starts at block 0: import it with --genesis")]
    NeedsGenesis {
        /// The chain file.
        chain: PathBuf,
    },
    /// The chain file starts after the block after the datadir's head.
    #[error(
        "{chain} starts at block {first}, but {datadir} ends at block {head}: the blocks between are missing"
    )]
    Gap {
        /// The chain file.
        chain: PathBuf,
        /// Its first block.
        first: u64,
        /// The datadir.
        datadir: PathBuf,
        /// The datadir's last block.
        head: u64,
    },
    /// A header the datadir keeps does not decode.
    #[error("{datadir}: the stored header of block {block} does not decode: {source}")]
    StoredHeader {
        /// The datadir.
        datadir: PathBuf,
        /// The block.
        block: u64,
        /// The decoder's error.
        #[source]
        source: alloy_rlp::Error,
    },
    /// The chain file's first block does not build on the datadir's block.
    #[error(
        "{chain}'s first block (number {first}) builds on {parent_hash}, but {datadir} holds block {parent} with hash {hash}: the datadir is on another chain"
    )]
    OtherParent {
        /// The chain file.
        chain: PathBuf,
        /// Its first block.
        first: u64,
        /// The parent hash that block names.
        parent_hash: B256,
        /// The datadir.
        datadir: PathBuf,
        /// The parent's number.
        parent: u64,
        /// The hash of the datadir's block at that number.
        hash: B256,
    },
    /// The thread that reads and recovers the blocks ahead panicked.
    #[error("{chain}: the thread reading the blocks ahead panicked: {message}")]
    ReaderPanicked {
        /// The chain file.
        chain: PathBuf,
        /// The panic's message.
        message: String,
    },
    /// A block out of order in the chain file.
    #[error(
        "{chain}: the block at byte offset {offset} is block {number}, but block {expected} was expected (the file's blocks must follow each other from block {first})"
    )]
    OutOfOrder {
        /// The chain file.
        chain: PathBuf,
        /// Where the block starts.
        offset: usize,
        /// Its number.
        number: u64,
        /// The number expected there.
        expected: u64,
        /// The file's first block.
        first: u64,
    },
    /// strata's root of the genesis allocation is not alloy-trie's.
    #[error("strata's root of the genesis allocation is {strata}, alloy-trie's is {alloy_trie}")]
    GenesisRoot {
        /// strata's.
        strata: B256,
        /// alloy-trie's.
        alloy_trie: B256,
    },
    /// The datadir stands before the genesis block given.
    #[error("{datadir} is at block {last}, before the genesis block {genesis}")]
    BeforeGenesis {
        /// The datadir.
        datadir: PathBuf,
        /// Its last block.
        last: u64,
        /// The genesis block's number.
        genesis: u64,
    },
    /// The datadir's genesis is not the one given.
    #[error(
        "{datadir} holds another chain: its genesis is not the one given (hash {hash}, root {root})"
    )]
    OtherGenesis {
        /// The datadir.
        datadir: PathBuf,
        /// The given genesis's hash.
        hash: B256,
        /// Its state root.
        root: B256,
    },
    /// A block the datadir holds is not the chain file's block there.
    #[error(
        "{datadir} holds a block {number} other than {chain} has at byte offset {offset} (hash {hash}): the datadir is on another chain"
    )]
    OtherBlock {
        /// The datadir.
        datadir: PathBuf,
        /// The block number.
        number: u64,
        /// The chain file.
        chain: PathBuf,
        /// Where the file's block starts.
        offset: usize,
        /// The file's block's hash.
        hash: B256,
    },
}

impl From<ImportChainError> for CliError {
    fn from(error: ImportChainError) -> Self {
        CliError::ImportChain(Box::new(error))
    }
}

/// What a datadir lacks to continue a chain without its genesis
/// ([`ImportChainError::CannotContinue`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContinueProblem {
    /// `init --chain` recorded no chain configuration in it.
    #[error("records no chain configuration")]
    NoChainConfig,
    /// The chain merges at a total difficulty, which the datadir does not keep.
    #[error(
        "belongs to a chain that merges at a total difficulty, which the datadir does not keep"
    )]
    MergesAtDifficulty,
    /// It holds no block.
    #[error("holds no block")]
    NoBlock,
    /// It keeps no header of the chain file's first block's parent.
    #[error(
        "keeps no header of block {parent}, the parent of the file's first block (headers of the last 256 blocks are kept)"
    )]
    NoParentHeader {
        /// The parent's number.
        parent: u64,
    },
}

/// Why a `--prefetch` trace cannot serve a block of the chain file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrefetchError {
    /// The trace has no line for the block: it ends before it, or starts
    /// after it.
    #[error("--prefetch {trace}: no access list for block {block} ({found})")]
    Missing {
        /// The trace file.
        trace: PathBuf,
        /// The block of the chain file.
        block: u64,
        /// What the trace has instead.
        found: String,
    },
    /// The trace's line for the block records no state root, so nothing
    /// ties it to the chain's block.
    #[error(
        "--prefetch {trace}: block {block} records no state root, so it cannot be matched to the chain's block {block}"
    )]
    NoRoot {
        /// The trace file.
        trace: PathBuf,
        /// The block.
        block: u64,
    },
    /// The trace's block is another chain's: its state root (or gas) is
    /// not the one the chain's header carries.
    #[error(
        "--prefetch {trace} is not a trace of {chain}: block {block} has {field} {traced} in the trace, {expected} in the chain's header"
    )]
    OtherChain {
        /// The trace file.
        trace: PathBuf,
        /// The chain file.
        chain: PathBuf,
        /// The block.
        block: u64,
        /// `state root` or `gas used`.
        field: &'static str,
        /// The trace's value.
        traced: String,
        /// The header's value.
        expected: String,
    },
}

/// Why a `--baseline-state` dump cannot start the baseline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineStateError {
    /// A line of the dump could not be read.
    #[error("--baseline-state {path}: {source}")]
    Read {
        /// The dump.
        path: PathBuf,
        /// What is wrong, with the line.
        #[source]
        source: Box<DumpError>,
    },
    /// The dump is the state of another block than the one the chain
    /// file continues from.
    #[error(
        "--baseline-state {path} is the state with root {dump_root} (its first line), but the chain file's first block builds on block {block}, whose state root is {block_root}"
    )]
    OtherBlock {
        /// The dump.
        path: PathBuf,
        /// The root the dump's first line names.
        dump_root: B256,
        /// The block the chain file continues from.
        block: u64,
        /// Its header's state root.
        block_root: B256,
    },
    /// The dump's accounts do not give the root its first line names.
    #[error(
        "--baseline-state {path}: its first line names root {stated}, but its accounts give {computed} (alloy-trie)"
    )]
    Root {
        /// The dump.
        path: PathBuf,
        /// The root of the first line.
        stated: B256,
        /// alloy-trie's root of the accounts.
        computed: B256,
    },
    /// An account is listed twice.
    #[error("--baseline-state {path}: account {address} is listed twice")]
    Repeated {
        /// The dump.
        path: PathBuf,
        /// The account.
        address: Address,
    },
}

impl From<BaselineStateError> for CliError {
    fn from(error: BaselineStateError) -> Self {
        CliError::BaselineState(Box::new(error))
    }
}
