//! A block's commit: expand deletions, compute the state root, make the
//! block durable and visible through the ledger (journal append, branches
//! written through to the cache, the memory tier published).

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256};
use bytes::Bytes;
use strata_commitment::{CommitOutput, CommitStats, ComputeOptions, compute_root};

use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::root_stream::{self, RootStream};
use strata_journal::{BlockRecord, Previous, RecordWrite};
use strata_telemetry::CommitFigures;
use strata_types::Head;
use strata_types::domain::{Domain, Regime};
use strata_types::keys::ROOT_RECORD_KEY;
use strata_view::overlay::Overlay;
use strata_view::reader::StateReader as ViewReader;
use strata_view::snapshot::Snapshot;
use strata_view::sources::{CachedBranches, OverlayState, hashed_paths};
use strata_view::trie_update::trie_update;

/// What a block's commit did and how long it took.
#[derive(Clone, Debug)]
pub struct CommitInfo {
    /// The committed block.
    pub block: u64,
    /// Its state root.
    pub root: B256,
    /// Keys written across all domains (commitment records included).
    pub keys_written: usize,
    /// The commitment's counters (keccak calls, records read).
    pub commitment: CommitStats,
    /// Time spent computing the root.
    pub commitment_time: Duration,
    /// Time spent making the block durable: gathering its unwind data (the
    /// previous value of every written key), encoding its journal record and
    /// appending it (with an fsync when `durable`). The memory tier's update
    /// runs beside it on another thread.
    pub write_time: Duration,
    /// Bytes the block's journal record took.
    pub journal_bytes: u64,
    /// Time the commit waited for a flush because the memory tier was over
    /// its budget ([`crate::Options::memory_budget_bytes`]).
    pub flush_wait: Duration,
    /// Branch prefixes the warmers loaded for this block.
    pub warmed: u64,
    /// Whether the commit was fsynced.
    pub durable: bool,
    /// Items (accounts, slots, commitment paths) the block's
    /// [`prefetch`](crate::BlockWriter::prefetch) loaded before the commit
    /// stopped it.
    pub prefetched: u64,
    /// For a root computed alongside execution
    /// ([`root_alongside`](crate::BlockWriter::root_alongside)): how long
    /// the commit waited for it (`commitment_time` minus this ran while
    /// the caller executed). `None` when the commit computed the root.
    pub root_wait: Option<Duration>,
    /// For a root streamed while the block executed
    /// ([`stream_root`](crate::BlockWriter::stream_root)): the folds the
    /// root thread ran (each over the writes handed over since the last).
    /// 0 otherwise.
    pub root_folds: u64,
}

/// A block whose root is computed and whose unwind data is gathered, not
/// yet durable or visible: nothing of it was written anywhere (no journal
/// record, no branch in the cache, no snapshot), so it can be committed
/// ([`persist_block`]) or dropped.
pub(crate) struct PreparedBlock {
    number: u64,
    /// The block's writes, storage wipes expanded into deletions.
    overlay: Arc<Overlay>,
    output: CommitOutput,
    /// The previous value of every written state key, in record order.
    previous: Vec<Previous>,
    commitment_time: Duration,
    warmed: u64,
    /// How long preparing it took (a commit's time excludes the caller's
    /// between `state_root` and `commit`).
    prepare_time: Duration,
    /// For a root computed beside the block's execution: how long its
    /// preparation waited for it ([`CommitInfo::root_wait`]).
    pub(crate) root_wait: Option<Duration>,
    /// Folds of a streamed root ([`CommitInfo::root_folds`]).
    root_folds: u64,
}

impl PreparedBlock {
    /// The block's state root.
    pub(crate) fn root(&self) -> B256 {
        self.output.root
    }

