//! `strata export --datadir DIR [--block N] [--out FILE]`: the state of a
//! datadir's last block (or of block N: one of the last 128, or any block
//! its history keeps) as a line-by-line state dump — first `{"root": "0x…"}`, then
//! one account per line in address order with its balance, nonce, code
//! hash, code and storage — streamed page by page through the range reads
//! (`StateReader::accounts`, `storage_range`), opened read-only. An
//! account's storage goes into its line a page at a time, so memory does
//! not grow with the largest account's storage.
//!
//! The lines carry the fields reth's `init-state` reads (`address`,
//! `balance`, `nonce`, `code`, `storage` with 32-byte slot keys and values)
//! and geth's `dump --iterative` field names (`codeHash`); the per-account
//! storage root of geth's dump is not written.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use alloy_primitives::{Address, B256, Bytes, KECCAK256_EMPTY};
use clap::Args;
use strata_storage::dump::{AccountLine, DumpWriter};
use strata_storage::keys::next_key;
use strata_storage::{Regime, StateReader};

use super::datadir::open_for_reading;
use crate::CliError;
use crate::output_file::{OutputFile, Protected};

/// Accounts read per range request.
const ACCOUNT_PAGE: usize = 1_024;
/// Slots read per range request.
const SLOT_PAGE: usize = 4_096;

/// Arguments of `strata export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The data directory (opened read-only; a writer may keep writing).
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// Write the dump to this file instead of standard output (written
    /// beside it and renamed over it once whole; through a symlink, beside
    /// the file it leads to; a device or FIFO is written to directly; never
    /// a file in the datadir).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Export the state as it was after this block (one of the last 128,
    /// from the journal, or any block a datadir made with --history
    /// keeps); default: the last committed block.
    #[arg(long, value_name = "N")]
    pub block: Option<u64>,
}

pub(super) fn run(args: ExportArgs) -> Result<(), CliError> {
    let started = Instant::now();
    // The output is checked (never inside the datadir) before the store opens.
    let mut protected = Protected::new().datadir(&args.datadir);
    let out = args
        .out
        .as_deref()
        .map(|out| OutputFile::create("--out", out, &mut protected))
        .transpose()?;
    let db = open_for_reading(&args.datadir)?;
    let reader = match args.block {
        Some(block) => db.reader_at(block, Regime::Exec),
        None => db.reader(Regime::Exec),
    }
    .map_err(CliError::storage(&args.datadir))?;
    let (accounts, slots) = match out {
        Some(mut file) => {
            let counts = write_dump(&reader, &args, &mut file).map_err(|e| match e {
                Failure::Write(e) => CliError::file(file.path())(e),
                Failure::Cli(e) => e,
            })?;
            file.finish()?;
            counts
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let counts = write_dump(&reader, &args, &mut out).map_err(|e| match e {
                Failure::Write(e) => CliError::Output(e),
                Failure::Cli(e) => e,
            })?;
            out.flush().map_err(CliError::Output)?;
            counts
        }
    };
    eprintln!(
        "exported {accounts} accounts and {slots} slots of block {} (root {}) in {:.2} s",
        reader
            .block()
            .map_or_else(|| "none".to_owned(), |b| b.to_string()),
        reader.root(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Why writing a dump stopped.
enum Failure {
    /// The output could not be written.
    Write(std::io::Error),
    /// The store could not be read.
    Cli(CliError),
}

/// Writes the dump of `reader`'s block to `out`; returns the accounts and
/// slots written.
fn write_dump(
    reader: &StateReader,
    args: &ExportArgs,
    out: &mut impl Write,
) -> Result<(u64, u64), Failure> {
    let read = |e| Failure::Cli(CliError::storage(&args.datadir)(e));
    let mut dump = DumpWriter::new(out, reader.root()).map_err(Failure::Write)?;
    let mut from = Some(Address::ZERO);
    while let Some(start) = from {
        let page = reader.accounts(&start, ACCOUNT_PAGE).map_err(read)?;
        from = match page.last() {
            Some((last, _)) if page.len() == ACCOUNT_PAGE => next_address(last),
            _ => None,
        };
        for (address, account) in page {
            let code = if account.code_hash == KECCAK256_EMPTY {
                Bytes::new()
            } else {
                let code = reader.code_by_hash(&account.code_hash).map_err(read)?;
                let code = code.ok_or_else(|| {
                    Failure::Cli(CliError::MissingCode {
                        datadir: args.datadir.clone(),
                        address,
                        code_hash: account.code_hash,
                    })
                })?;
                Bytes::from(code)
            };
            let mut line = dump
                .begin_account(address, account.nonce, account.balance, &code)
                .map_err(Failure::Write)?;
            write_storage(reader, &address, &mut line, &args.datadir)?;
            line.finish().map_err(Failure::Write)?;
        }
    }
    Ok(dump.counts())
}

/// Writes the storage of `address` into its `line`, a page of slots at a
/// time (slot order, as the range reads return them).
fn write_storage(
    reader: &StateReader,
    address: &Address,
    line: &mut AccountLine<'_, impl Write>,
    datadir: &Path,
) -> Result<(), Failure> {
    let mut from = Some(B256::ZERO);
    while let Some(start) = from {
        let page = reader
            .storage_range(address, &start, SLOT_PAGE)
            .map_err(|e| Failure::Cli(CliError::storage(datadir)(e)))?;
        from = match page.last() {
            Some((last, _)) if page.len() == SLOT_PAGE => next_word(last),
            _ => None,
        };
        for (slot, value) in page {
            line.slot(slot, value).map_err(Failure::Write)?;
        }
    }
    Ok(())
}

/// The address after `address`, `None` after the last.
fn next_address(address: &Address) -> Option<Address> {
    next_key(address.as_slice()).map(|b| Address::from_slice(&b))
}

/// The word after `word`, `None` after the last.
fn next_word(word: &B256) -> Option<B256> {
    next_key(word.as_slice()).map(|b| B256::from_slice(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_keys_carry_and_end() {
        assert_eq!(
            next_address(&Address::with_last_byte(0xff)),
            Some(Address::from_slice(&{
                let mut b = [0u8; 20];
                b[18] = 1;
                b
            }))
        );
        assert_eq!(next_word(&B256::repeat_byte(0xff)), None);
    }
}
