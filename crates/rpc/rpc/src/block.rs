//! Which state a call reads: a block parameter (number, hash or tag)
//! resolved against the datadir's head and its retained window, and the
//! reader for that block.

use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::B256;
use strata_storage::{BLOCK_HASH_WINDOW, ReadOnlyStateDb, Regime, StateReader};

use crate::error::RpcError;

/// The state a call reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The newest published block (`latest`, `pending`): whatever the
    /// head is when the reader opens, never older than at the request.
    Latest,
    /// The state after this block.
    Block(u64),
}

/// The block `id` names, `latest` when absent. `pending` is the head (strata
/// builds no pending block, and answers as a node without one does);
/// `safe` and `finalized` are refused (no consensus client tells strata);
/// `earliest` is block 0.
///
/// First catches up with the writer ([`ReadOnlyStateDb::catch_up`]): the
/// head, and so `latest`, is never older than the newest block published
/// before the request arrived.
pub fn resolve(db: &ReadOnlyStateDb, id: Option<BlockId>) -> Result<Resolved, RpcError> {
    let head = db.catch_up()?.ok_or(RpcError::Empty)?;
    let number = match id.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest)) {
        BlockId::Number(tag) => match tag {
            BlockNumberOrTag::Latest | BlockNumberOrTag::Pending => return Ok(Resolved::Latest),
            BlockNumberOrTag::Earliest => 0,
            BlockNumberOrTag::Safe => return Err(RpcError::UnknownTag("safe")),
            BlockNumberOrTag::Finalized => return Err(RpcError::UnknownTag("finalized")),
            BlockNumberOrTag::Number(number) => number,
        },
        BlockId::Hash(hash) => by_hash(db, hash.block_hash, head)?,
    };
    if number > head {
        return Err(RpcError::AfterHead {
            block: number,
            head,
        });
    }
    Ok(Resolved::Block(number))
}

/// The number of the block with `hash`, among the last
/// [`BLOCK_HASH_WINDOW`] blocks (the unwind window strata keeps states for,
/// `Options::unwind_depth`, fits in it) and, in a datadir that keeps
/// history, every kept block.
fn by_hash(db: &ReadOnlyStateDb, hash: B256, head: u64) -> Result<u64, RpcError> {
    let reader = db.reader(Regime::Exec)?;
    let oldest = head.saturating_sub(BLOCK_HASH_WINDOW - 1);
    for number in (oldest..=head).rev() {
        if reader.block_hash(number)? == Some(hash) {
            return Ok(number);
        }
    }
    if let Some(number) = db.block_number(&hash)?
        && number <= head
    {
        return Ok(number);
    }
    Err(RpcError::UnknownHash {
        hash,
        window: BLOCK_HASH_WINDOW,
        head,
    })
}

/// A reader of the state after `block`.
pub(crate) fn reader_at(db: &ReadOnlyStateDb, block: Resolved) -> Result<StateReader, RpcError> {
    let reader = match block {
        Resolved::Latest => db.reader(Regime::Exec),
        Resolved::Block(number) => db.reader_at(number, Regime::Exec),
    };
    reader.map_err(not_retained)
}

/// A store error, with a block outside the window named as such.
pub(crate) fn not_retained(error: strata_storage::Error) -> RpcError {
    match error {
        strata_storage::Error::StateNotRetained {
            block,
            oldest,
            last,
        } => RpcError::NotRetained {
            block,
            oldest,
            last,
        },
        other => RpcError::Store(other),
    }
}
