//! Opening an existing data directory for the inspection commands: `get`,
//! `root` and `stats` read-only, `compact` and `verify` as a writer. A
//! directory without a strata database is refused instead of being created.

use std::path::Path;

use strata_storage::{DB_FILE, Options, ReadOnlyStateDb, StateDb, StateReader};

use crate::CliError;

/// Options for a short-lived inspection: no background maintenance, no
/// warmers, small caches.
pub(crate) fn inspect_options() -> Options {
    Options::default()
        .with_background_maintenance(false)
        .with_warmers(0)
        .with_cache_bytes(16 << 20)
        .with_db_cache_bytes(64 << 20)
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
    head_text(reader.block(), reader.root())
}

/// `N 0x…` or `none 0x…` for the head `block` with `root`.
pub(crate) fn head_text(block: Option<u64>, root: alloy_primitives::B256) -> String {
    match block {
        Some(block) => format!("{block} {root}"),
        None => format!("none {root}"),
    }
}

/// Open the existing datadir `dir` read-only, for `root`, `get` and
/// `stats`: no byte of the datadir changes, a read-only directory or mount
/// works, and a writer that shares the datadir (`strata replay --share`)
/// may keep writing meanwhile.
pub(crate) fn open_for_reading(dir: &Path) -> Result<ReadOnlyStateDb, CliError> {
    if !dir.join(DB_FILE).is_file() {
        return Err(CliError::NotADatadir {
            path: dir.to_owned(),
            file: DB_FILE,
        });
    }
    ReadOnlyStateDb::open(dir, inspect_options()).map_err(CliError::storage(dir))
}
