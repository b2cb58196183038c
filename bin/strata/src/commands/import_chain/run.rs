//! One import: open (or resume) the datadir, write the genesis when it is
//! new, for a cold run evict its files from the page cache and open it
//! afresh, skip the blocks it already holds (checking they are the file's),
//! then execute and commit every further block, each root checked (each
//! prefetched first from its access list when a trace is given).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alloy_primitives::{B256, U256};
use strata_executor::consensus::Ancestor;
use strata_executor::{
    AccessListUse, BlockTimings, DecodedBlock, ExecuteOptions, GenesisBlock, RootTiming, StatePath,
    TransactionsAhead, execute_block_with,
};
use strata_storage::telemetry::MetricsSnapshot;
use strata_storage::{CacheStats, Options, Regime, StateDb};

use super::access_lists::AccessListFile;
use super::ahead::{Blocks, NextBlock, SendersTiming};
use super::chain_file::FileBlock;
use super::error::ImportChainError;
use super::prefetch::PrefetchTrace;
use super::progress::{Done, Progress};
use super::start::ChainStart;
use super::trace_out::TraceOut;
use crate::{CliError, FlagError};

/// Blocks kept as ancestors: the parent and six more for the ommer rules.
const ANCESTORS: usize = 8;

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
    /// Branch cache counters at the end.
    pub(crate) cache_stats: CacheStats,
    /// Value cache counters at the end.
    pub(crate) value_cache_stats: CacheStats,
    /// The last block committed.
    pub(crate) final_block: Option<u64>,
    /// Its state root.
    pub(crate) final_root: B256,
}

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
        let mut db = StateDb::open(datadir, options.clone()).map_err(CliError::storage(datadir))?;
        let resumed_after = match &chain_start.genesis {
            Some(genesis) => start(&db, datadir, genesis, trace_out.as_deref_mut())?,
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
        let mut spec = chain_start.spec.clone();
        let mut ancestors: VecDeque<(DecodedBlock, U256)> = VecDeque::new();
        let mut parent = (
            chain_start.header.number,
            chain_start.hash,
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
            cache_stats: CacheStats::default(),
            value_cache_stats: CacheStats::default(),
            final_block: None,
            final_root: B256::ZERO,
        };
        let mut bar = Progress::new(progress, blocks.len());
        db.metrics().snapshot_and_reset();
        let started = Instant::now();
        while let Some(NextBlock {
            block: FileBlock { block, offset },
            senders: recovered,
            position,
        }) = blocks.next()?
        {
            let number = block.number();
            let (parent_number, parent_hash, parent_difficulty) = parent;
            if number != parent_number + 1 {
                return Err(ImportChainError::OutOfOrder {
                    chain: chain.to_owned(),
                    offset,
                    number,
                    expected: parent_number + 1,
                    first: chain_start.header.number + 1,
                }
                .into());
            }
            let difficulty = parent_difficulty + block.header().difficulty;
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
            if number <= resumed_after {
                check_known(
                    &db,
                    datadir,
                    chain,
                    &block,
                    offset,
                    parent_hash,
                    resumed_after,
                )?;
            } else {
                if let Some(ttd) = spec.pending_terminal_total_difficulty()
                    && parent_difficulty >= ttd
                {
                    spec = spec.with_merge_at(number);
                }
                let reading = Instant::now();
                let list = lists
                    .as_mut()
                    .map(|lists| lists.list_for(&block))
                    .transpose()?;
                run.list_reading += reading.elapsed();
                let executed = {
                    let chain_ancestors = ancestor_list(&ancestors, chain_start);
                    let options = ExecuteOptions {
                        record_access: trace_out.is_some(),
                        state,
                        prefetch: list.as_ref(),
                        root,
                        senders: recovered.as_ref(),
                        access_list,
                        transaction_workers,
                    };
                    execute_block_with(&db, &spec, &block, &chain_ancestors, options)
                }
                .map_err(|source| CliError::BlockRefused {
                    path: chain.to_owned(),
                    number,
                    hash: block.hash,
                    offset,
                    source: Box::new(source),
                })?;
                if let (Some(out), Some(access)) = (trace_out.as_deref_mut(), &executed.access) {
                    out.block(&executed, access)?;
                }
                run.add(&executed);
                run.senders_ahead += recovered.as_ref().map_or(Duration::ZERO, |r| r.took());
                bar.update(number, position, run.done(), started);
            }
            parent = (number, block.hash, difficulty);
            ancestors.push_front((block, difficulty));
            ancestors.truncate(ANCESTORS);
        }
        if let Some(file) = list_file.as_mut() {
            file.warn_if_more();
        }
        run.wall = started.elapsed().saturating_sub(run.list_reading);
        bar.finish(run.done(), run.wall);
        run.reads = db.metrics().snapshot_and_reset();
        run.cache_stats = db.cache_stats();
        run.value_cache_stats = db.value_cache_stats();
        run.final_block = db.last_block();
        run.final_root = db.root();
        db.close().map_err(CliError::final_flush(datadir))?;
        Ok(run)
    }
}

