//! The state's history (`Options::history`, recorded in the datadir): the
//! history files a flush adds ([`strata_view::history_files`]), their
//! pruning, merging and rewriting on unwind, and how far back a reader
//! can go.
//!
//! A flush records, for every key each flushed block wrote, its value
//! before that block: the account, storage and code keys from the block's
//! undo data (kept in memory for every unflushed block, else read back
//! from the journal), the commitment's records from the batch itself (the
//! value an earlier block of the batch wrote) or from redb and the files
//! (redb's commitment records are its head's until the flush's last
//! transaction). The rows become one file per domain, written before that
//! last transaction lists them with the head, so the history always covers
//! exactly the blocks redb holds; a reader at an older block than redb's
//! head reads through them ([`strata_view::reader::StateReader::deep`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use strata_db::meta::{self, Manifest};
use strata_db::tables::META;
use strata_files::{FileMeta, FileSystem, SortedFile, merge_files};
use strata_journal::BlockRecord;
use strata_types::{Domain, HistoryRetention};
use strata_view::fileset::FileSet;
use strata_view::history::BlockUndo;
use strata_view::history_files::{self, Versions, entry_key, parse_entry_key, versioned};
use strata_view::memory::MemoryTier;
use strata_view::snapshot::Snapshot;

use crate::error::{Error, Result, db_err};
use crate::inner::Inner;
use crate::ledger::Change;

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

/// Writes `rows` (the history of the blocks `[first, last]`) into one
/// history file per domain that has any, each durable under its final
/// name before it returns (listed by the caller's transaction; a crash
/// before it leaves orphans the next open removes). Returns the files
/// opened, in domain order.
pub(crate) fn write_files(
    inner: &Inner,
    rows: Vec<Row>,
    first: u64,
    last: u64,
) -> Result<Vec<Arc<SortedFile>>> {
    let mut by_domain: [Vec<(Vec<u8>, Option<Bytes>)>; 4] = Default::default();
    for row in rows {
        by_domain[row.domain.index()].push((entry_key(&row.key, row.block), row.previous));
    }
    let dir = inner.history_dir();
    let mut files = Vec::new();
    for domain in Domain::ALL {
        let mut entries = std::mem::take(&mut by_domain[domain.index()]);
        if entries.is_empty() {
            continue;
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // One change per key and block: the first recorded is the value
        // before the block.
        entries.dedup_by(|later, earlier| later.0 == earlier.0);
        let meta = FileMeta {
            domain,
            from_step: first,
            to_step: last + 1,
        };
        let info = write_file(
            &inner.fs,
            &dir,
            meta,
            entries.iter().map(|(key, value)| (key, value.as_deref())),
            entries.len(),
        )?;
        files.push(Arc::new(SortedFile::open(inner.fs.as_ref(), &info.path)?));
    }
    Ok(files)
}

/// Writes one history file of `meta` from `entries` (entry key and the
/// value before its block, in the file's order), a versioned domain's
/// values held as differences where smaller
/// ([`strata_view::history_files::Versions`]).
fn write_file<'a>(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    meta: FileMeta,
    entries: impl Iterator<Item = (&'a Vec<u8>, Option<&'a [u8]>)>,
    count: usize,
) -> Result<strata_files::FileInfo> {
    let mut writer = history_files::writer(fs.clone(), dir, meta)?.with_expected_keys(count as u64);
    let mut versions = versioned(meta.domain).then(Versions::default);
    for (key, value) in entries {
        match versions.as_mut() {
            Some(versions) => writer.push(key, versions.encode(key, value).as_deref())?,
            None => writer.push(key, value)?,
        }
    }
    Ok(writer.finish()?)
}

/// A new file set of history files and the paths of the files it no
/// longer lists, to delete once its manifest is durable.
pub(crate) struct HistoryChange {
    /// The set to publish (its manifest is the one to record).
    pub(crate) files: FileSet,
    /// The files it left out.
    pub(crate) retired: Vec<PathBuf>,
}

