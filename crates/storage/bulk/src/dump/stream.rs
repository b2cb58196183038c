//! One account line too long to hold, parsed as it is read: the JSON is
//! read from the input (the part of the line already read first, then the
//! rest up to its newline) through a `serde_json` stream deserializer, and
//! each `storage` entry goes to the import's [`LargeStorage`] as soon as it
//! is parsed. Memory: the fields other than `storage` (the code, mainly)
//! and a read buffer.
//!
//! The fields are read by the same convention as a line parsed whole
//! ([`crate::genesis`]): unknown fields ignored, a repeated field refused,
//! slots and values as hex (values also as numbers). A slot listed twice
//! is found once the slots are sorted: the import asks the reader for the
//! error, which names the line.

use std::fmt;
use std::io::{self, BufRead, BufReader, Cursor, Read};

use alloy_primitives::{Address, B256};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{DumpError, account_from_raw};
use crate::import::LargeStorage;
use strata_genesis::{
    GenesisAccount, GenesisError, RawAccount, Scalar, ValueError, parse_address, parse_word,
};

/// Read buffer of a streamed line.
const STREAM_BUFFER: usize = 256 << 10;

/// A line too long to parse whole: its number and the bytes read of it.
pub(super) struct LongLine {
    /// The 1-based line number.
    pub(super) line: u64,
    /// Its first bytes (all of it when `ended`).
    pub(super) head: Vec<u8>,
    /// Whether `head` reaches the end of the line.
    pub(super) ended: bool,
}

/// Parses `long`, reading the rest of it from `input` (up to and including
/// its newline), its slots pushed into `large`.
pub(super) fn parse_long_line(
    long: LongLine,
    input: &mut impl BufRead,
    large: &mut LargeStorage,
) -> Result<(Address, GenesisAccount), DumpError> {
    let line = long.line;
    let rest = LineRest {
        input,
        ended: long.ended,
    };
    let reader = BufReader::with_capacity(STREAM_BUFFER, Cursor::new(long.head).chain(rest));
    let mut json = serde_json::Deserializer::from_reader(reader);
    let mut fields = Fields::default();
    let mut failure = None;
    let parsed = AccountSeed {
        fields: &mut fields,
        large,
        failure: &mut failure,
    }
    .deserialize(&mut json)
    .and_then(|()| json.end());
    if let Err(e) = parsed {
        return Err(match failure {
            Some(Failure::Field { field, source }) => {
                field_error(line, &fields.address, field, source)
            }
            Some(Failure::Spill) => DumpError::Spill { line },
            None if e.is_io() => DumpError::Io {
                line,
                source: e.into(),
            },
            None => DumpError::Json {
                line,
                message: e.to_string(),
            },
        });
    }
    let raw = RawAccount::without_storage(
        fields.balance,
        fields.nonce,
        fields.code,
        fields.code_hash,
        fields.address,
    );
    account_from_raw(line, raw)
}

/// A bad storage entry: named with the account when its address was read
/// before the storage (as `strata export` writes it).
fn field_error(line: u64, address: &Scalar<'_>, field: String, source: ValueError) -> DumpError {
    let address = match address {
        Scalar::Str(text) => parse_address(text).ok(),
        _ => None,
    };
    match address {
        Some(address) => DumpError::Account {
            line,
            source: GenesisError::Field {
                account: address.to_string(),
                field,
                source,
            },
        },
        None => DumpError::Field {
            line,
            field,
            source,
        },
    }
}

/// The rest of a line: reads up to and including the newline, then ends.
struct LineRest<'a, R> {
    input: &'a mut R,
    ended: bool,
}

impl<R: BufRead> Read for LineRest<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.ended || out.is_empty() {
            return Ok(0);
        }
        let available = self.input.fill_buf()?;
        if available.is_empty() {
            // The last line of the input, without a newline.
            self.ended = true;
            return Ok(0);
        }
        let window = &available[..available.len().min(out.len())];
        let take = match window.iter().position(|&b| b == b'\n') {
            Some(newline) => {
                self.ended = true;
                newline + 1
            }
            None => window.len(),
        };
        out[..take].copy_from_slice(&available[..take]);
        self.input.consume(take);
        Ok(take)
    }
}

/// The fields of the line other than `storage`, as written.
#[derive(Default)]
struct Fields {
    address: Scalar<'static>,
    balance: Scalar<'static>,
    nonce: Scalar<'static>,
    code: Scalar<'static>,
    code_hash: Scalar<'static>,
}

/// Why the parse was stopped by the reader rather than the JSON.
enum Failure {
    /// A storage entry (or the `storage` value) is bad.
    Field { field: String, source: ValueError },
    /// The storage could not be sorted on disk.
    Spill,
}

/// The account object: the fields into `fields`, the slots into `large`.
/// (Read from a stream, nothing is borrowed from the input: the visitors
/// take `'static` input, so the fields are owned [`Scalar`]s.)
struct AccountSeed<'s> {
    fields: &'s mut Fields,
    large: &'s mut LargeStorage,
    failure: &'s mut Option<Failure>,
}

