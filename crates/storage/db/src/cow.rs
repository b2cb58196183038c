//! A redb storage backend that reads a database file and keeps every write
//! in memory, so that a read-only handle can run redb's recovery of a
//! database whose writer was killed without changing a byte of the file.
//!
//! Locks: every lock redb asks for is taken *shared* on the file, so a live
//! writer (which holds its locks exclusively) still makes the open fail,
//! other readers are not shut out, and nothing here needs write access.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Bound;
use std::path::Path;

use parking_lot::Mutex;
use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// What redb's backend I/O returns (with std: `std::io::Error`).
type BackendIoError = std::io::Error;

/// Copy-on-write granularity.
const PAGE: u64 = 4096;

/// Reads from the file, writes to memory; see the module docs.
#[derive(Debug)]
pub struct CopyOnWriteBackend {
    file: FileBackend,
    state: Mutex<Overlay>,
}

#[derive(Debug)]
struct Overlay {
    /// The length redb sees.
    len: u64,
    /// Bytes of the file still visible (a shrink hides the rest for good).
    file_visible: u64,
    /// Pages written since the open, by page number.
    pages: HashMap<u64, Box<[u8]>>,
}

impl CopyOnWriteBackend {
    /// Opens `path` read-only.
    pub fn open(path: &Path) -> std::io::Result<CopyOnWriteBackend> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let file = FileBackend::new(file).map_err(std::io::Error::other)?;
        Ok(CopyOnWriteBackend {
            file,
            state: Mutex::new(Overlay {
                len,
                file_visible: len,
                pages: HashMap::new(),
            }),
        })
    }

    /// Fills `out` with the bytes at `offset` within one page, as the
    /// overlay and the visible part of the file say.
    fn read_in_page(
        &self,
        overlay: &Overlay,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), BackendIoError> {
        let page = offset / PAGE;
        let within = (offset % PAGE) as usize;
        if let Some(bytes) = overlay.pages.get(&page) {
            out.copy_from_slice(&bytes[within..within + out.len()]);
            return Ok(());
        }
        let from_file = overlay
            .file_visible
            .saturating_sub(offset)
            .min(out.len() as u64) as usize;
        if from_file > 0 {
            self.file.read(offset, &mut out[..from_file])?;
        }
        out[from_file..].fill(0);
        Ok(())
    }
}

/// Splits `[offset, offset + len)` into pieces that stay within one page.
fn page_pieces(offset: u64, len: usize) -> impl Iterator<Item = (u64, std::ops::Range<usize>)> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let at = offset + done as u64;
        let room = (PAGE - at % PAGE) as usize;
        let take = room.min(len - done);
        let piece = (at, done..done + take);
        done += take;
        Some(piece)
    })
}

impl StorageBackend for CopyOnWriteBackend {
    fn len(&self) -> Result<u64, BackendIoError> {
        Ok(self.state.lock().len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), BackendIoError> {
        let overlay = self.state.lock();
        for (at, range) in page_pieces(offset, out.len()) {
            self.read_in_page(&overlay, at, &mut out[range])?;
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), BackendIoError> {
        let mut overlay = self.state.lock();
        if len < overlay.len {
            overlay.file_visible = overlay.file_visible.min(len);
            overlay.pages.retain(|&page, _| page * PAGE < len);
            if let Some(bytes) = overlay.pages.get_mut(&(len / PAGE)) {
                bytes[(len % PAGE) as usize..].fill(0);
            }
        }
        overlay.len = len;
        Ok(())
    }

    fn sync_data(&self) -> Result<(), BackendIoError> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), BackendIoError> {
        let mut overlay = self.state.lock();
        for (at, range) in page_pieces(offset, data.len()) {
            let page = at / PAGE;
            if !overlay.pages.contains_key(&page) {
                let mut bytes = vec![0u8; PAGE as usize].into_boxed_slice();
                self.read_in_page(&overlay, page * PAGE, &mut bytes)?;
                overlay.pages.insert(page, bytes);
            }
            let within = (at % PAGE) as usize;
            let bytes = overlay.pages.get_mut(&page).expect("inserted above");
            bytes[within..within + range.len()].copy_from_slice(&data[range]);
        }
        overlay.len = overlay.len.max(offset + data.len() as u64);
        Ok(())
    }

    fn close(&self) -> Result<(), BackendIoError> {
        self.file.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests {
    use redb::{Database, ReadableDatabase, TableDefinition};

    use super::*;

    const TABLE: TableDefinition<u64, &[u8]> = TableDefinition::new("t");

    #[test]
    fn writes_stay_in_memory_and_reads_see_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db.redb");
        {
            let db = Database::create(&path).expect("create");
            let txn = db.begin_write().expect("write");
            txn.open_table(TABLE)
                .expect("table")
                .insert(1, [7u8; 5000].as_slice())
                .expect("insert");
            txn.commit().expect("commit");
        }
        let before = std::fs::read(&path).expect("read file");
        let backend = CopyOnWriteBackend::open(&path).expect("open");
        let db = Database::builder()
            .create_with_backend(backend)
            .expect("open through the overlay");
        let txn = db.begin_write().expect("write");
        txn.open_table(TABLE)
            .expect("table")
            .insert(2, [9u8; 9000].as_slice())
            .expect("insert");
        txn.commit().expect("commit in memory");
        let read = db.begin_read().expect("read");
        let table = read.open_table(TABLE).expect("table");
        assert_eq!(
            table.get(1).expect("get").expect("present").value(),
            [7u8; 5000]
        );
        assert_eq!(
            table.get(2).expect("get").expect("present").value(),
            [9u8; 9000]
        );
        drop((table, read, db));
        assert_eq!(std::fs::read(&path).expect("read file"), before);
    }

    #[test]
    fn pieces_never_cross_a_page() {
        let pieces: Vec<_> = page_pieces(4000, 10_000).collect();
        assert_eq!(pieces.first(), Some(&(4000, 0..96)));
        assert!(
            pieces
                .iter()
                .all(|(at, r)| at % PAGE + r.len() as u64 <= PAGE)
        );
        assert_eq!(pieces.iter().map(|(_, r)| r.len()).sum::<usize>(), 10_000);
    }
}
