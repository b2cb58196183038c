//! Opening a trace for a replay: the first line is parsed before the store
//! is touched (a trace broken on line 1 creates nothing), and the starting
//! state is resolved from the genesis line or the `--genesis` file.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use alloy_primitives::B256;
use strata_storage::genesis::{GenesisAlloc, parse_alloc_json};
use strata_trace::{TraceBlock, TraceLine, TraceReader};

use crate::{CliError, FlagError, InputProblem};

/// Where a trace starts.
pub(crate) struct Start {
    /// The initial state, if the trace or `--genesis` gives one.
    pub(crate) genesis: Option<GenesisAlloc>,
    /// The root the trace states for it.
    pub(crate) genesis_root: Option<B256>,
    /// A state dump given as `--genesis` (first line `{"root": …}`): imported
    /// as block 0 by streaming, not parsed here.
    pub(crate) state_dump: Option<PathBuf>,
}

/// A trace being read: its start and the stream of blocks.
pub(crate) struct TraceSource {
    path: PathBuf,
    reader: TraceReader<BufReader<File>>,
    /// The first block, already read (the first line when there is no genesis line).
    pending: Option<TraceBlock>,
}

impl TraceSource {
    /// Open `path`, read its first line and resolve the start state.
    pub(crate) fn open(
        path: &Path,
        genesis_file: Option<&Path>,
    ) -> Result<(Self, Start), CliError> {
        let file = File::open(path).map_err(CliError::file(path))?;
        let mut source = TraceSource {
            path: path.to_owned(),
            reader: TraceReader::new(BufReader::with_capacity(1 << 20, file)),
            pending: None,
        };
        let mut start = Start {
            genesis: None,
            genesis_root: None,
            state_dump: None,
        };
        match source.next_line()? {
            Some(TraceLine::Genesis { alloc, state_root }) => {
                if let Some(file) = genesis_file {
                    return Err(FlagError::GenesisNotNeeded {
                        trace: path.to_owned(),
                        genesis: file.to_owned(),
                    }
                    .into());
                }
                start.genesis = Some(alloc);
                start.genesis_root = state_root;
            }
            Some(TraceLine::Block(block)) => source.pending = Some(block),
            None => {}
        }
        if let Some(file) = genesis_file
            && is_state_dump(file)?
        {
            start.state_dump = Some(file.to_owned());
        } else if let Some(file) = genesis_file {
            let text = std::fs::read_to_string(file).map_err(CliError::file(file))?;
            let alloc = parse_alloc_json(&text).map_err(|source| CliError::Genesis {
                path: file.to_owned(),
                source: Box::new(source),
            })?;
            start.genesis = Some(alloc);
        }
        Ok((source, start))
    }

    fn next_line(&mut self) -> Result<Option<TraceLine>, CliError> {
        self.reader
            .next()
            .transpose()
            .map_err(|source| CliError::Trace {
                path: self.path.clone(),
                source: Box::new(source),
            })
    }

    /// The next block, or `None` at the end of the trace.
    pub(crate) fn next_block(&mut self) -> Result<Option<TraceBlock>, CliError> {
        if let Some(block) = self.pending.take() {
            return Ok(Some(block));
        }
        match self.next_line()? {
            Some(TraceLine::Block(block)) => Ok(Some(block)),
            // The reader refuses a genesis line after the first.
            Some(TraceLine::Genesis { .. }) => unreachable_genesis(&self.path),
            None => Ok(None),
        }
    }

    /// Peek at the first block without consuming it.
    pub(crate) fn peek_block(&mut self) -> Result<Option<&TraceBlock>, CliError> {
        if self.pending.is_none() {
            self.pending = self.next_block()?;
        }
        Ok(self.pending.as_ref())
    }

    /// The trace file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether `path` starts like a state dump: a first line (within its first
/// 4 KiB) that is a JSON object with `root` and without `alloc`. A genesis
/// JSON has `alloc` or addresses as keys, and a long or multi-line first object.
fn is_state_dump(path: &Path) -> Result<bool, CliError> {
    let mut head = Vec::with_capacity(4096);
    File::open(path)
        .and_then(|file| file.take(4096).read_to_end(&mut head))
        .map_err(CliError::file(path))?;
    let Some(end) = head.iter().position(|b| *b == b'\n') else {
        return Ok(false);
    };
    let first: Result<serde_json::Map<String, serde_json::Value>, _> =
        serde_json::from_slice(&head[..end]);
    Ok(first.is_ok_and(|object| object.contains_key("root") && !object.contains_key("alloc")))
}

fn unreachable_genesis(path: &Path) -> Result<Option<TraceBlock>, CliError> {
    Err(CliError::Input {
        path: path.to_owned(),
        problem: InputProblem::GenesisLineNotFirst,
    })
}
