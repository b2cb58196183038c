//! Check 4c: redb's own integrity check (`Database::check_integrity`), run
//! on a private in-memory copy of `state.redb`. The check needs a writable
//! database and repairs what it finds, so it never runs on the datadir's
//! file: verify changes no byte of the datadir.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use redb::StorageBackend;
use redb::backends::InMemoryBackend;

use super::guard::panic_message;

/// Bytes read from the file per copy step.
const COPY_CHUNK: usize = 1 << 20;

/// What the integrity check of the copy cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntegrityTiming {
    /// Size of `state.redb`.
    pub db_bytes: u64,
    /// Time to copy it into memory.
    pub copy: Duration,
    /// Time of redb's open and check of the copy.
    pub check: Duration,
}

/// Copies `db_path` into memory and runs redb's integrity check on the copy.
/// Returns the timing (when the copy was made) and the problem found, if any.
pub(super) fn check_copy(db_path: &Path) -> (Option<IntegrityTiming>, Option<String>) {
    let started = Instant::now();
    let backend = match copy_into_memory(db_path) {
        Ok(backend) => backend,
        Err(e) => {
            return (
                None,
                Some(format!(
                    "{}: cannot copy it for redb's integrity check: {e}",
                    db_path.display()
                )),
            );
        }
    };
    let mut timing = IntegrityTiming {
        db_bytes: backend.len().unwrap_or(0),
        copy: started.elapsed(),
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
            "{where_}: redb's integrity check failed (it repaired a private copy; the datadir was not changed)"
        )),
        Ok(Err(e)) => Some(format!("{where_}: redb's integrity check failed: {e}")),
        Err(payload) => Some(format!(
            "{where_}: redb's integrity check found the database damaged (redb panicked: {})",
            panic_message(payload.as_ref())
        )),
    };
    (Some(timing), problem)
}

/// The bytes of `path` in a redb memory backend (the file is only read).
fn copy_into_memory(path: &Path) -> std::io::Result<InMemoryBackend> {
    let mut file = std::fs::File::open(path)?;
    let backend = InMemoryBackend::new();
    backend.set_len(file.metadata()?.len())?;
    let mut chunk = vec![0u8; COPY_CHUNK];
    let mut offset = 0u64;
    loop {
        let n = file.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        if offset + n as u64 > backend.len()? {
            backend.set_len(offset + n as u64)?;
        }
        backend.write(offset, &chunk[..n])?;
        offset += n as u64;
    }
    backend.set_len(offset)?;
    Ok(backend)
}
