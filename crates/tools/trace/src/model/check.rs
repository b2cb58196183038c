//! Checking a block's `reads` against the model: every value a trace claims
//! the block found must be what the state held before the block.

use alloy_primitives::{Address, B256, hex, keccak256};
use alloy_trie::KECCAK_EMPTY;

use super::WorldState;
use crate::TraceBlock;

/// A read in a trace that disagrees with the state before the block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "block {block}: reads {address}: field {field:?}: trace says {found}, state holds {expected}"
)]
pub struct ReadMismatch {
    /// Block number.
    pub block: u64,
    /// The account.
    pub address: Address,
    /// The field ("balance", "nonce", "code_hash", "code", "storage[0x..]").
    pub field: String,
    /// What the state holds.
    pub expected: String,
    /// What the trace says.
    pub found: String,
}

impl WorldState {
    /// Check every value in `block.reads` against the current state (which
    /// must be the state before `block`). An absent account reads as balance
    /// 0, nonce 0, no code and zero slots.
    pub fn check_reads(&self, block: &TraceBlock) -> Result<(), ReadMismatch> {
        for (address, read) in &block.reads {
            let account = self.account(address);
            let mismatch = |field: String, expected: String, found: String| ReadMismatch {
                block: block.number,
                address: *address,
                field,
                expected,
                found,
            };
            let balance = account.map(|a| a.balance()).unwrap_or_default();
            if balance != read.balance {
                return Err(mismatch(
                    "balance".into(),
                    balance.to_string(),
                    read.balance.to_string(),
                ));
            }
            let nonce = account.map(|a| a.nonce()).unwrap_or_default();
            if nonce != read.nonce {
                return Err(mismatch(
                    "nonce".into(),
                    nonce.to_string(),
                    read.nonce.to_string(),
                ));
            }
            let code_hash = account.map(|a| a.code_hash()).unwrap_or(KECCAK_EMPTY);
            if let Some(hash) = read.code_hash
                && hash != code_hash
            {
                return Err(mismatch(
                    "code_hash".into(),
                    hex::encode_prefixed(code_hash),
                    hex::encode_prefixed(hash),
                ));
            }
            if let Some(code) = &read.code {
                let found = if code.is_empty() {
                    KECCAK_EMPTY
                } else {
                    keccak256(code)
                };
                if found != code_hash {
                    return Err(mismatch(
                        "code".into(),
                        format!("code with hash {}", hex::encode_prefixed(code_hash)),
                        format!("code with hash {}", hex::encode_prefixed(found)),
                    ));
                }
            }
            for (slot, value) in &read.storage {
                let held = self.slot(address, slot);
                if held != *value {
                    return Err(mismatch(
                        slot_field(slot),
                        format!("{held:#x}"),
                        format!("{value:#x}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn slot_field(slot: &B256) -> String {
    format!("storage[{}]", hex::encode_prefixed(slot))
}
