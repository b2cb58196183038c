//! A datadir at one flushed head, as a replica on another machine starts
//! from it: the redb tier as one stream ([`strata_db::base`]) and the
//! immutable files (state and history) the same transaction lists.
//! [`crate::ReadOnlyStateDb::export_base`] writes it beside a running
//! writer without touching the datadir; [`install_base`] builds a datadir
//! from it that a writer then opens as its own.

use std::io::{Read, Write};
use std::path::Path;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::read_only::ReadOnlyStateDb;
pub use strata_db::base::{BaseError, BaseSummary};
use strata_types::datadir::{DB_FILE, FILES_DIR, HISTORY_DIR};
use strata_types::{DatadirId, Domain, Head};

/// Where in a datadir an immutable file lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A state file (`files/`).
    State,
    /// A history file (`history/`).
    History,
}

impl FileKind {
    /// The datadir folder of files of this kind.
    pub fn folder(self) -> &'static str {
        match self {
            FileKind::State => FILES_DIR,
            FileKind::History => HISTORY_DIR,
        }
    }
}

/// One immutable file of a base.
#[derive(Clone, Debug)]
pub struct BaseFile {
    /// State or history.
    pub kind: FileKind,
    /// Its domain.
    pub domain: Domain,
    /// Its name in its folder.
    pub name: String,
    /// The whole-file checksum its footer records.
    pub checksum: u64,
    /// Its bytes (mapped: readable even after maintenance deleted it).
    pub bytes: Bytes,
}

/// What [`ReadOnlyStateDb::export_base`] wrote and the files that go with it.
#[derive(Clone, Debug)]
pub struct ExportedBase {
    /// The flushed head the base holds.
    pub head: Head,
    /// The datadir's identity.
    pub datadir_id: DatadirId,
    /// The redb stream written.
    pub summary: BaseSummary,
    /// Every immutable file the base's manifest lists, oldest first per
    /// domain and kind.
    pub files: Vec<BaseFile>,
}

impl ReadOnlyStateDb {
    /// The datadir's identity, which its journal segments and a
    /// publisher's objects name (`None`: a datadir written before
    /// datadirs had one).
    pub fn datadir_id(&self) -> Result<Option<DatadirId>> {
        Ok(self.snapshot()?.datadir_id()?)
    }

    /// Writes the redb tier of the newest published snapshot to `out` as a
    /// base stream and returns the head it holds with the files listed by
    /// the same transaction. Reads only; the writer goes on meanwhile.
    pub fn export_base(&self, out: &mut dyn Write) -> Result<ExportedBase> {
        let snapshot = self.snapshot()?;
        let head = snapshot
            .flushed_head()
            .ok_or_else(|| Error::Base(BaseError::NoHead))?;
        let datadir_id = snapshot
            .datadir_id()?
            .ok_or_else(|| Error::Base(BaseError::NoIdentity))?;
        let overrides = self.rows_at_db_head(&snapshot, head)?;
        let summary = snapshot.write_base(&overrides, out)?;
        let mut files = Vec::new();
        for domain in Domain::ALL {
            for (kind, list) in [
                (FileKind::State, snapshot.files.files(domain)),
                (FileKind::History, snapshot.files.history(domain)),
            ] {
                // The set holds state files newest first; a base lists them
                // oldest first, as the manifest does.
                let ordered: Vec<_> = match kind {
                    FileKind::State => list.iter().rev().collect(),
                    FileKind::History => list.iter().collect(),
                };
                for file in ordered {
                    let name = strata_fs::file_name_of(file.path())
                        .unwrap_or_default()
                        .to_string();
                    files.push(BaseFile {
                        kind,
                        domain,
                        name,
                        checksum: file.checksum(),
                        bytes: file
                            .bytes()
                            .cloned()
                            .ok_or_else(|| remote_file_error(file))?,
                    });
                }
            }
        }
        Ok(ExportedBase {
            head,
            datadir_id,
            summary,
            files,
        })
    }
}

impl ReadOnlyStateDb {
    /// The rows that take `snapshot`'s redb back to its head: a flush
    /// writes the plain keys of its blocks in transactions before the one
    /// that moves the head, so a transaction taken in between holds values
    /// of journaled blocks after the head. Every key the journal's blocks
    /// after the head wrote gets its value at the head (the undo of those
    /// blocks), tagged with the head's step; absent then, a tombstone.
    fn rows_at_db_head(
        &self,
        snapshot: &strata_view::snapshot::Snapshot,
        head: Head,
    ) -> Result<strata_db::base::BaseOverrides> {
        let mut overrides: strata_db::base::BaseOverrides = Default::default();
        let last = snapshot.block().unwrap_or(head.block);
        if last == head.block {
            return Ok(overrides);
        }
        let undo = self.undo_to_db_head(snapshot, head, last)?;
        let manifest = &snapshot.files.manifest;
        let step = head.block / self.step_size().max(1);
        for domain in [Domain::Account, Domain::Storage, Domain::Code] {
            let step = manifest.db_step(domain, step);
            for (key, value) in undo.entries(domain) {
                overrides[domain.index()].insert(
                    key.clone(),
                    strata_db::value::encode(step, value.as_deref()),
                );
            }
        }
        Ok(overrides)
    }
}

/// Builds the redb tier of a new datadir at `datadir` from a base stream
/// (its folder must hold no database yet). The caller places the base's
/// files in `files/` and `history/` (checked when the datadir opens); a
/// writer then opens the datadir as the one the base was written from, at
/// its head, with an empty journal.
pub fn install_base(datadir: &Path, input: &mut dyn Read) -> Result<BaseSummary> {
    std::fs::create_dir_all(datadir).map_err(|source| Error::Datadir {
        path: datadir.to_path_buf(),
        what: "create",
        source,
    })?;
    Ok(strata_db::base::load_base(&datadir.join(DB_FILE), input)?)
}

/// A base is made of files held whole: one read where it lives (a
/// replica's, from its bucket) cannot be published again from here.
fn remote_file_error(file: &strata_files::SortedFile) -> Error {
    Error::File(strata_files::FileError::InvalidInput {
        file: file.path().to_path_buf(),
        what: "the file is read from an object store, not held here: a base cannot include it"
            .into(),
    })
}
