//! Check 4c: redb's own integrity check (`Database::check_integrity`), run
//! on a copy-on-write view of `state.redb` (reads from the file, writes to
//! memory). The check needs a writable database and repairs what it finds,
//! so it never runs on the datadir's file: verify changes no byte of the
//! datadir, and holds in memory only the pages the check rewrites.

use std::path::Path;
use std::time::{Duration, Instant};

use redb::StorageBackend;

use super::guard::panic_message;
use strata_db::cow::CopyOnWriteBackend;

/// What the integrity check of the copy cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntegrityTiming {
    /// Size of `state.redb`.
    pub db_bytes: u64,
    /// Time to open the copy-on-write view of it.
    pub open: Duration,
    /// Time of redb's open and check of the copy.
    pub check: Duration,
}

/// Runs redb's integrity check on a copy-on-write view of `db_path`.
/// Returns the timing (when the copy was made) and the problem found, if any.
pub(super) fn check_copy(db_path: &Path) -> (Option<IntegrityTiming>, Option<String>) {
    let started = Instant::now();
    let backend = match CopyOnWriteBackend::open(db_path) {
        Ok(backend) => backend,
        Err(e) => {
            return (
                None,
                Some(format!(
                    "{}: cannot open it for redb's integrity check: {e}",
                    db_path.display()
                )),
            );
        }
    };
    let mut timing = IntegrityTiming {
        db_bytes: backend.len().unwrap_or(0),
        open: started.elapsed(),
        check: Duration::ZERO,
    };
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(move || -> Result<bool, redb::DatabaseError> {
        let mut db = redb::Builder::new().create_with_backend(backend)?;
        db.check_integrity()
    });
    timing.check = started.elapsed();
    let where_ = db_path.display();
    let problem = match outcome {
        Ok(Ok(true)) => None,
        Ok(Ok(false)) => Some(format!(
            "{where_}: redb's integrity check failed (it repaired a copy-on-write view in memory; the datadir was not changed)"
        )),
        Ok(Err(e)) => Some(format!("{where_}: redb's integrity check failed: {e}")),
        Err(payload) => Some(format!(
            "{where_}: redb's integrity check found the database damaged (redb panicked: {})",
            panic_message(payload.as_ref())
        )),
    };
    (Some(timing), problem)
}
