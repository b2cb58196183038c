//! `strata init --datadir DIR (--genesis FILE | --state FILE)`: create a
//! data directory from a genesis (geth genesis JSON or a bare alloc map) as
//! block 0, or from a line-by-line state dump as block N (streamed, in
//! bounded memory, into immutable files — an account line too long to hold
//! parsed as it is read, its slots sorted on disk; the dump's root checked
//! before anything is written). Prints the root on the last line. A datadir that
//! already holds blocks is refused.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use alloy_primitives::B256;
use clap::{ArgGroup, Args};
use strata_storage::dump::DumpReader;
use strata_storage::genesis::chain::genesis_header;
use strata_storage::genesis::{GenesisAlloc, parse_alloc_json};
use strata_storage::import::{ImportOptions, ImportReport};
use strata_storage::{DB_FILE, HistoryRetention, ReadOnlyStateDb, StateDb};

use super::datadir::inspect_options;
use crate::output::{Lines, print_text};
use crate::{CliError, FlagError, InputProblem};

/// Largest `init --block`: a billion blocks (about 380 years of 12 s
/// slots); far beyond it, the step numbers of the files' names overflow
/// (found only after the whole dump was read).
const MAX_DUMP_BLOCK: u64 = 1_000_000_000;

/// Read buffer of a state dump.
const DUMP_READ_BUFFER: usize = 4 << 20;

/// Arguments of `strata init`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("input").required(true).args(["genesis", "state"])))]
pub struct InitArgs {
    /// A geth genesis JSON (with "alloc") or a bare alloc map: block 0.
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
    /// A line-by-line state dump (geth `dump --iterative`, reth
    /// `init-state`, `strata export`): first line {"root": …}, then one
    /// account per line with its address. Its root is checked.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// The block the dump's state belongs to; the datadir continues after
    /// it (at most 1,000,000,000).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "state",
          value_parser = clap::value_parser!(u64).range(0..=MAX_DUMP_BLOCK))]
    pub block: u64,
    /// The hash of that block (served to BLOCKHASH by the blocks after it).
    #[arg(long, value_name = "HASH", requires = "state")]
    pub block_hash: Option<B256>,
    /// The chain the dump's state starts: a geth genesis JSON without
    /// "alloc" (chain id, fork rules, header fields; `gen-chain` writes
    /// chain.json). Block 0's header is built from it with the dump's root
    /// (its hash checked against --block-hash when given), and the datadir
    /// records the chain's configuration, so `import-chain` needs no
    /// --genesis afterwards.
    #[arg(long, value_name = "FILE", requires = "state")]
    pub chain: Option<PathBuf>,
    /// The data directory to create.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// How much history the datadir keeps when this command creates it:
    /// `off` (reads at the last 128 blocks only, from the journal: the
    /// default), `full` (reads and proofs at every block from the first),
    /// or a number of blocks. Fixed when the datadir is made; for an
    /// existing datadir it must be what the datadir recorded.
    #[arg(long, value_name = "off|full|N")]
    pub history: Option<HistoryRetention>,
}

pub(super) fn run(args: InitArgs) -> Result<(), CliError> {
    // The input is read (a genesis parsed, a dump's first line) before the
    // datadir is created: a missing or broken file creates nothing.
    let input = match (&args.genesis, &args.state) {
        (Some(genesis), _) => Input::Genesis(read_genesis(genesis)?),
        (None, Some(state)) => Input::Dump(open_dump(state)?),
        (None, None) => unreachable!("clap requires --genesis or --state"),
    };
    let chain = match (&args.chain, &input) {
        (Some(path), Input::Dump(dump)) => Some(ChainStart::read(path, dump.root(), args.block)?),
        _ => None,
    };
    if let (Some(chain), Some(given)) = (&chain, args.block_hash)
        && chain.hash != given
    {
        return Err(FlagError::OtherBlockHash {
            chain: args.chain.clone().unwrap_or_default(),
            given,
            built: chain.hash,
        }
        .into());
    }
    // Refused before the writer's open, which would rewrite bytes of the
    // database: a datadir holding blocks is left exactly as it was.
    refuse_initialized(&args.datadir)?;
    let db = StateDb::open(&args.datadir, inspect_options().with_history(args.history))
        .map_err(CliError::storage(&args.datadir))?;
    if let Some(block) = db.last_block() {
        return Err(CliError::AlreadyInitialized {
            path: args.datadir,
            block,
            root: db.root(),
        });
    }
    let printed = match input {
        Input::Genesis(alloc) => {
            let root = db
                .init_genesis(&alloc, strata_storage::GenesisName::Unnamed)
                .map_err(CliError::storage(&args.datadir))?;
            let slots: usize = alloc.values().map(|a| a.storage.len()).sum();
            print_text(&format!(
                "genesis: {} accounts, {slots} slots written to {} as block 0\n{root}\n",
                alloc.len(),
                args.datadir.display()
            ))
        }
        Input::Dump(dump) => {
            let started = Instant::now();
            let path = args.state.as_deref().expect("a dump comes from --state");
            let block = BlockToImport {
                number: args.block,
                hash: chain.as_ref().map(|c| c.hash).or(args.block_hash),
                header: chain.as_ref().map(|c| c.header_rlp.clone()),
            };
            let report = import(&db, dump, path, block, &args.datadir)?;
            if let Some(chain) = &chain {
                db.set_chain_config(&chain.recorded_config)
                    .map_err(CliError::storage(&args.datadir))?;
            }
            print_report(&report, &args.datadir, started.elapsed().as_secs_f64())
        }
    };
    db.close().map_err(CliError::storage(&args.datadir))?;
    printed
}

