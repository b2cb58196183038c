//! The chain file's blocks for the import loop: read, decoded and their
//! senders recovered ahead on a thread of their own (`--senders ahead`, the
//! default: the library's [`SendersAhead`]), or read inline with the
//! senders recovered by the executor (`--senders inline`).

use std::path::{Path, PathBuf};

use strata_executor::{AheadError, ChainSpec, RecoveredSenders, SendersAhead};

use super::chain_file::{ChainFile, FileBlock};
use crate::error::CliError;
use crate::error::ImportChainError;

/// When a block's senders are recovered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SendersTiming {
    /// On the reading thread, while the blocks before execute.
    #[default]
    Ahead,
    /// By the executor, before the block's EVM runs.
    Inline,
}

impl SendersTiming {
    /// `ahead` or `inline`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SendersTiming::Ahead => "ahead",
            SendersTiming::Inline => "inline",
        }
    }

    /// Parses a `--senders` value.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "ahead" => Ok(SendersTiming::Ahead),
            "inline" => Ok(SendersTiming::Inline),
            other => Err(format!(
                "unknown senders timing {other:?} (expected ahead or inline)"
            )),
        }
    }
}

/// The next block of the chain file, its senders when recovered ahead, and
/// how far into the file the reading is.
pub(super) struct NextBlock {
    pub(super) block: FileBlock,
    pub(super) senders: Option<RecoveredSenders>,
    pub(super) position: usize,
}

/// The chain file's blocks, read inline or ahead.
pub(super) struct Blocks {
    path: PathBuf,
    length: u64,
    source: Source,
}

enum Source {
    Inline(ChainFile),
    Ahead(SendersAhead<(FileBlock, usize), CliError>),
}

impl Blocks {
    /// Opens `path`; with [`SendersTiming::Ahead`], the senders of the
    /// blocks past `resumed_after` are recovered ahead under `spec`.
    pub(super) fn open(
        path: &Path,
        timing: SendersTiming,
        spec: &ChainSpec,
        resumed_after: u64,
    ) -> Result<Self, CliError> {
        let mut file = ChainFile::open(path)?;
        let length = file.len();
        let source = match timing {
            SendersTiming::Inline => Source::Inline(file),
            SendersTiming::Ahead => {
                let blocks = std::iter::from_fn(move || {
                    let position = |block: FileBlock, file: &ChainFile| (block, file.position());
                    match file.next_block() {
                        Ok(Some(block)) => Some(Ok(position(block, &file))),
                        Ok(None) => None,
                        Err(error) => Some(Err(error)),
                    }
                });
                let ahead =
                    SendersAhead::spawn(blocks, spec.clone(), resumed_after, |(b, _)| &b.block)
                        .map_err(CliError::file(path))?;
                Source::Ahead(ahead)
            }
        };
        Ok(Self {
            path: path.to_owned(),
            length,
            source,
        })
    }

    /// The chain file's length in bytes.
    pub(super) fn len(&self) -> u64 {
        self.length
    }

    /// The next block, `None` at the file's end.
    pub(super) fn next_block(&mut self) -> Result<Option<NextBlock>, CliError> {
        match &mut self.source {
            Source::Inline(file) => Ok(file.next_block()?.map(|block| NextBlock {
                block,
                senders: None,
                position: file.position(),
            })),
            Source::Ahead(ahead) => match ahead.next_block() {
                Ok(next) => Ok(next.map(|((block, position), senders)| NextBlock {
                    block,
                    senders,
                    position,
                })),
                Err(AheadError::Source(error)) => Err(error),
                Err(AheadError::Panicked(message)) => Err(ImportChainError::ReaderPanicked {
                    chain: self.path.clone(),
                    message,
                }
                .into()),
            },
        }
    }
}
