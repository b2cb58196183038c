//! Genesis allocations: the typed account map a chain (or a replay) starts
//! from, parsed from a geth genesis JSON (`{"alloc": {...}, ...}`) or from a
//! bare alloc map such as the `pre` section of an Ethereum test fixture.
//!
//! Parsing is typed (serde, no intermediate `serde_json::Value`), with the
//! account convention of [`account`]: accepted spellings, as geth and the
//! test fixtures write them:
//! - addresses with or without `0x`, in any letter case;
//! - `balance` and `nonce` as `0x` hex, decimal strings or JSON numbers;
//! - `code` as hex bytes; `storage` as a map of hex slot → hex value, where
//!   both may be shorter than 32 bytes (left-padded); zero values are dropped;
//! - unknown fields (`secretKey`, `codeHash`, `config`, ...) are ignored.
//!
//! Refused, each with an error naming the key: `null` for a field, `"0x"`
//! as a number, a repeated field, the same address twice (in any letter
//! case), the same slot twice (`0x1` and `0x01`), two `alloc` keys.
//!
//! `alloy-genesis` is not used to parse: its maps keep the last of two equal
//! keys and do not see two spellings of one address or slot, which must be
//! errors here. A client that already holds an `alloy_genesis::Genesis`
//! (reth's chain spec carries one) hands it to
//! strata-storage's `StateDb::init_chain_genesis` (feature `alloy-genesis`;
//! `chain`).
//!
//! The value parsers ([`parse_word`], [`Scalar::u64`], ...) are public so
//! that other formats (the CLI's block traces, geth tracer output) read
//! numbers and hex exactly the same way.
#![deny(missing_docs)]

mod account;
#[cfg(feature = "alloy-genesis")]
pub mod chain;
mod entries;
mod scalar;
mod value;

use std::collections::BTreeMap;
use std::fmt;

use alloy_primitives::{Address, B256, Bytes, U256};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

pub use account::{AccountError, JsonAccount, MaybeAccount, RawAccount, storage_map};
pub use entries::{Entries, KeyError, Repeated, unique};
pub use scalar::Scalar;
pub use value::{ValueError, parse_address, parse_hash, parse_word};

use entries::Key;

/// One account of a genesis allocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenesisAccount {
    /// Transaction count (or, for contracts, creation count).
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// Bytecode; empty for an externally owned account.
    pub code: Bytes,
    /// Non-zero storage slots (slot → value).
    pub storage: BTreeMap<B256, U256>,
}

/// A genesis allocation: every account the state starts with.
pub type GenesisAlloc = BTreeMap<Address, GenesisAccount>;

/// Why a genesis allocation could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenesisError {
    /// The text is not valid JSON, or a value does not have the shape of
    /// its place (an account that is not an object, a repeated field).
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line of the syntax error.
        line: usize,
        /// 1-based column of the syntax error.
        column: usize,
        /// What the JSON parser reported.
        message: String,
    },
    /// The document (or its `alloc`) is not a JSON object.
    #[error("{what}: expected a JSON object, found {found}")]
    NotAnObject {
        /// Which part of the document ("genesis alloc", "account 0x..").
        what: String,
        /// A short rendering of what was found.
        found: String,
    },
    /// An alloc key is not a 20-byte hex address.
    #[error("invalid address {text:?}: {source}")]
    Address {
        /// The key as written.
        text: String,
        /// What is wrong with it.
        #[source]
        source: ValueError,
    },
    /// A field of an account could not be read.
    #[error("account {account}: field {field:?}: {source}")]
    Field {
        /// The account's address as written in the document.
        account: String,
        /// The field ("balance", "nonce", "code", "storage", "storage[0x..]").
        field: String,
        /// What is wrong with the value.
        #[source]
        source: ValueError,
    },
    /// The same address appears twice in the alloc (perhaps in another
    /// letter case).
    #[error("address {second} is listed twice (first as {first})")]
    RepeatedAddress {
        /// The first spelling.
        first: String,
        /// The repeated spelling.
        second: String,
    },
    /// The same slot appears twice in an account's storage (`0x1`, `0x01`).
    #[error("account {account}: storage slot {second} is listed twice (first as {first})")]
    RepeatedSlot {
        /// The account's address as written.
        account: String,
        /// The first spelling.
        first: String,
        /// The repeated spelling.
        second: String,
    },
    /// The document has more than one `alloc` key.
    #[error("the genesis has {count} \"alloc\" keys; expected one")]
    RepeatedAlloc {
        /// How many.
        count: usize,
    },
}

