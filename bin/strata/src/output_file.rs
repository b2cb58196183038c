//! Every file a command writes — traces, reports, plots, dumps, manual
//! pages — goes through [`OutputFile`], so that one rule holds for all of
//! them and is tested once:
//! - nothing, or a regular file: written to a locked temporary file beside
//!   it (see [`crate::scratch`]), fsynced and renamed over it only once
//!   whole ([`OutputFile::finish`]); a command that fails or is killed
//!   leaves the target as it was;
//! - a symlink (a chain of them): the same at the path the links lead to,
//!   so the link stays a link;
//! - a device, FIFO or socket: opened and written as a stream, never
//!   replaced;
//! - refused before anything is written or opened, with the flag and the
//!   path: a folder, a path inside a datadir the command uses (its
//!   database, journal or files), a file that is an input of the same
//!   command (also through another name or a hard link), or a file another
//!   output flag of the same command already names.
//!
//! Commands check their outputs first ([`OutputFile::create`] in their
//! first lines), so a refusal changes nothing.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Component, Path, PathBuf};

use crate::CliError;
use crate::scratch::{OUTPUT_PREFIX, locked_file, remove_stale};

/// Most symlinks followed from an output path (Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Buffer of an output's writer.
const BUFFER_BYTES: usize = 1 << 20;

/// Why an output path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputRefusal {
    /// The path is a folder.
    #[error("is a folder; give a file name")]
    Folder,
    /// The path is inside a datadir the command uses.
    #[error(
        "is inside the datadir {datadir}, whose files only the store writes; name a file outside it"
    )]
    InsideDatadir {
        /// The datadir.
        datadir: PathBuf,
    },
    /// The path is inside a folder the command reads.
    #[error("is inside {folder}, which this command reads ({flag}); name a file outside it")]
    InsideInput {
        /// The flag or argument that names the folder.
        flag: String,
        /// The folder as given.
        folder: PathBuf,
    },
    /// The path is (or leads to) a file the command reads.
    #[error("is the file {input} this command reads ({flag}); name another file")]
    Input {
        /// The flag or argument that names the input.
        flag: String,
        /// The input as given.
        input: PathBuf,
    },
    /// Another output of the same command names the same file.
    #[error("is also {other}'s file; give each output its own")]
    TwoOutputs {
        /// The other output's flag.
        other: String,
    },
}

/// What a command must not write over: its inputs, its datadirs and its
/// other outputs. Built before anything is read or written.
#[derive(Debug, Default)]
pub(crate) struct Protected {
    /// Inputs that exist: (flag, path as given, identity).
    inputs: Vec<(String, PathBuf, FileId)>,
    /// Datadirs, absolute with symlinks resolved as far as they exist.
    datadirs: Vec<(PathBuf, PathBuf)>,
    /// Folders the command reads: (flag, as given, resolved).
    input_folders: Vec<(String, PathBuf, PathBuf)>,
    /// Outputs taken so far: (flag, resolved target).
    outputs: Vec<(String, PathBuf)>,
}

impl Protected {
    /// Nothing protected yet.
    pub(crate) fn new() -> Protected {
        Protected::default()
    }

    /// Protects the file `path` that `flag` names as an input (a missing
    /// file has nothing to protect; its own reading reports it).
    pub(crate) fn input(mut self, flag: &str, path: &Path) -> Protected {
        if let Ok(id) = FileId::of(path) {
            self.inputs.push((flag.to_owned(), path.to_owned(), id));
        }
        self
    }

    /// Protects `path` when given.
    pub(crate) fn input_opt(self, flag: &str, path: Option<&Path>) -> Protected {
        match path {
            Some(path) => self.input(flag, path),
            None => self,
        }
    }

    /// Protects `path`, an input that `flag` names: a file (as
    /// [`Protected::input`]) or a folder, every path under which is
    /// protected.
    pub(crate) fn input_path(mut self, flag: &str, path: &Path) -> Protected {
        if path.is_dir() {
            self.input_folders
                .push((flag.to_owned(), path.to_owned(), resolve(path)));
            self
        } else {
            self.input(flag, path)
        }
    }

    /// Protects every path in and under the datadir `path` (which may not
    /// exist yet).
    pub(crate) fn datadir(mut self, path: &Path) -> Protected {
        let resolved = resolve(path);
        self.datadirs.push((path.to_owned(), resolved));
        self
    }

