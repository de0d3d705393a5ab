//! OTLP/JSON attribute values (`{"key": .., "value": {"stringValue": ..}}`),
//! with 64-bit integers as decimal strings as the protobuf JSON mapping asks.

use serde_json::{json, Value};

/// A string attribute.
pub fn string(key: &str, v: impl Into<String>) -> Value {
    json!({ "key": key, "value": { "stringValue": v.into() } })
}

/// An integer attribute.
pub fn int(key: &str, v: i64) -> Value {
    json!({ "key": key, "value": { "intValue": v.to_string() } })
}

/// A floating-point attribute.
pub fn double(key: &str, v: f64) -> Value {
    json!({ "key": key, "value": { "doubleValue": v } })
}

/// An epoch-nanosecond timestamp field value.
pub fn nanos(ns: i64) -> Value {
    Value::String(ns.max(0).to_string())
}