    /// Takes the block's hash and header from `written` (the writer's own
    /// overlay): a block prepared from other writes (an access list's, for
    /// a root computed alongside execution) or before they were set keeps
    /// them, so BLOCKHASH and calls at the block find them.
    pub(crate) fn label_as(&mut self, written: &Overlay) {
        if self.overlay.block_hash == written.block_hash
            && self.overlay.block_header == written.block_header
        {
            return;
        }
        let overlay = Arc::make_mut(&mut self.overlay);
        overlay.block_hash = written.block_hash;
        overlay.block_header = written.block_header.clone();
    }
}

/// Computes the root of `overlay` as block `number` on top of `base` and
/// gathers its unwind data, writing nothing.
pub(crate) fn prepare_block(
    inner: &Arc<Inner>,
    number: u64,
    base: &Arc<Snapshot>,
    overlay: Arc<Overlay>,
) -> Result<PreparedBlock> {
    let started = Instant::now();
    check_number(base, number)?;
    let mut overlay = Arc::unwrap_or_clone(overlay);
    expand_storage_wipes(base, &mut overlay)?;
    let overlay = Arc::new(overlay);
    let update = trie_update(&overlay);

    // Warm the branches along the touched paths; the commitment reads
    // through the same cache and never waits for the warmers.
    let base_reader = inner.reader(base.clone(), None, Regime::Commitment);
    let branches = CachedBranches::for_commitment(base_reader.clone(), inner.cache.clone());
    let ticket = (inner.warmup.warmers() > 0).then(|| {
        let source = Arc::new(CachedBranches::for_warmers(
            base_reader,
            inner.cache.clone(),
        ));
        inner.warmup.warm(
            hashed_paths(&update),
            Arc::new(move |path: &Vec<u8>| {
                strata_commitment::warm_path(source.as_ref(), path).map(|_| ())
            }),
        )
    });

    let state =
        OverlayState::new(inner.reader(base.clone(), Some(overlay.clone()), Regime::Commitment));
    let options = ComputeOptions {
        parallel_threshold: inner.options.parallel_commitment_threshold,
    };
    // The unwind data (what each written state key held before) is read
    // beside the root: it depends on the block's keys only.
    let ((output, commitment_time), previous) = rayon::join(
        || {
            let started = Instant::now();
            let output = compute_root(&update, &branches, &state, &options);
            (output, started.elapsed())
        },
        || {
            // Through the value cache: the block's keys were mostly read
            // (or prefetched) while it executed.
            let before = inner
                .reader(base.clone(), None, Regime::Commitment)
                .untimed();
            previous_values(&before, &overlay, number)
        },
    );
    let output = output.map_err(|source| Error::Commitment {
        block: number,
        source,
    })?;
    let previous = previous?;

    // Stop this block's warmers before the cache is written through, so that
    // no warmer can put a pre-block branch over a post-block one.
    let mut warmed = 0;
    if let Some(ticket) = ticket {
        ticket.cancel();
        let report = ticket.wait();
        warmed = report.items_done;
        for error in &report.errors {
            tracing::warn!(block = number, %error, "warmer read failed");
        }
    }

    Ok(PreparedBlock {
        number,
        overlay,
        output,
        previous,
        commitment_time,
        warmed: warmed as u64,
        prepare_time: started.elapsed(),
        root_wait: None,
        root_folds: 0,
    })
}

/// Refuses a block that does not follow `base`.
fn check_number(base: &Snapshot, number: u64) -> Result<()> {
    let expected = base.block().map_or(0, |b| b + 1);
    if number != expected {
        return Err(Error::BlockOutOfOrder {
            expected,
            found: number,
        });
    }
    Ok(())
}

