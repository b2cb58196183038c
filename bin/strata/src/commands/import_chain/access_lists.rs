//! `--access-lists FILE`: the access lists (EIP-7928) of a chain file's
//! Amsterdam blocks, each the RLP its header's `blockAccessListHash`
//! hashes, one after another in block order (gen-chain's
//! `access-lists.rlp`; the engine API carries the same list beside each
//! block). Each list is checked against its block's header as it is read,
//! then travels with the block: the executor checks it against the list
//! the block's execution builds and, unless `--access-list ignore`, warms
//! the store from it.

use std::path::Path;

use alloy_consensus::Header;
use alloy_eip7928::{BlockAccessList, compute_block_access_list_hash};
use alloy_rlp::Decodable;

use super::rlp_items::{ItemError, RlpItems};
use crate::CliError;
use crate::error::ImportChainError;

/// Reads an access-lists file beside a chain file.
#[derive(Debug)]
pub(super) struct AccessListFile {
    items: RlpItems,
}

impl AccessListFile {
    /// Opens `path`.
    pub(super) fn open(path: &Path) -> Result<Self, CliError> {
        Ok(Self {
            items: RlpItems::open(path, "access list")?,
        })
    }

    /// The list of the block with `header` (block `number`), the next in
    /// the file, its hash checked against the header's; `None` for a block
    /// before Amsterdam (its header carries no hash, the file no list).
    pub(super) fn next_for(
        &mut self,
        header: &Header,
    ) -> Result<Option<BlockAccessList>, CliError> {
        let Some(expected) = header.block_access_list_hash else {
            return Ok(None);
        };
        let offset = self.items.position();
        let file = self.items.path().to_owned();
        let bad = |reason: String| {
            CliError::from(ImportChainError::AccessList {
                file: file.clone(),
                offset,
                block: header.number,
                reason,
            })
        };
        let bytes = match self.items.next_item() {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(bad("the file ends before the block's list".to_string())),
            Err(ItemError::Malformed(reason)) => return Err(bad(reason)),
            Err(ItemError::Io(error)) => return Err(error),
        };
        let list = BlockAccessList::decode(&mut bytes.as_slice())
            .map_err(|error| bad(format!("the list does not decode: {error}")))?;
        let hash = compute_block_access_list_hash(&list);
        if hash != expected {
            return Err(bad(format!(
                "the list hashes to {hash}, the block's header says {expected}: not this block's list"
            )));
        }
        Ok(Some(list))
    }

    /// Whether the file holds more after the lists read so far (lists for
    /// blocks the chain file does not have): a warning, not an error, since
    /// every list used was checked against its block.
    pub(super) fn warn_if_more(&mut self) {
        let offset = self.items.position();
        if offset as u64 != self.items.len() {
            tracing::warn!(
                file = %self.items.path().display(),
                offset,
                "the access-lists file holds more after the chain's last block's list"
            );
        }
    }
}
