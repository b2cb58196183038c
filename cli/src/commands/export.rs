//! `strata export --datadir DIR [--out FILE]`: the state of a datadir's
//! last block as a line-by-line state dump — first `{"root": "0x…"}`, then
//! one account per line in address order with its balance, nonce, code
//! hash, code and storage — streamed page by page through the range reads
//! (`StateReader::accounts`, `storage_range`), opened read-only.
//!
//! The lines carry the fields reth's `init-state` reads (`address`,
//! `balance`, `nonce`, `code`, `storage` with 32-byte slot keys and values)
//! and geth's `dump --iterative` field names (`codeHash`); the per-account
//! storage root of geth's dump is not written.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use alloy_primitives::{Address, B256, Bytes, KECCAK256_EMPTY, U256};
use clap::Args;
use serde::Serialize;
use strata_storage::keys::next_key;
use strata_storage::{Regime, StateReader};

use super::datadir::open_for_reading;
use crate::CliError;

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
    /// beside it and renamed over it once whole).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// The first line of a dump.
#[derive(Serialize)]
struct RootLine {
    root: B256,
}

/// One account of a dump.
#[derive(Serialize)]
struct AccountLine {
    address: Address,
    balance: U256,
    nonce: u64,
    #[serde(rename = "codeHash")]
    code_hash: B256,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<Bytes>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    storage: BTreeMap<B256, B256>,
}

pub(super) fn run(args: ExportArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let db = open_for_reading(&args.datadir)?;
    let reader = db
        .reader(Regime::Exec)
        .map_err(CliError::storage(&args.datadir))?;
    let (accounts, slots) = match &args.out {
        Some(path) => {
            // Written beside the target and renamed over it once whole: an
            // export that fails or is killed leaves no truncated dump.
            let folder = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or_else(|| std::path::Path::new("."));
            let file = tempfile::NamedTempFile::new_in(folder).map_err(CliError::file(folder))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            let counts = write_dump(&reader, &args, &mut out).map_err(|e| match e {
                Failure::Write(e) => CliError::file(path)(e),
                Failure::Cli(e) => e,
            })?;
            let file = out
                .into_inner()
                .map_err(|e| CliError::file(path)(e.into_error()))?;
            file.as_file().sync_all().map_err(CliError::file(path))?;
            file.persist(path)
                .map_err(|e| CliError::file(path)(e.error))?;
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
    write_line(
        out,
        &RootLine {
            root: reader.root(),
        },
    )?;
    let (mut accounts, mut slots) = (0u64, 0u64);
    let mut from = Some(Address::ZERO);
    while let Some(start) = from {
        let page = reader.accounts(&start, ACCOUNT_PAGE).map_err(read)?;
        from = match page.last() {
            Some((last, _)) if page.len() == ACCOUNT_PAGE => next_address(last),
            _ => None,
        };
        for (address, account) in page {
            let code = if account.code_hash == KECCAK256_EMPTY {
                None
            } else {
                reader
                    .code_by_hash(&account.code_hash)
                    .map_err(read)?
                    .map(Bytes::from)
            };
            let storage = account_storage(reader, &address).map_err(read)?;
            slots += storage.len() as u64;
            accounts += 1;
            write_line(
                out,
                &AccountLine {
                    address,
                    balance: account.balance,
                    nonce: account.nonce,
                    code_hash: account.code_hash,
                    code,
                    storage,
                },
            )?;
        }
    }
    Ok((accounts, slots))
}

/// Every non-zero slot of `address`, read page by page.
fn account_storage(
    reader: &StateReader,
    address: &Address,
) -> strata_storage::Result<BTreeMap<B256, B256>> {
    let mut storage = BTreeMap::new();
    let mut from = Some(B256::ZERO);
    while let Some(start) = from {
        let page = reader.storage_range(address, &start, SLOT_PAGE)?;
        from = match page.last() {
            Some((last, _)) if page.len() == SLOT_PAGE => next_word(last),
            _ => None,
        };
        storage.extend(
            page.into_iter()
                .map(|(slot, value)| (slot, B256::from(value))),
        );
    }
    Ok(storage)
}

/// The address after `address`, `None` after the last.
fn next_address(address: &Address) -> Option<Address> {
    next_key(address.as_slice()).map(|b| Address::from_slice(&b))
}

/// The word after `word`, `None` after the last.
fn next_word(word: &B256) -> Option<B256> {
    next_key(word.as_slice()).map(|b| B256::from_slice(&b))
}

/// Writes `value` as one line of JSON.
fn write_line(out: &mut impl Write, value: &impl Serialize) -> Result<(), Failure> {
    serde_json::to_writer(&mut *out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(Failure::Write)
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
