//! Crash images: at every sync point of a short workload (block commits,
//! file builds, manifest commits), build the image a power cut would leave —
//! redb's bytes as of its last `sync_data`, the files as of their last sync —
//! and check that it opens to a prefix of the committed history, without
//! holes, with the root that block had.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::{Address, B256, U256};
use parking_lot::Mutex;
use strata_storage::files::fs::WritableFile;
use strata_storage::files::{FileSystem, MemFileSystem};
use strata_storage::{Account, Durability, Options, Regime, StateDb};

/// What a power cut at one moment leaves behind.
struct Image {
    db: Vec<u8>,
    files: MemFileSystem,
    /// Commits that had returned when the image was taken.
    committed: u64,
    /// Whether the store had finished opening (its creation had synced).
    opened: bool,
}

/// Records durable states of both tiers as the workload runs.
#[derive(Default)]
struct Recorder {
    files: MemFileSystem,
    db_live: Mutex<Vec<u8>>,
    db_durable: Mutex<Vec<u8>>,
    images: Mutex<Vec<Image>>,
    committed: AtomicU64,
    opened: std::sync::atomic::AtomicBool,
}

impl Recorder {
    fn capture(&self) {
        let image = Image {
            db: self.db_durable.lock().clone(),
            files: self.files.power_cut_image(),
            committed: self.committed.load(Ordering::SeqCst),
            opened: self.opened.load(Ordering::SeqCst),
        };
        self.images.lock().push(image);
    }
}

/// redb storage in memory; `sync_data` makes the live bytes durable.
#[derive(Debug, Clone)]
struct RecordingBackend(Arc<Recorder>);

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recorder")
    }
}

impl redb::StorageBackend for RecordingBackend {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.db_live.lock().len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        read_at(&self.0.db_live.lock(), offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.db_live.lock().resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let recorder = &self.0;
        *recorder.db_durable.lock() = recorder.db_live.lock().clone();
        recorder.capture();
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut live = self.0.db_live.lock();
        let end = offset as usize + data.len();
        if live.len() < end {
            live.resize(end, 0);
        }
        live[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
}

/// A redb image opened after the crash.
#[derive(Debug)]
struct ImageBackend(Mutex<Vec<u8>>);

impl redb::StorageBackend for ImageBackend {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.lock().len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        read_at(&self.0.lock(), offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.lock().resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut bytes = self.0.lock();
        let end = offset as usize + data.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
}

fn read_at(bytes: &[u8], offset: u64, out: &mut [u8]) -> io::Result<()> {
    let start = offset as usize;
    let end = start + out.len();
    if end > bytes.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "read past the end",
        ));
    }
    out.copy_from_slice(&bytes[start..end]);
    Ok(())
}

/// The files seam, capturing an image after every sync of a file or directory.
#[derive(Debug)]
struct RecordingFs(Arc<Recorder>);

struct RecordingFile {
    inner: Box<dyn WritableFile>,
    recorder: Arc<Recorder>,
}

impl WritableFile for RecordingFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()?;
        self.recorder.capture();
        Ok(())
    }
}

impl FileSystem for RecordingFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let inner = self.0.files.create(path)?;
        Ok(Box::new(RecordingFile {
            inner,
            recorder: self.0.clone(),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.files.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.files.sync_dir(dir)?;
        self.0.capture();
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.files.remove(path)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.files.create_dir_all(dir)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
        self.0.files.list_dir(dir)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.0.files.read(path)
    }
    fn map(&self, path: &Path) -> io::Result<bytes::Bytes> {
        self.0.files.map(path)
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.0.files.file_len(path)
    }
}

fn options(durability: Durability) -> Options {
    crate::model::small_options()
        .with_durability(durability)
        .with_background_maintenance(false)
}

fn who(i: u64) -> Address {
    Address::with_last_byte((i % 11) as u8 + 1)
}

/// Runs the workload, returning the root after each block and every image.
fn record(durability: Durability, blocks: u64, dir: &Path) -> (Vec<B256>, Vec<Image>) {
    let recorder = Arc::new(Recorder::default());
    let backend = RecordingBackend(recorder.clone());
    let fs: Arc<dyn FileSystem> = Arc::new(RecordingFs(recorder.clone()));
    let db = StateDb::open_with_io(dir, options(durability), fs, Some(backend)).unwrap();
    recorder.opened.store(true, Ordering::SeqCst);
    let mut roots = Vec::new();
    for number in 0..blocks {
        let mut writer = db.begin_block(number).unwrap();
        writer.put_account(
            who(number),
            &Account {
                nonce: number,
                ..Account::default()
            },
        );
        writer.put_storage(
            who(number),
            B256::with_last_byte(number as u8 % 5),
            U256::from(number + 1),
        );
        if number % 7 == 6 {
            writer.delete_account(who(number + 3));
        }
        roots.push(writer.commit().unwrap().root);
        recorder.committed.fetch_add(1, Ordering::SeqCst);
        if number % 3 == 2 {
            db.compact().unwrap();
        }
    }
    drop(db);
    let images = std::mem::take(&mut *recorder.images.lock());
    (roots, images)
}

/// Opens every image and checks it against the committed history; returns
/// the largest number of committed blocks an image lost.
fn check_images(roots: &[B256], images: Vec<Image>, durability: Durability, dir: &Path) -> u64 {
    assert!(images.len() > 20, "only {} sync points", images.len());
    let mut worst_loss = 0;
    // A real datadir's database is created under a temporary name and
    // renamed once initialised; this in-memory backend cannot rename, so
    // images from inside its creation are not states a datadir can be in.
    for (i, image) in images
        .into_iter()
        .enumerate()
        .filter(|(_, image)| image.opened)
    {
        let fs: Arc<dyn FileSystem> = Arc::new(image.files);
        let backend = ImageBackend(Mutex::new(image.db));
        let db = StateDb::open_with_io(dir, options(durability), fs, Some(backend))
            .unwrap_or_else(|e| panic!("image {i} does not open: {e}"));
        let kept = db.last_block().map_or(0, |b| b + 1);
        assert!(
            kept <= image.committed + 1,
            "image {i}: {kept} blocks, but only {} commits had started",
            image.committed + 1
        );
        worst_loss = worst_loss.max(image.committed.saturating_sub(kept));
        if let Some(block) = db.last_block() {
            assert_eq!(
                db.root(),
                roots[block as usize],
                "image {i}: root of block {block}"
            );
            let report = db.verify(&Default::default()).unwrap();
            assert!(report.is_ok(), "image {i}: {:?}", report.problems);
            let reader = db.reader(Regime::Exec);
            let account = reader.account(&who(block)).unwrap().unwrap();
            assert_eq!(
                account.nonce, block,
                "image {i}: the last block's own write"
            );
        }
    }
    worst_loss
}

#[test]
fn every_power_cut_image_opens_to_a_committed_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (roots, images) = record(Durability::EveryBlock, 16, dir.path());
    let lost = check_images(&roots, images, Durability::EveryBlock, dir.path());
    assert_eq!(lost, 0, "a durable commit was lost");
}

