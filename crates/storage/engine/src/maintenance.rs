//! Background maintenance: collate (db steps → a new file), merge (adjacent
//! files → one), prune (drop from the db what files now hold). Each change of
//! the file set is recorded in the manifest in a durable redb transaction and
//! published atomically; readers never wait for it.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use redb::ReadableTable;

use crate::error::{Error, Result, db_err};
use crate::inner::Inner;
use crate::ledger::Change;
use crate::pause::{self, PausePoint};
use crate::worker::Worker;
use strata_db::meta::{self, Manifest};
use strata_db::tables::{META, domain_table};
use strata_db::value;
use strata_files::{
    FileError, FileMeta, FileSystem, SortedFile, SortedFileWriter, TEMP_SUFFIX, merge_files,
};
use strata_types::domain::Domain;
use strata_view::fileset::manifest_entry;

/// What one maintenance run did.
#[derive(Clone, Debug, Default)]
pub struct MaintenanceReport {
    /// Files built from the db: (domain, from step, to step, entries).
    pub collated: Vec<(Domain, u64, u64, u64)>,
    /// Files merged: (domain, from step, to step, entries).
    pub merged: Vec<(Domain, u64, u64, u64)>,
    /// Db entries pruned because a file now holds them.
    pub pruned: u64,
    /// History files merged: (domain, from block, to block, entries).
    pub history_merged: Vec<(Domain, u64, u64, u64)>,
}

/// Runs collate, merge and prune for every domain until nothing is due.
/// A failure poisons the store before `maintenance_lock` is released, so a
/// commit that meets redb's "previous I/O error" after it finds its cause.
pub(crate) fn run(inner: &Arc<Inner>, history_merges: HistoryMerges) -> Result<MaintenanceReport> {
    let _serial = inner.maintenance_lock.lock();
    pause::reach(&inner.options, PausePoint::MaintenanceStart);
    let result = run_all(inner, history_merges);
    inner.record_poison(result)
}

/// How many history merges a maintenance run makes per domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HistoryMerges {
    /// One: the background thread, whose runs follow every commit (a merge
    /// of branch-record files takes seconds, and flushes keep adding files
    /// meanwhile: a loop until none is due kept one run on the commitment
    /// for the whole of an import — 1M accounts, 1,000 blocks: the state
    /// collated twice instead of 51 times; 14 times with one merge a run).
    One,
    /// Until none is due (`StateDb::compact`).
    All,
}

fn run_all(inner: &Arc<Inner>, history_merges: HistoryMerges) -> Result<MaintenanceReport> {
    let mut report = MaintenanceReport::default();
    for domain in Domain::ALL {
        let started = Instant::now();
        let (files_before, pruned_before) = (report.collated.len(), report.pruned);
        collate(inner, domain, &mut report)?;
        let pruned = report.pruned - pruned_before;
        if report.collated.len() > files_before || pruned > 0 {
            let elapsed = started.elapsed();
            inner.store_metrics.record_collate(elapsed, pruned);
            let (from_step, to_step, entries) = match report.collated.get(files_before) {
                Some(&(_, from_step, to_step, entries)) => {
                    (Some(from_step), Some(to_step), entries)
                }
                None => (None, None, 0),
            };
            tracing::info!(
                target: "strata::maintenance",
                domain = domain.name(),
                from_step,
                to_step,
                entries,
                pruned,
                ms = elapsed.as_secs_f64() * 1e3,
                "collated"
            );
        }
        while let Some((from_step, to_step, entries)) =
            crate::state_history::merge_once(inner, domain)?
        {
            tracing::info!(
                target: "strata::maintenance",
                domain = domain.name(),
                from_block = from_step,
                to_block = to_step,
                entries,
                "merged history files"
            );
            report
                .history_merged
                .push((domain, from_step, to_step, entries));
            if history_merges == HistoryMerges::One {
                break;
            }
        }
        loop {
            let started = Instant::now();
            if !merge_once(inner, domain, &mut report)? {
                break;
            }
            let elapsed = started.elapsed();
            inner.store_metrics.record_merge(elapsed);
            if let Some(&(_, from_step, to_step, entries)) = report.merged.last() {
                tracing::info!(
                    target: "strata::maintenance",
                    domain = domain.name(),
                    from_step,
                    to_step,
                    entries,
                    ms = elapsed.as_secs_f64() * 1e3,
                    "merged"
                );
            }
        }
    }
    Ok(report)
}

