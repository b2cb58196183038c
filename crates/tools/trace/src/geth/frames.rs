//! Finding the per-transaction tracer results in an input document:
//! a `debug_traceBlockByNumber` array `[{"txHash", "result"}, ...]`, a JSON-RPC
//! response wrapping it (`{"result": [...]}`), a single tracer result, or a
//! go-ethereum tracer fixture (which has the result under `result`).

use std::collections::BTreeMap;

use alloy_primitives::Address;
use serde_json::Value;
use strata_storage::genesis::short;

use super::GethError;
use super::account::{GethAccount, accounts};

/// The results of a block's transactions, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxFrames<T> {
    /// Transaction hashes where the input gives them.
    pub hashes: Vec<Option<String>>,
    /// One result per transaction.
    pub frames: Vec<T>,
}

/// One diffMode result: touched accounts before and changed fields after.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffFrame {
    /// Accounts the transaction modified, with their values before it.
    pub pre: BTreeMap<Address, GethAccount>,
    /// The fields that changed, with their values after it.
    pub post: BTreeMap<Address, GethAccount>,
}

/// The raw per-transaction results of a document.
fn tx_results<'a>(
    doc: &'a Value,
    input: &str,
) -> Result<Vec<(Option<String>, &'a Value)>, GethError> {
    let shape = |what: String| GethError::Shape {
        input: input.to_owned(),
        what,
    };
    match doc {
        Value::Array(entries) => entries
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let hash = entry
                    .get("txHash")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(result) = entry.get("result") {
                    Ok((hash, result))
                } else if let Some(error) = entry.get("error") {
                    Err(GethError::TxFailed {
                        input: input.to_owned(),
                        index,
                        hash: hash.unwrap_or_else(|| "no hash".to_owned()),
                        message: error
                            .as_str()
                            .map_or_else(|| error.to_string(), str::to_owned),
                    })
                } else {
                    Err(shape(format!(
                        "tx {index}: expected {{\"txHash\", \"result\"}}, found {}",
                        short(entry)
                    )))
                }
            })
            .collect(),
        Value::Object(map) => match map.get("result") {
            // A fixture or a JSON-RPC response: look inside (one level).
            Some(inner @ Value::Array(_)) => tx_results(inner, input),
            Some(inner @ Value::Object(_)) => Ok(vec![(None, inner)]),
            Some(other) => Err(shape(format!("\"result\" is {}", short(other)))),
            None => Ok(vec![(None, doc)]),
        },
        other => Err(shape(format!(
            "expected a tracer result (object or array), found {}",
            short(other)
        ))),
    }
}

/// Read default-mode (prestate) results.
pub fn prestate_frames(doc: &Value) -> Result<TxFrames<BTreeMap<Address, GethAccount>>, GethError> {
    let mut out = TxFrames::default();
    for (index, (hash, result)) in tx_results(doc, "prestate")?.into_iter().enumerate() {
        let input = format!("prestate, tx {index}");
        if result.get("pre").is_some() || result.get("post").is_some() {
            return Err(GethError::Shape {
                input,
                what: "this is diffMode output (it has \"pre\"/\"post\"); pass it with --diff"
                    .to_owned(),
            });
        }
        out.frames.push(accounts(result, &input)?);
        out.hashes.push(hash);
    }
    Ok(out)
}

/// Read diffMode results.
pub fn diff_frames(doc: &Value) -> Result<TxFrames<DiffFrame>, GethError> {
    let mut out = TxFrames::default();
    for (index, (hash, result)) in tx_results(doc, "diff")?.into_iter().enumerate() {
        let input = format!("diff, tx {index}");
        let (Some(pre), Some(post)) = (result.get("pre"), result.get("post")) else {
            return Err(GethError::Shape {
                input,
                what: "expected a diffMode result {\"pre\", \"post\"} (was the tracer run with diffMode: true?)".to_owned(),
            });
        };
        let pre = accounts(pre, &format!("{input}, pre"))?;
        let post = accounts(post, &format!("{input}, post"))?;
        out.frames.push(DiffFrame { pre, post });
        out.hashes.push(hash);
    }
    Ok(out)
}
