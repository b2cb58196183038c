//! Body checks: the header's transactions root, ommers hash and withdrawals
//! root against the body, and the rules an ommer must follow.

use alloy_consensus::proofs::{
    calculate_ommers_root, calculate_transaction_root, calculate_withdrawals_root,
};
use alloy_consensus::{Block, Header, TxEip4844Variant, TxEnvelope};
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::B256;

use super::header::{check_against_parent, check_header};
use crate::ChainSpec;
use crate::error::InvalidBlock;

/// How many ommers a block may include.
const MAX_OMMERS: usize = 2;
/// How many generations back an ommer's parent may lie.
const OMMER_GENERATIONS: usize = 7;

/// A block before the one being checked, as the ommer rules need it.
#[derive(Clone, Copy, Debug)]
pub struct Ancestor<'a> {
    /// Its hash.
    pub hash: B256,
    /// Its header.
    pub header: &'a Header,
    /// The ommers it included.
    pub ommers: &'a [Header],
}

/// Checks the body's roots against the header.
pub fn check_body_roots(block: &Block<TxEnvelope>) -> Result<(), InvalidBlock> {
    let header = &block.header;
    // A blob transaction travels with its blobs only over the network; in
    // a block it is the bare transaction.
    if let Some(index) = block.body.transactions.iter().position(|tx| {
        matches!(tx, TxEnvelope::Eip4844(signed)
            if matches!(signed.tx(), TxEip4844Variant::TxEip4844WithSidecar(_)))
    }) {
        return Err(InvalidBlock::Rlp(format!(
            "transaction {index} is a blob transaction with its blobs (the network form)"
        )));
    }
    let transactions = calculate_transaction_root(&block.body.transactions);
    if transactions != header.transactions_root {
        return Err(InvalidBlock::BodyRoot {
            what: "transactions root",
            header: header.transactions_root,
            computed: transactions,
        });
    }
    let ommers = calculate_ommers_root(&block.body.ommers);
    if ommers != header.ommers_hash {
        return Err(InvalidBlock::BodyRoot {
            what: "ommers hash",
            header: header.ommers_hash,
            computed: ommers,
        });
    }
    match (&block.body.withdrawals, header.withdrawals_root) {
        (Some(withdrawals), Some(root)) => {
            let computed = calculate_withdrawals_root(withdrawals);
            if computed != root {
                return Err(InvalidBlock::BodyRoot {
                    what: "withdrawals root",
                    header: root,
                    computed,
                });
            }
        }
        (None, None) => {}
        (Some(_), None) => {
            return Err(InvalidBlock::HeaderField {
                field: "withdrawalsRoot",
                problem: "is missing (the body has withdrawals)",
            });
        }
        (None, Some(_)) => {
            return Err(InvalidBlock::HeaderField {
                field: "withdrawals",
                problem: "is missing from the body",
            });
        }
    }
    Ok(())
}

/// Checks the block's ommers: none after the merge; before it at most two,
/// distinct, each a valid header whose parent is one of the last seven
/// ancestors (not the block's own parent), and none already in the chain
/// or included by an ancestor. `ancestors` starts with the parent.
pub fn check_ommers(
    spec: &ChainSpec,
    block: &Block<TxEnvelope>,
    ancestors: &[Ancestor<'_>],
) -> Result<(), InvalidBlock> {
    let ommers = &block.body.ommers;
    if ommers.is_empty() {
        return Ok(());
    }
    if spec.is_paris_active_at_block(block.header.number) {
        return Err(InvalidBlock::OmmersAfterMerge(ommers.len()));
    }
    if ommers.len() > MAX_OMMERS {
        return Err(InvalidBlock::Ommer {
            index: MAX_OMMERS,
            reason: format!("{} ommers (at most {MAX_OMMERS})", ommers.len()),
        });
    }
    let window = &ancestors[..ancestors.len().min(OMMER_GENERATIONS)];
    let mut seen = Vec::with_capacity(ommers.len());
    for (index, ommer) in ommers.iter().enumerate() {
        let fail = |reason: String| InvalidBlock::Ommer { index, reason };
        let hash = ommer.hash_slow();
        if seen.contains(&hash) {
            return Err(fail("included twice".into()));
        }
        seen.push(hash);
        if window.iter().any(|ancestor| ancestor.hash == hash) {
            return Err(fail("is an ancestor of the block".into()));
        }
        if window
            .iter()
            .any(|ancestor| ancestor.ommers.iter().any(|o| o.hash_slow() == hash))
        {
            return Err(fail("already included by an ancestor".into()));
        }
        let Some(parent) = window
            .iter()
            .skip(1)
            .find(|ancestor| ancestor.hash == ommer.parent_hash)
        else {
            return Err(fail(format!(
                "its parent {} is not one of the block's ancestors 2..={OMMER_GENERATIONS} generations back",
                ommer.parent_hash
            )));
        };
        check_header(spec, ommer)
            .and_then(|()| check_against_parent(spec, ommer, parent.header))
            .map_err(|reason| fail(format!("invalid header: {reason}")))?;
    }
    Ok(())
}
