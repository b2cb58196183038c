//! The one account parser shared by genesis allocs and geth tracer output:
//! `{balance, nonce, code, codeHash, storage}`, every field optional.
//!
//! The convention (geth's and reth's): an absent field is "not given"; a
//! field that is present must hold a value of its type — `null` is refused,
//! as are `"0x"` for a number; unknown fields (`secretKey`, …) are ignored;
//! a repeated field, two spellings of one slot (`0x1`, `0x01`) are refused.
//! Zero storage values are kept here (a tracer reports reads and writes of
//! empty slots); a genesis alloc drops them, as geth and reth do when they
//! build the state.

use std::collections::BTreeMap;

use alloy_primitives::{B256, Bytes, U256};
use serde::Deserialize;

use super::entries::{Entries, KeyError, Repeated, unique};
use super::scalar::Scalar;
use super::value::{ValueError, parse_word};

/// An account object as written: each field kept for [`JsonAccount::from_raw`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(expecting = "an account object")]
pub struct RawAccount<'a> {
    #[serde(default, borrow)]
    balance: Scalar<'a>,
    #[serde(default, borrow)]
    nonce: Scalar<'a>,
    #[serde(default, borrow)]
    code: Scalar<'a>,
    #[serde(default, borrow, rename = "codeHash")]
    code_hash: Scalar<'a>,
    #[serde(default, borrow)]
    storage: Entries<'a, Scalar<'a>>,
    /// Given only in the lines of a state dump (an alloc names the account
    /// by its key); [`JsonAccount::from_raw`] ignores it.
    #[serde(default, borrow)]
    address: Scalar<'a>,
}

impl<'a> RawAccount<'a> {
    /// An account of these fields as written, without storage (a dump line
    /// whose storage is read apart).
    pub fn without_storage(
        balance: Scalar<'a>,
        nonce: Scalar<'a>,
        code: Scalar<'a>,
        code_hash: Scalar<'a>,
        address: Scalar<'a>,
    ) -> Self {
        Self {
            balance,
            nonce,
            code,
            code_hash,
            storage: Entries::Missing,
            address,
        }
    }

    /// The `address` field as written (`Missing` when absent).
    pub fn address(&self) -> &Scalar<'a> {
        &self.address
    }
}

/// An account with its fields typed; `None` = the field was not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonAccount {
    /// Balance.
    pub balance: Option<U256>,
    /// Nonce.
    pub nonce: Option<u64>,
    /// Code.
    pub code: Option<Bytes>,
    /// Code hash (`codeHash`, newer geth tracer output).
    pub code_hash: Option<B256>,
    /// Storage slots as given, zero values included.
    pub storage: BTreeMap<B256, U256>,
}

/// Why an account object could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountError {
    /// A field has a bad value; `field` is "balance", "storage[0x01]", ….
    Field {
        /// The field.
        field: String,
        /// What is wrong.
        source: ValueError,
    },
    /// Two keys of `storage` name the same slot.
    RepeatedSlot(Repeated),
}

fn optional<'a, T>(
    value: &Scalar<'a>,
    field: &str,
    read: impl FnOnce(&Scalar<'a>) -> Result<T, ValueError>,
) -> Result<Option<T>, AccountError> {
    match value {
        Scalar::Missing => Ok(None),
        given => read(given).map(Some).map_err(|source| AccountError::Field {
            field: field.to_owned(),
            source,
        }),
    }
}

/// Read `storage` (slot → value): `Missing` is empty, anything but an object
/// is an error, a slot written twice (in any spelling) is an error.
pub fn storage_map(storage: Entries<'_, Scalar<'_>>) -> Result<BTreeMap<B256, U256>, AccountError> {
    let entries = match storage {
        Entries::Missing => return Ok(BTreeMap::new()),
        Entries::Map(entries) => entries,
        Entries::NotMap(other) => {
            return Err(AccountError::Field {
                field: "storage".to_owned(),
                source: ValueError::WrongType {
                    expected: "an object of slot → value",
                    found: other.to_string(),
                },
            });
        }
    };
    let mut typed = Vec::with_capacity(entries.len());
    for (text, value) in entries {
        let value = value.word_value().map_err(|source| AccountError::Field {
            field: format!("storage[{text}]"),
            source,
        })?;
        typed.push((text, value));
    }
    unique(typed, parse_word).map_err(|e| match e {
        KeyError::Invalid { source, .. } => AccountError::Field {
            field: "storage".to_owned(),
            source,
        },
        KeyError::Repeated(repeated) => AccountError::RepeatedSlot(repeated),
    })
}

impl JsonAccount {
    /// Type the fields of `raw` by the convention in the module docs.
    pub fn from_raw(raw: RawAccount<'_>) -> Result<Self, AccountError> {
        Ok(JsonAccount {
            balance: optional(&raw.balance, "balance", Scalar::u256)?,
            nonce: optional(&raw.nonce, "nonce", Scalar::u64)?,
            code: optional(&raw.code, "code", Scalar::bytes)?,
            code_hash: optional(&raw.code_hash, "codeHash", Scalar::hash)?,
            storage: storage_map(raw.storage)?,
        })
    }
}

/// An alloc member's value as written: an account object or something else
/// (refused with the address named, after the address itself is checked).
#[derive(Debug, Clone)]
pub enum MaybeAccount<'a> {
    /// An object.
    Account(RawAccount<'a>),
    /// Not an object.
    NotObject(Scalar<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeAccount<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MaybeVisitor;
        impl<'de> serde::de::Visitor<'de> for MaybeVisitor {
            type Value = MaybeAccount<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an account object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                RawAccount::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(MaybeAccount::Account)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                super::scalar::ScalarVisitor
                    .visit_seq(seq)
                    .map(MaybeAccount::NotObject)
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(MaybeAccount::NotObject(Scalar::Bool(v)))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                super::scalar::ScalarVisitor
                    .visit_i64(v)
                    .map(MaybeAccount::NotObject)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(MaybeAccount::NotObject(Scalar::UInt(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(MaybeAccount::NotObject(Scalar::Float(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeAccount::NotObject(Scalar::Str(v.to_owned().into())))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeAccount::NotObject(Scalar::Null))
            }
        }
        d.deserialize_any(MaybeVisitor)
    }
}
