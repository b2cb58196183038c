//! A block as the executor takes it: decoded from its RLP, with its hash.

use std::sync::Arc;

use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_eip7928::BlockAccessList;
use alloy_primitives::B256;
use alloy_rlp::Decodable;

use crate::error::InvalidBlock;

/// A block decoded from its RLP, with the hash of its header.
#[derive(Clone, Debug)]
pub struct DecodedBlock {
    /// Header and body (transactions, ommers, withdrawals).
    pub block: Block<TxEnvelope>,
    /// keccak256 of the header's RLP.
    pub hash: B256,
    /// From Amsterdam, the block's access list as it came beside the block
    /// (EIP-7928: the engine API's payload and the fixtures carry it; the
    /// block's RLP does not). Checked against what execution builds, which
    /// must also hash to the header's `blockAccessListHash`.
    pub access_list: Option<Arc<BlockAccessList>>,
}

impl DecodedBlock {
    /// Decodes one whole block from `rlp`: bytes after the block are refused.
    pub fn decode(rlp: &[u8]) -> Result<Self, InvalidBlock> {
        let mut rest = rlp;
        let block = Self::decode_next(&mut rest)?;
        if !rest.is_empty() {
            return Err(InvalidBlock::Rlp(format!(
                "{} bytes after the block's {}",
                rest.len(),
                rlp.len() - rest.len()
            )));
        }
        Ok(block)
    }

    /// Decodes the block at the start of `rest` and advances past it (for a
    /// file of concatenated blocks).
    pub fn decode_next(rest: &mut &[u8]) -> Result<Self, InvalidBlock> {
        let block = Block::<TxEnvelope>::decode(rest)
            .map_err(|error| InvalidBlock::Rlp(error.to_string()))?;
        Ok(Self::from_block(block))
    }

    /// Wraps a block built or decoded elsewhere, hashing its header.
    pub fn from_block(block: Block<TxEnvelope>) -> Self {
        let hash = block.header.hash_slow();
        Self {
            block,
            hash,
            access_list: None,
        }
    }

    /// The block with the access list that came beside it.
    pub fn with_access_list(mut self, list: BlockAccessList) -> Self {
        self.access_list = Some(Arc::new(list));
        self
    }

    /// The block's header.
    pub fn header(&self) -> &Header {
        &self.block.header
    }

    /// The block's number.
    pub fn number(&self) -> u64 {
        self.block.header.number
    }

    /// The header's RLP, what the store keeps beside the block's hash
    /// (`BlockWriter::set_block_header`) for calls at this block.
    pub fn header_rlp(&self) -> bytes::Bytes {
        bytes::Bytes::from(alloy_rlp::encode(&self.block.header))
    }
}
