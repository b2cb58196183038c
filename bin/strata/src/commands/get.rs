//! `strata get --datadir DIR [--block N] [--json] account ADDR | storage
//! ADDR SLOT | code ADDR`: read one value of the last committed block, or of
//! one of the last 128 blocks (any block its history keeps).

use std::path::PathBuf;

use alloy_primitives::{Address, B256, Bytes};
use clap::{Args, Subcommand};
use serde::Serialize;
use strata_storage::genesis::{parse_address, parse_word};

use strata_storage::{Regime, StateReader};

use super::datadir::open_for_reading;

use crate::CliError;
use crate::output::{print_json, print_text};

/// Arguments of `strata get`.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// Read the state as it was after this block (one of the last 128,
    /// from the journal, or any block a datadir made with --history
    /// keeps); default: the last committed block.
    #[arg(long, value_name = "N")]
    pub block: Option<u64>,
    /// Print one JSON object: the block read, the address (and slot), and
    /// the value (`account` null for an absent account; balance as a
    /// decimal string, since a U256 overflows JSON numbers).
    #[arg(long)]
    pub json: bool,
    /// What to read.
    #[command(subcommand)]
    pub what: GetWhat,
}

/// What `strata get` reads.
#[derive(Debug, Clone, Subcommand)]
pub enum GetWhat {
    /// An account: nonce, balance, code hash.
    Account {
        /// The account's address (0x + 40 hex digits).
        #[arg(value_parser = address_arg)]
        address: Address,
    },
    /// One storage slot.
    Storage {
        /// The account's address.
        #[arg(value_parser = address_arg)]
        address: Address,
        /// The slot (hex, up to 32 bytes; left-padded).
        #[arg(value_parser = slot_arg)]
        slot: B256,
    },
    /// An account's bytecode.
    Code {
        /// The account's address.
        #[arg(value_parser = address_arg)]
        address: Address,
    },
}

fn address_arg(text: &str) -> Result<Address, String> {
    parse_address(text).map_err(|e| e.to_string())
}

fn slot_arg(text: &str) -> Result<B256, String> {
    parse_word(text).map_err(|e| e.to_string())
}

/// What `strata get` read, as text prints it and `--json` serializes it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Value {
    /// An account (`None`: it does not exist).
    Account {
        /// The account's address.
        address: Address,
        /// Its fields.
        account: Option<AccountJson>,
    },
    /// One slot.
    Storage {
        /// The account's address.
        address: Address,
        /// The slot.
        slot: B256,
        /// Its value, as a minimal 0x hex quantity (`0x0` when unset).
        value: String,
    },
    /// Bytecode.
    Code {
        /// The account's address.
        address: Address,
        /// The code (`0x` when none).
        code: Bytes,
        /// Its length in bytes.
        bytes: usize,
    },
}

/// An account's fields in `strata get --json`.
#[derive(Debug, Serialize)]
struct AccountJson {
    nonce: u64,
    /// Decimal: a U256 does not fit a JSON number.
    balance: String,
    code_hash: B256,
}

/// `strata get --json`: the block read and what was found.
#[derive(Debug, Serialize)]
struct GetJson {
    /// The block whose state was read (`None` before the genesis).
    block: Option<u64>,
    /// What was read.
    #[serde(flatten)]
    value: Value,
}

pub(super) fn run(args: GetArgs) -> Result<(), CliError> {
    let access = open_for_reading(&args.datadir)?;
    let reader = match args.block {
        Some(block) => access.reader_at(block, Regime::Exec),
        None => access.reader(Regime::Exec),
    }
    .map_err(CliError::storage(&args.datadir))?;
    let value = read(&reader, &args.what).map_err(CliError::storage(&args.datadir))?;
    if args.json {
        print_json(&GetJson {
            block: reader.block(),
            value,
        })
    } else {
        print_text(&text(&value))
    }
}

/// Reads what `what` names from `reader`.
fn read(reader: &StateReader, what: &GetWhat) -> strata_storage::Result<Value> {
    Ok(match *what {
        GetWhat::Account { address } => Value::Account {
            address,
            account: reader.account(&address)?.map(|account| AccountJson {
                nonce: account.nonce,
                balance: account.balance.to_string(),
                code_hash: account.code_hash,
            }),
        },
        GetWhat::Storage { address, slot } => Value::Storage {
            address,
            slot,
            value: format!("{:#x}", reader.storage(&address, &slot)?),
        },
        GetWhat::Code { address } => {
            let code = reader.code(&address)?.unwrap_or_default();
            Value::Code {
                address,
                bytes: code.len(),
                code: Bytes(code),
            }
        }
    })
}

/// The text output: `nonce N\nbalance B\ncode_hash H`, `account A does not
/// exist`, the slot's hex value, or the code's hex.
fn text(value: &Value) -> String {
    match value {
        Value::Account {
            account: Some(account),
            ..
        } => format!(
            "nonce {}\nbalance {}\ncode_hash {}\n",
            account.nonce, account.balance, account.code_hash
        ),
        Value::Account {
            address,
            account: None,
        } => format!("account {address} does not exist\n"),
        Value::Storage { value, .. } => format!("{value}\n"),
        Value::Code { code, .. } => format!("{code}\n"),
    }
}
