//! One block executed over the store: checked, run by alloy-evm's
//! `EthBlockExecutor` over a revm `State` that reads strata's snapshot,
//! checked again against its header, and committed as one strata block with
//! the header's state root expected. A block refused by any check leaves
//! nothing behind.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use strata_storage::{BlockAccessList, StateDb};

use crate::ChainSpec;
use crate::access::BlockAccess;
use crate::block::DecodedBlock;
use crate::block_access_list::prefetch_list;
use crate::consensus::{
    Ancestor, check_against_parent, check_body_roots, check_header, check_ommers,
};
use crate::error::{ExecError, InvalidBlock};
use crate::evm_run::PathRun;
use crate::evm_run::TransactionsAhead;
use crate::senders::{RecoveredSenders, recover_now};
use crate::via_writer::RunAhead;

/// What executing and committing a block took and gave.
#[derive(Clone, Debug)]
pub struct ExecutedBlock {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
    /// The state root after it (the header's, checked).
    pub root: B256,
    /// Gas its transactions used.
    pub gas_used: u64,
    /// How many transactions it holds.
    pub transactions: usize,
    /// The folds of a root streamed while it executed
    /// ([`RootTiming::Streamed`]); 0 for a root computed after it.
    pub root_folds: u64,
    /// For a streamed root: from the block's last writes handed to the
    /// root thread to the end of its last fold (`CommitInfo::root_wait`).
    pub root_wait: Option<Duration>,
    /// Time per phase (`root`: the wait for the root after the EVM).
    pub timings: BlockTimings,
    /// What the execution read and wrote, when recorded
    /// ([`ExecuteOptions::record_access`]).
    pub access: Option<BlockAccess>,
    /// Accounts, slots and trie paths the warmers loaded from
    /// [`ExecuteOptions::prefetch`] (or the block's own access list) before
    /// the commit stopped them (0 without a list, or without warmers).
    pub prefetched: u64,
    /// From Amsterdam, the block's access list as its execution built it
    /// (EIP-7928; equal to the one that came with the block, and hashing
    /// to its header's `blockAccessListHash`).
    pub access_list: Option<alloy_eip7928::BlockAccessList>,
    /// With the block's own list used ([`AccessListUse::Use`]): whether
    /// the root computed from it alongside execution was the block's
    /// (`false`: the writes held what the list cannot say, and the root
    /// was computed from them after the block).
    pub root_from_list: Option<bool>,
    /// With [`ExecuteOptions::transaction_workers`] and the block's own
    /// list used: how its transactions ran ahead of their turn.
    pub transactions_ahead: Option<TransactionsAhead>,
}

/// How [`execute_block_with`] runs a block.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecuteOptions<'a> {
    /// Record every value the EVM read from the store and every change the
    /// block made ([`ExecutedBlock::access`]); the block then runs the
    /// bundle path, which sees the values before the block.
    pub record_access: bool,
    /// How the EVM reaches the state.
    pub state: StatePath,
    /// The block's access list (EIP-7928: what it reads, and writes with
    /// the values after it), e.g. recorded by an earlier execution: the
    /// store's warmers load what it names
    /// ([`strata_storage::BlockWriter::prefetch`]) as soon as the block's
    /// writer is open (its header checked), while its body is checked, its
    /// senders recovered and it is executed. Does
    /// nothing with 0 warmers. The list only warms caches: the block's
    /// execution decides what is read and written.
    pub prefetch: Option<&'a BlockAccessList>,
    /// When the state root is computed.
    pub root: RootTiming,
    /// The block's senders, recovered ahead (while the block before
    /// executed); recovered again here when they are another block's.
    pub senders: Option<&'a RecoveredSenders>,
    /// What the access list that came with an Amsterdam block is used for
    /// beyond its check.
    pub access_list: AccessListUse,
    /// Threads that run an Amsterdam block's transactions ahead of their
    /// turn from its own list, when the list is used
    /// ([`AccessListUse::Use`]) on the writer path: each transaction runs
    /// over the state before the block with the list's changes of the
    /// steps before it, and is committed in its turn when every value it
    /// read holds there (else executed again). 0: every transaction runs
    /// in its turn on the block's thread. At most
    /// [`MAX_TRANSACTION_WORKERS`] run (and never more than the block has
    /// transactions).
    pub transaction_workers: usize,
}

