//! One import: open (or resume) the datadir, write the genesis when it is
//! new, for a cold run evict its files from the page cache and open it
//! afresh, skip the blocks it already holds (checking they are the file's),
//! then execute and commit every further block, each root checked (each
//! prefetched first from its access list when a trace is given).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use strata_executor::{
    AccessListUse, BlockTimings, ChainAnchor, ChainImporter, ExecuteOptions, GenesisStart,
    ImportError, Imported, RootTiming, StatePath, TransactionsAhead,
};
use strata_storage::telemetry::MetricsSnapshot;
use strata_storage::{CacheStats, Options, StateDb, WarmStart};

use super::access_lists::AccessListFile;
use super::ahead::{Blocks, NextBlock, SendersTiming};
use super::chain_file::FileBlock;
use super::prefetch::PrefetchTrace;
use super::progress::{Done, Progress};
use super::start::ChainStart;
use super::trace_out::TraceOut;
use crate::error::ImportChainError;
use crate::thread_cpu::{CpuSpent, CpuWatch, ThreadGroup};
use crate::{CliError, FlagError};

/// What one import did and measured.
#[derive(Debug, Clone)]
pub(crate) struct ImportRun {
    /// Warmer threads of the store.
    pub(crate) warmers: usize,
    /// How the EVM reached the state.
    pub(crate) state: StatePath,
    /// When the root was computed.
    pub(crate) root: RootTiming,
    /// When the senders were recovered.
    pub(crate) senders: SendersTiming,
    /// Senders' recovery on the reading thread, summed over the executed
    /// blocks (with `Ahead`; inline, it is in the checks' time).
    pub(crate) senders_ahead: Duration,
    /// Whether the run started cold (page cache evicted, store reopened).
    pub(crate) cold: bool,
    /// The trace each block's access list was prefetched from, if any.
    pub(crate) prefetch: Option<PathBuf>,
    /// Items (accounts, slots, trie paths) the warmers loaded from the
    /// access lists, summed over the blocks.
    pub(crate) prefetched: u64,
    /// The `--access-lists` file the blocks' lists came with, if any.
    pub(crate) access_lists: Option<PathBuf>,
    /// What the lists were used for.
    pub(crate) access_list: AccessListUse,
    /// Threads running each block's transactions ahead from its list.
    pub(crate) transaction_workers: usize,
    /// Whether the branch cache was to be warmed before the first block.
    pub(crate) warm_start: bool,
    /// What the warm start read, when one ran.
    pub(crate) warmed: Option<WarmStart>,
    /// How the transactions ran ahead, summed over the blocks that did.
    pub(crate) ahead: TransactionsAhead,
    /// The datadir's last block before the run (0: just created).
    pub(crate) resumed_after: u64,
    /// Blocks executed and committed.
    pub(crate) blocks: u64,
    /// Their transactions.
    pub(crate) transactions: u64,
    /// Their gas.
    pub(crate) gas: u64,
    /// Wall time of the block loop: the chain file's reading included, the
    /// `--prefetch` trace's reading excluded (`list_reading`: it stands for
    /// an access list that comes with the block, as EIP-7928's does).
    pub(crate) wall: Duration,
    /// Time spent reading each block's access list from the `--prefetch`
    /// trace (JSON parsing), outside `wall`.
    pub(crate) list_reading: Duration,
    /// The phases summed over the blocks.
    pub(crate) totals: BlockTimings,
    /// Per block.
    pub(crate) per_block: Vec<BlockRow>,
    /// Read latencies of the block loop.
    pub(crate) reads: MetricsSnapshot,
    /// The process's CPU time over the block loop, by thread (`None`
    /// where `/proc` cannot tell).
    pub(crate) cpu: Option<CpuSpent>,
    /// Branch cache counters at the end.
    pub(crate) cache_stats: CacheStats,
    /// Value cache counters at the end.
    pub(crate) value_cache_stats: CacheStats,
    /// The last block committed.
    pub(crate) final_block: Option<u64>,
    /// Its state root.
    pub(crate) final_root: B256,
}

/// The threads an import's CPU is reported by: the writer (the main
/// thread: the EVM, the commit's first half), the root's, the reading
/// thread's (senders recovered ahead), the flusher's, the warmers', the
/// transactions run ahead; `other` holds the rest (the commit's second
/// half, freeing old blocks, maintenance).
const IMPORT_THREADS: &[ThreadGroup] = &[
    ThreadGroup::Main("writer"),
    ThreadGroup::Named("root", "strata-root-"),
    ThreadGroup::Named("senders", READING_THREAD),
    ThreadGroup::Named("flush", "strata-flush"),
    ThreadGroup::Named("warmers", "strata-warmer-"),
    ThreadGroup::Named("tx ahead", "strata-tx-ahead"),
];