/// Prepares block `number` whose root `stream` computed while it executed:
/// hands over the last writes, gathers the unwind data while the root
/// thread folds them, and takes its root and records. The root's wait is
/// from the last handover to the last fold's end.
pub(crate) fn prepare_streamed(
    inner: &Arc<Inner>,
    number: u64,
    base: &Arc<Snapshot>,
    overlay: Arc<Overlay>,
    stream: RootStream,
) -> Result<PreparedBlock> {
    let started = Instant::now();
    if let Err(error) = check_number(base, number) {
        stream.abandon();
        return Err(error);
    }
    let (ended, end) = stream.end(&overlay);
    let mut expanded = Overlay::clone(&overlay);
    let previous = expand_storage_wipes(base, &mut expanded).and_then(|()| {
        let before = inner
            .reader(base.clone(), None, Regime::Commitment)
            .untimed();
        previous_values(&before, &expanded, number)
    });
    let streamed = end.wait()?;
    let previous = previous?;
    debug_assert!(
        root_stream::same_state_writes(&streamed.overlay, &overlay),
        "the root thread folded the writer's writes"
    );
    Ok(PreparedBlock {
        number,
        overlay: Arc::new(expanded),
        output: streamed.output,
        previous,
        commitment_time: streamed.busy,
        warmed: 0,
        prepare_time: started.elapsed(),
        root_wait: Some(streamed.done_at.saturating_duration_since(ended)),
        root_folds: streamed.folds,
    })
}

/// Makes a prepared block durable and visible. With `expected_root`, a
/// block whose root differs is refused before anything is written: no
/// journal record, no branch written through to the cache (the cache then
/// holds only records of committed blocks, loaded by the walk and the
/// warmers from the base), no new snapshot.
pub(crate) fn persist_block(
    inner: &Arc<Inner>,
    prepared: PreparedBlock,
    expected_root: Option<B256>,
) -> Result<CommitInfo> {
    let started = Instant::now();
    let PreparedBlock {
        number,
        overlay,
        output,
        mut previous,
        commitment_time,
        warmed,
        prepare_time,
        root_wait,
        root_folds,
    } = prepared;
    if let Some(expected) = expected_root
        && expected != output.root
    {
        tracing::warn!(block = number, %expected, computed = %output.root, "block refused: root mismatch");
        return Err(Error::BlockRootMismatch {
            block: number,
            expected,
            computed: output.root,
        });
    }
    let head = Head {
        block: number,
        root: output.root,
    };
    let record = block_record(&overlay, &output.writes, head);
    let keys_written = record.writes.len();
    // `previous` pairs with the record's writes by position: both walk
    // `state_writes`. The commitment records after them keep no previous
    // value (see `previous_values`).
    debug_assert_eq!(
        previous.len(),
        overlay.len(),
        "one previous value per state write"
    );
    debug_assert!(
        record.writes[..previous.len()]
            .iter()
            .zip(state_writes(&overlay))
            .all(|(write, (domain, key, _))| write.domain == domain && write.key.as_ref() == key),
        "the record lists the state writes first, in state_writes' order"
    );
    previous.resize(keys_written, Previous::NotKept);
    let durable = inner.next_commit_durable();
    // The writer slot keeps the head where the block was prepared on.
    let parent = inner.current.load().head;
    let value_writes = strata_view::value_keys::value_writes(&overlay);
    let times = inner.ledger.commit(inner, record, previous, durable, || {
        for (path, value) in &output.writes {
            match value {
                Some(value) => inner.cache.insert(path, value.clone()),
                None => inner.cache.remove(path),
            }
        }
        inner.values.advance(parent, head, value_writes);
    })?;
    inner.maintenance.request();
    let info = CommitInfo {
        block: number,
        root: output.root,
        keys_written,
        commitment: output.stats,
        commitment_time,
        write_time: times.journal,
        journal_bytes: times.journal_bytes,
        flush_wait: times.flush_wait,
        warmed,
        durable,
        prefetched: 0,
        root_wait,
        root_folds,
    };
    record_commit(inner, &info, prepare_time + started.elapsed());
    Ok(info)
}

