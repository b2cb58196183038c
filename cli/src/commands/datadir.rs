//! Opening an existing data directory for the inspection commands (`get`,
//! `root`, `stats`, `compact`, `verify`): a directory without a strata
//! database is refused instead of being created.

use std::path::Path;

use strata_storage::{DB_FILE, Options, ReadOnlyStateDb, Regime, StateDb, StateReader};

use crate::CliError;

/// Options for a short-lived inspection: no background maintenance, no
/// warmers, small caches.
pub(crate) fn inspect_options() -> Options {
    Options {
        background_maintenance: false,
        warmers: 0,
        cache_bytes: 16 << 20,
        db_cache_bytes: 64 << 20,
        ..Options::default()
    }
}

/// Open the existing datadir `dir`; fails (creating nothing) when it holds
/// no strata database.
pub(crate) fn open_existing(dir: &Path) -> Result<StateDb, CliError> {
    if !dir.join(DB_FILE).is_file() {
        return Err(CliError::NotADatadir {
            path: dir.to_owned(),
            file: DB_FILE,
        });
    }
    StateDb::open(dir, inspect_options()).map_err(CliError::storage(dir))
}

/// `N 0x…` or `none 0x…` for a store without blocks.
pub(crate) fn head_line(reader: &StateReader) -> String {
    match reader.block() {
        Some(block) => format!("{block} {}", reader.root()),
        None => format!("none {}", reader.root()),
    }
}

/// An existing datadir opened for reading: by this process alone, or
/// read-only beside a writer that shares it (`strata replay --share`).
pub(crate) enum ReadAccess {
    /// No writer held the datadir.
    Alone(StateDb),
    /// A sharing writer holds it; this follows its commits.
    BesideWriter(ReadOnlyStateDb),
}

impl ReadAccess {
    /// A read handle on the last committed block.
    pub(crate) fn reader(&self) -> strata_storage::Result<StateReader> {
        match self {
            ReadAccess::Alone(db) => Ok(db.reader(Regime::Exec)),
            ReadAccess::BesideWriter(db) => db.reader(Regime::Exec),
        }
    }
}

/// Open the existing datadir `dir` for reading: alone when no process
/// holds it, read-only when a writer that shares it does.
pub(crate) fn open_for_reading(dir: &Path) -> Result<ReadAccess, CliError> {
    match open_existing(dir) {
        Ok(db) => Ok(ReadAccess::Alone(db)),
        Err(CliError::Storage { source, .. })
            if matches!(*source, strata_storage::Error::Locked { .. }) =>
        {
            ReadOnlyStateDb::open(dir, &inspect_options())
                .map(ReadAccess::BesideWriter)
                .map_err(CliError::storage(dir))
        }
        Err(other) => Err(other),
    }
}
