//! Turning one JSON line into a typed [`TraceLine`], with errors that name
//! the line, the section, the address and the field.
//!
//! The line is deserialized straight into the `Raw*` structs below (no
//! `serde_json::Value`): serde refuses unknown and repeated fields, values
//! are kept as written ([`Scalar`]) and typed afterwards so that an error
//! can name where it is, and the `reads` / `writes` / `storage` objects keep
//! their keys as written so that the same address in another letter case or
//! the same slot as `0x1` and `0x01` is refused instead of overwriting.
//! `null` is never a value, and `"0x"` is not a number.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256, keccak256};
use serde::Deserialize;
use strata_storage::genesis::{
    AccountError, Entries, KeyError, RawGenesis, Repeated, Scalar, ValueError, parse_address,
    shorten, storage_map, unique,
};

use crate::{AccountRead, AccountWrite, TraceBlock, TraceError, TraceLine};

/// A trace line as written (both kinds; the kind decides which fields may appear).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLine<'a> {
    #[serde(default, borrow)]
    kind: Scalar<'a>,
    #[serde(default, borrow)]
    number: Scalar<'a>,
    #[serde(default, borrow)]
    gas_used: Scalar<'a>,
    #[serde(default, borrow)]
    state_root: Scalar<'a>,
    #[serde(default, borrow)]
    alloc: RawGenesis<'a>,
    #[serde(default, borrow)]
    reads: Entries<'a, RawRead<'a>>,
    #[serde(default, borrow)]
    writes: Entries<'a, RawWrite<'a>>,
    #[serde(default)]
    access_list: Option<serde_json::Value>,
}

/// A `reads` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a reads entry object")]
struct RawRead<'a> {
    #[serde(default, borrow)]
    balance: Scalar<'a>,
    #[serde(default, borrow)]
    nonce: Scalar<'a>,
    #[serde(default, borrow)]
    code_hash: Scalar<'a>,
    #[serde(default, borrow)]
    code: Scalar<'a>,
    #[serde(default, borrow)]
    storage: Entries<'a, Scalar<'a>>,
}

/// A `writes` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a writes entry object")]
struct RawWrite<'a> {
    #[serde(default, borrow)]
    deleted: Scalar<'a>,
    #[serde(default, borrow)]
    balance: Scalar<'a>,
    #[serde(default, borrow)]
    nonce: Scalar<'a>,
    #[serde(default, borrow)]
    code: Scalar<'a>,
    #[serde(default, borrow)]
    storage: Entries<'a, Scalar<'a>>,
}

/// Parse one line of a trace. `line` is its 1-based number, used in errors.
/// Ordering rules (genesis first, consecutive numbers) are the reader's job.
pub fn parse_line(text: &str, line: usize) -> Result<TraceLine, TraceError> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        // Refused here: serde would read an array as a struct's fields in order.
        let found = match serde_json::from_str::<Scalar<'_>>(text) {
            Err(e) => return Err(json_error(e, line)),
            Ok(Scalar::Array) => shorten(trimmed.trim_end()),
            Ok(other) => other.to_string(),
        };
        return Err(TraceError::NotAnObject {
            line,
            context: "line".to_owned(),
            found,
        });
    }
    let raw: RawLine<'_> = serde_json::from_str(text).map_err(|e| line_error(text, e, line))?;
    match &raw.kind {
        Scalar::Missing => Err(TraceError::MissingField {
            line,
            context: "line".to_owned(),
            field: "kind",
        }),
        Scalar::Str(kind) if kind == "genesis" => parse_genesis(raw, line),
        Scalar::Str(kind) if kind == "block" => parse_block(raw, line).map(TraceLine::Block),
        other => Err(TraceError::UnknownKind {
            line,
            kind: other.to_string(),
        }),
    }
}

fn json_error(e: serde_json::Error, line: usize) -> TraceError {
    TraceError::Json {
        line,
        column: e.column(),
        message: without_position(&e),
    }
}

/// serde_json's message without its " at line L column C" (the trace line
/// is ours to name).
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    message
        .rsplit_once(" at line ")
        .map_or(message.as_str(), |(head, _)| head)
        .to_owned()
}

