//! A chain file: blocks as RLP, one after the other (what `geth export`
//! and `reth import` use), read one block at a time so that a chain of any
//! length is imported in bounded memory.

use std::path::Path;

use strata_executor::DecodedBlock;

use super::rlp_items::{ItemError, RlpItems};
use crate::CliError;

/// Reads the blocks of a chain file in order.
#[derive(Debug)]
pub(super) struct ChainFile {
    items: RlpItems,
}

/// A block of the file and where it starts.
#[derive(Debug)]
pub(super) struct FileBlock {
    /// The decoded block.
    pub(super) block: DecodedBlock,
    /// Byte offset of its first byte in the file.
    pub(super) offset: usize,
}

impl ChainFile {
    /// Opens `path`.
    pub(super) fn open(path: &Path) -> Result<Self, CliError> {
        Ok(Self {
            items: RlpItems::open(path, "block")?,
        })
    }

    /// The file's size in bytes.
    pub(super) fn len(&self) -> u64 {
        self.items.len()
    }

    /// Bytes read so far.
    pub(super) fn position(&self) -> usize {
        self.items.position()
    }

    /// The next block, `None` at the end of the file.
    pub(super) fn next_block(&mut self) -> Result<Option<FileBlock>, CliError> {
        let offset = self.items.position();
        let path = self.items.path().to_owned();
        let bad = |reason: String| CliError::ChainRlp {
            path: path.clone(),
            offset,
            reason,
        };
        let bytes = match self.items.next_item() {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(ItemError::Malformed(reason)) => return Err(bad(reason)),
            Err(ItemError::Io(error)) => return Err(error),
        };
        let block = DecodedBlock::decode(&bytes).map_err(|e| bad(e.to_string()))?;
        Ok(Some(FileBlock { block, offset }))
    }
}
