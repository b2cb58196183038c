//! `strata import-geth --prestate FILE --diff FILE [--block-header FILE]
//! [--number N]`: print one trace block line built from geth prestateTracer
//! output (see `strata_trace::geth`).

use std::io::Write;
use std::path::{Path, PathBuf};

use alloy_primitives::B256;
use clap::{ArgGroup, Args};
use serde_json::Value;
use strata_storage::genesis::{ValueError, parse_hash, parse_u64, short};
use strata_trace::geth::{diff_frames, merge_block, parse_document, prestate_frames};
use strata_trace::{TraceLine, line_to_string};

use crate::{CliError, FlagError, InputProblem};

/// Arguments of `strata import-geth`: `--prestate`, `--diff` or both are
/// required (the usage line shows the pair as `<--prestate <FILE>|--diff
/// <FILE>>`).
#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("tracer_output")
        .args(["prestate", "diff"])
        .required(true)
        .multiple(true)
))]
pub struct ImportGethArgs {
    /// Default-mode prestateTracer output (the reads). Required unless
    /// --diff is given; give both for a block's reads and writes.
    #[arg(long, value_name = "FILE")]
    pub prestate: Option<PathBuf>,
    /// diffMode prestateTracer output of the same block (the writes).
    /// Required unless --prestate is given.
    #[arg(long, value_name = "FILE")]
    pub diff: Option<PathBuf>,
    /// The block header (eth_getBlockByNumber result): number, gasUsed, stateRoot.
    #[arg(long, value_name = "FILE")]
    pub block_header: Option<PathBuf>,
    /// The block number (overrides the header and a fixture's context).
    #[arg(long, value_name = "N")]
    pub number: Option<u64>,
}

/// What the header file says about the block.
#[derive(Debug, Default)]
struct Header {
    number: Option<u64>,
    gas_used: Option<u64>,
    state_root: Option<B256>,
}

/// Read `path` as a geth JSON document, refusing any object with a repeated
/// key ([`parse_document`]).
fn read_document(path: &Path) -> Result<Value, CliError> {
    let text = std::fs::read_to_string(path).map_err(CliError::file(path))?;
    parse_document(&text).map_err(CliError::json(path))
}

fn header_field<T>(path: &Path, field: &str, result: Result<T, ValueError>) -> Result<T, CliError> {
    result.map_err(|e| CliError::Input {
        path: path.to_owned(),
        problem: InputProblem::HeaderField {
            field: field.to_owned(),
            reason: e.to_string(),
        },
    })
}

fn read_header(path: &Path) -> Result<Header, CliError> {
    let doc = read_document(path)?;
    let header = doc.get("result").unwrap_or(&doc);
    if !header.is_object() {
        return Err(CliError::Input {
            path: path.to_owned(),
            problem: InputProblem::NotAHeader {
                found: short(header),
            },
        });
    }
    let mut out = Header::default();
    if let Some(v) = header.get("number") {
        out.number = Some(header_field(path, "number", parse_u64(v))?);
    }
    if let Some(v) = header.get("gasUsed") {
        out.gas_used = Some(header_field(path, "gasUsed", parse_u64(v))?);
    }
    if let Some(v) = header.get("stateRoot") {
        let text = v.as_str().ok_or_else(|| ValueError::WrongType {
            expected: "a hex string",
            found: short(v),
        });
        out.state_root = Some(header_field(path, "stateRoot", text.and_then(parse_hash))?);
    }
    Ok(out)
}

/// A go-ethereum tracer fixture names its block in `context.number`.
fn fixture_number(doc: &Value) -> Option<u64> {
    doc.get("context")
        .and_then(|c| c.get("number"))
        .and_then(|n| parse_u64(n).ok())
}

pub(super) fn run(args: ImportGethArgs) -> Result<(), CliError> {
    let prestate_doc = args.prestate.as_deref().map(read_document).transpose()?;
    let diff_doc = args.diff.as_deref().map(read_document).transpose()?;
    let header = args
        .block_header
        .as_deref()
        .map(read_header)
        .transpose()?
        .unwrap_or_default();

    let geth_err = |path: &Option<PathBuf>| {
        let path = path.clone().unwrap_or_default();
        move |source| CliError::Geth {
            path,
            source: Box::new(source),
        }
    };
    let prestate = prestate_doc
        .as_ref()
        .map(prestate_frames)
        .transpose()
        .map_err(geth_err(&args.prestate))?;
    let diff = diff_doc
        .as_ref()
        .map(diff_frames)
        .transpose()
        .map_err(geth_err(&args.diff))?;

    let number = args
        .number
        .or(header.number)
        .or_else(|| prestate_doc.as_ref().and_then(fixture_number))
        .or_else(|| diff_doc.as_ref().and_then(fixture_number))
        .ok_or(FlagError::UnknownBlockNumber)?;
    let geth_path = args
        .diff
        .clone()
        .or(args.prestate.clone())
        .unwrap_or_default();
    let mut block =
        merge_block(number, prestate.as_ref(), diff.as_ref()).map_err(|source| CliError::Geth {
            path: geth_path,
            source: Box::new(source),
        })?;
    block.gas_used = header.gas_used;
    block.state_root = header.state_root;
    if block.state_root.is_some() {
        eprintln!(
            "import-geth: note: per-transaction traces miss system calls (EIP-4788/2935), withdrawals \
             and block rewards, so replaying this block alone may not reach the header's stateRoot"
        );
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", line_to_string(&TraceLine::Block(block))).map_err(CliError::Output)
}
