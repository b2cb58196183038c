//! The command line's error type: every failure of a command, with the file
//! it concerns.

mod import_chain;
mod serve;

use std::path::PathBuf;

use strata_storage::genesis::GenesisError;
use strata_trace::TraceError;
use strata_trace::geth::GethError;
use strata_trace::model::VerifyError;

pub use import_chain::{BaselineStateError, ContinueProblem, ImportChainError, PrefetchError};
pub use serve::ServeError;

/// Why a `strata` command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An output flag names a path no command may write over (nothing was
    /// written, read or changed).
    #[error("{flag} {path}: {reason}; nothing was written")]
    OutputRefused {
        /// The flag (or argument) that names the output.
        flag: String,
        /// The path as given.
        path: PathBuf,
        /// Why it is refused.
        reason: crate::OutputRefusal,
    },
    /// Publishing to an object store failed.
    #[error("publish: {0}")]
    Publish(#[source] Box<strata_storage::replica::ReplicaError>),
    /// Writing to standard output failed.
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
    /// A file is not valid JSON.
    #[error("{path}: invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A trace file is malformed.
    #[error("{path}: {source}")]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// What is wrong, with the line.
        #[source]
        source: Box<TraceError>,
    },
    /// A genesis file is malformed.
    #[error("{path}: {source}")]
    Genesis {
        /// The genesis file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Box<GenesisError>,
    },
    /// A state dump is malformed (nothing was imported).
    #[error("{path}: {source}; nothing was written")]
    Dump {
        /// The dump file.
        path: PathBuf,
        /// What is wrong, with the line.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// geth tracer output could not be imported.
    #[error("{path}: {source}")]
    Geth {
        /// The input file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Box<GethError>,
    },
    /// A trace does not agree with the model (reads or roots).
    #[error("{path}: {source}")]
    Verify {
        /// The trace file.
        path: PathBuf,
        /// The first disagreement.
        #[source]
        source: Box<VerifyError>,
    },
    /// An input file that is not what the command takes.
    #[error("{path}: {problem}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: InputProblem,
    },
    /// Arguments that do not go together, in a way clap cannot express
    /// (nothing was read or written).
    #[error("{0}")]
    Flags(#[from] FlagError),
    /// `RUST_LOG` is not a filter.
    #[error("RUST_LOG={filter:?} is not a valid filter: {reason}")]
    LogFilter {
        /// The variable's value.
        filter: String,
        /// The parser's message.
        reason: String,
    },
    /// `unwind --to` names a block the datadir cannot restore.
    #[error(
        "datadir {datadir}: cannot unwind to block {target}: the head is block {head} and at most the last {depth} blocks can be restored; nothing was changed"
    )]
    UnwindOutOfReach {
        /// The data directory.
        datadir: PathBuf,
        /// The block asked for.
        target: u64,
        /// The datadir's last block.
        head: u64,
        /// How many blocks back it can restore.
        depth: u64,
    },
    /// `unwind` on a datadir that holds no blocks.
    #[error("datadir {datadir} holds no blocks: there is nothing to unwind")]
    NothingToUnwind {
        /// The data directory.
        datadir: PathBuf,
    },
    /// An account whose code the datadir does not hold (a damaged datadir).
    #[error("{datadir}: account {address} has code hash {code_hash} but no code is stored for it")]
    MissingCode {
        /// The data directory.
        datadir: PathBuf,
        /// The account.
        address: alloy_primitives::Address,
        /// Its code hash.
        code_hash: alloy_primitives::B256,
    },
    /// A trace's block is not the one after the datadir's last.
    #[error(
        "{trace}: block {number} does not follow the datadir's last block (expected block {expected})"
    )]
    TraceDoesNotFollow {
        /// The trace file.
        trace: PathBuf,
        /// The trace's block.
        number: u64,
        /// The block after the datadir's last.
        expected: u64,
    },
    /// The storage engine failed on a data directory.
    #[error("datadir {datadir}: {source}")]
    Storage {
        /// The data directory.
        datadir: PathBuf,
        /// The engine's error.
        #[source]
        source: Box<strata_storage::Error>,
    },
    /// The flush when a writer closed the store failed (its blocks are
    /// still in the journal).
    #[error(
        "datadir {datadir}: the final flush into state.redb failed: {source}; every committed block is safe in the journal, and the next open of the datadir replays it"
    )]
    FinalFlush {
        /// The data directory.
        datadir: PathBuf,
        /// Why the flush failed.
        #[source]
        source: Box<strata_storage::Error>,
    },
    /// `--step-size` given for an existing datadir created with another.
    #[error(
        "datadir {datadir} was created with --step-size {recorded}, which it keeps; --step-size {asked} was given (drop it, or give {recorded}); nothing was written"
    )]
    StepSizeMismatch {
        /// The data directory.
        datadir: PathBuf,
        /// The step size given.
        asked: u64,
        /// The datadir's step size.
        recorded: u64,
    },
    /// A directory given as a datadir holds no strata database.
    #[error("{path}: not a strata datadir (no {file} in it)")]
    NotADatadir {
        /// The directory.
        path: PathBuf,
        /// The database file that is missing.
        file: &'static str,
    },
    /// `strata init` was given a datadir that already holds blocks.
    #[error(
        "datadir {path} already holds block {block} (root {root}); init needs an empty datadir"
    )]
    AlreadyInitialized {
        /// The data directory.
        path: PathBuf,
        /// Its last block.
        block: u64,
        /// Its root.
        root: alloy_primitives::B256,
    },
    /// A replayed block read a value the store does not hold.
    #[error(transparent)]
    ReadMismatch(Box<ReplayReadMismatch>),
    /// A replayed block (or the genesis) ended at another root than the trace states.
    #[error(transparent)]
    RootMismatch(Box<ReplayRootMismatch>),
    /// The `--observer-process` child failed to start, follow or finish.
    #[error("the observer process ({command}): {what}")]
    ObserverProcess {
        /// The command line of the child.
        command: String,
        /// What went wrong, with the child's own error output.
        what: String,
    },
    /// The `--metrics` endpoint could not be started.
    #[error("metrics endpoint {addr}: {message}")]
    Metrics {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why (the bind error).
        message: String,
    },
    /// The runs of a sweep ended at different roots.
    #[error(
        "the sweep's runs disagree on the final root: {first_run} ended at {first_root}, {other_run} at {other_root}"
    )]
    SweepDisagrees {
        /// The first run's settings, as the report names them.
        first_run: String,
        /// Its final root.
        first_root: alloy_primitives::B256,
        /// The first run that disagrees.
        other_run: String,
        /// Its final root.
        other_root: alloy_primitives::B256,
    },
    /// `strata verify` found problems.
    #[error("datadir {path}: verify found {count} problem(s)")]
    VerifyFailed {
        /// The data directory.
        path: PathBuf,
        /// How many.
        count: usize,
    },
    /// `strata ef-test` could not read its fixtures.
    #[error("ef-test: {0}")]
    EfTest(#[source] Box<strata_executor::ef_tests::RunnerError>),
    /// `strata serve` could not start.
    #[error("serve: {0}")]
    Serve(Box<ServeError>),
    /// A chain file's bytes at `offset` do not decode as a block.
    #[error("{path}: the block at byte offset {offset} does not decode: {reason}")]
    ChainRlp {
        /// The chain file.
        path: PathBuf,
        /// Where the block starts.
        offset: usize,
        /// The decoder's message.
        reason: String,
    },
    /// A block of a chain file was refused (or could not be executed);
    /// the blocks before it are committed, and a rerun resumes after them.
    #[error("{path}: block {number} ({hash}) at byte offset {offset}: {source}")]
    BlockRefused {
        /// The chain file.
        path: PathBuf,
        /// The block's number.
        number: u64,
        /// Its hash.
        hash: alloy_primitives::B256,
        /// Where it starts in the file.
        offset: usize,
        /// Why it was refused.
        #[source]
        source: Box<strata_executor::ExecError>,
    },
    /// A chain file and a datadir (or genesis) that do not belong together.
    #[error("import-chain: {0}")]
    ImportChain(Box<ImportChainError>),
    /// An `import-chain --prefetch` trace that cannot serve the chain's blocks.
    #[error(transparent)]
    Prefetch(Box<PrefetchError>),
    /// An `import-chain --baseline-state` dump that cannot start the baseline.
    #[error(transparent)]
    BaselineState(Box<BaselineStateError>),
    /// A genesis file the executor cannot start a chain from.
    #[error(transparent)]
    ChainGenesis(#[from] strata_executor::GenesisError),
    /// `gen-chain` could not generate its chain.
    #[error("gen-chain: {0}")]
    GenChain(#[source] Box<strata_chain_gen::GenError>),
    /// `strata ef-test` ran, and cases failed.
    #[error("ef-test: {failed} of {cases} cases failed")]
    EfTestFailed {
        /// Failed cases.
        failed: usize,
        /// Cases run.
        cases: usize,
    },
    /// A replay would resume a datadir that the trace does not lead to.
    #[error(transparent)]
    ResumeMismatch(Box<ResumeMismatch>),
    /// The total gas of a replay no longer fits in 64 bits.
    #[error(
        "{path}: block {block}: gas_used {gas} makes the replay's total gas overflow 64 bits (total before it {total})"
    )]
    GasOverflow {
        /// The trace file.
        path: PathBuf,
        /// The block whose gas overflowed the total.
        block: u64,
        /// The total of the blocks before it.
        total: u64,
        /// The block's gas_used.
        gas: u64,
    },
}