/// A genesis document as written: a geth genesis object with `alloc`, or a
/// bare alloc map (address → account), or something else.
#[derive(Debug, Clone, Default)]
pub enum RawGenesis<'a> {
    /// Absent (the default of a `#[serde(default)]` field).
    #[default]
    Missing,
    /// An object.
    Doc {
        /// The value of every `alloc` key (more than one is an error).
        allocs: Vec<Entries<'a, MaybeAccount<'a>>>,
        /// Top-level members whose key is an address (a bare alloc).
        bare: Vec<(std::borrow::Cow<'a, str>, MaybeAccount<'a>)>,
        /// The first top-level key that is neither `alloc` nor an address.
        other_key: Option<String>,
    },
    /// Not an object.
    NotMap(Scalar<'a>),
}

struct RawGenesisVisitor;

impl<'de> Visitor<'de> for RawGenesisVisitor {
    type Value = RawGenesis<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a genesis object or an alloc map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut allocs = Vec::new();
        let mut bare = Vec::new();
        let mut other_key = None;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if key == "alloc" {
                allocs.push(map.next_value()?);
            } else if parse_address(&key).is_ok() {
                bare.push((key, map.next_value()?));
            } else {
                map.next_value::<IgnoredAny>()?;
                other_key.get_or_insert_with(|| key.into_owned());
            }
        }
        Ok(RawGenesis::Doc {
            allocs,
            bare,
            other_key,
        })
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        scalar::ScalarVisitor.visit_seq(seq).map(RawGenesis::NotMap)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(RawGenesis::NotMap(Scalar::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        scalar::ScalarVisitor.visit_i64(v).map(RawGenesis::NotMap)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(RawGenesis::NotMap(Scalar::UInt(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(RawGenesis::NotMap(Scalar::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(RawGenesis::NotMap(Scalar::Str(v.to_owned().into())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(RawGenesis::NotMap(Scalar::Null))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawGenesis<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawGenesisVisitor)
    }
}

impl RawGenesis<'_> {
    /// Type the allocation (see the module docs for what is refused).
    pub fn into_alloc(self) -> Result<GenesisAlloc, GenesisError> {
        let (mut allocs, bare, other_key) = match self {
            RawGenesis::Doc {
                allocs,
                bare,
                other_key,
            } => (allocs, bare, other_key),
            RawGenesis::Missing => (Vec::new(), Vec::new(), None),
            RawGenesis::NotMap(found) => {
                return Err(GenesisError::NotAnObject {
                    what: "genesis alloc".to_owned(),
                    found: found.to_string(),
                });
            }
        };
        let accounts = match allocs.len() {
            0 => {
                if let Some(text) = other_key {
                    let source = parse_address(&text)
                        .err()
                        .unwrap_or(ValueError::InvalidHex(text.clone()));
                    return Err(GenesisError::Address { text, source });
                }
                bare
            }
            1 => match allocs.pop() {
                Some(Entries::Map(entries)) => entries,
                Some(Entries::NotMap(found)) => {
                    return Err(GenesisError::NotAnObject {
                        what: "genesis \"alloc\"".to_owned(),
                        found: found.to_string(),
                    });
                }
                Some(Entries::Missing) | None => Vec::new(),
            },
            count => return Err(GenesisError::RepeatedAlloc { count }),
        };
        // Addresses first (an invalid or repeated one is named before any
        // account's fields are looked at), then the accounts.
        let spelled = accounts
            .into_iter()
            .map(|(key, raw)| (key.clone(), (key, raw)))
            .collect();
        let typed = unique(spelled, parse_address).map_err(|e| match e {
            KeyError::Invalid { text, source } => GenesisError::Address { text, source },
            KeyError::Repeated(Repeated { first, second }) => {
                GenesisError::RepeatedAddress { first, second }
            }
        })?;
        let mut alloc = GenesisAlloc::new();
        for (address, (key, raw)) in typed {
            let raw = match raw {
                MaybeAccount::Account(raw) => raw,
                MaybeAccount::NotObject(found) => {
                    return Err(GenesisError::NotAnObject {
                        what: format!("account {key}"),
                        found: found.to_string(),
                    });
                }
            };
            alloc.insert(address, genesis_account(&key, raw)?);
        }
        Ok(alloc)
    }
}

fn genesis_account(key: &str, raw: RawAccount<'_>) -> Result<GenesisAccount, GenesisError> {
    typed_account(key, raw).map(GenesisAccount::from)
}

/// Types the fields of one account of an alloc (or a dump line), named
/// `key` in errors.
pub fn typed_account(key: &str, raw: RawAccount<'_>) -> Result<JsonAccount, GenesisError> {
    JsonAccount::from_raw(raw).map_err(|e| match e {
        AccountError::Field { field, source } => GenesisError::Field {
            account: key.to_owned(),
            field,
            source,
        },
        AccountError::RepeatedSlot(Repeated { first, second }) => GenesisError::RepeatedSlot {
            account: key.to_owned(),
            first,
            second,
        },
    })
}

/// The account a state is built from: absent fields zero or empty, zero
/// storage values dropped (as geth and reth do); `codeHash` is not kept.
impl From<JsonAccount> for GenesisAccount {
    fn from(account: JsonAccount) -> Self {
        let mut storage = account.storage;
        storage.retain(|_, value| !value.is_zero());
        GenesisAccount {
            nonce: account.nonce.unwrap_or_default(),
            balance: account.balance.unwrap_or_default(),
            code: account.code.unwrap_or_default(),
            storage,
        }
    }
}

/// Parse a geth genesis JSON document (an object with `alloc`) or a bare
/// alloc map (address → account).
pub fn parse_alloc_json(text: &str) -> Result<GenesisAlloc, GenesisError> {
    let raw: RawGenesis<'_> = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        // The position is in the variant's own message already.
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(head, _)| head)
            .to_owned();
        GenesisError::Json {
            line: e.line(),
            column: e.column(),
            message,
        }
    })?;
    raw.into_alloc()
}

/// Read an allocation from an already parsed JSON value: a genesis object
/// with an `alloc` object, or a bare alloc map. A [`Value`] has already
/// collapsed repeated keys (the last one wins); parse the text with
/// [`parse_alloc_json`] to have them refused.
pub fn alloc_from_value(value: &Value) -> Result<GenesisAlloc, GenesisError> {
    RawGenesis::deserialize(value)
        .map_err(|e| GenesisError::Json {
            line: 0,
            column: 0,
            message: e.to_string(),
        })?
        .into_alloc()
}

/// A short rendering of a JSON value for error messages (at most ~40 chars).
pub fn short(value: &Value) -> String {
    shorten(&value.to_string())
}

/// `text` cut to about 40 characters (on a character boundary), for error
/// messages that quote input.
pub fn shorten(text: &str) -> String {
    if text.len() > 40 {
        let cut = (0..=37)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}...", &text[..cut])
    } else {
        text.to_owned()
    }
}

/// Parse a storage value out of a [`Value`]: a hex word of at most 32 bytes,
/// or a JSON number.
pub fn parse_word_value(value: &Value) -> Result<U256, ValueError> {
    Scalar::from_value(value).word_value()
}

/// Parse hex bytes (`code`) out of a [`Value`]; `"0x"` and `""` are empty.
pub fn parse_bytes(value: &Value) -> Result<Bytes, ValueError> {
    Scalar::from_value(value).bytes()
}

/// Parse an unsigned 256-bit number out of a [`Value`]: `0x` hex, a decimal
/// string or a JSON number.
pub fn parse_u256(value: &Value) -> Result<U256, ValueError> {
    Scalar::from_value(value).u256()
}

/// Parse an unsigned 64-bit number out of a [`Value`]: `0x` hex, a decimal
/// string or a JSON number.
pub fn parse_u64(value: &Value) -> Result<u64, ValueError> {
    Scalar::from_value(value).u64()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn vectors() -> Option<PathBuf> {
        strata_test_support::vectors("")
    }

    fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read vector dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                json_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
        out.sort();
    }

    #[test]
    fn geth_genesis_and_bare_alloc_agree() {
        let geth = r#"{"config":{"chainId":1},"alloc":{
            "0x00000000000000000000000000000000000000aa":{"balance":"1000","nonce":"0x2",
              "code":"0x6001","storage":{"0x01":"0x02","0x00":"0x00"},"secretKey":"0x11"},
            "00000000000000000000000000000000000000bb":{"balance":"0xff","nonce":7}}}"#;
        let bare = r#"{
            "0x00000000000000000000000000000000000000aa":{"balance":"0x3e8","nonce":2,
              "code":"0x6001","storage":{"0x0000000000000000000000000000000000000000000000000000000000000001":"0x02"}},
            "0x00000000000000000000000000000000000000bb":{"balance":255,"nonce":"7"}}"#;
        let a = parse_alloc_json(geth).unwrap();
        let b = parse_alloc_json(bare).unwrap();
        assert_eq!(a, b);
        let aa = &a[&Address::with_last_byte(0xaa)];
        assert_eq!(aa.balance, U256::from(1000));
        assert_eq!(aa.nonce, 2);
        assert_eq!(aa.code.as_ref(), &[0x60, 0x01]);
        assert_eq!(aa.storage.len(), 1, "zero slot dropped");
        assert_eq!(aa.storage[&B256::with_last_byte(1)], U256::from(2));
        assert_eq!(a[&Address::with_last_byte(0xbb)].nonce, 7);
    }

    #[test]
    fn errors_name_account_and_field() {
        let text = r#"{"0xab00000000000000000000000000000000000000":{"balance":"0xzz"}}"#;
        let err = parse_alloc_json(text).unwrap_err().to_string();
        assert_eq!(
            err,
            "account 0xab00000000000000000000000000000000000000: field \"balance\": invalid number \"0xzz\""
        );
        let nonce =
            r#"{"0xab00000000000000000000000000000000000000":{"nonce":"0x10000000000000000"}}"#;
        let err = parse_alloc_json(nonce).unwrap_err().to_string();
        assert!(
            err.contains("field \"nonce\"") && err.contains("out of range"),
            "{err}"
        );
        let big = format!(
            r#"{{"0xab00000000000000000000000000000000000000":{{"balance":"0x1{}"}}}}"#,
            "0".repeat(64)
        );
        let err = parse_alloc_json(&big).unwrap_err().to_string();
        assert!(err.contains("balance") && err.contains("2^256-1"), "{err}");
        let slot = r#"{"0xab00000000000000000000000000000000000000":{"storage":{"0x01":"0xgg"}}}"#;
        let err = parse_alloc_json(slot).unwrap_err().to_string();
        assert!(
            err.contains("storage[0x01]") && err.contains("invalid hex"),
            "{err}"
        );
        let addr = r#"{"0xab":{"balance":"1"}}"#;
        let err = parse_alloc_json(addr).unwrap_err().to_string();
        assert!(
            err.contains("invalid address \"0xab\"") && err.contains("expected 20 bytes, found 1"),
            "{err}"
        );
        let code = r#"{"0xab00000000000000000000000000000000000000":{"code":12}}"#;
        let err = parse_alloc_json(code).unwrap_err().to_string();
        assert!(
            err.contains("field \"code\": expected a hex string, found 12"),
            "{err}"
        );
    }

    const AA: &str = "0x00000000000000000000000000000000000000aa";

    fn err(text: &str) -> String {
        parse_alloc_json(text).unwrap_err().to_string()
    }

    #[test]
    fn repeated_keys_are_refused_naming_the_key() {
        let aa_upper = "0x00000000000000000000000000000000000000AA";
        // The same address twice, in another letter case, without 0x.
        for second in [AA, aa_upper, &AA[2..]] {
            let text =
                format!(r#"{{"alloc":{{"{AA}":{{"balance":"1"}},"{second}":{{"balance":"2"}}}}}}"#);
            assert_eq!(
                err(&text),
                format!("address {second} is listed twice (first as {AA})")
            );
            let bare = format!(r#"{{"{AA}":{{"balance":"1"}},"{second}":{{"balance":"2"}}}}"#);
            assert!(err(&bare).contains("is listed twice"), "{bare}");
        }
        // The same slot as 0x1 and 0x01 (and with all 32 bytes).
        let full = format!("0x{}01", "00".repeat(31));
        for (first, second) in [("0x1", "0x01"), ("0x01", full.as_str()), ("0x1", "1")] {
            let text = format!(r#"{{"{AA}":{{"storage":{{"{first}":"0x5","{second}":"0x6"}}}}}}"#);
            assert_eq!(
                err(&text),
                format!("account {AA}: storage slot {second} is listed twice (first as {first})")
            );
        }
        // A repeated zero slot is refused as well, though zeros are dropped.
        let text = format!(r#"{{"{AA}":{{"storage":{{"0x1":"0x0","0x001":"0x0"}}}}}}"#);
        assert!(err(&text).contains("storage slot 0x001 is listed twice"));
        // A repeated account field.
        let text = format!(r#"{{"{AA}":{{"balance":"1","balance":"2"}}}}"#);
        let message = err(&text);
        assert!(message.contains("duplicate field `balance`"), "{message}");
        assert!(message.contains("line 1, column"), "{message}");
        // Two alloc keys.
        let text = format!(r#"{{"alloc":{{}},"config":{{}},"alloc":{{"{AA}":{{}}}}}}"#);
        assert_eq!(err(&text), "the genesis has 2 \"alloc\" keys; expected one");
    }

    #[test]
    fn null_and_empty_hex_are_not_numbers() {
        for (field, value, needle) in [
            (
                "balance",
                "null",
                "field \"balance\": expected a number or a hex/decimal string, found null",
            ),
            ("nonce", "null", "field \"nonce\": expected a number"),
            ("nonce", "\"0x\"", "field \"nonce\": invalid number \"0x\""),
            (
                "balance",
                "\"0x\"",
                "field \"balance\": invalid number \"0x\"",
            ),
            (
                "code",
                "null",
                "field \"code\": expected a hex string, found null",
            ),
            (
                "storage",
                "null",
                "field \"storage\": expected an object of slot → value, found null",
            ),
        ] {
            let text = format!(r#"{{"{AA}":{{"{field}":{value}}}}}"#);
            let message = err(&text);
            assert!(
                message.starts_with(&format!("account {AA}: {needle}")),
                "{text}: {message}"
            );
        }
        let text = format!(r#"{{"{AA}":{{"storage":{{"0x1":null}}}}}}"#);
        assert!(
            err(&text)
                .contains("field \"storage[0x1]\": expected a hex string or a number, found null")
        );
        // "0x" is still the empty code.
        let text = format!(r#"{{"{AA}":{{"code":"0x"}}}}"#);
        assert!(
            parse_alloc_json(&text).unwrap()[&Address::with_last_byte(0xaa)]
                .code
                .is_empty()
        );
    }

    #[test]
    fn syntax_error_reports_line_and_column() {
        let err = parse_alloc_json("{\n  \"alloc\": {\n    \"0xab\": [}\n}").unwrap_err();
        match err {
            GenesisError::Json { line, column, .. } => {
                assert_eq!(line, 3);
                assert!(column > 0);
            }
            other => panic!("expected a JSON error, got {other}"),
        }
        assert!(matches!(
            parse_alloc_json("[1]"),
            Err(GenesisError::NotAnObject { .. })
        ));
    }

    #[test]
    fn number_spellings() {
        use serde_json::json;
        assert_eq!(
            parse_u64(&json!("0x")).unwrap_err(),
            ValueError::InvalidNumber("0x".to_owned()),
            "\"0x\" is no number (geth refuses it too)"
        );
        assert!(parse_u64(&json!(null)).is_err());
        assert_eq!(parse_bytes(&json!("0x")).unwrap(), Bytes::new());
        assert_eq!(parse_u64(&json!("0x1f")).unwrap(), 31);
        assert_eq!(parse_u64(&json!("31")).unwrap(), 31);
        assert_eq!(parse_u64(&json!(31)).unwrap(), 31);
        assert_eq!(parse_u64(&json!("18446744073709551615")).unwrap(), u64::MAX);
        assert!(parse_u64(&json!("18446744073709551616")).is_err());
        assert!(parse_u64(&json!(-1)).is_err());
        assert!(parse_u64(&json!(1.5)).is_err());
        assert!(parse_u64(&json!("")).is_err());
        assert!(parse_u256(&json!(1e30)).is_err());
        assert_eq!(parse_word("0x1").unwrap(), B256::with_last_byte(1));
        assert!(parse_word(&format!("0x{}", "00".repeat(33))).is_err());
        assert!(parse_hash("0x01").is_err());
        assert!(parse_bytes(&json!("0x123")).is_err(), "odd-length code");
    }

    #[test]
    fn every_blockchain_test_pre_parses() {
        let Some(dir) = vectors() else { return };
        let mut files = Vec::new();
        json_files(&dir.join("blockchain_tests"), &mut files);
        assert!(files.len() >= 8, "expected the 8 blockchain test files");
        let mut cases = 0;
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let doc: Value = serde_json::from_str(&text).unwrap();
            for (name, case) in doc.as_object().unwrap() {
                let pre = &case["pre"];
                let alloc = alloc_from_value(pre)
                    .unwrap_or_else(|e| panic!("{}::{name}: {e}", file.display()));
                assert_eq!(alloc.len(), pre.as_object().unwrap().len());
                // Zero slots are dropped; every non-zero slot is kept.
                for (addr_text, acct) in pre.as_object().unwrap() {
                    let addr = parse_address(addr_text).unwrap();
                    let nonzero = acct["storage"]
                        .as_object()
                        .unwrap()
                        .values()
                        .filter(|v| !parse_word_value(v).unwrap().is_zero())
                        .count();
                    assert_eq!(alloc[&addr].storage.len(), nonzero);
                }
                alloc_from_value(&case["postState"]).unwrap();
                cases += 1;
            }
        }
        assert!(cases >= 12, "found {cases} cases");
    }

    #[test]
    fn prestate_fixture_genesis_allocs_parse() {
        let Some(dir) = vectors() else { return };
        let mut files = Vec::new();
        json_files(&dir.join("prestate_tracer"), &mut files);
        json_files(&dir.join("prestate_tracer_with_diff_mode"), &mut files);
        assert!(files.len() >= 13);
        for file in files {
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            let alloc = alloc_from_value(&doc["genesis"])
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert_eq!(
                alloc.len(),
                doc["genesis"]["alloc"].as_object().unwrap().len()
            );
        }
        // simple.json: nonce written as the decimal string "22".
        let simple: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("prestate_tracer/simple.json")).unwrap(),
        )
        .unwrap();
        let alloc = alloc_from_value(&simple["genesis"]).unwrap();
        let who = parse_address("0x0024f658a46fbb89d8ac105e98d7ac7cbbaf27c5").unwrap();
        assert_eq!(alloc[&who].nonce, 22);
    }
}