/// The file set after a flush added `added` (history files of blocks after
/// every listed one) to `current`, with the files a retention of N blocks
/// no longer needs below `head` left out (whole files: one whose every
/// block is at or below the oldest kept block). Returns the set (its
/// manifest is the one to record) and the paths of the files left out,
/// to delete once the manifest without them is durable.
pub(crate) fn after_flush(
    current: &FileSet,
    added: Vec<Arc<SortedFile>>,
    retention: HistoryRetention,
    head: u64,
) -> HistoryChange {
    // Reads at `oldest` and after look at changes after `oldest` only.
    let oldest = match retention {
        HistoryRetention::Blocks(_) => retention.oldest(0, head),
        _ => None,
    };
    let mut set = current.clone();
    let mut retired = Vec::new();
    for domain in Domain::ALL {
        let mut files: Vec<Arc<SortedFile>> = current.history(domain).to_vec();
        files.extend(added.iter().filter(|f| f.meta().domain == domain).cloned());
        if let Some(oldest) = oldest {
            files.retain(|file| {
                let kept = file.meta().to_step > oldest + 1;
                if !kept {
                    retired.push(file.path().to_path_buf());
                }
                kept
            });
        }
        set = set.with_history(domain, files);
    }
    HistoryChange {
        files: set,
        retired,
    }
}

/// The file set after an unwind to `head`: each history file with changes
/// of blocks after `head` rewritten without them (a new file `[from,
/// head + 1)`, written durably here) or left out when it holds no block
/// up to `head`. Returns the set and the paths of the files it no longer
/// lists, to delete once its manifest is durable.
pub(crate) fn after_unwind(inner: &Inner, current: &FileSet, head: u64) -> Result<HistoryChange> {
    let mut set = current.clone();
    let mut retired = Vec::new();
    for domain in Domain::ALL {
        let mut files = Vec::new();
        for file in current.history(domain) {
            let meta = file.meta();
            if meta.to_step <= head + 1 {
                files.push(file.clone());
                continue;
            }
            retired.push(file.path().to_path_buf());
            if meta.from_step > head {
                continue;
            }
            let kept = FileMeta {
                to_step: head + 1,
                ..meta
            };
            let mut writer = history_files::writer(inner.fs.clone(), &inner.history_dir(), kept)?;
            for entry in file.iter() {
                let (key, value) = entry?;
                let block = parse_entry_key(&key)
                    .map(|(_, block)| block)
                    .ok_or_else(|| Error::CorruptHistory {
                        block: head,
                        what: format!(
                            "history file {}: entry 0x{} is not a key and a block",
                            file.path().display(),
                            alloy_primitives::hex::encode(&key)
                        ),
                    })?;
                if block <= head {
                    writer.push(&key, value.value().map(|v| v.as_ref()))?;
                }
            }
            if writer.entries() == 0 {
                continue;
            }
            let info = writer.finish()?;
            files.push(Arc::new(SortedFile::open(inner.fs.as_ref(), &info.path)?));
        }
        set = set.with_history(domain, files);
    }
    Ok(HistoryChange {
        files: set,
        retired,
    })
}

/// The largest history file a merge makes (two inputs' bytes): each byte
/// is rewritten a few times on its way there, not once per doubling of the
/// chain (100k accounts, 2,000 blocks: unbounded, the merges rewrote the
/// branch records' growing files over and over on the two cores the
/// writer needs, and the writer ran at 0.82× its speed without history).
const HISTORY_MERGE_MAX_BYTES: u64 = 256 << 20;

