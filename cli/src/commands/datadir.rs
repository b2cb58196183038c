//! Opening an existing data directory for the inspection commands (`get`,
//! `root`, `stats`, `compact`, `verify`): a directory without a strata
//! database is refused instead of being created.

use std::path::Path;

use strata_storage::{DB_FILE, Options, StateDb};

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
pub(crate) fn head_line(db: &StateDb) -> String {
    match db.last_block() {
        Some(block) => format!("{block} {}", db.root()),
        None => format!("none {}", db.root()),
    }
}