/// The reading thread's name as the kernel keeps it (15 bytes): it ends
/// blocks before the chain does, so its time is looked at each block.
const READING_THREAD: &str = "strata-import-r";

/// One executed block: its figures, times in ms.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub(crate) struct BlockRow {
    /// Its number.
    pub(crate) block: u64,
    /// Gas used.
    pub(crate) gas_used: u64,
    /// Transactions.
    pub(crate) transactions: u64,
    /// Header and body checks, sender recovery.
    pub(crate) checks_ms: f64,
    /// The EVM over strata (the root excluded).
    pub(crate) execution_ms: f64,
    /// Receipts, bloom and the changes written into the block.
    pub(crate) apply_ms: f64,
    /// strata's state root: the block's wait for it after the EVM.
    pub(crate) root_ms: f64,
    /// Folds of a streamed root (0: computed after the block).
    pub(crate) root_folds: u64,
    /// A streamed root's last fold after the block's last writes.
    pub(crate) root_wait_ms: Option<f64>,
    /// The journal append that makes it durable.
    pub(crate) commit_ms: f64,
    /// Items the warmers loaded from its access list (0 without
    /// `--prefetch` or without warmers).
    pub(crate) prefetched: u64,
    /// With its own access list used: whether the root computed from it
    /// alongside execution was the block's (`false`: set aside, computed
    /// from the writes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) root_from_list: Option<bool>,
}

/// The store and what the import needs besides the file.
pub(crate) struct Import<'a> {
    /// The chain file.
    pub(crate) chain: &'a Path,
    /// The datadir imported into.
    pub(crate) datadir: &'a Path,
    /// The block the file continues from (and the genesis of a new datadir).
    pub(crate) start: &'a ChainStart,
    /// Store options (warmers, caches, durability).
    pub(crate) options: Options,
    /// Where to write what the execution read and wrote, if anywhere.
    pub(crate) trace_out: Option<&'a mut TraceOut>,
    /// How the EVM reaches the state.
    pub(crate) state: StatePath,
    /// When the root is computed.
    pub(crate) root: RootTiming,
    /// When each block's senders are recovered.
    pub(crate) senders: SendersTiming,
    /// Evict the datadir from the page cache and reopen the store before
    /// the first block.
    pub(crate) cold: bool,
    /// A block trace of the chain whose access lists are prefetched.
    pub(crate) prefetch: Option<&'a Path>,
    /// The access lists of the chain's Amsterdam blocks.
    pub(crate) access_lists: Option<&'a Path>,
    /// What they are used for beyond their check.
    pub(crate) access_list: AccessListUse,
    /// Threads running each Amsterdam block's transactions ahead from its
    /// list (0: one after the other).
    pub(crate) transaction_workers: usize,
    /// Whether to draw a progress bar or log lines.
    pub(crate) progress: bool,
}