/// Merges the first adjacent pair of `domain`'s history files that no
/// unwind can change (every block at least `unwind_depth` below the
/// head), whose older file holds at most twice the newer's bytes and
/// whose sum stays within [`HISTORY_MERGE_MAX_BYTES`], so that sizes grow
/// toward the past like a binary counter (tolerant of flushes of unequal
/// sizes) up to that bound. Returns the merged file's range and entries, or
/// `None` when no pair is due (or a flush's pruning retired an input
/// meanwhile: the merged file is dropped).
pub(crate) fn merge_once(inner: &Arc<Inner>, domain: Domain) -> Result<Option<(u64, u64, u64)>> {
    let snapshot = inner.current.load_full();
    let Some(last) = snapshot.block() else {
        return Ok(None);
    };
    let settled = (last + 1).saturating_sub(inner.options.unwind_depth);
    let files = snapshot.files.history(domain);
    let Some(i) = (0..files.len().saturating_sub(1)).find(|&i| {
        let (older, newer) = (files[i].size_bytes(), files[i + 1].size_bytes());
        files[i + 1].meta().to_step <= settled
            && older <= 2 * newer
            && older + newer <= HISTORY_MERGE_MAX_BYTES
    }) else {
        return Ok(None);
    };
    let (older, newer) = (files[i].clone(), files[i + 1].clone());
    // The snapshot holds a redb read transaction: let it go before the
    // merge's seconds of file work, so that the flushes meanwhile can reuse
    // the pages it would pin.
    drop(snapshot);
    let meta = FileMeta {
        domain,
        from_step: older.meta().from_step,
        to_step: newer.meta().to_step,
    };
    let writer = history_files::writer(inner.fs.clone(), &inner.history_dir(), meta)?
        .with_expected_keys(older.entries() + newer.entries());
    // Keys hold their block: no two inputs share one.
    let info = if versioned(domain) {
        history_files::merge_versioned(&[older.as_ref(), newer.as_ref()], writer)?
    } else {
        merge_files(&[newer.as_ref(), older.as_ref()], writer, false)?
    };
    let merged = Arc::new(SortedFile::open(inner.fs.as_ref(), &info.path)?);

    let _no_flush = inner.ledger.hold_flushes();
    let commit = inner.lock_commit();
    let current = inner.current.load_full();
    let listed = current.files.history(domain);
    let Some(at) = listed
        .iter()
        .position(|f| f.path() == older.path())
        .filter(|&at| listed.get(at + 1).map(|f| f.path()) == Some(newer.path()))
    else {
        drop(commit);
        inner
            .fs
            .remove(&info.path)
            .map_err(|source| file_io(info.path.clone(), "remove", source))?;
        return Ok(None);
    };
    let mut files = listed.to_vec();
    files.splice(at..at + 2, [merged.clone()]);
    let set = current.files.with_history(domain, files);
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    {
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::write_manifest(&mut meta_table, &set.manifest)?;
    }
    txn.commit().map_err(db_err("commit history merge"))?;
    inner.ledger.publish(inner, &commit, Change::Files(set))?;
    drop(commit);
    // Readers holding the old set keep their mappings alive; the names go now.
    remove_files(
        inner,
        &[older.path().to_path_buf(), newer.path().to_path_buf()],
    )?;
    Ok(Some((meta.from_step, meta.to_step, merged.entries())))
}

/// Deletes history files no manifest lists any more.
pub(crate) fn remove_files(inner: &Inner, paths: &[PathBuf]) -> Result<()> {
    for path in paths {
        inner
            .fs
            .remove(path)
            .map_err(|source| file_io(path.clone(), "remove", source))?;
    }
    Ok(())
}

fn file_io(file: PathBuf, op: &'static str, source: std::io::Error) -> Error {
    Error::File(strata_files::FileError::Io { file, op, source })
}

/// Moves history kept in redb by the first history build into history
/// files (one per domain), in one transaction that lists them and drops
/// the tables; returns the manifest to open with (`manifest` unchanged
/// when there is nothing to move). A crash before the commit leaves the
/// tables and orphan files the next open removes and writes again.
pub(crate) fn move_legacy_history(
    db: &redb::Database,
    fs: &Arc<dyn FileSystem>,
    history_dir: &Path,
    manifest: Manifest,
) -> Result<Manifest> {
    let txn = db.begin_write().map_err(db_err("begin write"))?;
    if !strata_db::history::has_legacy(&txn)? {
        return Ok(manifest);
    }
    fs.create_dir_all(history_dir)
        .map_err(|source| file_io(history_dir.to_path_buf(), "create", source))?;
    // Every change is held until the walk ends, grouped by domain: each
    // file's block range (its name) is known only then. Entry key, value
    // before, block.
    type Entry = (Vec<u8>, Option<Bytes>, u64);
    let mut entries: [Vec<Entry>; 4] = Default::default();
    strata_db::history::walk_legacy::<Error>(&txn, |(domain, key, block, previous)| {
        entries[domain.index()].push((entry_key(&key, block), previous, block));
        Ok(())
    })?;
    let mut manifest = manifest;
    for domain in Domain::ALL {
        let entries = std::mem::take(&mut entries[domain.index()]);
        let (Some(first), Some(last)) = (
            entries.iter().map(|e| e.2).min(),
            entries.iter().map(|e| e.2).max(),
        ) else {
            continue;
        };
        let meta = FileMeta {
            domain,
            from_step: first,
            to_step: last + 1,
        };
        let info = write_file(
            fs,
            history_dir,
            meta,
            entries
                .iter()
                .map(|(key, previous, _)| (key, previous.as_deref())),
            entries.len(),
        )?;
        manifest.history[domain.index()] = vec![strata_db::meta::ManifestFile {
            name: info.name,
            checksum: info.checksum,
        }];
    }
    strata_db::history::drop_legacy(&txn)?;
    {
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::write_manifest(&mut meta_table, &manifest)?;
    }
    txn.commit()
        .map_err(db_err("commit the history's move into files"))?;
    tracing::info!(
        target: "strata::history",
        "moved the history kept in redb by an earlier build into history files"
    );
    Ok(manifest)
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
