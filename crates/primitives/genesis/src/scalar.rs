//! [`Scalar`]: one JSON value where a number, a hex string or a flag is
//! expected, deserialized as written (strings borrowed from the input where
//! possible) so that the typed readers can report what was found, where.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A JSON value kept as written, for a field whose type the reader checks
/// itself. Objects and arrays are skipped and only remembered as such.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Scalar<'a> {
    /// The field is absent (the default of a `#[serde(default)]` field).
    #[default]
    Missing,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative JSON integer.
    UInt(u64),
    /// A negative JSON integer.
    Int(i64),
    /// A JSON number with a fraction or exponent.
    Float(f64),
    /// A JSON string.
    Str(Cow<'a, str>),
    /// A JSON array (its elements skipped).
    Array,
    /// A JSON object (its members skipped).
    Object,
}

impl<'a> Scalar<'a> {
    /// Read a [`Scalar`] out of an already parsed [`serde_json::Value`].
    pub fn from_value(value: &'a serde_json::Value) -> Self {
        // A `&Value` deserializer cannot fail on `deserialize_any`.
        Scalar::deserialize(value).unwrap_or(Scalar::Missing)
    }
}

impl fmt::Display for Scalar<'_> {
    /// A short rendering for error messages (at most ~40 characters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Missing => f.write_str("nothing"),
            Scalar::Null => f.write_str("null"),
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::UInt(n) => write!(f, "{n}"),
            Scalar::Int(n) => write!(f, "{n}"),
            Scalar::Float(x) => write!(
                f,
                "{}",
                serde_json::Number::from_f64(*x).map_or_else(|| x.to_string(), |n| n.to_string())
            ),
            Scalar::Str(text) => f.write_str(&super::shorten(&format!("{text:?}"))),
            Scalar::Array => f.write_str("an array"),
            Scalar::Object => f.write_str("an object"),
        }
    }
}

/// The visitor behind [`Scalar`]'s `Deserialize`; also used by the map
/// types to describe a value that is not the map they expected.
pub(crate) struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u64::try_from(v).map_or(Scalar::Int(v), Scalar::UInt))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::UInt(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Float(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Object)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}
