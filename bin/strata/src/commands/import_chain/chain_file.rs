//! A chain file: blocks as RLP, one after the other (what `geth export`
//! and `reth import` use), read one block at a time so that a chain of any
//! length is imported in bounded memory.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use strata_executor::DecodedBlock;

use crate::CliError;

/// The largest block accepted (a mainnet block is well under 10 MiB; this
/// bounds what a corrupt length can make us allocate).
const MAX_BLOCK_BYTES: usize = 256 << 20;

/// Reads the blocks of a chain file in order.
#[derive(Debug)]
pub(super) struct ChainFile {
    path: PathBuf,
    input: BufReader<File>,
    offset: usize,
    length: u64,
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
        let file = File::open(path).map_err(CliError::file(path))?;
        let length = file.metadata().map_err(CliError::file(path))?.len();
        Ok(Self {
            path: path.to_owned(),
            input: BufReader::with_capacity(1 << 20, file),
            offset: 0,
            length,
        })
    }

    /// The file's size in bytes.
    pub(super) fn len(&self) -> u64 {
        self.length
    }

    /// Bytes read so far.
    pub(super) fn position(&self) -> usize {
        self.offset
    }

    /// The next block, `None` at the end of the file.
    pub(super) fn next_block(&mut self) -> Result<Option<FileBlock>, CliError> {
        let offset = self.offset;
        let bad = |reason: String| CliError::ChainRlp {
            path: self.path.clone(),
            offset,
            reason,
        };
        let mut prefix = [0u8; 1];
        if self
            .input
            .read(&mut prefix)
            .map_err(CliError::file(&self.path))?
            == 0
        {
            return Ok(None);
        }
        let length_bytes = match prefix[0] {
            0xc0..=0xf7 => 0,
            long @ 0xf8..=0xff => usize::from(long - 0xf7),
            _ => return Err(bad("a block is an RLP list, found a string".to_string())),
        };
        let mut head = vec![prefix[0]; 1 + length_bytes];
        self.input
            .read_exact(&mut head[1..])
            .map_err(|_| bad("the file ends inside the block's RLP header".to_string()))?;
        // The payload's length: in the prefix byte, or in the big-endian
        // bytes after it (at most eight). The block's decoder checks the
        // rest of the encoding.
        let payload_length = if length_bytes == 0 {
            usize::from(prefix[0] - 0xc0)
        } else {
            let length = head[1..]
                .iter()
                .fold(0u128, |length, &byte| (length << 8) | u128::from(byte));
            usize::try_from(length).unwrap_or(usize::MAX)
        };
        let total = head
            .len()
            .checked_add(payload_length)
            .filter(|&total| total <= MAX_BLOCK_BYTES)
            .ok_or_else(|| {
                bad(format!(
                    "a block of {} bytes is more than the limit of {MAX_BLOCK_BYTES}",
                    payload_length
                ))
            })?;
        if (offset + total) as u64 > self.length {
            return Err(bad(format!(
                "the block is {total} bytes long, but the file ends {} bytes after its start",
                self.length - offset as u64
            )));
        }
        let mut bytes = head;
        bytes.resize(total, 0);
        let header_len = 1 + length_bytes;
        self.input
            .read_exact(&mut bytes[header_len..])
            .map_err(CliError::file(&self.path))?;
        self.offset += total;
        let block = DecodedBlock::decode(&bytes).map_err(|e| bad(e.to_string()))?;
        Ok(Some(FileBlock { block, offset }))
    }
}
