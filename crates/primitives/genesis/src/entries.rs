//! [`Entries`]: a JSON object read as its members in input order, keys as
//! written — so that two spellings of one key (`0xAB…`/`0xab…`, `0x1`/`0x01`)
//! and repeated keys are seen, which a map type would silently collapse —
//! and [`unique`], which types the keys and refuses a repeated one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::scalar::{Scalar, ScalarVisitor};

/// A JSON object's members in input order, or what was found instead.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Entries<'a, V> {
    /// The field is absent (the default of a `#[serde(default)]` field).
    #[default]
    Missing,
    /// An object: (key as written, value) in input order, repeats kept.
    Map(Vec<(Cow<'a, str>, V)>),
    /// Something other than an object.
    NotMap(Scalar<'a>),
}

/// A key that names the same entry as an earlier key of the same object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeated {
    /// The earlier key, as written.
    pub first: String,
    /// The repeated key, as written.
    pub second: String,
}

/// Why an object's keys could not be typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError<E> {
    /// A key does not parse.
    Invalid {
        /// The key as written.
        text: String,
        /// Why.
        source: E,
    },
    /// Two keys name the same entry.
    Repeated(Repeated),
}

/// Type the keys of `entries` with `parse` and refuse two keys that parse to
/// the same value (the same address in another letter case, slot `0x1` and
/// `0x01`, or the same key twice).
pub fn unique<'a, K: Ord, V, E>(
    entries: Vec<(Cow<'a, str>, V)>,
    mut parse: impl FnMut(&str) -> Result<K, E>,
) -> Result<BTreeMap<K, V>, KeyError<E>> {
    let mut out = BTreeMap::new();
    // The keys as written, by position, to name both spellings of a repeat.
    let mut texts: Vec<Cow<'a, str>> = Vec::with_capacity(entries.len());
    for (text, value) in entries {
        let key = match parse(&text) {
            Ok(key) => key,
            Err(source) => {
                return Err(KeyError::Invalid {
                    text: text.into_owned(),
                    source,
                });
            }
        };
        match out.entry(key) {
            Entry::Vacant(slot) => {
                slot.insert((texts.len(), value));
            }
            Entry::Occupied(slot) => {
                let first = texts.get(slot.get().0).map_or("", |t| t.as_ref());
                return Err(KeyError::Repeated(Repeated {
                    first: first.to_owned(),
                    second: text.into_owned(),
                }));
            }
        }
        texts.push(text);
    }
    Ok(out.into_iter().map(|(k, (_, v))| (k, v)).collect())
}

struct EntriesVisitor<V>(PhantomData<V>);

macro_rules! not_a_map {
    ($($method:ident($($arg:ident: $ty:ty)?)),* $(,)?) => {$(
        fn $method<E: de::Error>(self $(, $arg: $ty)?) -> Result<Self::Value, E> {
            ScalarVisitor.$method($($arg)?).map(Entries::NotMap)
        }
    )*};
}

impl<'de, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<V> {
    type Value = Entries<'de, V>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            out.push((key, map.next_value::<V>()?));
        }
        Ok(Entries::Map(out))
    }

    not_a_map!(
        visit_bool(v: bool),
        visit_i64(v: i64),
        visit_u64(v: u64),
        visit_f64(v: f64),
        visit_borrowed_str(v: &'de str),
        visit_str(v: &str),
        visit_string(v: String),
        visit_unit(),
        visit_none(),
    );

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        ScalarVisitor.visit_seq(seq).map(Entries::NotMap)
    }
}

impl<'de: 'a, 'a, V: Deserialize<'de>> Deserialize<'de> for Entries<'a, V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntriesVisitor(PhantomData))
    }
}

/// An object key, borrowed from the input when it has no escapes.
pub(crate) struct Key<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}
