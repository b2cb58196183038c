//! Numbers, words, hashes and bytes as genesis files, tracer output and
//! traces write them, read from a [`Scalar`] (typed parsing) or text.
//!
//! `null` is never a number, a hash or bytes, and `"0x"` is not a number
//! (geth's `hexutil` and `math.HexOrDecimal*` refuse both too); `"0x"` is
//! the empty byte string.

use alloy_primitives::{Address, B256, Bytes, U256};

use super::scalar::Scalar;

/// Why a single JSON value could not be read as the expected number or hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// The JSON value has the wrong type (e.g. an object where a number is expected).
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What was expected ("a number", "a hex string", ...).
        expected: &'static str,
        /// The JSON text that was found.
        found: String,
    },
    /// Not a valid hex or decimal number.
    #[error("invalid number {0:?}")]
    InvalidNumber(String),
    /// A number larger than the type holds.
    #[error("number {value} out of range (maximum {max})")]
    OutOfRange {
        /// The number as written.
        value: String,
        /// The largest allowed value, in words ("2^64-1", "2^256-1").
        max: &'static str,
    },
    /// Not valid hex.
    #[error("invalid hex {0:?}")]
    InvalidHex(String),
    /// Hex of the wrong length.
    #[error("expected {expected} bytes, found {found} in {text:?}")]
    WrongLength {
        /// Expected length, in words ("20", "at most 32").
        expected: &'static str,
        /// Number of bytes found.
        found: usize,
        /// The text as written.
        text: String,
    },
}

fn wrong_type(expected: &'static str, found: &Scalar<'_>) -> ValueError {
    ValueError::WrongType {
        expected,
        found: found.to_string(),
    }
}

impl Scalar<'_> {
    /// An unsigned 256-bit number: `0x` hex, a decimal string or a JSON number.
    pub fn u256(&self) -> Result<U256, ValueError> {
        match self {
            Scalar::Str(text) => parse_u256_str(text),
            Scalar::UInt(n) => Ok(U256::from(*n)),
            Scalar::Int(n) => Err(ValueError::InvalidNumber(n.to_string())),
            Scalar::Float(x) if x.fract() == 0.0 && *x > 0.0 => Err(ValueError::OutOfRange {
                value: self.to_string(),
                max: "2^64-1 as a JSON number; write larger numbers as hex strings",
            }),
            Scalar::Float(_) => Err(ValueError::InvalidNumber(self.to_string())),
            other => Err(wrong_type("a number or a hex/decimal string", other)),
        }
    }

    /// An unsigned 64-bit number: `0x` hex, a decimal string or a JSON number.
    pub fn u64(&self) -> Result<u64, ValueError> {
        let wide = self.u256()?;
        u64::try_from(wide).map_err(|_| ValueError::OutOfRange {
            value: match self {
                Scalar::Str(text) => text.to_string(),
                other => other.to_string(),
            },
            max: "2^64-1",
        })
    }

    /// A storage value: a hex word of at most 32 bytes, or a JSON number.
    pub fn word_value(&self) -> Result<U256, ValueError> {
        match self {
            Scalar::Str(text) => Ok(U256::from_be_bytes(parse_word(text)?.0)),
            Scalar::UInt(_) | Scalar::Int(_) | Scalar::Float(_) => self.u256(),
            other => Err(wrong_type("a hex string or a number", other)),
        }
    }

    /// Hex bytes (`code`); `"0x"` and `""` are empty.
    pub fn bytes(&self) -> Result<Bytes, ValueError> {
        match self {
            Scalar::Str(text) => Ok(Bytes::from(decode_even_hex(text)?)),
            other => Err(wrong_type("a hex string", other)),
        }
    }

    /// Exactly 32 bytes of hex (a code hash or a state root).
    pub fn hash(&self) -> Result<B256, ValueError> {
        match self {
            Scalar::Str(text) => parse_hash(text),
            other => Err(wrong_type("a 32-byte hex string", other)),
        }
    }

    /// `true` or `false`.
    pub fn flag(&self) -> Result<bool, ValueError> {
        match self {
            Scalar::Bool(b) => Ok(*b),
            other => Err(wrong_type("true or false", other)),
        }
    }
}

fn strip_0x(text: &str) -> &str {
    text.strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text)
}

/// Decode hex (with or without `0x`); an odd number of digits is an error.
fn decode_even_hex(text: &str) -> Result<Vec<u8>, ValueError> {
    alloy_primitives::hex::decode(strip_0x(text))
        .map_err(|_| ValueError::InvalidHex(text.to_owned()))
}

/// Decode hex (with or without `0x`) that may have an odd number of digits
/// (a quantity or short word such as `0x1`).
fn decode_quantity_hex(text: &str) -> Result<Vec<u8>, ValueError> {
    let digits = strip_0x(text);
    if digits.len() % 2 == 1 {
        alloy_primitives::hex::decode(format!("0{digits}"))
            .map_err(|_| ValueError::InvalidHex(text.to_owned()))
    } else {
        decode_even_hex(text)
    }
}

/// Parse a 20-byte address, with or without `0x`, in any letter case.
pub fn parse_address(text: &str) -> Result<Address, ValueError> {
    let bytes = decode_even_hex(text)?;
    if bytes.len() != 20 {
        return Err(ValueError::WrongLength {
            expected: "20",
            found: bytes.len(),
            text: text.to_owned(),
        });
    }
    Ok(Address::from_slice(&bytes))
}

/// Parse a 32-byte word written in hex of at most 32 bytes (left-padded):
/// storage slots and values. `0x1`, `0x01` and `0x0…01` are the same word.
pub fn parse_word(text: &str) -> Result<B256, ValueError> {
    let bytes = decode_quantity_hex(text)?;
    if bytes.len() > 32 {
        return Err(ValueError::WrongLength {
            expected: "at most 32",
            found: bytes.len(),
            text: text.to_owned(),
        });
    }
    let mut word = B256::ZERO;
    word[32 - bytes.len()..].copy_from_slice(&bytes);
    Ok(word)
}

/// Parse exactly 32 bytes of hex (a hash such as a code hash or state root).
pub fn parse_hash(text: &str) -> Result<B256, ValueError> {
    let bytes = decode_even_hex(text)?;
    if bytes.len() != 32 {
        return Err(ValueError::WrongLength {
            expected: "32",
            found: bytes.len(),
            text: text.to_owned(),
        });
    }
    Ok(B256::from_slice(&bytes))
}

fn parse_u256_str(text: &str) -> Result<U256, ValueError> {
    let trimmed = text.trim();
    let (digits, radix) = match trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
    {
        Some(hex) => (hex, 16),
        None => (trimmed, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(ValueError::InvalidNumber(text.to_owned()));
    }
    U256::from_str_radix(digits, radix as u64).map_err(|_| ValueError::OutOfRange {
        value: text.to_owned(),
        max: "2^256-1",
    })
}