    /// Why `target` (symlinks resolved) may not be written, if it may not.
    fn refusal(&self, target: &Path) -> Option<OutputRefusal> {
        let resolved = resolve(target);
        if let Some((shown, _)) = self
            .datadirs
            .iter()
            .find(|(_, datadir)| resolved.starts_with(datadir))
        {
            return Some(OutputRefusal::InsideDatadir {
                datadir: shown.clone(),
            });
        }
        if let Some((flag, folder, _)) = self
            .input_folders
            .iter()
            .find(|(_, _, folder)| resolved.starts_with(folder))
        {
            return Some(OutputRefusal::InsideInput {
                flag: flag.clone(),
                folder: folder.clone(),
            });
        }
        if let Some((flag, _)) = self.outputs.iter().find(|(_, other)| *other == resolved) {
            return Some(OutputRefusal::TwoOutputs {
                other: flag.clone(),
            });
        }
        let id = FileId::of(target).ok()?;
        self.inputs
            .iter()
            .find(|(_, _, input)| *input == id)
            .map(|(flag, input, _)| OutputRefusal::Input {
                flag: flag.clone(),
                input: input.clone(),
            })
    }
}

/// One output being written; [`OutputFile::finish`] makes it appear.
#[derive(Debug)]
pub(crate) struct OutputFile {
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    sink: Sink,
}

/// Where the bytes go.
#[derive(Debug)]
enum Sink {
    /// A temporary beside `target`, renamed over it when finished.
    Replace {
        writer: BufWriter<tempfile::NamedTempFile>,
        target: PathBuf,
    },
    /// A device, FIFO or socket, written in place.
    Stream(BufWriter<File>),
}

impl OutputFile {
    /// Checks `out` (given with `flag`) against the rule of the module
    /// docs and `protected`, records it as taken, and opens its temporary
    /// (or the stream). Nothing at `out` changes until [`Self::finish`].
    pub(crate) fn create(
        flag: &str,
        out: &Path,
        protected: &mut Protected,
    ) -> Result<OutputFile, CliError> {
        let refused = |reason| CliError::OutputRefused {
            flag: flag.to_owned(),
            path: out.to_owned(),
            reason,
        };
        let target = follow_links(out).map_err(CliError::file(out))?;
        let meta = match std::fs::metadata(&target) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(CliError::file(&target)(e)),
        };
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(refused(OutputRefusal::Folder));
        }
        if let Some(reason) = protected.refusal(&target) {
            return Err(refused(reason));
        }
        protected.outputs.push((flag.to_owned(), resolve(&target)));
        let sink = match meta {
            Some(meta) if !meta.is_file() => Sink::Stream(BufWriter::with_capacity(
                BUFFER_BYTES,
                open_stream(&target)?,
            )),
            _ => {
                let folder = folder_of(&target);
                remove_stale(folder, OUTPUT_PREFIX);
                let temp =
                    locked_file(folder, OUTPUT_PREFIX, 0o666).map_err(CliError::file(folder))?;
                Sink::Replace {
                    writer: BufWriter::with_capacity(BUFFER_BYTES, temp),
                    target,
                }
            }
        };
        Ok(OutputFile {
            shown: out.to_owned(),
            sink,
        })
    }

    /// The path as given, for messages.
    pub(crate) fn path(&self) -> &Path {
        &self.shown
    }

    /// Writes `value` as one pretty-printed JSON document and a newline
    /// (the commands' `--json` reports), and finishes.
    pub(crate) fn write_json<T: serde::Serialize>(self, value: &T) -> Result<(), CliError> {
        let mut text = serde_json::to_string_pretty(value)
            .map_err(|e| CliError::file(self.path())(e.into()))?;
        text.push('\n');
        self.write_whole(text.as_bytes())
    }

    /// Writes `bytes` and finishes.
    pub(crate) fn write_whole(mut self, bytes: &[u8]) -> Result<(), CliError> {
        self.write_all(bytes).map_err(CliError::file(&self.shown))?;
        self.finish()
    }

    /// Makes the output appear: a temporary is flushed, fsynced and renamed
    /// over the target (then its folder fsynced); a stream is flushed.
    pub(crate) fn finish(self) -> Result<(), CliError> {
        let shown = self.shown;
        match self.sink {
            Sink::Stream(mut writer) => writer.flush().map_err(CliError::file(&shown)),
            Sink::Replace { writer, target } => {
                let temp = writer
                    .into_inner()
                    .map_err(|e| CliError::file(&shown)(e.into_error()))?;
                temp.as_file().sync_all().map_err(CliError::file(&shown))?;
                temp.persist(&target)
                    .map_err(|e| CliError::file(&shown)(e.error))?;
                if let Ok(folder) = File::open(folder_of(&target)) {
                    // The rename is durable once the folder is; a folder
                    // that cannot be fsynced still holds the whole file.
                    let _ = folder.sync_all();
                }
                Ok(())
            }
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Replace { writer, .. } => writer.write(buf),
            Sink::Stream(writer) => writer.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Replace { writer, .. } => writer.write_all(buf),
            Sink::Stream(writer) => writer.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Replace { writer, .. } => writer.flush(),
            Sink::Stream(writer) => writer.flush(),
        }
    }
}

/// A file's identity: device and inode on unix, its canonical path
/// elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId(#[cfg(unix)] (u64, u64), #[cfg(not(unix))] PathBuf);

