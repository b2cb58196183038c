//! Parsing a geth JSON document: every object of it is checked for a
//! repeated key before the document becomes a `serde_json::Value` (which
//! would keep the last of two equal keys). Hex keys are compared by value,
//! so an address in two letter cases or a slot as `0x1` and `0x01` is a
//! repeat too.

use std::collections::HashMap;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Parse `text` as JSON, refusing any object with a repeated key (the error
/// names the key and both spellings, and carries the line and column).
/// Reading the file is the caller's.
pub fn parse_document(text: &str) -> Result<Value, serde_json::Error> {
    let mut checker = serde_json::Deserializer::from_str(text);
    checker.deserialize_any(UniqueKeys)?;
    checker.end()?;
    serde_json::from_str(text)
}

/// The identity of a key: hex keys (with or without `0x`) by their value,
/// other keys as written.
fn identity(key: &str) -> String {
    let digits = key
        .strip_prefix("0x")
        .or_else(|| key.strip_prefix("0X"))
        .unwrap_or(key);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        let value = digits.trim_start_matches('0').to_ascii_lowercase();
        format!("0x{value}")
    } else {
        key.to_owned()
    }
}

/// A visitor that walks any JSON value and fails on a repeated key.
struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(UniqueKeys)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashMap<String, String> = HashMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(first) = seen.get(&identity(&key)) {
                return Err(de::Error::custom(format!(
                    "key {key:?} repeats {first:?} in the same object"
                )));
            }
            map.next_value_seed(UniqueKeys)?;
            seen.insert(identity(&key), key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::identity;

    #[test]
    fn hex_keys_are_compared_by_value() {
        assert_eq!(identity("0x1"), identity("0x01"));
        assert_eq!(identity("0xAB"), identity("ab"));
        assert_eq!(identity("0x0"), identity("0x00"));
        assert_ne!(identity("0x1"), identity("0x10"));
        assert_eq!(identity("balance"), "balance");
    }
}