impl CliError {
    /// A [`CliError::Storage`] for `datadir`.
    pub fn storage(datadir: impl Into<PathBuf>) -> impl FnOnce(strata_storage::Error) -> Self {
        let datadir = datadir.into();
        move |source| Self::Storage {
            datadir,
            source: Box::new(source),
        }
    }

    /// A [`CliError::FinalFlush`] for a writer's `close()` of `datadir`:
    /// the message says the committed blocks are safe in the journal.
    pub fn final_flush(datadir: impl Into<PathBuf>) -> impl FnOnce(strata_storage::Error) -> Self {
        let datadir = datadir.into();
        move |source| CliError::FinalFlush {
            datadir,
            source: Box::new(source),
        }
    }

    /// A [`CliError::File`] for `path`.
    pub fn file(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::File { path, source }
    }

    /// A [`CliError::Json`] for `path`, with the parser's line and column.
    pub fn json(path: impl Into<PathBuf>) -> impl FnOnce(serde_json::Error) -> Self {
        let path = path.into();
        move |e| Self::Json {
            path,
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        }
    }
}

/// Read and parse a JSON file, with the line/column of a syntax error.
pub fn read_json(path: &std::path::Path) -> Result<serde_json::Value, CliError> {
    let text = std::fs::read_to_string(path).map_err(CliError::file(path))?;
    serde_json::from_str(&text).map_err(CliError::json(path))
}