impl DeserializeSeed<'static> for AccountSeed<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'static>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl Visitor<'static> for AccountSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an account object")
    }

    fn visit_map<A: MapAccess<'static>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = [false; 6];
        while let Some(name) = map.next_key::<String>()? {
            let (index, place) = match name.as_str() {
                "address" => (0, Some(&mut self.fields.address)),
                "balance" => (1, Some(&mut self.fields.balance)),
                "nonce" => (2, Some(&mut self.fields.nonce)),
                "code" => (3, Some(&mut self.fields.code)),
                "codeHash" => (4, Some(&mut self.fields.code_hash)),
                "storage" => (5, None),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if std::mem::replace(&mut seen[index], true) {
                return Err(de::Error::custom(format_args!("duplicate field `{name}`")));
            }
            match place {
                Some(place) => *place = map.next_value()?,
                None => map.next_value_seed(StorageSeed {
                    large: &mut *self.large,
                    failure: &mut *self.failure,
                })?,
            }
        }
        Ok(())
    }
}

/// The `storage` object, each entry pushed into `large`.
struct StorageSeed<'s> {
    large: &'s mut LargeStorage,
    failure: &'s mut Option<Failure>,
}

impl StorageSeed<'_> {
    /// Records a bad `storage` value and stops the parse.
    fn not_a_map<E: de::Error>(self, found: String) -> Result<(), E> {
        *self.failure = Some(Failure::Field {
            field: "storage".to_owned(),
            source: ValueError::WrongType {
                expected: "an object of slot → value",
                found,
            },
        });
        Err(E::custom("bad storage"))
    }
}

impl DeserializeSeed<'static> for StorageSeed<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'static>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Visitor<'static> for StorageSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of slot → value")
    }

    fn visit_map<A: MapAccess<'static>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(slot) = map.next_key_seed(SlotKey)? {
            let value: Scalar<'static> = map.next_value()?;
            let slot = match slot {
                Ok(slot) => slot,
                Err((text, source)) => {
                    *self.failure = Some(Failure::Field {
                        field: "storage".to_owned(),
                        source,
                    });
                    return Err(de::Error::custom(format_args!("bad slot {text:?}")));
                }
            };
            let value = match value.word_value() {
                Ok(value) => value,
                Err(source) => {
                    *self.failure = Some(Failure::Field {
                        field: format!("storage[{slot}]"),
                        source,
                    });
                    return Err(de::Error::custom("bad storage value"));
                }
            };
            if self.large.push(slot, value).is_err() {
                *self.failure = Some(Failure::Spill);
                return Err(de::Error::custom("the storage could not be sorted"));
            }
        }
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.not_a_map(Scalar::Null.to_string())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.not_a_map(Scalar::Bool(v).to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.not_a_map(Scalar::UInt(v).to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.not_a_map(Scalar::Int(v).to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.not_a_map(Scalar::Float(v).to_string())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.not_a_map(Scalar::Str(v.to_owned().into()).to_string())
    }

    fn visit_seq<A: SeqAccess<'static>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.not_a_map(Scalar::Array.to_string())
    }
}

/// A storage key, parsed as it is read (no copy of the text unless it is
/// bad).
struct SlotKey;

