//! Turning one JSON line into a typed [`TraceLine`], with errors that name
//! the line, the section, the address and the field.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256, keccak256};
use serde_json::{Map, Value};
use strata_storage::genesis::{
    ValueError, alloc_from_value, parse_address, parse_bytes, parse_hash, parse_u64, parse_u256,
    parse_word, parse_word_value, short,
};

use super::{AccountRead, AccountWrite, TraceBlock, TraceError, TraceLine};

/// Parse one line of a trace. `line` is its 1-based number, used in errors.
/// Ordering rules (genesis first, consecutive numbers) are the reader's job.
pub fn parse_line(text: &str, line: usize) -> Result<TraceLine, TraceError> {
    let value: Value = serde_json::from_str(text).map_err(|e| TraceError::Json {
        line,
        column: e.column(),
        message: e.to_string(),
    })?;
    let obj = object(&value, line, "line")?;
    match obj.get("kind") {
        None => Err(TraceError::MissingField {
            line,
            context: "line".to_owned(),
            field: "kind",
        }),
        Some(Value::String(kind)) if kind == "genesis" => parse_genesis(obj, line),
        Some(Value::String(kind)) if kind == "block" => {
            parse_block(obj, line).map(TraceLine::Block)
        }
        Some(other) => Err(TraceError::UnknownKind {
            line,
            kind: short(other),
        }),
    }
}

fn object<'a>(
    value: &'a Value,
    line: usize,
    context: &str,
) -> Result<&'a Map<String, Value>, TraceError> {
    value.as_object().ok_or_else(|| TraceError::NotAnObject {
        line,
        context: context.to_owned(),
        found: short(value),
    })
}

fn reject_unknown(
    obj: &Map<String, Value>,
    known: &[&str],
    line: usize,
    context: &str,
) -> Result<(), TraceError> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(field) => Err(TraceError::UnknownField {
            line,
            context: context.to_owned(),
            field: field.clone(),
        }),
        None => Ok(()),
    }
}

fn required<'a>(
    obj: &'a Map<String, Value>,
    field: &'static str,
    line: usize,
    context: &str,
) -> Result<&'a Value, TraceError> {
    obj.get(field).ok_or_else(|| TraceError::MissingField {
        line,
        context: context.to_owned(),
        field,
    })
}

fn top_field<T>(
    result: Result<T, ValueError>,
    line: usize,
    field: &'static str,
) -> Result<T, TraceError> {
    result.map_err(|source| TraceError::Field {
        line,
        field,
        source,
    })
}

fn hash_field(value: &Value, line: usize, field: &'static str) -> Result<B256, TraceError> {
    let text = value.as_str().ok_or_else(|| ValueError::WrongType {
        expected: "a 32-byte hex string",
        found: short(value),
    });
    top_field(text.and_then(parse_hash), line, field)
}

fn parse_genesis(obj: &Map<String, Value>, line: usize) -> Result<TraceLine, TraceError> {
    reject_unknown(obj, &["kind", "alloc", "state_root"], line, "genesis")?;
    let alloc_value = required(obj, "alloc", line, "genesis")?;
    if !alloc_value.is_object() {
        return Err(TraceError::NotAnObject {
            line,
            context: "genesis \"alloc\"".to_owned(),
            found: short(alloc_value),
        });
    }
    let alloc =
        alloc_from_value(alloc_value).map_err(|source| TraceError::Genesis { line, source })?;
    let state_root = match obj.get("state_root") {
        None | Some(Value::Null) => None,
        Some(v) => Some(hash_field(v, line, "state_root")?),
    };
    Ok(TraceLine::Genesis { alloc, state_root })
}

fn parse_block(obj: &Map<String, Value>, line: usize) -> Result<TraceBlock, TraceError> {
    const KNOWN: &[&str] = &[
        "kind",
        "number",
        "gas_used",
        "state_root",
        "reads",
        "writes",
    ];
    reject_unknown(obj, KNOWN, line, "block")?;
    let number = top_field(
        parse_u64(required(obj, "number", line, "block")?),
        line,
        "number",
    )?;
    let gas_used = match obj.get("gas_used") {
        None | Some(Value::Null) => None,
        Some(v) => Some(top_field(parse_u64(v), line, "gas_used")?),
    };
    let state_root = match obj.get("state_root") {
        None | Some(Value::Null) => None,
        Some(v) => Some(hash_field(v, line, "state_root")?),
    };
    let mut reads = BTreeMap::new();
    for (key, entry) in object(required(obj, "reads", line, "block")?, line, "reads")? {
        let address = section_address(key, line, "reads")?;
        reads.insert(address, parse_read(entry, key, line)?);
    }
    let mut writes = BTreeMap::new();
    for (key, entry) in object(required(obj, "writes", line, "block")?, line, "writes")? {
        let address = section_address(key, line, "writes")?;
        writes.insert(address, parse_write(entry, key, line)?);
    }
    Ok(TraceBlock {
        number,
        gas_used,
        state_root,
        reads,
        writes,
    })
}