impl Import<'_> {
    /// Runs the import.
    pub(crate) fn run(self) -> Result<ImportRun, CliError> {
        let Import {
            chain,
            datadir,
            start: chain_start,
            options,
            mut trace_out,
            state,
            root,
            senders,
            cold,
            prefetch,
            access_lists,
            access_list,
            transaction_workers,
            progress,
        } = self;
        let warmers = options.warmers;
        let warm_start = options.warm_start;
        let mut db = StateDb::open(datadir, options.clone()).map_err(CliError::storage(datadir))?;
        let resumed_after = match &chain_start.genesis {
            Some(genesis) => {
                let place = FilePlace {
                    offset: 0,
                    hash: genesis.hash,
                };
                let importer = ChainImporter::from_genesis(&db, genesis)
                    .map_err(|error| import_error(error, datadir, chain, chain_start, place))?;
                let start = importer.genesis_start();
                genesis_started(start, datadir, &db, trace_out.as_deref_mut(), genesis)?;
                importer.resumes_after()
            }
            None => start_from_datadir(&db, datadir, chain_start, trace_out.is_some())?,
        };
        if cold {
            // Closed first: the close flushes, and no cache survives it.
            db.close().map_err(CliError::final_flush(datadir))?;
            crate::cold::cold_start(datadir)?;
            db = StateDb::open(datadir, options).map_err(CliError::storage(datadir))?;
        }
        let mut lists = prefetch
            .map(|trace| PrefetchTrace::open(trace, chain))
            .transpose()?;
        let mut list_file = access_lists.map(AccessListFile::open).transpose()?;
        let mut blocks = Blocks::open(chain, senders, &chain_start.spec, resumed_after)?;
        let anchor = ChainAnchor {
            header: chain_start.header.clone(),
            hash: chain_start.hash,
        };
        let mut importer = ChainImporter::new(
            &db,
            chain_start.spec.clone(),
            anchor,
            chain_start.header.difficulty,
        );
        let mut run = ImportRun {
            warmers,
            state,
            root,
            senders,
            senders_ahead: Duration::ZERO,
            cold,
            prefetch: prefetch.map(Path::to_owned),
            prefetched: 0,
            access_lists: access_lists.map(Path::to_owned),
            access_list,
            transaction_workers,
            warm_start,
            warmed: db.warm_start(),
            ahead: TransactionsAhead::default(),
            resumed_after,
            blocks: 0,
            transactions: 0,
            gas: 0,
            wall: Duration::ZERO,
            list_reading: Duration::ZERO,
            totals: BlockTimings::default(),
            per_block: Vec::new(),
            reads: MetricsSnapshot::default(),
            cpu: None,
            cache_stats: CacheStats::default(),
            value_cache_stats: CacheStats::default(),
            final_block: None,
            final_root: B256::ZERO,
        };
        let mut bar = Progress::new(progress, blocks.len());
        db.metrics().snapshot_and_reset();
        // The caches' figures are the blocks': the warm start's loads are
        // reported apart.
        let (cache_before, values_before) = (db.cache_stats(), db.value_cache_stats());
        let mut cpu = CpuWatch::start();
        let started = Instant::now();
        while let Some(NextBlock {
            block: FileBlock { block, offset },
            senders: recovered,
            position,
        }) = blocks.next_block()?
        {
            let number = block.number();
            // The block's access list comes with it, as the engine API's
            // payload carries it (read for skipped blocks too, to stay in step).
            let given = list_file
                .as_mut()
                .map(|file| file.next_for(block.header()))
                .transpose()?
                .flatten();
            let block = match given {
                Some(list) => block.with_access_list(list),
                None => block,
            };
            let reading = Instant::now();
            let list = match &mut lists {
                Some(lists) if number > resumed_after => Some(lists.list_for(&block)?),
                _ => None,
            };
            run.list_reading += reading.elapsed();
            let options = ExecuteOptions {
                record_access: trace_out.is_some(),
                state,
                prefetch: list.as_ref(),
                root,
                senders: recovered.as_ref(),
                access_list,
                transaction_workers,
            };
            let place = FilePlace {
                offset,
                hash: block.hash,
            };
            let imported = importer
                .import(block, options)
                .map_err(|error| import_error(error, datadir, chain, chain_start, place))?;
            if let Imported::Executed(executed) = imported {
                if let (Some(out), Some(access)) = (trace_out.as_deref_mut(), &executed.access) {
                    out.block(&executed, access)?;
                }
                run.add(&executed);
                if let Some(cpu) = cpu.as_mut() {
                    if run.blocks == 1 {
                        // The threads started with the run have named
                        // themselves by now.
                        cpu.look();
                    }
                    cpu.look_at(READING_THREAD);
                }
                run.senders_ahead += recovered.as_ref().map_or(Duration::ZERO, |r| r.took());
                bar.update(number, position, run.done(), started);
            }
        }
        if let Some(file) = list_file.as_mut() {
            file.warn_if_more();
        }
        run.wall = started.elapsed().saturating_sub(run.list_reading);
        run.cpu = cpu.map(|cpu| cpu.spent(IMPORT_THREADS));
        bar.finish(run.done(), run.wall);
        run.reads = db.metrics().snapshot_and_reset();
        run.cache_stats = db.cache_stats().since(&cache_before);
        run.value_cache_stats = db.value_cache_stats().since(&values_before);
        run.final_block = db.last_block();
        run.final_root = db.root();
        db.close().map_err(CliError::final_flush(datadir))?;
        Ok(run)
    }
}

impl ImportRun {
    /// `spent` over the blocks, in ms a block.
    pub(crate) fn ms_per_block(&self, spent: Duration) -> f64 {
        spent.as_secs_f64() * 1e3 / self.blocks.max(1) as f64
    }

    /// Blocks and gas so far, for the progress line.
    fn done(&self) -> Done {
        Done {
            blocks: self.blocks,
            gas: self.gas,
        }
    }