impl ImportRun {
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

/// Writes the genesis into a new datadir (its root checked against
/// alloy-trie's), or checks that an existing one belongs to this genesis.
/// Returns the datadir's last block.
fn start(
    db: &StateDb,
    datadir: &Path,
    genesis: &GenesisBlock,
    trace_out: Option<&mut TraceOut>,
) -> Result<u64, CliError> {
    let genesis_number = genesis.header.number;
    let Some(last) = db.last_block() else {
        let root = db
            .init_genesis(
                &genesis.alloc,
                strata_storage::GenesisName::HashAndHeader(genesis.hash, genesis.header_rlp()),
            )
            .map_err(CliError::storage(datadir))?;
        if root != genesis.header.state_root {
            return Err(ImportChainError::GenesisRoot {
                strata: root,
                alloy_trie: genesis.header.state_root,
            }
            .into());
        }
        db.set_chain_config(&genesis.recorded_config())
            .map_err(CliError::storage(datadir))?;
        if let Some(out) = trace_out {
            out.genesis(genesis)?;
        }
        return Ok(genesis_number);
    };
    if last < genesis_number {
        return Err(ImportChainError::BeforeGenesis {
            datadir: datadir.to_owned(),
            last,
            genesis: genesis_number,
        }
        .into());
    }
    let reader = db.reader(Regime::Exec);
    let stored = reader
        .block_hash(genesis_number)
        .map_err(CliError::storage(datadir))?;
    if stored.is_some_and(|hash| hash != genesis.hash)
        || (last == genesis_number && db.root() != genesis.header.state_root)
    {
        return Err(ImportChainError::OtherGenesis {
            datadir: datadir.to_owned(),
            hash: genesis.hash,
            root: genesis.header.state_root,
        }
        .into());
    }
    if trace_out.is_some() && last > genesis_number {
        return Err(FlagError::TraceOutPastStart {
            start: "the genesis".to_owned(),
            datadir: datadir.to_owned(),
            last,
            remedy: "give a new datadir",
        }
        .into());
    }
    if last > genesis_number {
        eprintln!(
            "resuming {} after block {last} (root {})",
            datadir.display(),
            db.root()
        );
    }
    Ok(last)
}

/// A block the datadir already holds: it must be the file's (same hash,
/// where the datadir still has it; the same root at its head).
fn check_known(
    db: &StateDb,
    datadir: &Path,
    chain: &Path,
    block: &DecodedBlock,
    offset: usize,
    parent_hash: B256,
    head: u64,
) -> Result<(), CliError> {
    let number = block.number();
    let stored = db
        .reader(Regime::Exec)
        .block_hash(number)
        .map_err(CliError::storage(datadir))?;
    let differs = block.header().parent_hash != parent_hash
        || stored.is_some_and(|hash| hash != block.hash)
        || (number == head && db.root() != block.header().state_root);
    if differs {
        return Err(ImportChainError::OtherBlock {
            datadir: datadir.to_owned(),
            number,
            chain: chain.to_owned(),
            offset,
            hash: block.hash,
        }
        .into());
    }
    Ok(())
}

/// The parent first, then older blocks, down to the block the file
/// continues from.
fn ancestor_list<'a>(
    recent: &'a VecDeque<(DecodedBlock, U256)>,
    start: &'a ChainStart,
) -> Vec<Ancestor<'a>> {
    let mut list: Vec<Ancestor<'a>> = recent
        .iter()
        .map(|(block, _)| Ancestor {
            hash: block.hash,
            header: block.header(),
            ommers: &block.block.body.ommers,
        })
        .collect();
    if list.len() < ANCESTORS {
        list.push(Ancestor {
            hash: start.hash,
            header: &start.header,
            ommers: &[],
        });
    }
    list
}
