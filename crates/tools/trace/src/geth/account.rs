//! One account object of prestateTracer output:
//! `{balance, nonce, code, codeHash, storage}`, every field optional — read
//! by the account parser genesis allocs use too
//! ([`strata_storage::genesis::JsonAccount`]: `null` refused, zero slots kept).

use std::collections::BTreeMap;

use alloy_primitives::Address;
use serde::Deserialize;
use serde_json::Value;
use strata_storage::genesis::{
    AccountError, JsonAccount, KeyError, RawAccount, Repeated, parse_address, short, unique,
};

use super::GethError;

/// An account as the tracer printed it; `None` = field not printed.
pub type GethAccount = JsonAccount;

/// Parse an address → account map. `input` names it in errors.
pub(super) fn accounts(
    value: &Value,
    input: &str,
) -> Result<BTreeMap<Address, GethAccount>, GethError> {
    let shape = |what: String| GethError::Shape {
        input: input.to_owned(),
        what,
    };
    // `read_document` refused repeated keys before the text became a Value.
    let Some(entries) = value.as_object() else {
        return Err(shape(format!(
            "expected an object of address → account, found {}",
            short(value)
        )));
    };
    let mut typed = Vec::with_capacity(entries.len());
    for (key, entry) in entries {
        let account = account(entry, key, input)?;
        typed.push((std::borrow::Cow::Borrowed(key.as_str()), account));
    }
    unique(typed, parse_address).map_err(|e| match e {
        KeyError::Invalid { text, source } => GethError::Address {
            input: input.to_owned(),
            text,
            source,
        },
        KeyError::Repeated(Repeated { first, second }) => shape(format!(
            "address {second} is listed twice (first as {first})"
        )),
    })
}

fn account(value: &Value, key: &str, input: &str) -> Result<GethAccount, GethError> {
    if !value.is_object() {
        return Err(GethError::Field {
            input: input.to_owned(),
            address: key.to_owned(),
            field: String::new(),
            source: strata_storage::genesis::ValueError::WrongType {
                expected: "an account object",
                found: short(value),
            },
        });
    }
    let raw = RawAccount::deserialize(value).map_err(|e| GethError::Shape {
        input: input.to_owned(),
        what: format!("account {key}: {e}"),
    })?;
    JsonAccount::from_raw(raw).map_err(|e| match e {
        AccountError::Field { field, source } => GethError::Field {
            input: input.to_owned(),
            address: key.to_owned(),
            field,
            source,
        },
        AccountError::RepeatedSlot(Repeated { first, second }) => GethError::Shape {
            input: input.to_owned(),
            what: format!(
                "account {key}: storage slot {second} is listed twice (first as {first})"
            ),
        },
    })
}