fn section_address(key: &str, line: usize, section: &'static str) -> Result<Address, TraceError> {
    parse_address(key).map_err(|source| TraceError::Address {
        line,
        section,
        text: key.to_owned(),
        source,
    })
}

/// Error context for fields of one account entry.
struct Entry<'a> {
    line: usize,
    section: &'static str,
    address: &'a str,
}

impl Entry<'_> {
    fn context(&self) -> String {
        format!("{} {}", self.section, self.address)
    }

    fn field<T>(&self, field: &str, result: Result<T, ValueError>) -> Result<T, TraceError> {
        result.map_err(|source| TraceError::Account {
            line: self.line,
            section: self.section,
            address: self.address.to_owned(),
            field: field.to_owned(),
            source,
        })
    }

    /// Parse `storage`: slot (hex, ≤ 32 bytes) → value; zero values kept.
    fn storage(&self, value: &Value) -> Result<BTreeMap<B256, U256>, TraceError> {
        let Some(slots) = value.as_object() else {
            return self.field(
                "storage",
                Err(ValueError::WrongType {
                    expected: "an object of slot → value",
                    found: short(value),
                }),
            );
        };
        let mut out = BTreeMap::new();
        for (slot_text, v) in slots {
            let slot = self.field("storage", parse_word(slot_text))?;
            let val = self.field(&format!("storage[{slot_text}]"), parse_word_value(v))?;
            out.insert(slot, val);
        }
        Ok(out)
    }
}

fn parse_read(value: &Value, key: &str, line: usize) -> Result<AccountRead, TraceError> {
    let e = Entry {
        line,
        section: "reads",
        address: key,
    };
    let obj = object(value, line, &e.context())?;
    reject_unknown(
        obj,
        &["balance", "nonce", "code_hash", "code", "storage"],
        line,
        &e.context(),
    )?;
    let balance = e.field(
        "balance",
        parse_u256(required(obj, "balance", line, &e.context())?),
    )?;
    let nonce = e.field(
        "nonce",
        parse_u64(required(obj, "nonce", line, &e.context())?),
    )?;
    let code_hash = match obj.get("code_hash") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(e.field("code_hash", parse_hash(text))?),
        Some(other) => e.field(
            "code_hash",
            Err(ValueError::WrongType {
                expected: "a 32-byte hex string",
                found: short(other),
            }),
        )?,
    };
    let code = match obj.get("code") {
        None | Some(Value::Null) => None,
        Some(v) => Some(e.field("code", parse_bytes(v))?),
    };
    if let (Some(hash), Some(code)) = (code_hash, &code) {
        let expected = keccak256(code);
        if expected != hash {
            return Err(TraceError::CodeHashMismatch {
                line,
                address: key.to_owned(),
                expected: alloy_primitives::hex::encode_prefixed(expected),
                found: alloy_primitives::hex::encode_prefixed(hash),
            });
        }
    }
    let storage = match obj.get("storage") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(v) => e.storage(v)?,
    };
    Ok(AccountRead {
        balance,
        nonce,
        code_hash,
        code,
        storage,
    })
}

fn parse_write(value: &Value, key: &str, line: usize) -> Result<AccountWrite, TraceError> {
    let e = Entry {
        line,
        section: "writes",
        address: key,
    };
    let obj = object(value, line, &e.context())?;
    reject_unknown(
        obj,
        &["deleted", "balance", "nonce", "code", "storage"],
        line,
        &e.context(),
    )?;
    let deleted = match obj.get("deleted") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => e.field(
            "deleted",
            Err(ValueError::WrongType {
                expected: "true or false",
                found: short(other),
            }),
        )?,
    };
    let balance = match obj.get("balance") {
        None | Some(Value::Null) => None,
        Some(v) => Some(e.field("balance", parse_u256(v))?),
    };
    let nonce = match obj.get("nonce") {
        None | Some(Value::Null) => None,
        Some(v) => Some(e.field("nonce", parse_u64(v))?),
    };
    let code = match obj.get("code") {
        None | Some(Value::Null) => None,
        Some(v) => Some(e.field("code", parse_bytes(v))?),
    };
    let storage = match obj.get("storage") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(v) => e.storage(v)?,
    };
    let write = AccountWrite {
        deleted,
        balance,
        nonce,
        code,
        storage,
    };
    if !write.deleted && !write.has_fields() {
        return Err(TraceError::EmptyWrite {
            line,
            address: key.to_owned(),
        });
    }
    Ok(write)
}
