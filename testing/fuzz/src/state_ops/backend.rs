//! redb's storage in memory, with a power-cut model and injected failures:
//! the bytes written so far (`live`), the bytes as of the last successful
//! `sync_data` (`durable`), and an armed fault that fails writes after a
//! budget or fails syncs.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The redb file of one run; clones share it.
#[derive(Clone, Debug, Default)]
pub struct MemDb(Arc<DbState>);

#[derive(Debug, Default)]
struct DbState {
    live: Mutex<Vec<u8>>,
    durable: Mutex<Vec<u8>>,
    /// Writes that still succeed while a write fault is armed.
    writes_left: AtomicU64,
    write_fault: AtomicBool,
    sync_fault: AtomicBool,
}

fn lock(m: &Mutex<Vec<u8>>) -> MutexGuard<'_, Vec<u8>> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MemDb {
    /// A new file holding `image`, live and durable.
    pub fn from_image(image: Vec<u8>) -> Self {
        let db = MemDb::default();
        *lock(&db.0.live) = image.clone();
        *lock(&db.0.durable) = image;
        db
    }

    /// The bytes a power cut now would leave.
    pub fn durable_image(&self) -> Vec<u8> {
        lock(&self.0.durable).clone()
    }

    /// Fails every write after the next `ok_writes` ones.
    pub fn fail_writes_after(&self, ok_writes: u64) {
        self.0.writes_left.store(ok_writes, Ordering::SeqCst);
        self.0.write_fault.store(true, Ordering::SeqCst);
    }

    /// Fails every `sync_data` (the durable image stays as it was).
    pub fn fail_syncs(&self) {
        self.0.sync_fault.store(true, Ordering::SeqCst);
    }

    /// Disarms both faults.
    pub fn clear_faults(&self) {
        self.0.write_fault.store(false, Ordering::SeqCst);
        self.0.sync_fault.store(false, Ordering::SeqCst);
    }

    fn take_write_budget(&self) -> io::Result<()> {
        if !self.0.write_fault.load(Ordering::SeqCst) {
            return Ok(());
        }
        let left = self.0.writes_left.load(Ordering::SeqCst);
        if left == 0 {
            return Err(io::Error::other("injected redb write failure"));
        }
        self.0.writes_left.store(left - 1, Ordering::SeqCst);
        Ok(())
    }
}

impl redb::StorageBackend for MemDb {
    fn len(&self) -> io::Result<u64> {
        Ok(lock(&self.0.live).len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let live = lock(&self.0.live);
        let range = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(out.len())?))
            .filter(|r| r.end <= live.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        out.copy_from_slice(&live[range]);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.take_write_budget()?;
        let len = usize::try_from(len).map_err(io::Error::other)?;
        lock(&self.0.live).resize(len, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        if self.0.sync_fault.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected redb sync failure"));
        }
        *lock(&self.0.durable) = lock(&self.0.live).clone();
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.take_write_budget()?;
        let mut live = lock(&self.0.live);
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let end = start + data.len();
        if live.len() < end {
            live.resize(end, 0);
        }
        live[start..end].copy_from_slice(data);
        Ok(())
    }
}
