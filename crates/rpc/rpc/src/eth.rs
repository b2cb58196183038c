//! The `eth_` state methods: chain id, head, balance, nonce, code, slot
//! and Merkle proof at any block of the retained window.

use alloy_eips::BlockId;
use alloy_primitives::{Address, B256, Bytes, KECCAK256_EMPTY, U64, U256};
use alloy_rpc_types_eth::{EIP1186AccountProofResponse, EIP1186StorageProof};
use jsonrpsee::types::Params;
use strata_storage::{AccountProof, ReadOnlyStateDb};

use crate::block::{Resolved, not_retained, reader_at, resolve};
use crate::context::Context;
use crate::error::RpcError;
use crate::params::Positional;

/// Slots one `eth_getProof` call may ask for.
pub(crate) const MAX_PROOF_SLOTS: usize = 1024;

/// `eth_chainId`: `--chain-id`, else the `--genesis` file's, else the
/// datadir's recorded configuration's, else 1.
pub(crate) fn chain_id(ctx: &Context, _: Params<'_>) -> Result<U64, RpcError> {
    Ok(U64::from(ctx.chain.chain_id(&ctx.db)?))
}

/// `eth_blockNumber`: the newest block the writer had published when the
/// request arrived (or a newer one).
pub(crate) fn block_number(ctx: &Context, _: Params<'_>) -> Result<U64, RpcError> {
    Ok(U64::from(ctx.db.catch_up()?.ok_or(RpcError::Empty)?))
}

/// `eth_getBalance(address, block?)`.
pub(crate) fn balance(ctx: &Context, params: Params<'_>) -> Result<U256, RpcError> {
    let mut params = Positional::new(&params)?;
    let address: Address = params.next("address")?;
    let block = resolve(&ctx.db, params.optional("block")?)?;
    params.end()?;
    let account = reader_at(&ctx.db, block)?.account(&address)?;
    Ok(account.map_or(U256::ZERO, |a| a.balance))
}

/// `eth_getTransactionCount(address, block?)`: the account's nonce.
pub(crate) fn transaction_count(ctx: &Context, params: Params<'_>) -> Result<U64, RpcError> {
    let mut params = Positional::new(&params)?;
    let address: Address = params.next("address")?;
    let block = resolve(&ctx.db, params.optional("block")?)?;
    params.end()?;
    let account = reader_at(&ctx.db, block)?.account(&address)?;
    Ok(U64::from(account.map_or(0, |a| a.nonce)))
}

/// `eth_getCode(address, block?)`.
pub(crate) fn code(ctx: &Context, params: Params<'_>) -> Result<Bytes, RpcError> {
    let mut params = Positional::new(&params)?;
    let address: Address = params.next("address")?;
    let block = resolve(&ctx.db, params.optional("block")?)?;
    params.end()?;
    let code = reader_at(&ctx.db, block)?.code(&address)?;
    Ok(code.map(Bytes::from).unwrap_or_default())
}

/// `eth_getStorageAt(address, slot, block?)`: the slot as 32 bytes.
pub(crate) fn storage_at(ctx: &Context, params: Params<'_>) -> Result<B256, RpcError> {
    let mut params = Positional::new(&params)?;
    let address: Address = params.next("address")?;
    let slot: alloy_serde::JsonStorageKey = params.next("slot")?;
    let block = resolve(&ctx.db, params.optional("block")?)?;
    params.end()?;
    let value = reader_at(&ctx.db, block)?.storage(&address, &slot.as_b256())?;
    Ok(B256::from(value))
}

/// `eth_getProof(address, slots, block?)` at any block of the window (reth
/// serves the latest only by default).
pub(crate) fn proof(
    ctx: &Context,
    params: Params<'_>,
) -> Result<EIP1186AccountProofResponse, RpcError> {
    let mut params = Positional::new(&params)?;
    let address: Address = params.next("address")?;
    let keys: Vec<alloy_serde::JsonStorageKey> = params.next("storage keys")?;
    let block: Option<BlockId> = params.optional("block")?;
    params.end()?;
    if keys.len() > MAX_PROOF_SLOTS {
        return Err(RpcError::InvalidParams(format!(
            "{} storage keys asked, at most {MAX_PROOF_SLOTS} per call",
            keys.len()
        )));
    }
    let slots: Vec<B256> = keys.iter().map(|key| key.as_b256()).collect();
    let proof = proof_at(&ctx.db, resolve(&ctx.db, block)?, &address, &slots)?;
    Ok(response(proof, &keys))
}

fn proof_at(
    db: &ReadOnlyStateDb,
    block: Resolved,
    address: &Address,
    slots: &[B256],
) -> Result<AccountProof, RpcError> {
    match block {
        Resolved::Latest => Ok(reader_at(db, block)?.proof(address, slots)?),
        Resolved::Block(number) => db.proof_at(number, address, slots).map_err(not_retained),
    }
}

/// strata's proof in the response's shape; each storage key is echoed as
/// the client gave it.
fn response(
    proof: AccountProof,
    keys: &[alloy_serde::JsonStorageKey],
) -> EIP1186AccountProofResponse {
    let (nonce, balance, code_hash) = proof.account.map_or((0, U256::ZERO, KECCAK256_EMPTY), |a| {
        (a.nonce, a.balance, a.code_hash)
    });
    EIP1186AccountProofResponse {
        address: proof.address,
        balance,
        code_hash,
        nonce,
        storage_hash: proof.storage_root,
        account_proof: proof.proof,
        storage_proof: proof
            .storage
            .into_iter()
            .zip(keys)
            .map(|(slot, key)| EIP1186StorageProof {
                key: *key,
                value: slot.value,
                proof: slot.proof,
            })
            .collect(),
    }
}