impl<'de> DeserializeSeed<'de> for SlotKey {
    type Value = Result<B256, (String, ValueError)>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for SlotKey {
    type Value = Result<B256, (String, ValueError)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a slot")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(parse_word(v).map_err(|e| (v.to_owned(), e)))
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::U256;

    use super::*;
    use crate::account_trie::SlotSortError;
    use crate::dump::DumpReader;
    use crate::import::{AccountSource, SourceAccount};
    use crate::sort::ExternalSorter;

    const ROOT: &str =
        "{\"root\":\"0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421\"}\n";
    const AA: &str = "0x00000000000000000000000000000000000000aa";

    /// A line of `slots` storage entries (slot i → i + 1, as short hex),
    /// with `head` before the storage and `tail` after it.
    fn long_line(head: &str, slots: u64, tail: &str) -> String {
        let entries: Vec<String> = (0..slots)
            .map(|i| format!("\"{:#x}\":\"{:#x}\"", i, i + 1))
            .collect();
        format!("{{{head}\"storage\":{{{}}}{tail}}}\n", entries.join(","))
    }

    /// An account as the source returned it, with the slots streamed for it.
    type ReadAccount = (SourceAccount, Vec<(B256, U256)>);

    /// The accounts of `text` read with a stream threshold of half of
    /// `budget`, each with the slots streamed for it (non-zero, in hashed
    /// order).
    fn read(text: &str, budget: usize) -> Result<Vec<ReadAccount>, String> {
        let dir = tempfile::tempdir().unwrap();
        let mut large = LargeStorage::new(dir.path(), budget);
        let mut reader = DumpReader::new(text.as_bytes()).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        while let Some(next) = reader.next_account(&mut large) {
            let account = next.map_err(|e| e.to_string())?;
            let mut slots = Vec::new();
            if let Some(sort) = large.take().unwrap() {
                let SourceAccount::Streamed(address, _) = &account else {
                    panic!("slots pushed for a whole account");
                };
                let mut records = ExternalSorter::new(dir.path(), "records", 1 << 20);
                let built = sort.build(0, *address, &mut records, |slot, value| {
                    slots.push((slot, value));
                    Ok(())
                });
                if let Err(SlotSortError::Repeated(repeated)) = built {
                    return Err(reader
                        .repeated_slot(*address, repeated.0)
                        .unwrap()
                        .to_string());
                }
                built.unwrap();
            }
            out.push((account, slots));
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        Ok(out)
    }

    #[test]
    fn long_lines_stream_and_the_next_lines_read_whole() {
        let short = format!("{{\"address\":\"{AA}\",\"nonce\":1}}\n");
        // geth's field order: the address after the storage; longer than
        // the read buffer, so the line's end comes in a later read.
        let geth = long_line(
            "\"balance\":\"7\",\"nonce\":2,\"root\":\"0x00\",",
            30_000,
            &format!(
                ",\"address\":\"{}\",\"key\":\"0x01\"",
                &AA.replace("aa", "bb")
            ),
        );
        let ours = long_line(
            &format!("\"address\":\"{AA}\",\"code\":\"0x6000\","),
            300,
            "",
        );
        let text = format!("{ROOT}{short}{geth}\n{ours}{short}");
        let accounts = read(&text, 4 << 10).unwrap();
        assert_eq!(accounts.len(), 4);
        let SourceAccount::Whole(_, first) = &accounts[0].0 else {
            panic!("a short line is whole: {:?}", accounts[0].0)
        };
        assert_eq!(first.nonce, 1);
        let (SourceAccount::Streamed(address, account), slots) = &accounts[1] else {
            panic!("a long line streams")
        };
        assert_eq!(*address, Address::with_last_byte(0xbb));
        assert_eq!((account.nonce, account.balance), (2, U256::from(7)));
        assert!(account.storage.is_empty());
        assert!(geth.len() > 2 * STREAM_BUFFER);
        assert_eq!(slots.len(), 30_000);
        let mut sorted: Vec<_> = slots.clone();
        sorted.sort();
        assert_eq!(sorted[0], (B256::ZERO, U256::from(1)));
        assert_eq!(
            sorted[29_999],
            (B256::from(U256::from(29_999)), U256::from(30_000))
        );
        let (SourceAccount::Streamed(_, account), slots) = &accounts[2] else {
            panic!("a long line streams")
        };
        assert_eq!(account.code.as_ref(), &[0x60, 0x00]);
        assert_eq!(slots.len(), 300);
        assert!(matches!(accounts[3].0, SourceAccount::Whole(..)));
        // A budget that holds every line: all whole.
        let whole = read(&text, 8 << 20).unwrap();
        assert!(
            whole
                .iter()
                .all(|(a, _)| matches!(a, SourceAccount::Whole(..)))
        );
    }

    #[test]
    fn a_long_lines_refusals_name_the_line() {
        let head = format!("\"address\":\"{AA}\",");
        let line = long_line(&head, 400, "");
        let cases = [
            (
                line.replace("\"0x64\":\"0x65\"", "\"0x64\":\"0xzz\""),
                "line 2: account 0x00000000000000000000000000000000000000AA: field \"storage[0x0000000000000000000000000000000000000000000000000000000000000064]\": invalid hex",
            ),
            (
                line.replace("\"0x64\":", "\"0xq4\":"),
                "line 2: account 0x00000000000000000000000000000000000000AA: field \"storage\": invalid hex",
            ),
            (
                long_line("", 400, "").replace("\"0x64\":\"0x65\"", "\"0x64\":null"),
                "line 2: field \"storage[0x0000000000000000000000000000000000000000000000000000000000000064]\": expected a hex string or a number, found null",
            ),
            (
                line.replace("\"0x65\":\"0x66\"", "\"0x0064\":\"0x0\""),
                "line 2: account 0x00000000000000000000000000000000000000AA: storage slot 0x0000000000000000000000000000000000000000000000000000000000000064 is listed twice",
            ),
            (
                line[..line.len() / 2].to_owned(),
                "line 2: invalid JSON: EOF while parsing",
            ),
            (
                line.replace("}}\n", "}} x\n"),
                "line 2: invalid JSON: trailing characters",
            ),
            (
                format!("{{\"nonce\":1,\"nonce\":2,{}", &line[1..]),
                "line 2: invalid JSON: duplicate field `nonce`",
            ),
            (
                format!(
                    "{{{head}\"storage\":[1,2],\"code\":\"{}\"}}\n",
                    "00".repeat(4000)
                ),
                "line 2: account 0x00000000000000000000000000000000000000AA: field \"storage\": expected an object of slot → value, found an array",
            ),
            (
                format!("[{}]\n", "1,".repeat(4000) + "1"),
                "line 2: invalid JSON: invalid type: sequence, expected an account object",
            ),
            (
                long_line("", 400, ""),
                "line 2: account without \"address\"",
            ),
        ];
        for (text, expected) in cases {
            match read(&format!("{ROOT}{text}"), 4 << 10) {
                Ok(_) => panic!("accepted, expected {expected}"),
                Err(err) => assert!(err.starts_with(expected), "{expected}\n{err}"),
            }
        }
    }
}