/// The most threads [`ExecuteOptions::transaction_workers`] starts for a
/// block: past a few per core they only contend, and each holds an EVM.
pub const MAX_TRANSACTION_WORKERS: usize = 64;

/// What the access list that came with a block ([`DecodedBlock::access_list`])
/// is used for. Either way the block's execution builds its own list and
/// refuses the block when the two differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccessListUse {
    /// The block's root is computed from the list's post-state on a thread
    /// of its own while the EVM runs, and the store's warmers (if any) load
    /// every account, slot and code it names, and the trie paths of what it
    /// changes, as soon as the block's writer is open (unless
    /// [`ExecuteOptions::prefetch`] gives another list to load).
    #[default]
    Use,
    /// Checked only: the block runs as if it had none (the baseline the
    /// list's gains are measured against).
    Ignore,
}

/// When the state root is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RootTiming {
    /// While the block executes (the writer path only): each
    /// transaction's writes go to a root thread as it ends
    /// (`BlockWriter::stream_root`), so the block waits only for the last
    /// transaction's fold. The default.
    #[default]
    Streamed,
    /// After the block's last transaction, over all its writes at once
    /// (the bundle path always does this).
    AfterBlock,
}

/// Where a block's time went.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockTimings {
    /// Header and body checks and sender recovery.
    pub checks: Duration,
    /// The EVM: system calls, transactions, rewards, withdrawals.
    pub execution: Duration,
    /// Receipts root, bloom and the state changes written into the block.
    pub apply: Duration,
    /// strata's state root over the block's writes: after the EVM, the
    /// time the block waited for it (for a streamed root, only the last
    /// transactions' fold was left).
    pub root: Duration,
    /// The journal append that makes the block durable.
    pub commit: Duration,
}

