//! Line-by-line state dumps: the format geth writes with `dump --iterative`
//! and reth's `init-state` reads, and `strata export` writes.
//!
//! ```text
//! {"root":"0x…"}
//! {"address":"0x…","balance":"0x…","nonce":1,"code":"0x…","codeHash":"0x…","storage":{"0x…":"0x…"}}
//! …
//! ```
//!
//! The first line names the state root; every other line is one account
//! with its `address`, in any order. An account line is read by the
//! genesis account convention ([`crate::genesis`]): `balance` and `nonce`
//! as hex, decimal or a number, storage slots and values as hex (with or
//! without `0x`, shorter than 32 bytes left-padded), zero values dropped,
//! unknown fields (geth's `root`, `key`) ignored. `codeHash`, when given,
//! must be the hash of `code`; a code hash without its code is refused
//! (the state could not be rebuilt). Blank lines are skipped.
//!
//! geth writes an account's `address` and its storage slots only when it
//! holds their preimages; a dump without them cannot be imported, and a
//! line without `address` is refused.
//!
//! [`DumpReader`] reads a dump in bounded memory: it parses batches of
//! lines on the rayon pool and yields the accounts in file order; as an
//! import's [`AccountSource`], a line longer than the import's
//! [`LargeStorage::stream_above_bytes`] is parsed as it is read, its slots
//! streamed into the import's sort of its own ([`stream`]), so that no
//! account is ever held whole. [`DumpWriter`] writes one, a line per account: `address`, `balance`,
//! `nonce`, `codeHash`, `code` (when not empty) and `storage` (32-byte
//! slots and values, when not empty) — the fields reth's `init-state`
//! reads, under geth's names (geth's per-account `root` is not written).

use std::collections::VecDeque;
use std::io::BufRead;

use alloy_primitives::{Address, B256};
use rayon::prelude::*;
use serde::Deserialize;

use crate::import::{AccountSource, LargeStorage, SourceAccount};
use strata_genesis::{
    GenesisAccount, GenesisError, RawAccount, Scalar, ValueError, parse_address, typed_account,
};
use strata_types::account::code_hash;

mod stream;
mod writer;

use stream::{LongLine, parse_long_line};
pub use writer::{AccountLine, DumpWriter};

/// Lines parsed together on the rayon pool.
const BATCH_LINES: usize = 1024;
/// Bytes of lines parsed together (a few accounts with large storage).
const BATCH_BYTES: usize = 16 << 20;
/// The longest first line read (`{"root": …}` is 77 bytes).
const ROOT_LINE_BYTES: usize = 64 << 10;

/// Why a state dump could not be read; each names its 1-based line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    /// The dump could not be read.
    #[error("line {line}: read failed: {source}")]
    Io {
        /// The line being read.
        line: u64,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not valid JSON or not an object of the expected shape.
    #[error("line {line}: invalid JSON: {message}")]
    Json {
        /// The line.
        line: u64,
        /// What the JSON parser reported (with the column).
        message: String,
    },
    /// The first line is not `{"root": "0x…"}`.
    #[error("line {line}: expected the dump's first line {{\"root\": \"0x…\"}}, found {found}")]
    MissingRoot {
        /// The first non-blank line.
        line: u64,
        /// What it holds instead.
        found: String,
    },
    /// The `root` of the first line is not a 32-byte hex hash.
    #[error("line {line}: invalid root: {source}")]
    Root {
        /// The line.
        line: u64,
        /// What is wrong with it.
        #[source]
        source: ValueError,
    },
    /// An account line has no `address` (geth writes none for accounts whose
    /// preimage it lacks), or an address that is not 20 bytes of hex.
    #[error("line {line}: {what}")]
    Address {
        /// The line.
        line: u64,
        /// What is wrong.
        what: String,
    },
    /// A field of an account line could not be read.
    #[error("line {line}: {source}")]
    Account {
        /// The line.
        line: u64,
        /// The field and what is wrong with it.
        #[source]
        source: GenesisError,
    },
    /// `codeHash` is not the hash of `code` (or the code is missing).
    #[error("line {line}: account {address}: codeHash {given} but the code hashes to {computed}")]
    CodeHash {
        /// The line.
        line: u64,
        /// The account.
        address: Address,
        /// `codeHash` as given.
        given: B256,
        /// keccak256 of `code` (of the empty code when `code` is absent).
        computed: B256,
    },
    /// A storage entry of a streamed line (one too long to hold) is bad,
    /// before the line's `address` was read.
    #[error("line {line}: field {field:?}: {source}")]
    Field {
        /// The line.
        line: u64,
        /// `storage` or `storage[slot]`.
        field: String,
        /// What is wrong.
        #[source]
        source: ValueError,
    },
    /// A streamed line lists a slot twice (in any spelling).
    #[error("line {line}: account {address}: storage slot {slot} is listed twice")]
    RepeatedSlot {
        /// The line.
        line: u64,
        /// The account.
        address: Address,
        /// The slot.
        slot: B256,
    },
    /// The storage of a streamed line could not be set aside in the
    /// import's scratch folder (the import reports why).
    #[error("line {line}: the account's storage could not be sorted on disk")]
    Spill {
        /// The line.
        line: u64,
    },
}

