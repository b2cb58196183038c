//! The read-only open verify uses: redb's `ReadOnlyDatabase` (in
//! `SingleWriter` mode, which needs no allocator state and so works after an
//! unclean shutdown and beside a writer that shares the datadir) plus the
//! files the manifest lists. No write transaction, no orphan removal, no
//! `files/` creation: the datadir is only read.

use std::path::Path;
use std::sync::Arc;

use redb::{ReadOnlyDatabase, ReadableDatabase};

use crate::db::meta::{self, FORMAT_VERSION};
use crate::db::tables::META;
use crate::error::{Error, Result, db_err};
use crate::files::{FileSystem, OsFileSystem};
use crate::fileset::FileSet;
use crate::options::Options;
use crate::snapshot::Snapshot;
use crate::state_db::{DB_FILE, FILES_DIR};

/// A datadir opened read-only: the newest commit and its files.
pub(super) struct Opened {
    /// The newest commit. Declared before `_db` so it is dropped first.
    pub(super) snapshot: Snapshot,
    /// The file I/O the files were opened through.
    pub(super) fs: Arc<dyn FileSystem>,
    _db: ReadOnlyDatabase,
}

/// Opens `datadir` read-only at its newest commit. Every file the manifest
/// lists is opened and verified (block and whole-file checksums, and the
/// manifest's checksum).
pub(super) fn open(datadir: &Path, options: &Options) -> Result<Opened> {
    let db_path = datadir.join(DB_FILE);
    let mut builder = redb::Builder::new();
    builder.set_cache_size(options.db_cache_bytes);
    builder.set_concurrency_mode(redb::ConcurrencyMode::SingleWriter);
    let db = builder.open_read_only(&db_path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen | redb::DatabaseError::LockProtocolMismatch => {
            Error::NotShared {
                path: db_path.clone(),
            }
        }
        other => Error::Db {
            op: "open the database read-only",
            source: other.into(),
        },
    })?;
    let txn = db.begin_read().map_err(db_err("begin read"))?;
    let no_meta = || Error::NotADatadir {
        path: datadir.to_path_buf(),
        what: "the database holds no strata metadata",
    };
    let meta = {
        let table = txn.open_table(META).map_err(|e| match e {
            redb::TableError::TableDoesNotExist(_) => no_meta(),
            other => db_err("open table `meta`")(other),
        })?;
        match meta::load(&table)? {
            None => return Err(no_meta()),
            Some((found, _)) if found != FORMAT_VERSION => {
                return Err(Error::UnsupportedFormat {
                    path: db_path,
                    found,
                    supported: FORMAT_VERSION,
                });
            }
            Some((_, meta)) => meta,
        }
    };
    let fs: Arc<dyn FileSystem> = Arc::new(OsFileSystem);
    let files = Arc::new(FileSet::open(&fs, &datadir.join(FILES_DIR), meta.manifest)?);
    let snapshot = Snapshot::from_txn(txn, meta.head, files)?;
    Ok(Opened {
        snapshot,
        fs,
        _db: db,
    })
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
    )
}
