//! The range methods: `debug_storageRangeAt` (an account's slots in
//! hashed-key order, paged, as geth serves it) and `debug_accountRange`
//! (accounts paged in address order, in the shape of geth's).

use std::collections::BTreeMap;

use alloy_eips::BlockId;
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use jsonrpsee::types::Params;
use serde::Serialize;

use crate::block::{Resolved, reader_at, resolve};
use crate::context::Context;
use crate::error::RpcError;
use crate::params::Positional;

/// Slots read from the store per scan step.
const SCAN_STEP: usize = 4096;

/// One slot of `debug_storageRangeAt`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StorageEntry {
    /// The slot (the hashed key's preimage).
    pub(crate) key: B256,
    /// Its value, 32 bytes.
    pub(crate) value: B256,
}

/// `debug_storageRangeAt`'s result.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StorageRange {
    /// Hashed slot key → slot and value, in hashed-key order.
    pub(crate) storage: BTreeMap<B256, StorageEntry>,
    /// The hashed key to start the next page from; `null` at the end.
    pub(crate) next_key: Option<B256>,
}

/// `debug_storageRangeAt(block, txIndex, address, startKey, maxResult)`:
/// the state before the block's transaction `txIndex`, which strata has
/// at block boundaries only — `txIndex` must be 0, the state after the
/// block's parent. Keys are the slots' keccak256, from `startKey` on.
pub(crate) fn storage_range_at(
    ctx: &Context,
    params: Params<'_>,
) -> Result<StorageRange, RpcError> {
    let mut params = Positional::new(&params)?;
    let block: BlockId = params.next("block hash or number")?;
    let tx_index: u64 = params.next("transaction index")?;
    let address: Address = params.next("address")?;
    let start: B256 = params.next::<U256>("start key").map(B256::from)?;
    let max: usize = params.next("max results")?;
    params.end()?;
    if tx_index != 0 {
        return Err(RpcError::InvalidParams(format!(
            "transaction index {tx_index}: strata keeps states at block boundaries, so only 0 (the state before the block's first transaction) is served"
        )));
    }
    let max = max.min(ctx.limits.max_page);
    let parent = match resolve(&ctx.db, Some(block))? {
        Resolved::Block(0) => {
            return Err(RpcError::InvalidParams(
                "block 0 has no state before it".to_string(),
            ));
        }
        Resolved::Block(number) => number - 1,
        Resolved::Latest => ctx
            .db
            .last_block()?
            .ok_or(RpcError::Empty)?
            .saturating_sub(1),
    };
    let reader = reader_at(&ctx.db, Resolved::Block(parent))?;
    let mut slots: Vec<(B256, B256, U256)> = Vec::new();
    let mut from = B256::ZERO;
    loop {
        let page = reader.storage_range(&address, &from, SCAN_STEP)?;
        let full = page.len() == SCAN_STEP;
        for (slot, value) in page {
            slots.push((keccak256(slot), slot, value));
        }
        if slots.len() > ctx.limits.max_storage_scan {
            return Err(RpcError::InvalidParams(format!(
                "{address} has more than {} slots, the most this server sorts by hashed key (--max-storage-scan)",
                ctx.limits.max_storage_scan
            )));
        }
        match slots.last() {
            Some(&(_, last, _)) if full => match next_word(last) {
                Some(next) => from = next,
                None => break,
            },
            _ => break,
        }
    }
    slots.sort_unstable_by_key(|&(hashed, ..)| hashed);
    let mut rest = slots.into_iter().filter(|&(hashed, ..)| hashed >= start);
    let storage = rest
        .by_ref()
        .take(max)
        .map(|(hashed, key, value)| {
            let entry = StorageEntry {
                key,
                value: B256::from(value),
            };
            (hashed, entry)
        })
        .collect();
    Ok(StorageRange {
        storage,
        next_key: rest.next().map(|(hashed, ..)| hashed),
    })
}

/// The word after `word`, `None` after the largest.
fn next_word(word: B256) -> Option<B256> {
    let value = U256::from_be_bytes(word.0);
    value.checked_add(U256::from(1)).map(B256::from)
}

/// One account of `debug_accountRange`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RangeAccount {
    /// Balance.
    pub(crate) balance: U256,
    /// Nonce.
    pub(crate) nonce: u64,
    /// keccak256 of the code.
    pub(crate) code_hash: B256,
    /// The code, unless `nocode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<Bytes>,
    /// Slot → value (the first `--max-page` slots), unless `nostorage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) storage: Option<BTreeMap<B256, B256>>,
    /// When `storage` is cut at `--max-page` slots: the first slot left
    /// out, in slot order (the order `storage` is read in); absent when
    /// `storage` is whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) storage_next: Option<B256>,
    /// The address.
    pub(crate) address: Address,
    /// keccak256 of the address (its key in the state trie).
    pub(crate) key: B256,
}

/// `debug_accountRange`'s result.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct AccountRange {
    /// The state root of the block.
    pub(crate) root: B256,
    /// Address → account, in address order.
    pub(crate) accounts: BTreeMap<Address, RangeAccount>,
    /// The address to start the next page from; `null` at the end.
    pub(crate) next: Option<Address>,
}

/// `debug_accountRange(block, start, maxResults, nocode, nostorage)`:
/// accounts from address `start` on, in address order (strata's key
/// order; geth pages by hashed address), at most `maxResults`.
pub(crate) fn account_range(ctx: &Context, params: Params<'_>) -> Result<AccountRange, RpcError> {
    let mut params = Positional::new(&params)?;
    let block: BlockId = params.next("block hash or number")?;
    let start: Address = params.optional("start")?.unwrap_or_default();
    let max: usize = params.next("max results")?;
    let no_code: bool = params.optional("nocode")?.unwrap_or(false);
    let no_storage: bool = params.optional("nostorage")?.unwrap_or(false);
    let _incompletes: Option<bool> = params.optional("incompletes")?;
    params.end()?;
    let max = max.min(ctx.limits.max_page);
    let reader = reader_at(&ctx.db, resolve(&ctx.db, Some(block))?)?;
    let mut page = reader.accounts(&start, max + 1)?;
    let next = (page.len() > max)
        .then(|| page.pop().map(|(address, _)| address))
        .flatten();
    let mut accounts = BTreeMap::new();
    for (address, account) in page {
        let code = if no_code {
            None
        } else {
            Some(reader.code(&address)?.map(Bytes::from).unwrap_or_default())
        };
        let (storage, storage_next) = if no_storage {
            (None, None)
        } else {
            let max_slots = ctx.limits.max_page;
            let mut slots =
                reader.storage_range(&address, &B256::ZERO, max_slots.saturating_add(1))?;
            let cut = (slots.len() > max_slots)
                .then(|| slots.pop().map(|(slot, _)| slot))
                .flatten();
            let slots = slots
                .into_iter()
                .map(|(slot, value)| (slot, B256::from(value)))
                .collect();
            (Some(slots), cut)
        };
        let entry = RangeAccount {
            balance: account.balance,
            nonce: account.nonce,
            code_hash: account.code_hash,
            code,
            storage,
            storage_next,
            address,
            key: keccak256(address),
        };
        accounts.insert(address, entry);
    }
    Ok(AccountRange {
        root: reader.root(),
        accounts,
        next,
    })
}