/// The dump's first line.
#[derive(Deserialize)]
struct Header<'a> {
    #[serde(default, borrow)]
    root: Scalar<'a>,
    #[serde(default, borrow)]
    address: Scalar<'a>,
}

/// Reads a state dump: [`DumpReader::root`], then the accounts in file
/// order — as an import's [`AccountSource`] (long lines streamed), or
/// whole ([`DumpReader::whole_accounts`]).
pub struct DumpReader<R> {
    input: R,
    root: B256,
    /// 1-based number of the last line read.
    line: u64,
    parsed: VecDeque<Result<(Address, GenesisAccount), DumpError>>,
    /// A line too long to parse whole, after the lines of `parsed`.
    long: Option<LongLine>,
    /// The line of the last streamed account.
    streamed_line: u64,
    done: bool,
}

impl<R: BufRead> DumpReader<R> {
    /// Reads the first line (the root) of `input`.
    pub fn new(mut input: R) -> Result<Self, DumpError> {
        let mut line = 0;
        let mut text = Vec::new();
        loop {
            text.clear();
            line += 1;
            let read = read_bounded(&mut input, &mut text, ROOT_LINE_BYTES)
                .map_err(|source| DumpError::Io { line, source })?;
            if read == 0 {
                return Err(DumpError::MissingRoot {
                    line,
                    found: "the end of the input".to_owned(),
                });
            }
            if text.len() > ROOT_LINE_BYTES {
                return Err(DumpError::MissingRoot {
                    line,
                    found: format!("a line of more than {ROOT_LINE_BYTES} bytes"),
                });
            }
            if !text.trim_ascii().is_empty() {
                break;
            }
        }
        let text = line_text(line, &text)?;
        let header: Header<'_> =
            serde_json::from_str(text.trim_end()).map_err(|e| DumpError::Json {
                line,
                message: e.to_string(),
            })?;
        let root = match (&header.root, &header.address) {
            (Scalar::Missing, Scalar::Missing) => {
                return Err(DumpError::MissingRoot {
                    line,
                    found: "an object without \"root\"".to_owned(),
                });
            }
            (Scalar::Missing, _) => {
                return Err(DumpError::MissingRoot {
                    line,
                    found: "an account line".to_owned(),
                });
            }
            (root, _) => root
                .hash()
                .map_err(|source| DumpError::Root { line, source })?,
        };
        Ok(Self {
            input,
            root,
            line,
            parsed: VecDeque::new(),
            long: None,
            streamed_line: 0,
            done: false,
        })
    }

    /// The state root the dump's first line names.
    pub fn root(&self) -> B256 {
        self.root
    }

