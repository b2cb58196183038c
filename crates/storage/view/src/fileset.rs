//! The set of immutable files readers see, swapped atomically as a whole.

use std::path::Path;
use std::sync::Arc;

use crate::error::{ReadError, Result};
use strata_db::meta::{Manifest, ManifestFile};
use strata_files::{FileError, FileSystem, FileValue, SortedFile, lookup_newest_first};
use strata_types::domain::Domain;

/// The live files of every domain, newest first, with the manifest that lists them.
#[derive(Clone, Default)]
pub struct FileSet {
    domains: [Vec<Arc<SortedFile>>; 4],
    /// The history files of every domain, oldest blocks first
    /// ([`crate::history_files`]).
    history: [Vec<Arc<SortedFile>>; 4],
    /// The manifest (redb's list of live files) these files were opened from.
    pub manifest: Manifest,
}

impl FileSet {
    /// A set of already opened files (newest first per domain) and the
    /// manifest that lists them.
    pub fn new(domains: [Vec<Arc<SortedFile>>; 4], manifest: Manifest) -> FileSet {
        FileSet {
            domains,
            history: Default::default(),
            manifest,
        }
    }

    /// Opens (and verifies) every file the manifest lists (the history
    /// files from the `history/` folder beside `dir`).
    pub fn open(fs: &Arc<dyn FileSystem>, dir: &Path, manifest: Manifest) -> Result<FileSet> {
        FileSet::open_reusing(fs, dir, manifest, &FileSet::default())
    }

    /// Like [`FileSet::open`], but takes the files `previous` already holds
    /// (same name and checksum) from it instead of opening them again: a
    /// reader following another process's commits verifies each file once.
    pub fn open_reusing(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        manifest: Manifest,
        previous: &FileSet,
    ) -> Result<FileSet> {
        let mut set = FileSet {
            domains: Default::default(),
            history: Default::default(),
            manifest,
        };
        let history_dir = crate::history_files::history_dir_beside(dir);
        for domain in Domain::ALL {
            let listed = &set.manifest.domain(domain).files;
            set.domains[domain.index()] = listed
                .iter()
                .rev()
                .map(|entry| open_listed(fs, dir, entry, previous.files(domain)))
                .collect::<Result<_>>()?;
            let listed = &set.manifest.history[domain.index()];
            set.history[domain.index()] = listed
                .iter()
                .map(|entry| open_listed(fs, &history_dir, entry, previous.history(domain)))
                .collect::<Result<_>>()?;
        }
        Ok(set)
    }

    /// The history files of `domain`, oldest blocks first.
    pub fn history(&self, domain: Domain) -> &[Arc<SortedFile>] {
        &self.history[domain.index()]
    }

    /// A copy of this set with `domain`'s history files replaced by
    /// `files` (oldest blocks first), its manifest listing them.
    pub fn with_history(&self, domain: Domain, files: Vec<Arc<SortedFile>>) -> FileSet {
        let mut manifest = self.manifest.clone();
        manifest.history[domain.index()] = files.iter().map(|f| manifest_entry(f)).collect();
        let mut history = self.history.clone();
        history[domain.index()] = files;
        FileSet {
            domains: self.domains.clone(),
            history,
            manifest,
        }
    }

    /// The files of `domain`, newest first.
    pub fn files(&self, domain: Domain) -> &[Arc<SortedFile>] {
        &self.domains[domain.index()]
    }

    /// A copy of this set with `domain`'s files replaced (newest first).
    pub fn with_files(
        &self,
        domain: Domain,
        files: Vec<Arc<SortedFile>>,
        manifest: Manifest,
    ) -> FileSet {
        let mut domains = self.domains.clone();
        domains[domain.index()] = files;
        FileSet {
            domains,
            history: self.history.clone(),
            manifest,
        }
    }

    /// Looks `key` up newest to oldest; returns the level (0 = newest) and the
    /// value (`None` for a tombstone) of the first file that holds it.
    pub fn get(&self, domain: Domain, key: &[u8]) -> Result<Option<(usize, Option<bytes::Bytes>)>> {
        Ok(lookup_newest_first(self.files(domain), key)?.map(|hit| {
            let value = match hit.value {
                FileValue::Value(value) => Some(value),
                FileValue::Tombstone => None,
            };
            (hit.position, value)
        }))
    }
}

/// The manifest's entry of `file`: its name and checksum.
pub fn manifest_entry(file: &SortedFile) -> ManifestFile {
    ManifestFile {
        name: file
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        checksum: file.checksum(),
    }
}

/// The file `entry` names in `dir`: the one `held` already has open (same
/// name and checksum), else opened and verified, its checksum checked
/// against the manifest's.
fn open_listed(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    entry: &ManifestFile,
    held: &[Arc<SortedFile>],
) -> Result<Arc<SortedFile>> {
    if let Some(file) = held.iter().find(|f| {
        f.checksum() == entry.checksum
            && f.path().file_name() == Some(std::ffi::OsStr::new(&entry.name))
    }) {
        return Ok(file.clone());
    }
    let path = dir.join(&entry.name);
    let file = SortedFile::open(fs.as_ref(), &path)?;
    if file.checksum() != entry.checksum {
        return Err(ReadError::File(FileError::Corrupted {
            file: path,
            offset: 0,
            what: format!(
                "checksum {:#018x} differs from the manifest's {:#018x}",
                file.checksum(),
                entry.checksum
            ),
        }));
    }
    Ok(Arc::new(file))
}
