//! Epoch-nanosecond instants written to JSON as decimal strings.
//!
//! An instant in ns since 1970 is about 1.8e18, far above 2^53, the largest
//! integer a JSON reader that parses numbers as doubles (JavaScript, most
//! MCP clients and model runtimes) keeps exactly: `1764953063412657601`
//! would read back as `1764953063412657700`. A string keeps every digit.
//!
//! Use on an `i64` field with
//! `#[serde(with = "ingero_store::epoch_ns")]` and
//! `#[schemars(with = "ingero_store::epoch_ns::EpochNsText")]`. Reading
//! accepts the string and, for older files, a JSON integer.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};
use std::borrow::Cow;
use std::fmt;

/// Pattern of the string form: an optional minus sign and decimal digits.
pub const PATTERN: &str = "^-?[0-9]{1,19}$";

/// Writes `ns` as a decimal string.
pub fn serialize<S: Serializer>(ns: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(ns)
}

/// Reads a decimal string or an integer.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_any(EpochNsVisitor)
}

struct EpochNsVisitor;

impl Visitor<'_> for EpochNsVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("epoch nanoseconds as a decimal string or an integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("{v} ns is out of range")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        v.parse().map_err(|_| {
            E::custom(format!(
                "{} is not a decimal number of ns",
                crate::clip::clip_quoted(v)
            ))
        })
    }
}

/// The JSON schema of the string form (for `#[schemars(with = ...)]`).
pub struct EpochNsText;

impl JsonSchema for EpochNsText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "EpochNsText".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": PATTERN,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct At {
        #[serde(with = "super")]
        ts_ns: i64,
    }

    #[test]
    fn writes_every_digit_as_a_string() {
        let at = At {
            ts_ns: 1_764_953_063_412_657_601,
        };
        let text = serde_json::to_string(&at).unwrap_or_default();
        assert_eq!(text, r#"{"ts_ns":"1764953063412657601"}"#);
        let back: At = serde_json::from_str(&text).unwrap_or(At { ts_ns: 0 });
        assert_eq!(back, at);
    }

    #[test]
    fn reads_integers_and_refuses_other_text() {
        let old: Result<At, _> = serde_json::from_str(r#"{"ts_ns": 42}"#);
        assert_eq!(old.ok(), Some(At { ts_ns: 42 }));
        let bad: Result<At, _> = serde_json::from_str(r#"{"ts_ns": "soon"}"#);
        assert!(bad.is_err());
    }
}