/// A replayed block read a value the store does not hold.
#[derive(Debug, thiserror::Error)]
#[error(
    "{path}: block {block}: read of {key}: field {field}: the trace expects {expected}, the store holds {found}"
)]
pub struct ReplayReadMismatch {
    /// The trace file.
    pub path: PathBuf,
    /// Block number.
    pub block: u64,
    /// The key (address, or address and slot).
    pub key: String,
    /// The field compared.
    pub field: String,
    /// The trace's value.
    pub expected: String,
    /// The store's value.
    pub found: String,
}

/// A replayed block (or the genesis, block 0) ended at another root than the trace states.
#[derive(Debug, thiserror::Error)]
#[error(
    "{path}: block {block}: state root mismatch: the trace expects {expected}, the store computed {found}"
)]
pub struct ReplayRootMismatch {
    /// The trace file.
    pub path: PathBuf,
    /// Block number (0 for the genesis).
    pub block: u64,
    /// The trace's root.
    pub expected: alloy_primitives::B256,
    /// The store's root.
    pub found: alloy_primitives::B256,
}

/// A replay would resume a datadir whose root at its head is not the
/// trace's root of that block: the trace belongs to another chain or datadir.
#[derive(Debug, thiserror::Error)]
#[error(
    "{trace}: cannot resume datadir {datadir}: at block {block} the trace has state root {trace_root}, the datadir holds {datadir_root} (another trace's datadir?); nothing was written"
)]
pub struct ResumeMismatch {
    /// The trace file.
    pub trace: PathBuf,
    /// The data directory.
    pub datadir: PathBuf,
    /// The datadir's head (0: the genesis).
    pub block: u64,
    /// The trace's root at `block`.
    pub trace_root: alloy_primitives::B256,
    /// The datadir's root at `block`.
    pub datadir_root: alloy_primitives::B256,
}