    /// With `--access-lists`: what the lists were used for (`use` or
    /// `ignore`).
    pub(crate) fn lists_name(&self) -> Option<&'static str> {
        self.access_lists
            .as_ref()
            .map(|_| super::access_list_name(self.access_list))
    }

    fn add(&mut self, executed: &strata_executor::ExecutedBlock) {
        let t = &executed.timings;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        self.blocks += 1;
        self.transactions += executed.transactions as u64;
        self.gas += executed.gas_used;
        self.totals.checks += t.checks;
        self.totals.execution += t.execution;
        self.totals.apply += t.apply;
        self.totals.root += t.root;
        self.totals.commit += t.commit;
        self.prefetched += executed.prefetched;
        if let Some(ahead) = executed.transactions_ahead {
            self.ahead.workers = self.ahead.workers.max(ahead.workers);
            self.ahead.committed += ahead.committed;
            self.ahead.executed_again += ahead.executed_again;
        }
        self.per_block.push(BlockRow {
            block: executed.number,
            gas_used: executed.gas_used,
            transactions: executed.transactions as u64,
            checks_ms: ms(t.checks),
            execution_ms: ms(t.execution),
            apply_ms: ms(t.apply),
            root_ms: ms(t.root),
            root_folds: executed.root_folds,
            root_wait_ms: executed.root_wait.map(ms),
            commit_ms: ms(t.commit),
            prefetched: executed.prefetched,
            root_from_list: executed.root_from_list,
        });
    }
}

/// Where an import without a genesis resumes: after the datadir's last
/// block. A trace written without a genesis line starts at the chain's
/// start block, so `--trace-out` needs the datadir still there.
fn start_from_datadir(
    db: &StateDb,
    datadir: &Path,
    chain_start: &ChainStart,
    trace_out: bool,
) -> Result<u64, CliError> {
    let start = chain_start.header.number;
    let last = db.last_block().unwrap_or(start);
    if trace_out && last > start {
        return Err(FlagError::TraceOutPastStart {
            start: format!("block {start}, which the file's first block builds on"),
            datadir: datadir.to_owned(),
            last,
            remedy: "give a datadir at that block (as `init --state` leaves it)",
        }
        .into());
    }
    Ok(last)
}

/// After the genesis was written or found: writes the trace's genesis line
/// for a new datadir, and refuses `--trace-out` for one past it.
fn genesis_started(
    start: Option<GenesisStart>,
    datadir: &Path,
    db: &StateDb,
    trace_out: Option<&mut TraceOut>,
    genesis: &strata_executor::GenesisBlock,
) -> Result<(), CliError> {
    match start {
        Some(GenesisStart::Held { last }) if last > genesis.header.number => {
            if trace_out.is_some() {
                return Err(FlagError::TraceOutPastStart {
                    start: "the genesis".to_owned(),
                    datadir: datadir.to_owned(),
                    last,
                    remedy: "give a new datadir",
                }
                .into());
            }
            eprintln!(
                "resuming {} after block {last} (root {})",
                datadir.display(),
                db.root()
            );
        }
        Some(GenesisStart::Written) => {
            if let Some(out) = trace_out {
                out.genesis(genesis)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Where in the chain file a block starts, and which block it is.
#[derive(Clone, Copy)]
struct FilePlace {
    offset: usize,
    hash: B256,
}

/// An importer's refusal, told with the files it concerns.
fn import_error(
    error: ImportError,
    datadir: &Path,
    chain: &Path,
    chain_start: &ChainStart,
    place: FilePlace,
) -> CliError {
    let FilePlace { offset, hash } = place;
    match error {
        ImportError::OutOfOrder { number, expected } => ImportChainError::OutOfOrder {
            chain: chain.to_owned(),
            offset,
            number,
            expected,
            first: chain_start.header.number + 1,
        }
        .into(),
        ImportError::OtherBlock { number, hash } => ImportChainError::OtherBlock {
            datadir: datadir.to_owned(),
            number,
            chain: chain.to_owned(),
            offset,
            hash,
        }
        .into(),
        ImportError::Refused(source) => CliError::BlockRefused {
            path: chain.to_owned(),
            number: source.number(),
            hash,
            offset,
            source,
        },
        ImportError::GenesisRoot { strata, alloy_trie } => {
            ImportChainError::GenesisRoot { strata, alloy_trie }.into()
        }
        ImportError::BeforeGenesis { last, genesis } => ImportChainError::BeforeGenesis {
            datadir: datadir.to_owned(),
            last,
            genesis,
        }
        .into(),
        ImportError::OtherGenesis { hash, root } => ImportChainError::OtherGenesis {
            datadir: datadir.to_owned(),
            hash,
            root,
        }
        .into(),
        ImportError::Store(error) => CliError::storage(datadir)(error),
        // `ImportError` is non-exhaustive: a variant added there is told
        // as the library tells it, with the chain file's place.
        other => CliError::ImportChain(Box::new(ImportChainError::Importer {
            chain: chain.to_owned(),
            offset,
            source: other,
        })),
    }
}
