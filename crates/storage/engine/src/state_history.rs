//! The state's history (`Options::history`, recorded in the datadir): what
//! a flush adds to redb's history tables, and how far back a reader can go.
//!
//! A flush records, for every key each flushed block wrote, its value
//! before that block: the account, storage and code keys from the block's
//! undo data (kept in memory for every unflushed block, else read back
//! from the journal), the commitment's records from the batch itself (the
//! value an earlier block of the batch wrote) or from redb and the files
//! (redb's commitment records are its head's until the flush's last
//! transaction). The rows go into that last transaction, with the head, so
//! the history always covers exactly the blocks redb holds; a reader at an
//! older block than redb's head reads through them
//! ([`strata_view::reader::StateReader::deep`]).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use strata_db::HistoryTables;
use strata_journal::BlockRecord;
use strata_types::{Domain, HistoryRetention};
use strata_view::history::BlockUndo;
use strata_view::memory::MemoryTier;
use strata_view::snapshot::Snapshot;

use crate::error::{Error, Result};
use crate::inner::Inner;

/// Entries an unwind-free flush prunes at most per transaction (the rest
/// go with the next flush).
const PRUNE_PER_FLUSH: usize = 1 << 20;

/// One key's value before one block.
pub(crate) struct Row {
    block: u64,
    domain: Domain,
    key: Bytes,
    previous: Option<Bytes>,
}

/// The history rows of `batch` (consecutive blocks after redb's head),
/// oldest block first. `journal_undo` reads a block's record back from the
/// journal when its undo data is no longer in memory.
pub(crate) fn rows_of(
    inner: &Inner,
    batch: &[Arc<BlockRecord>],
    journal_undo: impl Fn(u64) -> Result<Option<BlockRecord>>,
) -> Result<Vec<Row>> {
    let current = inner.current.load_full();
    // redb and the files as they are now, without the memory tier: the
    // commitment's records of redb's head.
    let below = Snapshot::open(
        &inner.db,
        current.db_head(),
        current.files.clone(),
        MemoryTier::default(),
    )?;
    let mut rows = Vec::new();
    let mut written: HashMap<Bytes, Option<Bytes>> = HashMap::new();
    for record in batch {
        // Block 0 keeps no undo data (nothing is before it).
        let read_back;
        let undo = match current.history.undo_of(record.block) {
            Some(undo) => Some(undo.as_ref()),
            None => {
                read_back = journal_undo(record.block)?.and_then(|whole| {
                    BlockUndo::from_record(&whole, |i| &whole.writes[i].previous)
                });
                read_back.as_ref()
            }
        };
        if let Some(undo) = undo {
            rows.extend(undo.restores().map(|(domain, key, before)| Row {
                block: record.block,
                domain,
                key: key.clone(),
                previous: before.cloned(),
            }));
        }
        for write in record
            .writes
            .iter()
            .filter(|w| w.domain == Domain::Commitment)
        {
            let previous = match written.get(&write.key) {
                Some(value) => value.clone(),
                None => below.get_below_memory(Domain::Commitment, &write.key)?.0,
            };
            rows.push(Row {
                block: record.block,
                domain: Domain::Commitment,
                key: write.key.clone(),
                previous,
            });
            written.insert(write.key.clone(), write.value.clone());
        }
    }
    Ok(rows)
}

/// Writes `rows` in `txn`, and prunes what `retention` no longer keeps
/// below `head`.
pub(crate) fn write_rows(
    txn: &redb::WriteTransaction,
    rows: &[Row],
    retention: HistoryRetention,
    head: u64,
) -> Result<()> {
    let mut tables = HistoryTables::open(txn)?;
    let changes: Vec<_> = rows
        .iter()
        .map(|row| {
            (
                row.block,
                row.domain,
                row.key.as_ref(),
                row.previous.as_deref(),
            )
        })
        .collect();
    tables.put_all(&changes)?;
    if let HistoryRetention::Blocks(_) = retention
        && let Some(oldest) = retention.oldest(0, head)
    {
        // Reads at `oldest` and after look at changes after `oldest` only.
        tables.drop_through(oldest, PRUNE_PER_FLUSH)?;
    }
    Ok(())
}

/// The blocks below the head whose roots, hashes and headers are kept:
/// the unwind window, or every block the history keeps.
pub(crate) fn kept_blocks(options: &crate::Options) -> u64 {
    match options.history.unwrap_or_default() {
        HistoryRetention::Off => options.unwind_depth,
        HistoryRetention::Full => u64::MAX,
        HistoryRetention::Blocks(n) => n.max(options.unwind_depth),
    }
}

/// The undo of the memory tier's blocks back to redb's head, for one
/// snapshot (its root and redb head), built once for every reader through
/// the history that snapshot serves.
#[derive(Default)]
pub(crate) struct UndoToDbHead {
    cached: parking_lot::Mutex<
        Option<(
            alloy_primitives::B256,
            u64,
            Arc<strata_view::overlay::Overlay>,
        )>,
    >,
}

impl UndoToDbHead {
    /// The undo for the snapshot of root `root` whose redb holds `db_head`,
    /// from `build` unless the last one asked for was that snapshot's.
    pub(crate) fn get_or_build(
        &self,
        root: alloy_primitives::B256,
        db_head: u64,
        build: impl FnOnce() -> Result<strata_view::overlay::Overlay>,
    ) -> Result<Arc<strata_view::overlay::Overlay>> {
        let mut cached = self.cached.lock();
        if let Some((at_root, at_head, undo)) = cached.as_ref()
            && *at_root == root
            && *at_head == db_head
        {
            return Ok(undo.clone());
        }
        let undo = Arc::new(build()?);
        *cached = Some((root, db_head, undo.clone()));
        Ok(undo)
    }
}

/// A reader at `block`, older than `snapshot`'s redb head, through redb's
/// history: the state is taken back to redb's head by `to_db_head` (the
/// undo of the memory tier's blocks) and from there to `block` by the
/// history. Its root comes from the root record it reads, which must name
/// `block` (and, where the snapshot's redb keeps it, carry the root of the
/// `roots` table).
pub(crate) fn deep_reader(
    snapshot: Arc<Snapshot>,
    to_db_head: Arc<strata_view::overlay::Overlay>,
    block: u64,
    regime: strata_types::Regime,
    metrics: Arc<strata_telemetry::ReadMetrics>,
) -> Result<strata_view::reader::StateReader> {
    use strata_types::keys::ROOT_RECORD_KEY;
    use strata_view::reader::StateReader as ViewReader;
    let probe = ViewReader::deep(
        snapshot.clone(),
        to_db_head.clone(),
        strata_types::Head {
            block,
            root: alloy_primitives::B256::ZERO,
        },
        strata_types::Regime::Commitment,
        metrics.clone(),
    )
    .untimed();
    let corrupt = |what: String| Error::CorruptHistory { block, what };
    let record = probe
        .get_latest(Domain::Commitment, ROOT_RECORD_KEY)?
        .ok_or_else(|| corrupt("no root record".into()))?;
    let head = strata_types::Head::decode(&record)
        .ok_or_else(|| corrupt(format!("a root record of {} bytes", record.len())))?;
    if head.block != block {
        return Err(corrupt(format!(
            "the root record read back names block {}",
            head.block
        )));
    }
    if let Some(kept) = snapshot.stored_root_of(block)?
        && kept != head.root
    {
        return Err(corrupt(format!(
            "the root record read back says {}, the roots table {kept}",
            head.root
        )));
    }
    Ok(ViewReader::deep(
        snapshot, to_db_head, head, regime, metrics,
    ))
}
