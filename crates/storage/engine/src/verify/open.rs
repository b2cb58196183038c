//! The read-only open verify uses: [`ReadOnlyStateDb`] (redb's
//! `SingleWriter` mode, or an in-memory recovery of a datadir whose writer
//! was killed) and the snapshot of its newest commit with the files the
//! manifest lists. No write transaction, no orphan removal, no `files/`
//! creation: the datadir is only read.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::options::Options;
use crate::read_only::ReadOnlyStateDb;
use strata_files::{FileSystem, OsFileSystem};
use strata_view::snapshot::Snapshot;

/// A datadir opened read-only: the newest commit and its files.
pub(super) struct Opened {
    /// The newest commit. Declared before `db` so it is dropped first.
    pub(super) snapshot: Arc<Snapshot>,
    /// The file I/O the files were opened through.
    pub(super) fs: Arc<dyn FileSystem>,
    db: ReadOnlyStateDb,
}

/// Opens `datadir` read-only at its newest commit. Every file the manifest
/// lists is opened and verified (block and whole-file checksums, and the
/// manifest's checksum).
pub(super) fn open(datadir: &Path, options: &Options) -> Result<Opened> {
    let db = ReadOnlyStateDb::open(datadir, options.clone())?;
    let snapshot = db.snapshot()?;
    Ok(Opened {
        snapshot,
        fs: Arc::new(OsFileSystem),
        db,
    })
}

impl Opened {
    /// The read-only handle's read telemetry.
    pub(super) fn metrics(&self) -> Arc<strata_telemetry::ReadMetrics> {
        self.db.metrics().clone()
    }
}

/// Whether an open failure is about access (another process, not a
/// datadir, another format) rather than damaged bytes: those end verify
/// with an error instead of a problem in its report.
pub(super) fn is_access_error(error: &Error) -> bool {
    matches!(
        error,
        Error::NotShared { .. }
            | Error::Locked { .. }
            | Error::NotADatadir { .. }
            | Error::UnsupportedFormat { .. }
            | Error::Datadir { .. }
            | Error::DatabaseEmpty { .. }
            | Error::DatabaseMissing { .. }
    )
}
