//! One account object of prestateTracer output:
//! `{balance, nonce, code, codeHash, storage}`, every field optional.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256};
use serde_json::{Map, Value};
use strata_storage::genesis::{
    ValueError, parse_address, parse_bytes, parse_hash, parse_u64, parse_u256, parse_word,
    parse_word_value, short,
};

use super::GethError;

/// An account as the tracer printed it; `None` = field not printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GethAccount {
    /// Balance.
    pub balance: Option<U256>,
    /// Nonce (geth omits it when zero in default mode).
    pub nonce: Option<u64>,
    /// Code (absent with `disableCode`, or when unchanged in a diff).
    pub code: Option<Bytes>,
    /// Code hash (newer geth).
    pub code_hash: Option<B256>,
    /// Storage slots printed.
    pub storage: BTreeMap<B256, U256>,
}

/// Parse an address → account map. `input` names it in errors.
pub(super) fn accounts(
    value: &Value,
    input: &str,
) -> Result<BTreeMap<Address, GethAccount>, GethError> {
    let Some(map) = value.as_object() else {
        return Err(GethError::Shape {
            input: input.to_owned(),
            what: format!(
                "expected an object of address → account, found {}",
                short(value)
            ),
        });
    };
    let mut out = BTreeMap::new();
    for (key, entry) in map {
        let address = parse_address(key).map_err(|source| GethError::Address {
            input: input.to_owned(),
            text: key.clone(),
            source,
        })?;
        out.insert(address, account(entry, key, input)?);
    }
    Ok(out)
}

fn account(value: &Value, key: &str, input: &str) -> Result<GethAccount, GethError> {
    let field = |name: &str| {
        let (input, address, name) = (input.to_owned(), key.to_owned(), name.to_owned());
        move |source| GethError::Field {
            input,
            address,
            field: name,
            source,
        }
    };
    let Some(obj): Option<&Map<String, Value>> = value.as_object() else {
        return Err(field("")(ValueError::WrongType {
            expected: "an account object",
            found: short(value),
        }));
    };
    let mut account = GethAccount::default();
    if let Some(v) = obj.get("balance").filter(|v| !v.is_null()) {
        account.balance = Some(parse_u256(v).map_err(field("balance"))?);
    }
    if let Some(v) = obj.get("nonce").filter(|v| !v.is_null()) {
        account.nonce = Some(parse_u64(v).map_err(field("nonce"))?);
    }
    if let Some(v) = obj.get("code").filter(|v| !v.is_null()) {
        account.code = Some(parse_bytes(v).map_err(field("code"))?);
    }
    if let Some(v) = obj.get("codeHash").filter(|v| !v.is_null()) {
        let text = v.as_str().ok_or_else(|| ValueError::WrongType {
            expected: "a 32-byte hex string",
            found: short(v),
        });
        account.code_hash = Some(text.and_then(parse_hash).map_err(field("codeHash"))?);
    }
    match obj.get("storage") {
        None | Some(Value::Null) => {}
        Some(Value::Object(slots)) => {
            for (slot_text, v) in slots {
                let slot = parse_word(slot_text).map_err(field("storage"))?;
                let val = parse_word_value(v).map_err(field(&format!("storage[{slot_text}]")))?;
                account.storage.insert(slot, val);
            }
        }
        Some(other) => {
            return Err(field("storage")(ValueError::WrongType {
                expected: "an object of slot → value",
                found: short(other),
            }));
        }
    }
    Ok(account)
}
