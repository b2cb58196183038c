//! What a directory of sorted files holds: published files by domain and
//! step range, leftover temp files, and anything else.

use std::path::{Path, PathBuf};

use super::error::FileError;
use super::meta::{FileMeta, TEMP_SUFFIX};
use strata_fs::{FileSystem, file_name_of};

/// The content of a files directory, as found by [`scan_dir`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirListing {
    /// Published sorted files, ordered by domain, then `from_step`, then `to_step`.
    pub files: Vec<(FileMeta, PathBuf)>,
    /// `*.tmp` files left by writes that never finished (e.g. a crash).
    pub temp_files: Vec<PathBuf>,
    /// Files whose names are not sorted-file names; left alone.
    pub other: Vec<PathBuf>,
}

impl DirListing {
    /// The published files of one domain, oldest range first.
    pub fn of_domain(
        &self,
        domain: strata_types::Domain,
    ) -> impl Iterator<Item = &(FileMeta, PathBuf)> {
        self.files.iter().filter(move |(m, _)| m.domain == domain)
    }
}

/// Lists `dir` and sorts what it holds by file name. Nothing is opened.
pub fn scan_dir(fs: &dyn FileSystem, dir: &Path) -> Result<DirListing, FileError> {
    let paths = fs.list_dir(dir).map_err(|source| FileError::Io {
        file: dir.to_path_buf(),
        op: "list directory",
        source,
    })?;
    let mut listing = DirListing::default();
    for path in paths {
        let name = file_name_of(&path).unwrap_or_default();
        if let Some(meta) = FileMeta::parse_file_name(name) {
            listing.files.push((meta, path));
        } else if name.ends_with(TEMP_SUFFIX) {
            listing.temp_files.push(path);
        } else {
            listing.other.push(path);
        }
    }
    listing.files.sort();
    Ok(listing)
}

/// Deletes the temp files of unfinished writes in `dir` and makes the
/// removal durable; returns how many were removed.
pub fn remove_temp_files(fs: &dyn FileSystem, dir: &Path) -> Result<usize, FileError> {
    let listing = scan_dir(fs, dir)?;
    for path in &listing.temp_files {
        fs.remove(path).map_err(|source| FileError::Io {
            file: path.clone(),
            op: "remove",
            source,
        })?;
    }
    if !listing.temp_files.is_empty() {
        fs.sync_dir(dir).map_err(|source| FileError::Io {
            file: dir.to_path_buf(),
            op: "directory sync",
            source,
        })?;
    }
    Ok(listing.temp_files.len())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{MemFileSystem, SortedFileWriter};
    use strata_types::Domain;

    #[test]
    fn scan_sorts_files_and_finds_leftovers() {
        let mem = MemFileSystem::new();
        let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
        let dir = Path::new("/db");
        let make = |domain, from, to| {
            let meta = FileMeta {
                domain,
                from_step: from,
                to_step: to,
            };
            SortedFileWriter::new(Arc::clone(&fs), dir, meta)
                .unwrap()
                .finish()
                .unwrap();
            meta
        };
        let later = make(Domain::Storage, 16, 32);
        let early = make(Domain::Storage, 0, 16);
        let account = make(Domain::Account, 0, 32);
        mem.insert(
            &dir.join("account-0000000032-0000000033.sst.tmp"),
            vec![1, 2],
        );
        mem.insert(&dir.join("notes.txt"), vec![]);
        mem.insert(
            Path::new("/elsewhere/code-0000000000-0000000001.sst"),
            vec![],
        );

        let listing = scan_dir(&mem, dir).unwrap();
        let metas: Vec<FileMeta> = listing.files.iter().map(|(m, _)| *m).collect();
        assert_eq!(metas, vec![account, early, later]);
        assert_eq!(listing.of_domain(Domain::Storage).count(), 2);
        assert_eq!(listing.temp_files.len(), 1);
        assert_eq!(listing.other, vec![dir.join("notes.txt")]);

        assert_eq!(remove_temp_files(&mem, dir).unwrap(), 1);
        assert!(
            scan_dir(&mem.power_cut_image(), dir)
                .unwrap()
                .temp_files
                .is_empty()
        );
        assert_eq!(remove_temp_files(&mem, dir).unwrap(), 0);
    }
}
