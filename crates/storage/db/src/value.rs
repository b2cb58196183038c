//! The encoding of a domain-table value: the step that wrote it, then the value.

use crate::error::{Result, SchemaError};
use strata_types::domain::Domain;

/// Bytes of the step prefix.
pub const STEP_LEN: usize = 8;

/// Encodes `value` (or a tombstone when `None`) written at `step`.
pub fn encode(step: u64, value: Option<&[u8]>) -> Vec<u8> {
    let value = value.unwrap_or_default();
    let mut out = Vec::with_capacity(STEP_LEN + value.len());
    out.extend_from_slice(&step.to_be_bytes());
    out.extend_from_slice(value);
    out
}

/// Decodes a stored value into its step and its value (`None` for a tombstone).
pub fn decode<'a>(domain: Domain, key: &[u8], raw: &'a [u8]) -> Result<(u64, Option<&'a [u8]>)> {
    if raw.len() < STEP_LEN {
        return Err(SchemaError::CorruptRecord {
            domain,
            key: alloy_primitives::hex::encode(key),
            what: format!(
                "value is {} bytes, shorter than its {STEP_LEN}-byte step",
                raw.len()
            ),
        });
    }
    let (step, value) = raw.split_at(STEP_LEN);
    let step = u64::from_be_bytes(step.try_into().expect("split at STEP_LEN"));
    Ok((step, (!value.is_empty()).then_some(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_tombstones_round_trip() {
        let raw = encode(7, Some(b"abc"));
        assert_eq!(
            decode(Domain::Code, b"k", &raw).unwrap(),
            (7, Some(&b"abc"[..]))
        );
        let raw = encode(9, None);
        assert_eq!(decode(Domain::Code, b"k", &raw).unwrap(), (9, None));
        let err = decode(Domain::Account, b"\x01", &[1, 2])
            .unwrap_err()
            .to_string();
        assert!(err.contains("account") && err.contains("0x01"), "{err}");
    }
}
