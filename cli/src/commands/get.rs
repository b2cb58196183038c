//! `strata get --datadir DIR [--block N] account ADDR | storage ADDR SLOT |
//! code ADDR`: read one value of the last committed block, or of one of the
//! last 128 blocks.

use std::path::PathBuf;

use alloy_primitives::{Address, B256};
use clap::{Args, Subcommand};
use strata_storage::genesis::{parse_address, parse_word};

use strata_storage::Regime;

use super::datadir::open_for_reading;

use crate::CliError;

/// Arguments of `strata get`.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// The data directory.
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// Read the state as it was after this block (one of the last 128,
    /// from the journal); default: the last committed block.
    #[arg(long, value_name = "N")]
    pub block: Option<u64>,
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

pub(super) fn run(args: GetArgs) -> Result<(), CliError> {
    let access = open_for_reading(&args.datadir)?;
    let reader = match args.block {
        Some(block) => access.reader_at(block, Regime::Exec),
        None => access.reader(Regime::Exec),
    }
    .map_err(CliError::storage(&args.datadir))?;
    let failed = CliError::storage(&args.datadir);
    match args.what {
        GetWhat::Account { address } => match reader.account(&address).map_err(failed)? {
            Some(account) => println!(
                "nonce {}\nbalance {}\ncode_hash {}",
                account.nonce, account.balance, account.code_hash
            ),
            None => println!("account {address} does not exist"),
        },
        GetWhat::Storage { address, slot } => {
            let value = reader.storage(&address, &slot).map_err(failed)?;
            println!("{value:#x}");
        }
        GetWhat::Code { address } => {
            let code = reader.code(&address).map_err(failed)?.unwrap_or_default();
            println!("{}", alloy_primitives::hex::encode_prefixed(&code));
        }
    }
    Ok(())
}