/// Collates the db steps that are old enough into one new file and prunes them.
fn collate(inner: &Arc<Inner>, domain: Domain, report: &mut MaintenanceReport) -> Result<()> {
    let snapshot = inner.current.load_full();
    let Some(last) = snapshot.block() else {
        return Ok(());
    };
    let from = snapshot.files.manifest.domain(domain).collated_to;
    let keep = inner.options.keep_steps_in_db.max(1);
    let to = (inner.step_of(last) + 1).saturating_sub(keep);
    if to <= from {
        return Ok(());
    }
    let entries = snapshot.db_entries_before(domain, to)?;
    pause::reach(&inner.options, PausePoint::CollateRead);
    let built = if entries.is_empty() {
        None
    } else {
        let meta = FileMeta {
            domain,
            from_step: from,
            to_step: to,
        };
        let mut writer = SortedFileWriter::new(inner.fs.clone(), &inner.files_dir, meta)?;
        for entry in &entries {
            writer.push(&entry.key, entry.value.as_deref())?;
        }
        let info = writer.finish()?;
        Some(Arc::new(SortedFile::open(inner.fs.as_ref(), &info.path)?))
    };
    pause::reach(&inner.options, PausePoint::CollateBuilt);

    let _no_flush = inner.ledger.hold_flushes();
    let commit = inner.lock_commit();
    let current = inner.current.load_full();
    let mut manifest = current.files.manifest.clone();
    let domain_manifest = manifest.domain_mut(domain);
    domain_manifest.collated_to = to;
    let mut files: Vec<Arc<SortedFile>> = current.files.files(domain).to_vec();
    if let Some(file) = &built {
        domain_manifest.files.push(manifest_entry(file));
        files.insert(0, file.clone());
    }
    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    let mut pruned = 0;
    {
        let mut table = txn
            .open_table(domain_table(domain))
            .map_err(db_err("open table"))?;
        // Only what the file holds goes: a flush that landed since the
        // entries were read may have written a newer value under a step
        // this collation covers, and that value stays for the next one.
        for entry in &entries {
            let collated = match table
                .get(entry.key.as_slice())
                .map_err(db_err("read for prune"))?
            {
                Some(guard) => {
                    let (step, value) = value::decode(domain, &entry.key, guard.value())?;
                    step == entry.step && value == entry.value.as_deref()
                }
                None => false,
            };
            if collated {
                table
                    .remove(entry.key.as_slice())
                    .map_err(db_err("prune"))?;
                pruned += 1;
            }
        }
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::write_manifest(&mut meta_table, &manifest)?;
    }
    txn.commit().map_err(db_err("commit collation"))?;
    pause::reach(&inner.options, PausePoint::CollateCommitted);
    let files = current.files.with_files(domain, files, manifest);
    inner.ledger.publish(inner, &commit, Change::Files(files))?;
    report.pruned += pruned;
    if let Some(file) = built {
        report.collated.push((domain, from, to, file.entries()));
    }
    Ok(())
}

/// Merges the first adjacent pair whose older file is not larger (in steps)
/// than the newer one, so that file spans grow toward the past like a binary
/// counter and a domain keeps O(log n) files. Returns whether it merged.
fn merge_once(inner: &Arc<Inner>, domain: Domain, report: &mut MaintenanceReport) -> Result<bool> {
    let snapshot = inner.current.load_full();
    let newest_first = snapshot.files.files(domain);
    let oldest_first: Vec<&Arc<SortedFile>> = newest_first.iter().rev().collect();
    let span = |f: &SortedFile| f.meta().to_step - f.meta().from_step;
    let Some(i) = (0..oldest_first.len().saturating_sub(1))
        .find(|&i| span(oldest_first[i]) <= span(oldest_first[i + 1]))
    else {
        return Ok(false);
    };
    let (older, newer) = (oldest_first[i], oldest_first[i + 1]);
    let meta = FileMeta {
        domain,
        from_step: older.meta().from_step,
        to_step: newer.meta().to_step,
    };
    // Tombstones can go only when nothing older could be shadowed by them.
    let drop_tombstones = i == 0;
    let writer = SortedFileWriter::new(inner.fs.clone(), &inner.files_dir, meta)?;
    let info = merge_files(&[newer.as_ref(), older.as_ref()], writer, drop_tombstones)?;
    let merged = Arc::new(SortedFile::open(inner.fs.as_ref(), &info.path)?);
    pause::reach(&inner.options, PausePoint::MergeBuilt);

    let _no_flush = inner.ledger.hold_flushes();
    let commit = inner.lock_commit();
    let current = inner.current.load_full();
    let replaced: HashSet<String> = [older, newer].iter().map(|f| file_name(f)).collect();
    let mut manifest = current.files.manifest.clone();
    let listed = &mut manifest.domain_mut(domain).files;
    let position = listed
        .iter()
        .position(|e| replaced.contains(&e.name))
        .ok_or(Error::MergeInputsUnlisted { domain })?;
    listed.retain(|e| !replaced.contains(&e.name));
    listed.insert(position, manifest_entry(&merged));
    let mut files: Vec<Arc<SortedFile>> = current
        .files
        .files(domain)
        .iter()
        .filter(|f| !replaced.contains(&file_name(f)))
        .cloned()
        .collect();
    let newest_position = files.len() - position;
    files.insert(newest_position, merged.clone());

    let txn = inner.db.begin_write().map_err(db_err("begin write"))?;
    {
        let mut meta_table = txn.open_table(META).map_err(db_err("open meta"))?;
        meta::write_manifest(&mut meta_table, &manifest)?;
    }
    txn.commit().map_err(db_err("commit merge"))?;
    let files = current.files.with_files(domain, files, manifest);
    inner.ledger.publish(inner, &commit, Change::Files(files))?;
    drop(commit);
    pause::reach(&inner.options, PausePoint::MergeCommitted);
    // Readers holding the old set keep their mappings alive; the names go now.
    for name in &replaced {
        let path = inner.files_dir.join(name);
        inner
            .fs
            .remove(&path)
            .map_err(|source| io_error(path, "remove", source))?;
    }
    report
        .merged
        .push((domain, meta.from_step, meta.to_step, merged.entries()));
    Ok(true)
}