/// The error of a line that failed to deserialize. A shape error (unknown
/// or repeated field, an entry that is not an object) is parsed once more
/// with path tracking — only then, so the fast path pays nothing — to name
/// the section and address it is in.
fn line_error(text: &str, e: serde_json::Error, line: usize) -> TraceError {
    if !e.is_data() {
        return json_error(e, line);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let (context, e) = match serde_path_to_error::deserialize::<_, RawLine<'_>>(&mut de) {
        Err(tracked) => {
            let message = tracked.inner().to_string();
            let mut keys: Vec<&str> = tracked
                .path()
                .iter()
                .filter_map(|segment| match segment {
                    serde_path_to_error::Segment::Map { key } => Some(key.as_str()),
                    _ => None,
                })
                .collect();
            // An unknown field's path ends in the field itself, which the
            // message names already.
            if keys
                .last()
                .is_some_and(|last| message.starts_with(&format!("unknown field `{last}`")))
            {
                keys.pop();
            }
            (keys.join(" "), tracked.into_inner())
        }
        Ok(_) => (String::new(), e),
    };
    TraceError::Schema {
        line,
        context: if context.is_empty() {
            "line".to_owned()
        } else {
            context
        },
        column: e.column(),
        message: without_position(&e),
    }
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

fn optional_top<'s, T>(
    value: &Scalar<'s>,
    line: usize,
    field: &'static str,
    read: impl FnOnce(&Scalar<'s>) -> Result<T, ValueError>,
) -> Result<Option<T>, TraceError> {
    match value {
        Scalar::Missing => Ok(None),
        given => top_field(read(given), line, field).map(Some),
    }
}

/// Refuse a field of the other kind of line.
fn reject_present(
    present: bool,
    field: &str,
    line: usize,
    context: &str,
) -> Result<(), TraceError> {
    if present {
        return Err(TraceError::UnknownField {
            line,
            context: context.to_owned(),
            field: field.to_owned(),
        });
    }
    Ok(())
}

fn parse_genesis(raw: RawLine<'_>, line: usize) -> Result<TraceLine, TraceError> {
    reject_present(raw.number != Scalar::Missing, "number", line, "genesis")?;
    reject_present(raw.gas_used != Scalar::Missing, "gas_used", line, "genesis")?;
    reject_present(
        !matches!(raw.reads, Entries::Missing),
        "reads",
        line,
        "genesis",
    )?;
    reject_present(
        !matches!(raw.writes, Entries::Missing),
        "writes",
        line,
        "genesis",
    )?;
    reject_present(raw.access_list.is_some(), "access_list", line, "genesis")?;
    let alloc = match raw.alloc {
        RawGenesis::Missing => {
            return Err(TraceError::MissingField {
                line,
                context: "genesis".to_owned(),
                field: "alloc",
            });
        }
        RawGenesis::NotMap(found) => {
            return Err(TraceError::NotAnObject {
                line,
                context: "genesis \"alloc\"".to_owned(),
                found: found.to_string(),
            });
        }
        doc => doc
            .into_alloc()
            .map_err(|source| TraceError::Genesis { line, source })?,
    };
    let state_root = optional_top(&raw.state_root, line, "state_root", Scalar::hash)?;
    Ok(TraceLine::Genesis { alloc, state_root })
}

fn parse_block(raw: RawLine<'_>, line: usize) -> Result<TraceBlock, TraceError> {
    reject_present(
        !matches!(raw.alloc, RawGenesis::Missing),
        "alloc",
        line,
        "block",
    )?;
    let number = match &raw.number {
        Scalar::Missing => {
            return Err(TraceError::MissingField {
                line,
                context: "block".to_owned(),
                field: "number",
            });
        }
        given => top_field(given.u64(), line, "number")?,
    };
    let gas_used = optional_top(&raw.gas_used, line, "gas_used", Scalar::u64)?;
    let state_root = optional_top(&raw.state_root, line, "state_root", Scalar::hash)?;
    let mut reads = Vec::new();
    for (key, entry) in section(raw.reads, line, "reads")? {
        reads.push((key.clone(), parse_read(entry, &key, line)?));
    }
    let reads = addresses(reads, line, "reads")?;
    let mut writes = Vec::new();
    for (key, entry) in section(raw.writes, line, "writes")? {
        writes.push((key.clone(), parse_write(entry, &key, line)?));
    }
    let writes = addresses(writes, line, "writes")?;
    let access_list = raw
        .access_list
        .map(|value| {
            alloy_eip7928::BlockAccessList::deserialize(value).map_err(|error| {
                TraceError::AccessList {
                    line,
                    message: error.to_string(),
                }
            })
        })
        .transpose()?;
    Ok(TraceBlock {
        number,
        gas_used,
        state_root,
        reads,
        writes,
        access_list,
    })
}

type Section<'a, V> = Vec<(std::borrow::Cow<'a, str>, V)>;

