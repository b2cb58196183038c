//! A file of RLP lists one after the other (a chain file's blocks, an
//! access-lists file's lists), read one item at a time in bounded memory:
//! each item's length is checked against a limit and the file's end before
//! it is read.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::CliError;

/// The largest item accepted (a mainnet block is well under 10 MiB; this
/// bounds what a corrupt length can make us allocate).
pub(super) const MAX_ITEM_BYTES: usize = 256 << 20;

/// Reads the top-level RLP lists of a file in order.
#[derive(Debug)]
pub(super) struct RlpItems {
    path: PathBuf,
    input: BufReader<File>,
    offset: usize,
    length: u64,
    /// What an item is, for errors ("block", "access list").
    what: &'static str,
}

/// Why an item could not be read: the message names the item; the caller
/// adds the file and offset.
pub(super) enum ItemError {
    /// The bytes are not a whole RLP list.
    Malformed(String),
    /// The file could not be read.
    Io(CliError),
}

impl RlpItems {
    /// Opens `path`, whose items are `what`s.
    pub(super) fn open(path: &Path, what: &'static str) -> Result<Self, CliError> {
        let file = File::open(path).map_err(CliError::file(path))?;
        let length = file.metadata().map_err(CliError::file(path))?.len();
        Ok(Self {
            path: path.to_owned(),
            input: BufReader::with_capacity(1 << 20, file),
            offset: 0,
            length,
            what,
        })
    }

    /// The file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size in bytes.
    pub(super) fn len(&self) -> u64 {
        self.length
    }

    /// Bytes read so far: the offset of the next item.
    pub(super) fn position(&self) -> usize {
        self.offset
    }

    /// The next item's bytes (its RLP header included), `None` at the end
    /// of the file.
    pub(super) fn next_item(&mut self) -> Result<Option<Vec<u8>>, ItemError> {
        let what = self.what;
        let offset = self.offset;
        let mut prefix = [0u8; 1];
        if self
            .input
            .read(&mut prefix)
            .map_err(|e| ItemError::Io(CliError::file(&self.path)(e)))?
            == 0
        {
            return Ok(None);
        }
        let length_bytes = match prefix[0] {
            0xc0..=0xf7 => 0,
            long @ 0xf8..=0xff => usize::from(long - 0xf7),
            _ => {
                return Err(ItemError::Malformed(format!(
                    "a {what} is an RLP list, found a string"
                )));
            }
        };
        let mut head = vec![prefix[0]; 1 + length_bytes];
        self.input.read_exact(&mut head[1..]).map_err(|_| {
            ItemError::Malformed(format!("the file ends inside the {what}'s RLP header"))
        })?;
        // The payload's length: in the prefix byte, or in the big-endian
        // bytes after it (at most eight). The item's decoder checks the
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
            .filter(|&total| total <= MAX_ITEM_BYTES)
            .ok_or_else(|| {
                ItemError::Malformed(format!(
                    "a {what} of {payload_length} bytes is more than the limit of {MAX_ITEM_BYTES}"
                ))
            })?;
        if (offset + total) as u64 > self.length {
            return Err(ItemError::Malformed(format!(
                "the {what} is {total} bytes long, but the file ends {} bytes after its start",
                self.length - offset as u64
            )));
        }
        let mut bytes = head;
        bytes.resize(total, 0);
        let header_len = 1 + length_bytes;
        self.input
            .read_exact(&mut bytes[header_len..])
            .map_err(|e| ItemError::Io(CliError::file(&self.path)(e)))?;
        self.offset += total;
        Ok(Some(bytes))
    }
}