fn io_error(file: std::path::PathBuf, op: &'static str, source: std::io::Error) -> Error {
    Error::File(FileError::Io { file, op, source })
}

fn file_name(file: &SortedFile) -> String {
    file.path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Deletes strata's own files that the manifest does not list: leftovers of
/// a build, merge or temp write that a crash interrupted before its manifest
/// commit. Only names strata makes (`DOMAIN-FROM-TO.sst` and its `.tmp`
/// name) are removed; anything else in `dir` is left alone with a warning.
pub(crate) fn remove_orphans(fs: &dyn FileSystem, dir: &Path, manifest: &Manifest) -> Result<()> {
    let live: HashSet<&str> = manifest
        .domains
        .iter()
        .flat_map(|d| d.files.iter().map(|f| f.name.as_str()))
        .collect();
    remove_unlisted(fs, dir, &live)
}

/// [`remove_orphans`] for the history files' folder: the files the
/// manifest's history lists stay.
pub(crate) fn remove_history_orphans(
    fs: &dyn FileSystem,
    dir: &Path,
    manifest: &Manifest,
) -> Result<()> {
    let live: HashSet<&str> = manifest
        .history
        .iter()
        .flat_map(|files| files.iter().map(|f| f.name.as_str()))
        .collect();
    remove_unlisted(fs, dir, &live)
}

fn remove_unlisted(fs: &dyn FileSystem, dir: &Path, live: &HashSet<&str>) -> Result<()> {
    let listed = fs
        .list_dir(dir)
        .map_err(|source| io_error(dir.to_path_buf(), "list", source))?;
    for path in listed {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if live.contains(name.as_str()) {
            continue;
        }
        if !is_strata_file_name(&name) {
            tracing::warn!(
                file = %path.display(),
                "leaving alone a file strata did not make in its files folder"
            );
            continue;
        }
        tracing::info!(file = %path.display(), "removing a strata file no manifest lists");
        let path = if path.is_absolute() {
            path
        } else {
            dir.join(&name)
        };
        fs.remove(&path)
            .map_err(|source| io_error(path.clone(), "remove", source))?;
    }
    warn_about_folders(dir);
    Ok(())
}

/// Whether `name` is one strata gives its immutable files: a published
/// `DOMAIN-FROM-TO.sst` or the temp name it is written under.
pub(crate) fn is_strata_file_name(name: &str) -> bool {
    let published = name.strip_suffix(TEMP_SUFFIX).unwrap_or(name);
    FileMeta::parse_file_name(published).is_some()
}

/// Names (once, with a warning) each folder inside the files folder: strata
/// makes none and removes none.
fn warn_about_folders(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            tracing::warn!(
                folder = %entry.path().display(),
                "leaving alone a folder strata did not make in its files folder"
            );
        }
    }
}

/// The background maintenance thread.
pub(crate) type MaintenanceWorker = Worker<Inner>;

/// Starts the maintenance thread: one run per request (commits and flushes
/// ask), none while the store is poisoned.
pub(crate) fn start_worker(inner: Arc<Inner>) -> Result<MaintenanceWorker> {
    Worker::start(
        "strata-maintenance",
        "start the maintenance thread",
        inner,
        |inner| &inner.maintenance,
        |inner| {
            if inner.check_poisoned().is_err() {
                return;
            }
            // A failure has poisoned the store (see `run`).
            if let Ok(report) = run(inner, HistoryMerges::One)
                && (!report.collated.is_empty() || !report.merged.is_empty())
            {
                tracing::debug!(?report, "maintenance");
            }
        },
    )
}