fn section<'a, V>(
    entries: Entries<'a, V>,
    line: usize,
    name: &'static str,
) -> Result<Section<'a, V>, TraceError> {
    match entries {
        Entries::Map(entries) => Ok(entries),
        Entries::Missing => Err(TraceError::MissingField {
            line,
            context: "block".to_owned(),
            field: name,
        }),
        Entries::NotMap(found) => Err(TraceError::NotAnObject {
            line,
            context: name.to_owned(),
            found: found.to_string(),
        }),
    }
}

/// Type the addresses of a section; the same address twice (in any letter
/// case, with or without `0x`) is an error naming both spellings.
fn addresses<V>(
    entries: Section<'_, V>,
    line: usize,
    section: &'static str,
) -> Result<BTreeMap<Address, V>, TraceError> {
    unique(entries, parse_address).map_err(|e| match e {
        KeyError::Invalid { text, source } => TraceError::Address {
            line,
            section,
            text,
            source,
        },
        KeyError::Repeated(Repeated { first, second }) => TraceError::RepeatedAddress {
            line,
            section,
            first,
            second,
        },
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

    fn required<'s, T>(
        &self,
        value: &Scalar<'s>,
        field: &'static str,
        read: impl FnOnce(&Scalar<'s>) -> Result<T, ValueError>,
    ) -> Result<T, TraceError> {
        match value {
            Scalar::Missing => Err(TraceError::MissingField {
                line: self.line,
                context: self.context(),
                field,
            }),
            given => self.field(field, read(given)),
        }
    }

    fn optional<'s, T>(
        &self,
        value: &Scalar<'s>,
        field: &str,
        read: impl FnOnce(&Scalar<'s>) -> Result<T, ValueError>,
    ) -> Result<Option<T>, TraceError> {
        match value {
            Scalar::Missing => Ok(None),
            given => self.field(field, read(given)).map(Some),
        }
    }

    /// Parse `storage`: slot (hex, ≤ 32 bytes) → value; zero values kept.
    fn storage(
        &self,
        storage: Entries<'_, Scalar<'_>>,
    ) -> Result<BTreeMap<B256, U256>, TraceError> {
        storage_map(storage).map_err(|e| match e {
            AccountError::Field { field, source } => TraceError::Account {
                line: self.line,
                section: self.section,
                address: self.address.to_owned(),
                field,
                source,
            },
            AccountError::RepeatedSlot(Repeated { first, second }) => TraceError::RepeatedSlot {
                line: self.line,
                section: self.section,
                address: self.address.to_owned(),
                first,
                second,
            },
        })
    }
}

fn parse_read(raw: RawRead<'_>, key: &str, line: usize) -> Result<AccountRead, TraceError> {
    let e = Entry {
        line,
        section: "reads",
        address: key,
    };
    let balance = e.required(&raw.balance, "balance", Scalar::u256)?;
    let nonce = e.required(&raw.nonce, "nonce", Scalar::u64)?;
    let code_hash = e.optional(&raw.code_hash, "code_hash", Scalar::hash)?;
    let code = e.optional(&raw.code, "code", Scalar::bytes)?;
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
    let storage = e.storage(raw.storage)?;
    Ok(AccountRead {
        balance,
        nonce,
        code_hash,
        code,
        storage,
    })
}

fn parse_write(raw: RawWrite<'_>, key: &str, line: usize) -> Result<AccountWrite, TraceError> {
    let e = Entry {
        line,
        section: "writes",
        address: key,
    };
    let write = AccountWrite {
        deleted: e
            .optional(&raw.deleted, "deleted", Scalar::flag)?
            .unwrap_or(false),
        balance: e.optional(&raw.balance, "balance", Scalar::u256)?,
        nonce: e.optional(&raw.nonce, "nonce", Scalar::u64)?,
        code: e.optional(&raw.code, "code", Scalar::bytes)?,
        storage: e.storage(raw.storage)?,
    };
    if !write.deleted && !write.has_fields() {
        return Err(TraceError::EmptyWrite {
            line,
            address: key.to_owned(),
        });
    }
    Ok(write)
}
