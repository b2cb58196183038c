//! An external sort of `(key, value)` byte pairs in bounded memory: pairs
//! collect in one arena until it holds `budget` bytes, are sorted (on
//! rayon) and spilled as a run file; [`ExternalSorter::finish`] merges the
//! runs (and what is still in memory) into one stream in key order.
//!
//! Equal keys are all kept, adjacent in the output (the caller decides
//! whether a repeat is an error). Runs are scratch: written through a
//! buffer, never synced, removed when the merge is dropped.
//!
//! Run format: repeated `key_len: u32 LE ‖ value_len: u32 LE ‖ key ‖ value`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rayon::slice::ParallelSliceMut;

use crate::error::{BulkError, Result};

/// Read buffer per run during the merge.
const RUN_READ_BUFFER: usize = 256 * 1024;
/// Write buffer of a run being spilled.
const RUN_WRITE_BUFFER: usize = 1024 * 1024;

/// One key and its value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Where a pair sits in the arena.
#[derive(Clone, Copy)]
struct Slot {
    start: usize,
    key_len: u32,
    value_len: u32,
}

/// A failed read or write of a run file.
#[derive(Debug, thiserror::Error)]
#[error("sort run {path}: {op}: {source}")]
pub struct RunError {
    /// The run file.
    pub path: PathBuf,
    /// What was being done.
    pub op: &'static str,
    /// The underlying I/O error.
    #[source]
    pub source: io::Error,
}

/// A run's failure as the crate's error (naming the run file).
impl From<RunError> for BulkError {
    fn from(e: RunError) -> Self {
        BulkError::Scratch {
            path: e.path,
            what: e.op,
            source: e.source,
        }
    }
}

/// A scratch folder for runs, removed when dropped: a fixed folder (what a
/// crash left there is removed first), or a folder of its own in a parent
/// that other processes may share.
pub struct ScratchDir {
    dir: PathBuf,
    /// Set for a folder of its own (removes itself).
    own: Option<tempfile::TempDir>,
}

impl ScratchDir {
    /// `dir`, emptied of what an interrupted run left and created.
    pub fn create(dir: PathBuf) -> Result<Self> {
        remove_scratch(&dir)?;
        std::fs::create_dir_all(&dir).map_err(|source| BulkError::Scratch {
            path: dir.clone(),
            what: "create the scratch folder",
            source,
        })?;
        Ok(Self { dir, own: None })
    }

