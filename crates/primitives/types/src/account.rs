//! The typed account record and its compact byte encoding.
//!
//! Encoding (see FORMAT.md): `[n][nonce: n bytes BE][b][balance: b bytes BE][c][code hash: c bytes]`
//! where each length byte counts the bytes that follow with leading zeros
//! trimmed, and `c` is 0 for an account without code (`KECCAK_EMPTY`) or 32.

use alloy_primitives::{B256, KECCAK256_EMPTY, U256, keccak256};

/// The code hash of `code`: its keccak256, or `KECCAK256_EMPTY` for no code.
pub fn code_hash(code: &[u8]) -> B256 {
    if code.is_empty() {
        KECCAK256_EMPTY
    } else {
        keccak256(code)
    }
}

/// An account as the account domain stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Account {
    /// Transaction count.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// keccak256 of the bytecode; `KECCAK256_EMPTY` when the account has none.
    pub code_hash: B256,
}

impl Default for Account {
    fn default() -> Self {
        Account {
            nonce: 0,
            balance: U256::ZERO,
            code_hash: KECCAK256_EMPTY,
        }
    }
}

impl Account {
    /// Whether the account carries code.
    pub fn has_code(&self) -> bool {
        self.code_hash != KECCAK256_EMPTY
    }

    /// Encodes the account compactly (never empty: at least three bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(3 + 8 + 32 + 32);
        let nonce = self.nonce.to_be_bytes();
        push_trimmed(&mut out, &nonce);
        let balance = self.balance.to_be_bytes::<32>();
        push_trimmed(&mut out, &balance);
        if self.has_code() {
            out.push(32);
            out.extend_from_slice(self.code_hash.as_slice());
        } else {
            out.push(0);
        }
        out
    }

    /// Decodes an account; the error says which field is malformed.
    pub fn decode(bytes: &[u8]) -> Result<Account, DecodeError> {
        let mut rest = bytes;
        let nonce = take_field(&mut rest, 8, "nonce")?;
        let balance = take_field(&mut rest, 32, "balance")?;
        let code_hash = take_field(&mut rest, 32, "code hash")?;
        if !rest.is_empty() {
            return Err(DecodeError::TrailingBytes(rest.len()));
        }
        let mut nonce_bytes = [0u8; 8];
        nonce_bytes[8 - nonce.len()..].copy_from_slice(nonce);
        let code_hash = match code_hash.len() {
            0 => KECCAK256_EMPTY,
            32 => B256::from_slice(code_hash),
            n => return Err(DecodeError::CodeHashLength(n)),
        };
        Ok(Account {
            nonce: u64::from_be_bytes(nonce_bytes),
            balance: U256::from_be_slice(balance),
            code_hash,
        })
    }
}

fn push_trimmed(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    out.push((bytes.len() - start) as u8);
    out.extend_from_slice(&bytes[start..]);
}

/// Why stored account or slot bytes do not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The value ends before a field's length byte.
    #[error("missing length byte of {field}")]
    MissingLength {
        /// The field.
        field: &'static str,
    },
    /// A field's length is over its maximum.
    #[error("{field} length {len} exceeds {max}")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its stated length.
        len: usize,
        /// The most it may have.
        max: usize,
    },
    /// A field's bytes run past the end.
    #[error("{field} needs {need} bytes, {left} left")]
    Truncated {
        /// The field.
        field: &'static str,
        /// Bytes it needs.
        need: usize,
        /// Bytes left.
        left: usize,
    },
    /// Bytes after the last field.
    #[error("{0} trailing bytes after the code hash")]
    TrailingBytes(usize),
    /// A code hash that is neither absent nor 32 bytes.
    #[error("code hash is {0} bytes, expected 0 or 32")]
    CodeHashLength(usize),
    /// A storage value longer than a word.
    #[error("storage value is {0} bytes, at most 32 allowed")]
    SlotTooLong(usize),
}

fn take_field<'a>(
    rest: &mut &'a [u8],
    max: usize,
    field: &'static str,
) -> Result<&'a [u8], DecodeError> {
    let (&len, tail) = rest
        .split_first()
        .ok_or(DecodeError::MissingLength { field })?;
    let len = len as usize;
    if len > max {
        return Err(DecodeError::TooLong { field, len, max });
    }
    if tail.len() < len {
        return Err(DecodeError::Truncated {
            field,
            need: len,
            left: tail.len(),
        });
    }
    let (field, tail) = tail.split_at(len);
    *rest = tail;
    Ok(field)
}

/// Trims leading zero bytes of a storage value (empty for zero).
pub fn encode_slot_value(value: U256) -> Vec<u8> {
    let bytes = value.to_be_bytes::<32>();
    let start = bytes.iter().position(|&b| b != 0).unwrap_or(32);
    bytes[start..].to_vec()
}

/// Decodes a trimmed big-endian storage value.
pub fn decode_slot_value(bytes: &[u8]) -> Result<U256, DecodeError> {
    if bytes.len() > 32 {
        return Err(DecodeError::SlotTooLong(bytes.len()));
    }
    Ok(U256::from_be_slice(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_account_is_three_bytes() {
        assert_eq!(Account::default().encode(), vec![0, 0, 0]);
        assert_eq!(Account::decode(&[0, 0, 0]).unwrap(), Account::default());
    }

    #[test]
    fn malformed_accounts_name_the_field() {
        assert!(
            Account::decode(&[])
                .unwrap_err()
                .to_string()
                .contains("nonce")
        );
        assert!(
            Account::decode(&[9])
                .unwrap_err()
                .to_string()
                .contains("nonce length")
        );
        assert!(
            Account::decode(&[0, 2, 1])
                .unwrap_err()
                .to_string()
                .contains("balance")
        );
        assert!(
            Account::decode(&[0, 0, 5, 1, 2, 3, 4, 5])
                .unwrap_err()
                .to_string()
                .contains("code hash")
        );
        assert!(
            Account::decode(&[0, 0, 0, 7])
                .unwrap_err()
                .to_string()
                .contains("trailing")
        );
    }

    proptest! {
        #[test]
        fn account_round_trips(nonce: u64, balance: [u8; 32], code: Option<[u8; 32]>) {
            let account = Account {
                nonce,
                balance: U256::from_be_bytes(balance),
                code_hash: code.map(B256::from).unwrap_or(KECCAK256_EMPTY),
            };
            prop_assert_eq!(Account::decode(&account.encode()).unwrap(), account);
        }

        #[test]
        fn slot_value_round_trips(value: [u8; 32]) {
            let value = U256::from_be_bytes(value);
            prop_assert_eq!(decode_slot_value(&encode_slot_value(value)).unwrap(), value);
        }
    }
}
