//! One block of a replay against the store: check the block's `reads`
//! (Exec regime, the state before the block). Its `writes` are staged as
//! its access list ([`strata_storage::BlockWriter::apply_access_list`]).

use std::path::Path;

use alloy_primitives::{B256, KECCAK256_EMPTY, hex, keccak256};
use strata_storage::StateReader;
use strata_trace::TraceBlock;

use crate::CliError;

/// Check every value of `block.reads` against `reader` (the last committed
/// block); the first difference is an error naming block, key and field.
pub(super) fn check_reads(
    trace: &Path,
    datadir: &Path,
    reader: &StateReader,
    block: &TraceBlock,
) -> Result<usize, CliError> {
    let mut checked = 0;
    for (address, read) in &block.reads {
        let mismatch = |key: String, field: &str, expected: String, found: String| {
            CliError::ReadMismatch(Box::new(crate::ReplayReadMismatch {
                path: trace.to_owned(),
                block: block.number,
                key,
                field: field.to_owned(),
                expected,
                found,
            }))
        };
        let account = reader
            .account(address)
            .map_err(CliError::storage(datadir))?
            .unwrap_or_default();
        checked += 1;
        let key = address.to_string();
        if account.balance != read.balance {
            return Err(mismatch(
                key,
                "balance",
                format!("{:#x}", read.balance),
                format!("{:#x}", account.balance),
            ));
        }
        if account.nonce != read.nonce {
            return Err(mismatch(
                key,
                "nonce",
                read.nonce.to_string(),
                account.nonce.to_string(),
            ));
        }
        if let Some(hash) = read.code_hash
            && hash != account.code_hash
        {
            return Err(mismatch(
                key,
                "code_hash",
                hash.to_string(),
                account.code_hash.to_string(),
            ));
        }
        if let Some(code) = &read.code {
            // By hash, as an EVM loads it.
            let stored = reader
                .code_by_hash(&account.code_hash)
                .map_err(CliError::storage(datadir))?
                .unwrap_or_default();
            if stored.as_ref() != code.as_ref() {
                return Err(mismatch(
                    key,
                    "code",
                    format!("{} bytes with hash {}", code.len(), code_hash(code)),
                    format!("{} bytes with hash {}", stored.len(), code_hash(&stored)),
                ));
            }
        }
        for (slot, value) in &read.storage {
            let stored = reader
                .storage(address, slot)
                .map_err(CliError::storage(datadir))?;
            checked += 1;
            if stored != *value {
                return Err(mismatch(
                    format!("{address} slot {}", hex::encode_prefixed(slot)),
                    "storage",
                    format!("{value:#x}"),
                    format!("{stored:#x}"),
                ));
            }
        }
    }
    Ok(checked)
}

fn code_hash(code: &[u8]) -> B256 {
    if code.is_empty() {
        KECCAK256_EMPTY
    } else {
        keccak256(code)
    }
}