    /// The accounts, every line parsed whole (a line's storage is held in
    /// memory however large; an import streams long lines instead).
    pub fn whole_accounts(
        mut self,
    ) -> impl Iterator<Item = Result<(Address, GenesisAccount), DumpError>> {
        std::iter::from_fn(move || self.next_parsed(usize::MAX))
    }

    /// The next line parsed whole, reading batches of lines up to a line
    /// longer than `limit` (left in `self.long`); `None` at the end or at a
    /// long line.
    fn next_parsed(
        &mut self,
        limit: usize,
    ) -> Option<Result<(Address, GenesisAccount), DumpError>> {
        while self.parsed.is_empty() && self.long.is_none() && !self.done {
            self.fill(limit);
        }
        let next = self.parsed.pop_front()?;
        if next.is_err() {
            // Nothing after the first error: the caller stops there.
            self.parsed.clear();
            self.long = None;
            self.done = true;
        }
        Some(next)
    }

    /// Reads the next batch of lines and parses them in parallel; stops
    /// before a line longer than `limit`.
    fn fill(&mut self, limit: usize) {
        let mut lines: Vec<(u64, Vec<u8>)> = Vec::with_capacity(BATCH_LINES);
        let mut bytes = 0;
        while lines.len() < BATCH_LINES && bytes < BATCH_BYTES {
            let mut text = Vec::new();
            self.line += 1;
            match read_bounded(&mut self.input, &mut text, limit) {
                Ok(0) => {
                    self.done = true;
                    break;
                }
                Ok(_) if text.len() > limit => {
                    // Without its newline the rest follows (or the input
                    // ends: the rest is then empty).
                    let ended = text.last() == Some(&b'\n');
                    self.long = Some(LongLine {
                        line: self.line,
                        head: text,
                        ended,
                    });
                    break;
                }
                Ok(n) => {
                    bytes += n;
                    lines.push((self.line, text));
                }
                Err(source) => {
                    self.done = true;
                    let line = self.line;
                    lines.clear();
                    self.parsed.push_back(Err(DumpError::Io { line, source }));
                    return;
                }
            }
        }
        let parsed: Vec<_> = lines
            .par_iter()
            .filter_map(|(line, text)| parse_line_bytes(*line, text))
            .collect();
        self.parsed.extend(parsed);
    }
}

impl<R: BufRead> AccountSource for DumpReader<R> {
    type Error = DumpError;

    fn next_account(
        &mut self,
        large: &mut LargeStorage,
    ) -> Option<Result<SourceAccount, DumpError>> {
        let limit = large.stream_above_bytes();
        if let Some(next) = self.next_parsed(limit) {
            return Some(next.map(|(address, account)| SourceAccount::Whole(address, account)));
        }
        let long = self.long.take()?;
        self.streamed_line = long.line;
        let streamed = parse_long_line(long, &mut self.input, large);
        if streamed.is_err() {
            self.done = true;
        }
        Some(streamed.map(|(address, account)| SourceAccount::Streamed(address, account)))
    }

    fn repeated_slot(&self, address: Address, slot: B256) -> Option<DumpError> {
        Some(DumpError::RepeatedSlot {
            line: self.streamed_line,
            address,
            slot,
        })
    }
}

