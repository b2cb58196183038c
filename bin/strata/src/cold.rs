//! Cold runs: evict a datadir's files from the operating system's page
//! cache, so that the next reads go to the disk as they would on a node
//! whose state is larger than its memory.
//!
//! Every regular file under the datadir is synced (only clean pages can be
//! dropped) and then advised away with `posix_fadvise(POSIX_FADV_DONTNEED)`,
//! which needs no privileges (unlike writing to `/proc/sys/vm/drop_caches`).
//! The kernel keeps pages that a process still maps or locks, so evict
//! before opening the store (`fincore FILE` shows what stayed resident).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// What [`evict_page_cache`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Eviction {
    /// Regular files advised away.
    pub files: u64,
    /// Their total size in bytes.
    pub bytes: u64,
}

/// An eviction failure, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("cannot evict {path} from the page cache: {what}: {source}")]
pub struct EvictError {
    /// The file.
    pub path: PathBuf,
    /// What failed ("open", "sync", "advise").
    pub what: &'static str,
    /// The operating system's error.
    pub source: io::Error,
}

/// Syncs every regular file under `dir` and asks the kernel to drop its
/// pages from the page cache.
pub fn evict_page_cache(dir: &Path) -> Result<Eviction, EvictError> {
    let mut eviction = Eviction::default();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|source| EvictError {
            path: folder.clone(),
            what: "list",
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| EvictError {
                path: folder.clone(),
                what: "list",
                source,
            })?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|source| EvictError {
                path: path.clone(),
                what: "stat",
                source,
            })?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                eviction.bytes += evict_file(&path)?;
                eviction.files += 1;
            }
        }
    }
    Ok(eviction)
}

/// [`evict_page_cache`] of `datadir` before a cold run, what was evicted
/// told on stderr; a failure is the command's error, naming the file.
pub(crate) fn cold_start(datadir: &Path) -> Result<Eviction, crate::CliError> {
    let evicted = evict_page_cache(datadir).map_err(|e| {
        let what = format!("evict from the page cache ({}): {}", e.what, e.source);
        crate::CliError::file(e.path)(io::Error::new(e.source.kind(), what))
    })?;
    eprintln!(
        "cold start: {} files ({:.1} MB) of {} evicted from the page cache",
        evicted.files,
        evicted.bytes as f64 / 1e6,
        datadir.display()
    );
    Ok(evicted)
}

/// Syncs one file and advises its pages away; returns its size.
fn evict_file(path: &Path) -> Result<u64, EvictError> {
    let fail = |what| {
        move |source| EvictError {
            path: path.to_path_buf(),
            what,
            source,
        }
    };
    // Read-only is enough for both calls (and works on files we may not
    // write, such as another process's lock file).
    let file = File::open(path).map_err(fail("open"))?;
    file.sync_data().map_err(fail("sync"))?;
    let size = file.metadata().map_err(fail("stat"))?.len();
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|errno| fail("advise")(io::Error::from(errno)))?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_every_file_below_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::write(dir.path().join("files").join("b"), vec![2u8; 5_000]).unwrap();
        let eviction = evict_page_cache(dir.path()).unwrap();
        assert_eq!(
            eviction,
            Eviction {
                files: 2,
                bytes: 15_000
            }
        );
        // The data is still there, read back from the disk.
        assert_eq!(
            std::fs::read(dir.path().join("a")).unwrap(),
            vec![1u8; 10_000]
        );
    }

    #[test]
    fn a_missing_folder_is_named() {
        let error = evict_page_cache(Path::new("/nonexistent/strata")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/strata"), "{error}");
    }
}
