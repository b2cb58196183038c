//! `strata proof --datadir DIR [--block N] ADDRESS [SLOT…]`: the Merkle
//! proof of an account and of slots of its storage at the last committed
//! block (or one of the last 128, or any its history keeps), printed as JSON exactly as an
//! `eth_getProof` response carries it.

use std::path::PathBuf;

use alloy_primitives::{Address, B256, KECCAK256_EMPTY, hex};
use clap::Args;
use serde_json::{Value, json};
use strata_storage::genesis::{parse_address, parse_word};
use strata_storage::{AccountProof, Regime};

use super::datadir::open_for_reading;

use crate::CliError;
use crate::output::print_json;

/// Arguments of `strata proof`.
#[derive(Debug, Clone, Args)]
pub struct ProofArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// Prove the state after this block (one of the last 128, or any
    /// block a datadir made with --history keeps); default: the last
    /// committed block.
    #[arg(long, value_name = "N")]
    pub block: Option<u64>,
    /// The account's address (0x + 40 hex digits).
    #[arg(value_parser = address_arg)]
    pub address: Address,
    /// Storage slots to prove (hex, up to 32 bytes; left-padded).
    #[arg(value_parser = slot_arg)]
    pub slots: Vec<B256>,
}

fn address_arg(text: &str) -> Result<Address, String> {
    parse_address(text).map_err(|e| e.to_string())
}

fn slot_arg(text: &str) -> Result<B256, String> {
    parse_word(text).map_err(|e| e.to_string())
}

pub(super) fn run(args: ProofArgs) -> Result<(), CliError> {
    let access = open_for_reading(&args.datadir)?;
    let failed = CliError::storage(&args.datadir);
    let proof = match args.block {
        Some(block) => access.proof_at(block, &args.address, &args.slots),
        None => access
            .reader(Regime::Exec)
            .and_then(|reader| reader.proof(&args.address, &args.slots)),
    }
    .map_err(failed)?;
    print_json(&response(&proof))
}

/// `proof` in `eth_getProof`'s shape: quantities as minimal hex, an absent
/// account with zero nonce and balance, the empty code hash and the empty
/// storage root.
pub fn response(proof: &AccountProof) -> Value {
    let (nonce, balance, code_hash) = proof
        .account
        .map_or((0, Default::default(), KECCAK256_EMPTY), |a| {
            (a.nonce, a.balance, a.code_hash)
        });
    let nodes = |nodes: &[alloy_primitives::Bytes]| -> Vec<String> {
        nodes.iter().map(|node| node.to_string()).collect()
    };
    json!({
        "address": hex::encode_prefixed(proof.address),
        "accountProof": nodes(&proof.proof),
        "balance": format!("{balance:#x}"),
        "codeHash": code_hash.to_string(),
        "nonce": format!("{nonce:#x}"),
        "storageHash": proof.storage_root.to_string(),
        "storageProof": proof.storage.iter().map(|slot| json!({
            "key": slot.slot.to_string(),
            "value": format!("{:#x}", slot.value),
            "proof": nodes(&slot.proof),
        })).collect::<Vec<_>>(),
    })
}