/// Reads one line into `text` (with its newline), at most `limit + 1`
/// bytes of it; returns the bytes read (0 at the end of the input). A
/// `text` longer than `limit` is a long line, whole when it ends with the
/// newline.
fn read_bounded(
    input: &mut impl BufRead,
    text: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<usize> {
    let most = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    std::io::Read::take(&mut *input, most).read_until(b'\n', text)
}

/// Line `line`'s bytes as text; bytes that are not UTF-8 are an
/// [`DumpError::Io`] of kind `InvalidData` naming the line.
fn line_text(line: u64, bytes: &[u8]) -> Result<&str, DumpError> {
    std::str::from_utf8(bytes).map_err(|e| DumpError::Io {
        line,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

/// Parses one line read as bytes; `None` for a blank line.
fn parse_line_bytes(
    line: u64,
    text: &[u8],
) -> Option<Result<(Address, GenesisAccount), DumpError>> {
    let text = match line_text(line, text) {
        Ok(text) => text,
        Err(e) => return Some(Err(e)),
    };
    if text.trim().is_empty() {
        return None;
    }
    Some(parse_account_line(line, text))
}

/// Parses one account line (`line` is its 1-based number, for errors).
pub fn parse_account_line(line: u64, text: &str) -> Result<(Address, GenesisAccount), DumpError> {
    let raw: RawAccount<'_> =
        serde_json::from_str(text.trim_end()).map_err(|e| DumpError::Json {
            line,
            message: e.to_string(),
        })?;
    account_from_raw(line, raw)
}

/// Types an account line's fields: its address, the account convention's
/// fields, `codeHash` against `code`.
fn account_from_raw(
    line: u64,
    raw: RawAccount<'_>,
) -> Result<(Address, GenesisAccount), DumpError> {
    let address = match raw.address() {
        Scalar::Missing => {
            return Err(DumpError::Address {
                line,
                what: "account without \"address\" (geth omits it when it lacks the preimage; \
                       such a dump cannot be imported)"
                    .to_owned(),
            });
        }
        Scalar::Str(text) => parse_address(text).map_err(|e| DumpError::Address {
            line,
            what: format!("invalid address {text:?}: {e}"),
        })?,
        other => {
            return Err(DumpError::Address {
                line,
                what: format!("address {other} is not a hex string"),
            });
        }
    };
    let typed = typed_account(&address.to_string(), raw)
        .map_err(|source| DumpError::Account { line, source })?;
    if let Some(given) = typed.code_hash {
        let computed = code_hash(typed.code.as_ref().map_or(&[][..], |code| &code[..]));
        if given != computed {
            return Err(DumpError::CodeHash {
                line,
                address,
                given,
                computed,
            });
        }
    }
    Ok((address, GenesisAccount::from(typed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Bytes, U256};

    fn read(text: &str) -> Result<(B256, Vec<(Address, GenesisAccount)>), DumpError> {
        let reader = DumpReader::new(text.as_bytes())?;
        let root = reader.root();
        Ok((
            root,
            reader.whole_accounts().collect::<Result<Vec<_>, _>>()?,
        ))
    }

    const ROOT: &str = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";

    #[test]
    fn bytes_that_are_not_utf8_are_refused_naming_the_line() {
        let header = format!("{{\"root\": \"{ROOT}\"}}\n").into_bytes();
        let mut bad_header = header.clone();
        bad_header.insert(3, 0xff);
        let err = DumpReader::new(&bad_header[..]).err().expect("refused");
        assert!(
            matches!(&err, DumpError::Io { line: 1, source } if source.kind() == std::io::ErrorKind::InvalidData),
            "{err}"
        );
        let mut bad_account = header;
        bad_account.extend_from_slice(b"{\"address\": \"0x\xff\"}\n");
        let reader = DumpReader::new(&bad_account[..]).expect("header");
        let err = reader
            .whole_accounts()
            .next()
            .expect("a line")
            .expect_err("refused");
        assert!(
            matches!(&err, DumpError::Io { line: 2, source } if source.kind() == std::io::ErrorKind::InvalidData),
            "{err}"
        );
    }

    #[test]
    fn reads_geth_and_reth_spellings() {
        let text = format!(
            "{{\"root\":\"{ROOT}\"}}\n\n\
             {{\"balance\":\"1000\",\"nonce\":3,\"root\":\"{ROOT}\",\"codeHash\":\"0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470\",\"address\":\"0x00000000000000000000000000000000000000aa\",\"key\":\"0x01\"}}\n\
             {{\"address\":\"00000000000000000000000000000000000000BB\",\"balance\":\"0x10\",\"code\":\"0x6000\",\"storage\":{{\"0x01\":\"02\",\"0x02\":\"0x00\"}}}}\n"
        );
        let (root, accounts) = read(&text).unwrap();
        assert_eq!(root, ROOT.parse::<B256>().unwrap());
        assert_eq!(accounts.len(), 2);
        assert_eq!(accounts[0].1.balance, U256::from(1000));
        assert_eq!(accounts[0].1.nonce, 3);
        let (address, contract) = &accounts[1];
        assert_eq!(*address, Address::with_last_byte(0xbb));
        assert_eq!(contract.balance, U256::from(16));
        assert_eq!(contract.code.as_ref(), &[0x60, 0x00]);
        assert_eq!(contract.storage.len(), 1, "zero values are dropped");
        assert_eq!(contract.storage[&B256::with_last_byte(1)], U256::from(2));
    }

    #[test]
    fn refusals_name_the_line() {
        let header = format!("{{\"root\":\"{ROOT}\"}}\n");
        let cases = [
            (String::new(), "line 1: expected the dump's first line"),
            (
                "{\"address\":\"0x00000000000000000000000000000000000000aa\"}\n".to_owned(),
                "found an account line",
            ),
            ("{\"root\":\"0x12\"}\n".to_owned(), "line 1: invalid root"),
            (
                format!("{header}{{\"balance\":\"1\"}}\n"),
                "line 2: account without \"address\"",
            ),
            (
                format!("{header}\n{{\"address\":\"0x12\"}}\n"),
                "line 3: invalid address",
            ),
            (
                format!(
                    "{header}{{\"address\":\"0x00000000000000000000000000000000000000aa\",\"nonce\":\"x\"}}\n"
                ),
                "line 2: account 0x00000000000000000000000000000000000000AA: field \"nonce\"",
            ),
            (
                format!(
                    "{header}{{\"address\":\"0x00000000000000000000000000000000000000aa\",\"codeHash\":\"{ROOT}\"}}\n"
                ),
                "line 2: account 0x00000000000000000000000000000000000000AA: codeHash",
            ),
            (format!("{header}{{\"address\":"), "line 2: invalid JSON"),
        ];
        for (text, expected) in cases {
            let err = read(&text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn what_the_writer_writes_the_reader_reads() {
        let mut writer = DumpWriter::new(Vec::new(), B256::repeat_byte(3)).unwrap();
        let code = Bytes::from_static(&[0x60, 0x01]);
        let storage = [
            (B256::with_last_byte(1), U256::from(5)),
            (B256::with_last_byte(2), U256::ZERO),
        ];
        writer
            .account(Address::with_last_byte(1), 7, U256::from(9), &code, storage)
            .unwrap();
        writer
            .account(Address::with_last_byte(2), 0, U256::ZERO, &Bytes::new(), [])
            .unwrap();
        assert_eq!(writer.counts(), (2, 1));
        let text = String::from_utf8(writer.into_inner()).unwrap();
        let (root, accounts) = read(&text).unwrap();
        assert_eq!(root, B256::repeat_byte(3));
        assert_eq!(accounts[0].1.code, code);
        assert_eq!(accounts[0].1.storage.len(), 1);
        assert_eq!(accounts[1].1, GenesisAccount::default());
    }

    #[test]
    fn batches_keep_file_order() {
        let mut text = format!("{{\"root\":\"{ROOT}\"}}\n");
        for i in 0..(3 * BATCH_LINES as u64 + 7) {
            let address = Address::from_word(B256::from(U256::from(i)));
            text.push_str(&format!("{{\"address\":\"{address}\",\"nonce\":{i}}}\n"));
        }
        let (_, accounts) = read(&text).unwrap();
        assert_eq!(accounts.len(), 3 * BATCH_LINES + 7);
        assert!(
            accounts
                .iter()
                .enumerate()
                .all(|(i, (_, a))| a.nonce == i as u64)
        );
    }
}
