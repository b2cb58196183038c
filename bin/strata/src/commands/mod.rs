//! The `strata` subcommands: argument definitions (clap) and their runners.
//! `gen-trace`, `import-geth`, `check-trace`, `completions` and `man` work
//! without the storage engine;
//! `ef-test` and `import-chain` execute blocks with strata-executor;
//! `init`, `replay`, `get`, `root`, `proof`, `stats`, `compact`, `verify` and `unwind` drive
//! strata-storage's `StateDb`.

mod cache_json;
mod check_trace;
mod compact;
mod completions;
mod datadir;
mod ef_test;
mod export;
mod gen_chain;
mod gen_trace;
mod get;
mod import_chain;
mod import_geth;
pub(crate) mod init;
mod man;
mod observe;
mod proof;
mod publish;
pub mod reference;
mod replay;
mod root;
mod serve;
mod stats;
mod unwind;
mod verify;

use clap::{Parser, Subcommand};

use crate::CliError;
use crate::logging::LogFormat;

pub use crate::arg_values::WarmerList;
pub use check_trace::CheckTraceArgs;
pub use compact::CompactArgs;
pub use completions::CompletionsArgs;
pub use ef_test::EfTestArgs;
pub use export::ExportArgs;
pub use gen_trace::GenTraceArgs;
pub use get::{GetArgs, GetWhat};
pub use import_chain::{Baseline, ImportChainArgs, SendersTiming};
pub use import_geth::ImportGethArgs;
pub use init::InitArgs;
pub use man::ManArgs;
pub use observe::ObserveArgs;
pub use proof::{ProofArgs, response as proof_response};
pub use publish::PublishArgs;
pub use replay::{ReplayArgs, RunResult};
pub use root::RootArgs;
pub use serve::ServeArgs;
pub use stats::StatsArgs;
pub use unwind::UnwindArgs;
pub use verify::VerifyArgs;

/// The version `--version` prints: the crate version and the git commit built.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("STRATA_GIT_COMMIT"),
    ")"
);

/// strata: a state-storage engine for Ethereum execution clients.
#[derive(Debug, Parser)]
#[command(name = "strata", version = VERSION, about)]
pub struct Cli {
    /// How log lines (stderr; filtered by RUST_LOG, default "info") are written.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Every `strata` command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a data directory from a genesis file.
    Init(InitArgs),
    /// Replay a block trace and report read latencies and root times.
    Replay(ReplayArgs),
    /// Read one account, slot or code from a data directory.
    Get(GetArgs),
    /// Follow a data directory read-only (beside its writer) and time reads.
    Observe(ObserveArgs),
    /// Print the state root and block of a data directory.
    Root(RootArgs),
    /// Print the Merkle proof of an account and slots (eth_getProof JSON).
    Proof(ProofArgs),
    /// Serve the state over Ethereum JSON-RPC, read-only beside the writer.
    Serve(ServeArgs),
    /// Publish a data directory to an S3 bucket for read replicas (read-only on it).
    Publish(PublishArgs),
    /// Print domain, tier and file statistics of a data directory.
    Stats(StatsArgs),
    /// Collate, merge and prune a data directory's files.
    Compact(CompactArgs),
    /// Write the last block's state as a line-by-line state dump (read-only).
    Export(ExportArgs),
    /// Recompute the state root from the domains and compare it with the stored one.
    Verify(VerifyArgs),
    /// Restore one of the last blocks of a data directory (undo later blocks).
    Unwind(UnwindArgs),
    /// Generate a mainnet-shaped chain of signed transactions: genesis.json, chain.rlp.
    GenChain(gen_chain::GenChainArgs),
    /// Generate a deterministic, mainnet-shaped synthetic trace.
    GenTrace(GenTraceArgs),
    /// Turn geth prestateTracer output for one block into a trace block line.
    ImportGeth(ImportGethArgs),
    /// Replay a trace through the in-memory model: check every read and root.
    CheckTrace(CheckTraceArgs),
    /// Run Ethereum's BlockchainTests through the block executor over strata.
    EfTest(EfTestArgs),
    /// Execute a file of RLP blocks on top of a genesis over strata.
    ImportChain(ImportChainArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or PowerShell.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one per command into a directory.
    Man(ManArgs),
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Init(args) => init::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Get(args) => get::run(args),
        Command::Observe(args) => observe::run(args),
        Command::Root(args) => root::run(args),
        Command::Proof(args) => proof::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Publish(args) => publish::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Compact(args) => compact::run(args),
        Command::Export(args) => export::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Unwind(args) => unwind::run(args),
        Command::GenChain(args) => gen_chain::run(args),
        Command::GenTrace(args) => gen_trace::run(args),
        Command::ImportGeth(args) => import_geth::run(args),
        Command::CheckTrace(args) => check_trace::run(args),
        Command::EfTest(args) => ef_test::run(args),
        Command::ImportChain(args) => import_chain::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}