#[test]
fn durable_every_n_loses_at_most_n_minus_one_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let (roots, images) = record(Durability::EveryN(4), 16, dir.path());
    let lost = check_images(&roots, images, Durability::EveryN(4), dir.path());
    assert!(lost <= 3, "lost {lost} blocks with durability every 4");
}

/// B10 of the durability findings: a kill during `unwind` after its journal
/// cut but before its redb transaction left redb at the old head over a
/// journal ending at the target, which the next open deleted. Now every
/// power-cut image taken while an unwind runs opens either before it (the
/// old head, its window whole: the unwind can be run again) or after it
/// (the target, the unwound blocks gone from the journal).
#[test]
fn a_power_cut_at_any_point_of_an_unwind_leaves_it_undone_or_done() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let backend = RecordingBackend(recorder.clone());
    let fs: Arc<dyn FileSystem> = Arc::new(RecordingFs(recorder.clone()));
    let options = options(Durability::EveryBlock);
    let db = StateDb::open_with_io(dir.path(), options.clone(), fs, Some(backend)).unwrap();
    recorder.opened.store(true, Ordering::SeqCst);
    let mut roots = Vec::new();
    for number in 0..12u64 {
        let mut writer = db.begin_block(number).unwrap();
        writer.put_account(
            who(number),
            &Account {
                nonce: number,
                ..Account::default()
            },
        );
        writer.put_storage(who(number), B256::with_last_byte(1), U256::from(number + 1));
        roots.push(writer.commit().unwrap().root);
        if number % 4 == 3 {
            db.compact().unwrap();
        }
    }
    let (last, target) = (11u64, 8u64);
    let before = recorder.images.lock().len();
    assert_eq!(db.unwind_to(target).unwrap(), roots[target as usize]);
    let images: Vec<Image> = recorder.images.lock().drain(before..).collect();
    drop(db);
    assert!(
        images.len() >= 3,
        "only {} sync points in the unwind",
        images.len()
    );
    let (mut undone, mut done) = (0, 0);
    for (i, image) in images.into_iter().enumerate() {
        let fs: Arc<dyn FileSystem> = Arc::new(image.files);
        let backend = ImageBackend(Mutex::new(image.db));
        let db = StateDb::open_with_io(dir.path(), options.clone(), fs, Some(backend))
            .unwrap_or_else(|e| panic!("unwind image {i} does not open: {e}"));
        let block = db.last_block().unwrap();
        assert_eq!(db.root(), roots[block as usize], "unwind image {i}: root");
        let report = db.verify(&Default::default()).unwrap();
        assert!(report.is_ok(), "unwind image {i}: {:?}", report.problems);
        match block {
            b if b == last => {
                undone += 1;
                assert_eq!(
                    db.unwind_to(target).unwrap(),
                    roots[target as usize],
                    "unwind image {i}: the unwind runs again"
                );
            }
            b if b == target => {
                done += 1;
                // The unwound blocks are gone: the next block is target + 1.
                let mut writer = db.begin_block(target + 1).unwrap();
                writer.put_account(who(40), &Account::default());
                writer.commit().unwrap();
            }
            other => panic!("unwind image {i} opened at block {other}"),
        }
        drop(db);
    }
    assert!(undone > 0 && done > 0, "undone {undone}, done {done}");
}