impl FileId {
    /// The identity of the file `path` leads to.
    fn of(path: &Path) -> io::Result<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = std::fs::metadata(path)?;
            Ok(FileId((meta.dev(), meta.ino())))
        }
        #[cfg(not(unix))]
        {
            Ok(FileId(std::fs::canonicalize(path)?))
        }
    }
}

/// `path` made absolute, with `.`/`..` and the symlinks of its longest
/// existing ancestor resolved (the rest, which does not exist yet, joined
/// as written): two names of one place compare equal.
fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut existing = absolute.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return normalize(&absolute),
        }
    }
}

/// `path` with `.` dropped and `..` applied lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path the symlinks starting at `path` lead to (`path` itself when it
/// is no symlink); the last one may be missing.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_owned();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&path)?;
                // A relative link is relative to the folder holding it.
                path = match path.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow"
    )))
}

/// The folder a file at `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
}

/// Opens the device, FIFO or socket at `path` for writing (a FIFO's open
/// waits for its reader, as a shell's `>` does).
fn open_stream(path: &Path) -> Result<File, CliError> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(CliError::file(path))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn refusal(out: &Path, protected: &mut Protected) -> OutputRefusal {
        match OutputFile::create("--out", out, protected) {
            Err(CliError::OutputRefused { reason, .. }) => reason,
            other => panic!("{out:?} not refused: {other:?}"),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_appears_whole_only_when_finished_and_a_dropped_one_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("report.json");
        std::fs::write(&out, b"old").unwrap();
        let mut file = OutputFile::create("--json", &out, &mut Protected::new()).unwrap();
        file.write_all(b"new report").unwrap();
        file.flush().unwrap();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            b"old",
            "written before finish"
        );
        file.finish().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new report");

        let mut dropped = OutputFile::create("--json", &out, &mut Protected::new()).unwrap();
        dropped.write_all(b"half").unwrap();
        drop(dropped);
        assert_eq!(std::fs::read(&out).unwrap(), b"new report");
        assert_eq!(names(dir.path()), ["report.json"], "a temporary was left");
    }

    #[test]
    fn datadir_files_inputs_folders_and_a_second_output_are_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let datadir = dir.path().join("dd");
        std::fs::create_dir_all(datadir.join("journal")).unwrap();
        std::fs::write(datadir.join("state.redb"), b"db").unwrap();
        let chain = dir.path().join("chain.rlp");
        std::fs::write(&chain, b"chain").unwrap();
        let hard = dir.path().join("hard.rlp");
        std::fs::hard_link(&chain, &hard).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("dd/state.redb", &link).unwrap();
        let mut protected = Protected::new().input("FILE.rlp", &chain).datadir(&datadir);

        for inside in [
            datadir.join("state.redb"),
            datadir.join("journal/new.log"),
            dir.path().join("dd/../dd/./state.redb"),
            link.clone(),
        ] {
            assert_eq!(
                refusal(&inside, &mut protected),
                OutputRefusal::InsideDatadir {
                    datadir: datadir.clone()
                },
                "{inside:?}"
            );
        }
        for input in [chain.clone(), hard.clone()] {
            assert!(matches!(
                refusal(&input, &mut protected),
                OutputRefusal::Input { .. }
            ));
        }
        assert_eq!(refusal(dir.path(), &mut protected), OutputRefusal::Folder);

        let first =
            OutputFile::create("--trace-out", &dir.path().join("t.jsonl"), &mut protected).unwrap();
        assert_eq!(
            refusal(&dir.path().join("./t.jsonl"), &mut protected),
            OutputRefusal::TwoOutputs {
                other: "--trace-out".into()
            }
        );
        drop(first);

        // A folder the command reads: nothing under it.
        let mut reads = Protected::new().input_path("PATH", dir.path());
        assert!(matches!(
            refusal(&dir.path().join("report.json"), &mut reads),
            OutputRefusal::InsideInput { .. }
        ));

        // A datadir not made yet is protected too.
        let new = Protected::new().datadir(&dir.path().join("new"));
        assert!(matches!(
            new.refusal(&dir.path().join("new/state.redb")),
            Some(OutputRefusal::InsideDatadir { .. })
        ));
        assert_eq!(std::fs::read(datadir.join("state.redb")).unwrap(), b"db");
        assert_eq!(std::fs::read(&chain).unwrap(), b"chain");
    }

    #[test]
    fn links_are_written_through_and_devices_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        OutputFile::create("--json", &link, &mut Protected::new())
            .unwrap()
            .write_whole(b"through")
            .unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read(dir.path().join("real.json")).unwrap(),
            b"through"
        );
        OutputFile::create("--json", Path::new("/dev/null"), &mut Protected::new())
            .unwrap()
            .write_whole(b"gone")
            .unwrap();
        let looped = dir.path().join("loop");
        std::os::unix::fs::symlink("loop", &looped).unwrap();
        assert!(OutputFile::create("--json", &looped, &mut Protected::new()).is_err());
    }
}
