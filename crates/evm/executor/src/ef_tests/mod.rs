//! Ethereum's BlockchainTests run through the executor over strata, one
//! fresh store per case (what `strata ef-test` runs, like geth's
//! `evm blocktest` and reth's `ef-tests`).
//!
//! For each case: the genesis from `pre` (its root and hash checked), every
//! block decoded and executed in order — a block marked `expectException`
//! must be refused, and the report says by which check — then the head
//! must be `lastblockhash`, the store's root the head's state root, and
//! every account, code and slot of `postState` must read back through
//! strata (or the root must be `postStateHash`).

mod case;
mod chain;
mod fixture;
mod report;

use crate::execute::StatePath;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

pub use case::{CaseOutcome, case_options, run_case};
pub use fixture::{Case, FixtureBlock, HeaderFields, parse_case, read_cases};
pub use report::{CaseReport, Report, Tally};

/// A fixture that could not be read as BlockchainTests.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Read {
        /// What was read.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A file is not a BlockchainTests fixture.
    #[error("{path}{}: not a BlockchainTests fixture: {message}", case.as_ref().map(|c| format!(" case {c}")).unwrap_or_default())]
    Fixture {
        /// The file.
        path: PathBuf,
        /// The case, when the file itself parsed.
        case: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// How the runner executes each block of a case.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// How the EVM reaches the state.
    pub state: StatePath,
    /// Threads running an Amsterdam block's transactions ahead of their
    /// turn from its list ([`crate::ExecuteOptions::transaction_workers`];
    /// 0: one after the other).
    pub transaction_workers: usize,
}

impl RunOptions {
    /// Blocks run on `state`, their transactions one after the other.
    pub fn on(state: StatePath) -> Self {
        Self {
            state,
            transaction_workers: 0,
        }
    }
}

/// Every `.json` file under each of `paths` (a path may be a file), sorted.
/// Symbolic links are followed, but each folder is walked and each file
/// counted once, whatever names lead to it: a link back up (a loop) or two
/// links to one folder add nothing.
pub fn fixture_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, RunnerError> {
    let mut walk = Walk::default();
    for path in paths {
        walk.collect_json(path)?;
    }
    let mut files = walk.files;
    files.sort();
    Ok(files)
}

/// The fixture files found so far, and what was already seen (by canonical
/// path, so two names of one folder or file count once).
#[derive(Default)]
struct Walk {
    folders_seen: HashSet<PathBuf>,
    files_seen: HashSet<PathBuf>,
    files: Vec<PathBuf>,
}

impl Walk {
    fn collect_json(&mut self, path: &Path) -> Result<(), RunnerError> {
        let read_error = |source| RunnerError::Read {
            path: path.to_path_buf(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(read_error)?;
        let canonical = std::fs::canonicalize(path).map_err(read_error)?;
        if metadata.is_file() {
            if self.files_seen.insert(canonical) {
                self.files.push(path.to_path_buf());
            }
            return Ok(());
        }
        if !self.folders_seen.insert(canonical) {
            return Ok(());
        }
        let mut children = std::fs::read_dir(path)
            .map_err(read_error)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(read_error)?;
        // A fixed order, so that the name kept for a file reached twice is
        // the same on every run.
        children.sort();
        for child in children {
            if child.is_dir() || child.extension().is_some_and(|ext| ext == "json") {
                self.collect_json(&child)?;
            }
        }
        Ok(())
    }
}

/// Runs every case of every fixture file under `paths` whose file path or
/// case name contains `filter` (all without one), in parallel on rayon's
/// pool, each case's store in a folder of its own inside `scratch`;
/// each block executed as `options` say;
/// `progress(files done, files)` after each file. The report's
/// folders are relative to the deepest folder holding every path.
pub fn run_paths(
    paths: &[PathBuf],
    filter: Option<&str>,
    scratch: &Path,
    options: RunOptions,
    mut progress: impl FnMut(usize, usize) + Send,
) -> Result<Report, RunnerError> {
    let started = Instant::now();
    let files = fixture_files(paths)?;
    let root = common_root(paths);
    let mut reports = Vec::new();
    let total = files.len();
    for (done, file) in files.iter().enumerate() {
        let cases = read_cases(file)?;
        let folder = folder_of(&root, file);
        let selected: Vec<(String, serde_json::Value)> = cases
            .into_iter()
            .filter(|(name, _)| {
                filter.is_none_or(|f| name.contains(f) || file.to_string_lossy().contains(f))
            })
            .collect();
        let mut file_reports: Vec<CaseReport> = selected
            .into_par_iter()
            .map(|(name, value)| run_one(file, &folder, name, value, scratch, options))
            .collect::<Result<_, _>>()?;
        reports.append(&mut file_reports);
        progress(done + 1, total);
    }
    Ok(Report::new(reports, started.elapsed()))
}

fn run_one(
    file: &Path,
    folder: &str,
    name: String,
    value: serde_json::Value,
    scratch: &Path,
    options: RunOptions,
) -> Result<CaseReport, RunnerError> {
    let started = Instant::now();
    let case = parse_case(file, &name, value)?;
    let outcome = run_case(&case, scratch, options);
    Ok(CaseReport {
        file: file.to_path_buf(),
        folder: folder.to_string(),
        name,
        network: case.network,
        outcome,
        elapsed: started.elapsed(),
    })
}

/// The folder the report groups a file under: its parent, relative to
/// `root`.
fn folder_of(root: &Path, file: &Path) -> String {
    let parent = file.parent().unwrap_or(file);
    let relative = parent.strip_prefix(root).unwrap_or(parent);
    let text = relative.to_string_lossy();
    if text.is_empty() {
        ".".to_string()
    } else {
        text.into_owned()
    }
}

/// The deepest folder holding every path (a file's own folder for one file).
fn common_root(paths: &[PathBuf]) -> PathBuf {
    let folders: Vec<PathBuf> = paths
        .iter()
        .map(|p| {
            if p.is_file() {
                p.parent().map(Path::to_path_buf).unwrap_or_default()
            } else {
                p.clone()
            }
        })
        .collect();
    let Some(first) = folders.first() else {
        return PathBuf::new();
    };
    let mut root = first.clone();
    while !folders.iter().all(|f| f.starts_with(&root)) {
        if !root.pop() {
            break;
        }
    }
    root
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_back_up_and_twice_linked_folders_are_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fixtures");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/case.json"), "{}").unwrap();
        // Two links to the folder itself (a walk that follows them never
        // ends), a link to a subfolder and one to the file.
        symlink("..", root.join("sub/up")).unwrap();
        symlink("../fixtures", root.join("again")).unwrap();
        symlink("sub", root.join("sub-link")).unwrap();
        symlink("sub/case.json", root.join("case-link.json")).unwrap();

        let files = fixture_files(std::slice::from_ref(&root)).unwrap();
        assert_eq!(files.len(), 1, "{files:?}");
        // Given twice, and as the file itself: still once.
        let files = fixture_files(&[root.clone(), root.join("sub/case.json")]).unwrap();
        assert_eq!(files.len(), 1, "{files:?}");
    }
}