/// Refuses a datadir whose database (read-only: nothing changes) holds
/// blocks. One that cannot be read so is left to the writer's open, which
/// says why or recovers it.
fn refuse_initialized(datadir: &Path) -> Result<(), CliError> {
    if !datadir.join(DB_FILE).exists() {
        return Ok(());
    }
    let Ok(db) = ReadOnlyStateDb::open(datadir, inspect_options()) else {
        return Ok(());
    };
    match (db.last_block(), db.root()) {
        (Ok(Some(block)), Ok(root)) => Err(CliError::AlreadyInitialized {
            path: datadir.to_owned(),
            block,
            root,
        }),
        _ => Ok(()),
    }
}

/// What `init` builds the datadir from.
enum Input {
    Genesis(GenesisAlloc),
    Dump(Dump),
}

/// A state dump whose first line (the root) has been read.
pub(crate) type Dump = DumpReader<BufReader<File>>;

fn read_genesis(path: &Path) -> Result<GenesisAlloc, CliError> {
    let text = std::fs::read_to_string(path).map_err(CliError::file(path))?;
    parse_alloc_json(&text).map_err(|source| CliError::Genesis {
        path: path.to_owned(),
        source: Box::new(source),
    })
}

/// Opens the state dump at `path` and reads its root line.
pub(crate) fn open_dump(path: &Path) -> Result<Dump, CliError> {
    let file = File::open(path).map_err(CliError::file(path))?;
    DumpReader::new(BufReader::with_capacity(DUMP_READ_BUFFER, file)).map_err(|e| CliError::Dump {
        path: path.to_owned(),
        source: Box::new(e),
    })
}

/// The block a dump's state belongs to, as the datadir records it.
pub(crate) struct BlockToImport {
    /// Its number.
    pub(crate) number: u64,
    /// Its hash, served to BLOCKHASH by the blocks after it.
    pub(crate) hash: Option<B256>,
    /// Its header's RLP, which a chain import continues from.
    pub(crate) header: Option<bytes::Bytes>,
}

/// The chain a dump's state starts (`init --chain`): block 0's header,
/// built from a geth genesis without allocation and the dump's root.
struct ChainStart {
    hash: B256,
    header_rlp: bytes::Bytes,
    recorded_config: Vec<u8>,
}

impl ChainStart {
    /// Reads `path` and builds the header of `block` (which must be the
    /// genesis' number) with `root`.
    fn read(path: &Path, root: B256, block: u64) -> Result<Self, CliError> {
        let text = std::fs::read_to_string(path).map_err(CliError::file(path))?;
        let input = |problem| CliError::Input {
            path: path.to_owned(),
            problem,
        };
        let genesis: alloy_genesis::Genesis = serde_json::from_str(&text)
            .map_err(|error| input(InputProblem::NotGethGenesis(error.to_string())))?;
        if !genesis.alloc.is_empty() {
            return Err(input(InputProblem::ChainWithAlloc {
                accounts: genesis.alloc.len(),
            }));
        }
        let number = genesis.number.unwrap_or(0);
        if number != block {
            return Err(input(InputProblem::OtherBlock {
                describes: number,
                imported: block,
            }));
        }
        let header = genesis_header(&genesis, root)
            .map_err(|error| input(InputProblem::NoHeader(error.to_string())))?;
        Ok(Self {
            hash: header.hash_slow(),
            header_rlp: bytes::Bytes::from(alloy_rlp::encode(&header)),
            recorded_config: strata_executor::recorded_chain_config(&genesis.config),
        })
    }
}

/// Imports `dump` (read from `path`) as `block` of the empty `db`, its root
/// checked (the sort budget is the default's).
pub(crate) fn import(
    db: &StateDb,
    dump: Dump,
    path: &Path,
    block: BlockToImport,
    datadir: &Path,
) -> Result<ImportReport, CliError> {
    let options = ImportOptions {
        block: block.number,
        block_hash: block.hash,
        block_header: block.header,
        expected_root: Some(dump.root()),
        ..ImportOptions::default()
    };
    db.import_state(dump, &options).map_err(|e| match e {
        strata_storage::Error::ImportInput { source } => CliError::Dump {
            path: path.to_owned(),
            source,
        },
        other => CliError::storage(datadir)(other),
    })
}

fn print_report(report: &ImportReport, datadir: &Path, seconds: f64) -> Result<(), CliError> {
    let mut out = Lines::default();
    out.line(format_args!(
        "imported: {} accounts ({} with code), {} slots, {} commitment records into {} as block {} in {seconds:.1} s \
         (read and sort {:.1} s, account trie {:.1} s, files {:.1} s; {} sort runs; {} accounts streamed)",
        report.accounts,
        report.contracts,
        report.slots,
        report.records,
        datadir.display(),
        report.block,
        report.ingest.as_secs_f64(),
        report.account_trie.as_secs_f64(),
        report.write.as_secs_f64(),
        report.runs,
        report.streamed,
    ));
    let entries = report.accounts + report.slots + report.contracts + report.records;
    out.line(format_args!(
        "files: {} bytes for {} bytes of keys and values ({:.2}×), {:.1} bytes per entry",
        report.file_bytes,
        report.raw_bytes,
        report.file_bytes as f64 / report.raw_bytes.max(1) as f64,
        report.file_bytes as f64 / entries.max(1) as f64,
    ));
    out.line(report.root);
    out.print()
}