/// Adds a committed block to the store's figures and logs them.
fn record_commit(inner: &Inner, info: &CommitInfo, total: Duration) {
    inner.store_metrics.record_commit(CommitFigures {
        total,
        root: info.commitment_time,
        journal_write: info.write_time,
        keys_written: info.keys_written as u64,
        journal_bytes: info.journal_bytes,
        warmer_loads: info.warmed,
    });
    tracing::debug!(
        target: "strata::commit",
        block = info.block,
        root = %info.root,
        keys = info.keys_written,
        commit_ms = total.as_secs_f64() * 1e3,
        root_ms = info.commitment_time.as_secs_f64() * 1e3,
        journal_ms = info.write_time.as_secs_f64() * 1e3,
        journal_bytes = info.journal_bytes,
        flush_wait_ms = info.flush_wait.as_secs_f64() * 1e3,
        warmed = info.warmed,
        durable = info.durable,
        "block committed"
    );
}

/// Turns each storage wipe into explicit deletions of the slots that exist
/// in the committed tiers (and that the block did not write again).
fn expand_storage_wipes(base: &Snapshot, overlay: &mut Overlay) -> Result<()> {
    let wiped: Vec<Address> = overlay.wiped().iter().copied().collect();
    for address in wiped {
        for key in base.live_storage_keys(&address)? {
            if !overlay
                .entries(Domain::Storage)
                .contains_key(key.as_slice())
            {
                overlay.put(Domain::Storage, key.to_vec(), None);
            }
        }
    }
    Ok(())
}

/// The state domains, in the order a block record lists their writes.
const STATE_DOMAINS: [Domain; 3] = [Domain::Account, Domain::Storage, Domain::Code];

/// Every state write of `overlay` (domain, key, value) in record order:
/// [`STATE_DOMAINS`], each in key order. [`block_record`] lists the writes
/// and [`previous_values`] reads their previous values through this one
/// walk, so the two lists pair up by position (checked in
/// `persist_block` with debug assertions).
fn state_writes(overlay: &Overlay) -> impl Iterator<Item = (Domain, &[u8], &Option<Bytes>)> {
    STATE_DOMAINS.into_iter().flat_map(move |domain| {
        overlay
            .entries(domain)
            .iter()
            .map(move |(key, value)| (domain, key.as_slice(), value))
    })
}

/// The journal record of a block: every key it wrote (commitment records
/// and the root record included); the previous values for unwind are
/// gathered apart ([`previous_values`]).
fn block_record(
    overlay: &Overlay,
    commitment: &[(Vec<u8>, Option<Bytes>)],
    head: Head,
) -> BlockRecord {
    let mut writes = Vec::with_capacity(overlay.len() + commitment.len() + 1);
    let mut push = |domain: Domain, key: Bytes, value: Option<Bytes>| {
        writes.push(RecordWrite {
            domain,
            key,
            value,
            previous: Previous::NotKept,
        });
    };
    for (domain, key, value) in state_writes(overlay) {
        push(domain, Bytes::copy_from_slice(key), value.clone());
    }
    for (path, value) in commitment {
        push(
            Domain::Commitment,
            Bytes::from(strata_commitment::record_key(path)),
            value.clone(),
        );
    }
    push(
        Domain::Commitment,
        Bytes::from_static(ROOT_RECORD_KEY),
        Some(Bytes::copy_from_slice(&head.encode())),
    );
    BlockRecord {
        block: head.block,
        root: head.root,
        hash: overlay.block_hash,
        header: overlay.block_header.clone(),
        writes,
        branches_omitted: false,
    }
}

/// The value each state write of `overlay` replaces (in the order
/// [`block_record`] lists them), as `before` (a reader of the state before
/// the block) reads it. Commitment records keep none: unwind recomputes them from the
/// restored state (records are canonical), which halves the journal.
/// Block 0 keeps none (there is nothing to unwind to).
fn previous_values(before: &ViewReader, overlay: &Overlay, block: u64) -> Result<Vec<Previous>> {
    let mut out = Vec::with_capacity(overlay.len());
    for (domain, key, _) in state_writes(overlay) {
        if block == 0 {
            out.push(Previous::NotKept);
            continue;
        }
        let found = before.get_latest(domain, key)?;
        out.push(found.map_or(Previous::Absent, Previous::Value));
    }
    Ok(out)
}