    /// A new folder `{prefix}*` of its own in `parent`.
    pub fn unique_in(parent: &Path, prefix: &str) -> Result<Self> {
        let own = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(parent)
            .map_err(|source| BulkError::Scratch {
                path: parent.to_path_buf(),
                what: "create a scratch folder in",
                source,
            })?;
        Ok(Self {
            dir: own.path().to_path_buf(),
            own: Some(own),
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if self.own.is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Removes `dir` and what an interrupted run left in it (nothing there is
/// needed); absent is fine.
pub fn remove_scratch(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(BulkError::Scratch {
            path: dir.to_path_buf(),
            what: "remove the scratch folder an interrupted run left",
            source,
        }),
    }
}

/// Sorts pairs larger than memory. See the module docs.
pub struct ExternalSorter {
    dir: PathBuf,
    name: &'static str,
    budget: usize,
    arena: Vec<u8>,
    slots: Vec<Slot>,
    runs: Vec<PathBuf>,
    /// Run files named so far (merges add runs of their own).
    run_names: usize,
    pairs: u64,
}

impl ExternalSorter {
    /// A sorter whose runs go to `dir` (which must exist) as
    /// `{name}-{n}.run`, spilling whenever `budget` bytes of pairs are held.
    pub fn new(dir: &Path, name: &'static str, budget: usize) -> Self {
        Self {
            dir: dir.to_path_buf(),
            name,
            budget: budget.max(1),
            arena: Vec::new(),
            slots: Vec::new(),
            runs: Vec::new(),
            run_names: 0,
            pairs: 0,
        }
    }

    /// Adds a pair, spilling a run first when the arena is full.
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<(), RunError> {
        let held = self.arena.len() + self.slots.len() * size_of::<Slot>();
        if held >= self.budget && !self.slots.is_empty() {
            self.spill()?;
        }
        if self.arena.capacity() == 0 {
            // The whole budget at once: growth by doubling would briefly
            // hold the old and the new arena (up to 3× the budget).
            self.arena.reserve_exact(self.budget);
        }
        let start = self.arena.len();
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(value);
        self.slots.push(Slot {
            start,
            key_len: key.len() as u32,
            value_len: value.len() as u32,
        });
        self.pairs += 1;
        Ok(())
    }

    /// Pairs pushed so far.
    pub fn pairs(&self) -> u64 {
        self.pairs
    }

    /// Runs spilled so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    fn sort_in_memory(&mut self) {
        let arena = &self.arena;
        let key = |s: &Slot| &arena[s.start..s.start + s.key_len as usize];
        self.slots.par_sort_by(|a, b| key(a).cmp(key(b)));
    }

    /// The path of the next run.
    fn next_run_path(&mut self) -> PathBuf {
        self.run_names += 1;
        self.dir
            .join(format!("{}-{}.run", self.name, self.run_names - 1))
    }

    fn spill(&mut self) -> Result<(), RunError> {
        self.sort_in_memory();
        let path = self.next_run_path();
        self.runs.push(path.clone());
        let arena = &self.arena;
        write_run(
            &path,
            self.slots.iter().map(|slot| {
                let key_end = slot.start + slot.key_len as usize;
                Ok((
                    &arena[slot.start..key_end],
                    &arena[key_end..key_end + slot.value_len as usize],
                ))
            }),
        )?;
        // Keep the arena's allocation for the next run.
        self.arena.clear();
        self.slots.clear();
        Ok(())
    }

    /// Sorts what is held and returns the merged stream of every pair. More
    /// than [`MAX_FAN_IN`] runs are first merged into fewer, larger ones, so
    /// that open files and read buffers stay bounded.
    pub fn finish(mut self) -> Result<SortedPairs, RunError> {
        self.sort_in_memory();
        while self.runs.len() > MAX_FAN_IN {
            let group: Vec<PathBuf> = self.runs.drain(..MAX_FAN_IN).collect();
            let merged = merge_sources(group, None)?;
            let path = self.next_run_path();
            self.runs.push(path.clone());
            write_run(&path, merged)?;
        }
        let memory = (
            std::mem::take(&mut self.arena),
            std::mem::take(&mut self.slots),
        );
        merge_sources(std::mem::take(&mut self.runs), Some(memory))
    }
}

/// The most runs merged at once (each holds an open file and a read buffer).
const MAX_FAN_IN: usize = 64;

/// Writes `pairs` (in order) as the run file `path`.
fn write_run<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    path: &Path,
    pairs: impl Iterator<Item = Result<(K, V), RunError>>,
) -> Result<(), RunError> {
    let error = |op| {
        let path = path.to_path_buf();
        move |source| RunError { path, op, source }
    };
    let file = File::create(path).map_err(error("create"))?;
    let mut out = BufWriter::with_capacity(RUN_WRITE_BUFFER, file);
    for pair in pairs {
        let (key, value) = pair?;
        let (key, value) = (key.as_ref(), value.as_ref());
        out.write_all(&(key.len() as u32).to_le_bytes())
            .and_then(|()| out.write_all(&(value.len() as u32).to_le_bytes()))
            .and_then(|()| out.write_all(key))
            .and_then(|()| out.write_all(value))
            .map_err(error("write"))?;
    }
    out.flush().map_err(error("write"))
}

/// The merge of the run files `runs` (removed when the merge is dropped)
/// and of a sorted arena still in memory.
fn merge_sources(
    runs: Vec<PathBuf>,
    memory: Option<(Vec<u8>, Vec<Slot>)>,
) -> Result<SortedPairs, RunError> {
    let mut sources = Vec::with_capacity(runs.len() + 1);
    let mut merged = SortedPairs {
        values: Vec::new(),
        sources: Vec::new(),
        heap: BinaryHeap::new(),
        runs,
    };
    for path in &merged.runs {
        let file = File::open(path).map_err(|source| RunError {
            path: path.clone(),
            op: "open",
            source,
        })?;
        sources.push(Source::Run {
            path: path.clone(),
            reader: BufReader::with_capacity(RUN_READ_BUFFER, file),
        });
    }
    if let Some((arena, slots)) = memory {
        sources.push(Source::Memory {
            arena,
            slots: slots.into_iter(),
        });
    }
    merged.values = vec![Vec::new(); sources.len()];
    merged.sources = sources;
    for index in 0..merged.sources.len() {
        merged.refill(index)?;
    }
    Ok(merged)
}

impl Drop for ExternalSorter {
    fn drop(&mut self) {
        remove_runs(&self.runs);
    }
}

fn remove_runs(runs: &[PathBuf]) {
    for path in runs {
        let _ = std::fs::remove_file(path);
    }
}

/// One sorted input of the merge.
enum Source {
    Run {
        path: PathBuf,
        reader: BufReader<File>,
    },
    Memory {
        arena: Vec<u8>,
        slots: std::vec::IntoIter<Slot>,
    },
}

impl Source {
    /// The next pair, or `None` at the end.
    fn next_pair(&mut self) -> Result<Option<Pair>, RunError> {
        match self {
            Source::Memory { arena, slots } => Ok(slots.next().map(|s| {
                let key_end = s.start + s.key_len as usize;
                (
                    arena[s.start..key_end].to_vec(),
                    arena[key_end..key_end + s.value_len as usize].to_vec(),
                )
            })),
            Source::Run { path, reader } => {
                let error = |source| RunError {
                    path: path.clone(),
                    op: "read",
                    source,
                };
                let mut lens = [0u8; 8];
                match reader.read_exact(&mut lens[..1]) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
                    Err(e) => return Err(error(e)),
                }
                reader.read_exact(&mut lens[1..]).map_err(error)?;
                let key_len = u32::from_le_bytes(lens[..4].try_into().expect("4 bytes")) as usize;
                let value_len = u32::from_le_bytes(lens[4..].try_into().expect("4 bytes")) as usize;
                let mut key = vec![0u8; key_len];
                reader.read_exact(&mut key).map_err(error)?;
                let mut value = vec![0u8; value_len];
                reader.read_exact(&mut value).map_err(error)?;
                Ok(Some((key, value)))
            }
        }
    }
}

/// Every pair of a sorter, in key order. Removes the run files when dropped.
pub struct SortedPairs {
    sources: Vec<Source>,
    /// Each source's next key, smallest first (equal keys by source).
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
    /// Each source's next value, beside its key in `heap`.
    values: Vec<Vec<u8>>,
    runs: Vec<PathBuf>,
}

impl SortedPairs {
    fn refill(&mut self, source: usize) -> Result<(), RunError> {
        if let Some((key, value)) = self.sources[source].next_pair()? {
            self.values[source] = value;
            self.heap.push(Reverse((key, source)));
        }
        Ok(())
    }