/// Arguments that do not go together ([`CliError::Flags`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlagError {
    /// A flag that lets another process read the datadir while it is
    /// written, without every commit fsynced.
    #[error(
        "{flag} needs every commit durable (--sync-every 1, not {sync_every}): a second process sees only durable commits"
    )]
    NeedsDurableCommits {
        /// The flag.
        flag: &'static str,
        /// The `--sync-every` given.
        sync_every: u64,
    },
    /// A flag that needs one run, given with a sweep.
    #[error(
        "{flag} with a sweep: give one warmer count, state path, root timing and senders timing"
    )]
    NotWithSweep {
        /// The flag.
        flag: &'static str,
    },
    /// `--baseline memory` without the state it starts from.
    #[error(
        "--baseline memory {starts}: give --genesis, or --baseline-state with a state dump of that block (the file `init --state` read, e.g. gen-chain's state.jsonl)"
    )]
    BaselineNeedsState {
        /// What the baseline starts from.
        starts: &'static str,
    },
    /// A count that must be at least 1.
    #[error("--step-size, --keep-steps and --sync-every must be at least 1")]
    ZeroCount,
    /// A memory tier smaller than one flush batch.
    #[error(
        "--memory-mib {memory_mib} is below --flush-mib {flush_mib}: the memory tier must hold a flush batch"
    )]
    MemoryBelowFlush {
        /// `--memory-mib`.
        memory_mib: u64,
        /// `--flush-mib`.
        flush_mib: u64,
    },
    /// A sweep whose `--datadir` holds no store to copy.
    #[error(
        "a sweep with --datadir starts every run from a copy of {datadir}, which holds no store (replay once with that --datadir to build it, or drop --datadir for fresh temporary ones)"
    )]
    SweepWithoutStore {
        /// The datadir.
        datadir: PathBuf,
    },
    /// `--genesis` for a trace that carries its own.
    #[error("{trace}: the trace has a genesis line; --genesis {genesis} is not needed")]
    GenesisNotNeeded {
        /// The trace.
        trace: PathBuf,
        /// The `--genesis` given.
        genesis: PathBuf,
    },
    /// `--block-hash` other than the hash of the block `--chain` describes.
    #[error(
        "--block-hash {given} is not the hash of the block {chain} describes with the dump's root ({built})"
    )]
    OtherBlockHash {
        /// The `--chain` file.
        chain: PathBuf,
        /// The hash given.
        given: alloy_primitives::B256,
        /// The hash of the block built from `--chain` and the dump's root.
        built: alloy_primitives::B256,
    },
    /// `--sort-memory` more than the machine can give.
    #[error("--sort-memory {mib} MiB is more than {limit}: the sorts allocate that budget at once")]
    SortMemory {
        /// The budget asked for.
        mib: u64,
        /// What it exceeds (the machine's memory, or its address space).
        limit: String,
    },
    /// A count too large for the generator.
    #[error(
        "--accounts {accounts} + --contracts {contracts} is more than {most} genesis accounts (the generator keeps the whole state in memory)"
    )]
    TooManyAccounts {
        /// `--accounts`.
        accounts: usize,
        /// `--contracts`.
        contracts: usize,
        /// The most it takes.
        most: usize,
    },
    /// `import-geth` cannot tell the block's number.
    #[error("the block number is unknown: pass --number N or --block-header FILE")]
    UnknownBlockNumber,
    /// `import-chain --trace-out` into a datadir past the trace's start.
    #[error(
        "--trace-out starts its trace at {start}, but {datadir} already holds blocks up to {last}: {remedy}"
    )]
    TraceOutPastStart {
        /// Where the trace starts ("block N, which the file's first block
        /// builds on", or "the genesis").
        start: String,
        /// The datadir.
        datadir: PathBuf,
        /// Its last block.
        last: u64,
        /// What to give instead.
        remedy: &'static str,
    },
    /// `gen-chain`'s settings do not make a chain.
    #[error("{0}")]
    GenChain(Box<strata_chain_gen::GenError>),
}

/// What is wrong with an input file ([`CliError::Input`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputProblem {
    /// `init --chain`: the file does not parse as a geth genesis.
    #[error("not a geth genesis: {0}")]
    NotGethGenesis(String),
    /// `init --chain`: the genesis allocates accounts (the state comes
    /// from `--state`).
    #[error(
        "--chain takes a genesis without \"alloc\" (the state comes from --state); this one allocates {accounts} accounts"
    )]
    ChainWithAlloc {
        /// How many accounts it allocates.
        accounts: usize,
    },
    /// `init --chain`: the genesis describes another block than the one
    /// the dump is imported as.
    #[error(
        "it describes block {describes}, but the dump is imported as block {imported} (--block)"
    )]
    OtherBlock {
        /// The block the genesis describes.
        describes: u64,
        /// The block the dump is imported as.
        imported: u64,
    },
    /// `init --chain`: no block-0 header can be built from the genesis.
    #[error("no header: {0}")]
    NoHeader(String),
    /// A trace's genesis line after its first line.
    #[error("a genesis line after the first line")]
    GenesisLineNotFirst,
    /// `import-geth --block-header`: the document is not a header object.
    #[error("expected a block header object, found {found}")]
    NotAHeader {
        /// What the document holds instead, shortened.
        found: String,
    },
    /// `import-geth --block-header`: a header field has a bad value.
    #[error("field {field:?}: {reason}")]
    HeaderField {
        /// The field.
        field: String,
        /// Why its value is refused.
        reason: String,
    },
}
