//! Tests across the file modules: model round-trips, corruption, fault
//! injection and the checked-in corrupt fixtures.

mod corruption;
mod faults;
mod fixtures;
mod layouts;
mod open_rss;
mod remote;
mod roundtrip;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::{FileInfo, FileMeta, FileSystem, MemFileSystem, SortedFile, SortedFileWriter};
use strata_types::Domain;

/// A file's content as a model: key → value (`None` = tombstone).
pub(super) type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

pub(super) fn meta(domain: Domain, from_step: u64, to_step: u64) -> FileMeta {
    FileMeta {
        domain,
        from_step,
        to_step,
    }
}

pub(super) fn mem_fs() -> (MemFileSystem, Arc<dyn FileSystem>) {
    let mem = MemFileSystem::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    (mem, fs)
}

/// Writes `model` as the file `meta` in `dir`.
pub(super) fn write_model(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    meta: FileMeta,
    model: &Model,
) -> FileInfo {
    let mut w = SortedFileWriter::new(Arc::clone(fs), dir, meta).unwrap();
    for (k, v) in model {
        w.push(k, v.as_deref()).unwrap();
    }
    w.finish().unwrap()
}

/// Writes and opens `model` in a fresh in-memory file system.
pub(super) fn file_of(model: &Model) -> SortedFile {
    let (_, fs) = mem_fs();
    let info = write_model(&fs, Path::new("/db"), meta(Domain::Storage, 0, 1), model);
    SortedFile::open(&*fs, &info.path).unwrap()
}

/// A deterministic model of `n` entries: 8-byte keys, values of varying
/// size, every 7th entry a tombstone.
pub(super) fn sample_model(n: u64, value_len: usize) -> Model {
    (0..n)
        .map(|i| {
            let key = (i * 3 + 1).to_be_bytes().to_vec();
            let value = (i % 7 != 3).then(|| vec![(i % 251) as u8; value_len + (i as usize % 13)]);
            (key, value)
        })
        .collect()
}