    /// The key the next call to [`Iterator::next`] returns, if any.
    pub fn peek_key(&self) -> Option<&[u8]> {
        self.heap.peek().map(|Reverse((key, _))| key.as_slice())
    }
}

impl Iterator for SortedPairs {
    type Item = Result<Pair, RunError>;

    fn next(&mut self) -> Option<Self::Item> {
        let Reverse((key, source)) = self.heap.pop()?;
        let value = std::mem::take(&mut self.values[source]);
        if let Err(e) = self.refill(source) {
            return Some(Err(e));
        }
        Some(Ok((key, value)))
    }
}

impl Drop for SortedPairs {
    fn drop(&mut self) {
        remove_runs(&self.runs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(budget: usize, pairs: &[Pair]) -> (Vec<Pair>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = ExternalSorter::new(dir.path(), "t", budget);
        for (k, v) in pairs {
            sorter.push(k, v).unwrap();
        }
        let runs = sorter.runs();
        let out: Vec<_> = sorter.finish().unwrap().map(Result::unwrap).collect();
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, 0, "run files are removed once merged");
        (out, runs)
    }

    #[test]
    fn sorts_across_runs_and_keeps_repeats() {
        let mut pairs: Vec<Pair> = (0..5000u32)
            .map(|i| {
                let k = (i.wrapping_mul(2_654_435_761) % 1000)
                    .to_be_bytes()
                    .to_vec();
                (k, i.to_le_bytes().to_vec())
            })
            .collect();
        pairs.push((Vec::new(), b"empty key".to_vec()));
        // One merge, then more runs than MAX_FAN_IN: merged in passes.
        for (budget, at_least) in [(4096, 10), (256, 4 * MAX_FAN_IN)] {
            let (out, runs) = sorted(budget, &pairs);
            assert!(runs > at_least, "spilled {runs} runs");
            assert_eq!(out.len(), pairs.len());
            assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
            let mut expected = pairs.clone();
            expected.sort();
            let mut got = out.clone();
            got.sort();
            assert_eq!(got, expected, "every pair comes out once");
        }
    }

    #[test]
    fn in_memory_only_and_empty() {
        let (out, runs) = sorted(
            1 << 20,
            &[
                (b"b".to_vec(), b"2".to_vec()),
                (b"a".to_vec(), b"1".to_vec()),
            ],
        );
        assert_eq!(runs, 0);
        assert_eq!(
            out,
            vec![
                (b"a".to_vec(), b"1".to_vec()),
                (b"b".to_vec(), b"2".to_vec())
            ]
        );
        assert!(sorted(16, &[]).0.is_empty());
    }

    #[test]
    fn dropping_an_unfinished_sorter_removes_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = ExternalSorter::new(dir.path(), "t", 8);
        for i in 0..100u32 {
            sorter.push(&i.to_be_bytes(), b"v").unwrap();
        }
        assert!(sorter.runs() > 1);
        drop(sorter);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