/// Executes `block` on top of the store's head, which must be `ancestors[0]`
/// (the block's parent; the later entries are its ancestors, newest first,
/// for the ommer rules), and commits it. Refused blocks write nothing.
pub fn execute_block(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    ancestors: &[Ancestor<'_>],
) -> Result<ExecutedBlock, ExecError> {
    execute_block_with(db, spec, block, ancestors, ExecuteOptions::default())
}

/// [`execute_block`] with options (recording what the block read and wrote).
pub fn execute_block_with(
    db: &StateDb,
    spec: &ChainSpec,
    block: &DecodedBlock,
    ancestors: &[Ancestor<'_>],
    options: ExecuteOptions<'_>,
) -> Result<ExecutedBlock, ExecError> {
    let header = block.header();
    let number = header.number;
    let invalid = |reason: InvalidBlock| ExecError::Invalid {
        number,
        hash: block.hash,
        reason: Box::new(reason),
    };
    let parent = ancestors
        .first()
        .filter(|parent| parent.hash == header.parent_hash)
        .ok_or_else(|| invalid(InvalidBlock::UnknownParent(header.parent_hash)))?;
    check_store_at(db, parent, number)?;
    let store = |source| ExecError::Store {
        number,
        source: Box::new(source),
    };

    let started = Instant::now();
    check_header(spec, header).map_err(invalid)?;
    check_against_parent(spec, header, parent.header).map_err(invalid)?;
    // Opened once the number is known to follow the store's head, before
    // the body checks and the senders' recovery, which a prefetch then
    // overlaps; dropped uncommitted when the block is refused.
    let mut writer = db.begin_block(number).map_err(store)?;
    // The block's own list (EIP-7928), used: its keys warm the store from
    // now on, and its post-state gives the root on a thread of its own
    // while the block executes (checked against the writes when the root
    // is taken).
    let list_root = match (&block.access_list, options.access_list) {
        (Some(list), AccessListUse::Use) => Some(Arc::new(prefetch_list(list))),
        _ => None,
    };
    if let Some(list) = options.prefetch.or(list_root.as_deref()) {
        writer.prefetch(list);
    }
    check_body_roots(&block.block).map_err(invalid)?;
    check_ommers(spec, &block.block, ancestors).map_err(invalid)?;
    let recovered_now;
    let transactions = match options
        .senders
        .and_then(|ahead| ahead.for_block(spec, block))
    {
        Some(ahead) => ahead.map_err(invalid)?,
        None => {
            recovered_now = recover_now(spec, block).map_err(invalid)?;
            recovered_now.as_slice()
        }
    };
    let checks = started.elapsed();
    // After the body and sender checks: a block they refuse does not wait
    // for a root (a dropped writer joins its root thread).
    if let Some(list) = &list_root {
        writer.root_alongside(list.clone()).map_err(store)?;
    }

    let ahead = match (&block.access_list, &list_root) {
        (Some(list), Some(_)) if options.transaction_workers > 0 => Some(RunAhead {
            list,
            workers: options.transaction_workers.min(MAX_TRANSACTION_WORKERS),
        }),
        _ => None,
    };
    let run = match options.state {
        StatePath::Bundle => crate::via_bundle::execute(
            db,
            spec,
            block,
            transactions,
            writer,
            options.record_access,
        )?,
        StatePath::Writer if options.record_access => {
            crate::via_bundle::execute(db, spec, block, transactions, writer, true)?
        }
        StatePath::Writer => match crate::via_writer::execute(
            db,
            spec,
            block,
            transactions,
            writer,
            options.root == RootTiming::Streamed && list_root.is_none(),
            ahead,
        )? {
            Some(run) => run,
            // A create over an account with storage: the bundle path
            // decides it (EIP-7610), over a writer opened again.
            None => {
                let mut writer = db.begin_block(number).map_err(store)?;
                if let Some(list) = &list_root {
                    writer.prefetch(list);
                    writer.root_alongside(list.clone()).map_err(store)?;
                }
                crate::via_bundle::execute(db, spec, block, transactions, writer, false)?
            }
        },
    };
    let PathRun {
        mut writer,
        mut outcome,
        execution,
        apply,
        access,
        ahead,
    } = run;
    let started = Instant::now();
    let mut list_root_used = list_root.is_some();
    let computed = match writer.state_root() {
        // The list was checked against the one execution built (in the
        // outcome's check): a difference here is one of form the list
        // cannot carry, so the root comes from the writes.
        Err(error @ strata_storage::Error::AccessListMismatch { .. }) if list_root.is_some() => {
            tracing::warn!(block = number, %error, "the root from the access list is set aside; computing it from the writes");
            list_root_used = false;
            writer.discard_list_root();
            writer.state_root().map_err(store)?
        }
        other => other.map_err(store)?,
    };
    let root = started.elapsed();
    if computed != header.state_root {
        return Err(invalid(InvalidBlock::StateRoot {
            header: header.state_root,
            computed,
        }));
    }
    writer.expect_root(header.state_root);
    let started = Instant::now();
    let committed = writer.commit().map_err(store)?;
    let commit = started.elapsed();

    Ok(ExecutedBlock {
        number,
        hash: block.hash,
        root: computed,
        gas_used: outcome.gas_used,
        transactions: transactions.len(),
        root_folds: committed.root_folds,
        root_wait: committed.root_wait,
        timings: BlockTimings {
            checks,
            execution,
            apply,
            root,
            commit,
        },
        access,
        prefetched: committed.prefetched,
        access_list: outcome.access_list.take(),
        root_from_list: list_root.is_some().then_some(list_root_used),
        transactions_ahead: ahead,
    })
}

/// How the EVM reaches strata's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatePath {
    /// The block writer as revm's database: every transaction reads the
    /// block being written and commits its changes into it
    /// (`writer_database`). The default: faster than the bundle path over
    /// the generated mainnet-shaped chain (README, "Importing a chain").
    #[default]
    Writer,
    /// revm's `State` (its cache shared by the block's transactions) over a
    /// reader of the last block; its bundle is written into the block
    /// afterwards with `apply_bundle_state`, as reth does. The path that
    /// records the access (values before the block).
    Bundle,
}

/// The store must stand at the parent: its last block is the parent's
/// number and its root the parent's state root.
fn check_store_at(db: &StateDb, parent: &Ancestor<'_>, number: u64) -> Result<(), ExecError> {
    let head = db.last_block();
    if head != Some(parent.header.number) || db.root() != parent.header.state_root {
        return Err(ExecError::Database {
            number,
            message: format!(
                "the store is at block {} with root {}, not at the parent {} with root {}",
                head.map_or_else(|| "none".to_string(), |b| b.to_string()),
                db.root(),
                parent.header.number,
                parent.header.state_root
            ),
        });
    }
    Ok(())
}
