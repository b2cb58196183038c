//! Unwind data: for every key a block wrote, the value it had before the block.

use crate::domain::Domain;
use crate::error::{Error, Result};

/// The changeset key of `key` in `domain` written by `block`.
pub(crate) fn key(block: u64, domain: Domain, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + key.len());
    out.extend_from_slice(&block.to_be_bytes());
    out.push(domain.index() as u8);
    out.extend_from_slice(key);
    out
}

/// The first changeset key of `block` (inclusive range start).
pub(crate) fn block_start(block: u64) -> [u8; 8] {
    block.to_be_bytes()
}

/// Encodes the previous value of a key (`None`: it did not exist).
pub(crate) fn encode_prev(prev: Option<&[u8]>) -> Vec<u8> {
    match prev {
        None => vec![0],
        Some(value) => {
            let mut out = Vec::with_capacity(1 + value.len());
            out.push(1);
            out.extend_from_slice(value);
            out
        }
    }
}

/// One decoded changeset entry.
pub(crate) struct Change<'a> {
    pub(crate) domain: Domain,
    pub(crate) key: &'a [u8],
    pub(crate) prev: Option<&'a [u8]>,
}

/// Decodes a changeset entry; errors name the raw key.
pub(crate) fn decode<'a>(raw_key: &'a [u8], raw_value: &'a [u8]) -> Result<Change<'a>> {
    let corrupt = |what: &str| Error::CorruptMeta {
        name: "changes",
        what: format!("entry 0x{}: {what}", alloy_primitives::hex::encode(raw_key)),
    };
    if raw_key.len() < 9 {
        return Err(corrupt("key shorter than block and domain"));
    }
    let domain = *Domain::ALL
        .get(raw_key[8] as usize)
        .ok_or_else(|| corrupt("unknown domain"))?;
    let prev = match raw_value.split_first() {
        Some((0, [])) => None,
        Some((1, value)) => Some(value),
        _ => return Err(corrupt("bad previous-value marker")),
    };
    Ok(Change {
        domain,
        key: &raw_key[9..],
        prev,
    })
}
