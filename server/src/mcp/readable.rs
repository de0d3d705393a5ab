//! Human units beside raw numbers in structured tool results.
//!
//! A model reading JSON misreads bare nanoseconds and 0..1 fractions (a
//! 42,855,282 ns off-CPU time was read as "42.85 s"). Every object of an
//! analysis result gets a readable companion right after each raw field:
//!
//! - `X_ns` (an integer duration) → `X`: `"42.9 ms"` (`X_ns_text` when the
//!   object already has an `X`);
//! - a share (a key holding `share`, a 0..1 fraction) → the same key with
//!   `percent` for `share`: `"99.1% of the 94.62 s lifetime"`, naming the
//!   whole where the object holds it;
//! - an evidence item (`value` with `unit`) → `value_text`: `"49.38 s"`.
//!
//! The output schema is extended the same way, so results still match it.

use ingero_tools::format;
use rmcp::model::JsonObject;
use serde_json::{Map, Value};
use std::sync::Arc;

/// What a share is a share of, when its object holds that whole: the share
/// key, the key of the whole (ns), and how the whole is said.
const WHOLES: &[(&str, &str, &str)] = &[
    ("idle_share", "span_ns", "lifetime in the window"),
    (
        "active_idle_share",
        "active_span_ns",
        "from the first to the last CUDA call",
    ),
    ("off_cpu_share", "lifetime_ns", "lifetime"),
];

/// Wholes said in words only (the figure lives elsewhere in the result).
const WHOLES_IN_WORDS: &[(&str, &str)] = &[
    (
        "explained_share",
        "of the victim process's GPU idle time in its loop, first to last CUDA call (host_wait less before_first_call and after_last_call)",
    ),
    ("share_of_cuda_time", "of all time inside CUDA calls"),
];

/// Adds the readable companions to every object inside `value`.
pub(crate) fn annotate(value: &mut Value) {
    annotate_in(value, None);
}

/// `idle_ns`: the host wait of the enclosing process, the whole of its
/// `causes` parts.
fn annotate_in(value: &mut Value, idle_ns: Option<i64>) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| annotate_in(v, idle_ns)),
        Value::Object(map) => {
            let own_idle = map.get("host_wait_ns").and_then(Value::as_i64);
            for (key, v) in map.iter_mut() {
                let whole = if key == "causes" { own_idle } else { None };
                annotate_in(v, whole);
            }
            *map = with_companions(std::mem::take(map), idle_ns);
        }
        _ => {}
    }
}

/// Rebuilds one object with each companion right after its raw field.
fn with_companions(map: Map<String, Value>, idle_ns: Option<i64>) -> Map<String, Value> {
    let keys: Vec<String> = map.keys().cloned().collect();
    let mut out = Map::new();
    for (key, v) in &map {
        out.insert(key.clone(), v.clone());
        if let Some((name, text)) = companion(&map, &keys, key, v, idle_ns) {
            out.insert(name, Value::String(text));
        }
    }
    out
}

/// The companion of `key` in `map`, if it has one.
fn companion(
    map: &Map<String, Value>,
    keys: &[String],
    key: &str,
    v: &Value,
    idle_ns: Option<i64>,
) -> Option<(String, String)> {
    if key == "value" {
        let unit: ingero_tools::finding::Unit =
            serde_json::from_value(map.get("unit")?.clone()).ok()?;
        let x = v.as_f64()?;
        return Some(("value_text".into(), unit.readable(x)));
    }
    if let Some(stem) = key.strip_suffix("_ns") {
        let ns = v.as_i64()?;
        let mut text = format::ns(ns);
        if let Some(idle) = idle_ns.filter(|i| *i > 0) {
            text = format!(
                "{text} ({} of the {} idle time)",
                format::pct(ns as f64 / idle as f64),
                format::ns(idle)
            );
        }
        return Some((free_name(keys, stem, key), text));
    }
    if key.contains("share") {
        let share = v.as_f64()?;
        let of = WHOLES
            .iter()
            .find(|(k, _, _)| *k == key)
            .and_then(|(_, whole, said)| {
                let ns = map.get(*whole)?.as_i64()?;
                Some(format!(" of the {} {said}", format::ns(ns)))
            })
            .or_else(|| {
                WHOLES_IN_WORDS
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, said)| format!(" {said}"))
            })
            .unwrap_or_default();
        let name = key.replacen("share", "percent", 1);
        return Some((
            free_name(keys, &name, key),
            format!("{}{of}", format::pct(share)),
        ));
    }
    None
}

/// `want` unless the object already has such a field, then `<raw>_text`.
fn free_name(keys: &[String], want: &str, raw: &str) -> String {
    if keys.iter().any(|k| k == want) {
        format!("{raw}_text")
    } else {
        want.to_string()
    }
}

/// `schema_for_output::<T>()` with the readable companions declared.
pub(crate) fn output_schema<T: schemars::JsonSchema + std::any::Any>() -> Arc<JsonObject> {
    let mut schema = (*rmcp::handler::server::tool::schema_for_output::<T>()).clone();
    declare_in(&mut schema);
    Arc::new(schema)
}

/// Declares the companions in every object schema inside `schema`.
fn declare_in(schema: &mut Map<String, Value>) {
    for (_, v) in schema.iter_mut() {
        match v {
            Value::Object(m) => declare_in(m),
            Value::Array(items) => {
                for i in items {
                    if let Value::Object(m) = i {
                        declare_in(m);
                    }
                }
            }
            _ => {}
        }
    }
    let Some(Value::Object(props)) = schema.get("properties") else {
        return;
    };
    let keys: Vec<String> = props.keys().cloned().collect();
    let mut out = Map::new();
    for (key, prop) in props {
        out.insert(key.clone(), prop.clone());
        if let Some((name, about)) = declared(props, &keys, key, prop) {
            let mut p = Map::new();
            p.insert("type".into(), Value::String("string".into()));
            p.insert("description".into(), Value::String(about));
            out.insert(name, Value::Object(p));
        }
    }
    schema.insert("properties".into(), Value::Object(out));
}

/// The companion property that `key` (with schema `prop`) gets, if any.
fn declared(
    props: &Map<String, Value>,
    keys: &[String],
    key: &str,
    prop: &Value,
) -> Option<(String, String)> {
    let types = types_of(prop);
    let numeric = types.iter().any(|t| t == "integer" || t == "number");
    if !numeric {
        return None;
    }
    if key == "value" && props.contains_key("unit") {
        return Some(("value_text".into(), "`value` in its unit, readable".into()));
    }
    if let Some(stem) = key.strip_suffix("_ns") {
        if types.iter().any(|t| t == "integer") {
            return Some((
                free_name(keys, stem, key),
                format!("`{key}` with a unit (s, ms, us or ns)"),
            ));
        }
        return None;
    }
    if key.contains("share") {
        let name = key.replacen("share", "percent", 1);
        return Some((
            free_name(keys, &name, key),
            format!("`{key}` as a percentage, with the whole it is a share of"),
        ));
    }
    None
}

/// The JSON types a property schema allows (`type` as a string or a list).
fn types_of(prop: &Value) -> Vec<String> {
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn companions_follow_their_raw_fields() {
        let mut v = json!({
            "pid": 7, "span_ns": 94_620_779_805_i64, "idle_share": 0.991,
            "host_wait_ns": 93_800_000_000_i64,
            "causes": {"host_compute_ns": 49_380_949_730_i64},
            "evidence": [{"label": "x", "value": 42_855_282.0, "unit": "ns"}],
            "p99": 1, "p99_ns": 4_030_000
        });
        annotate(&mut v);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "pid",
                "span_ns",
                "span",
                "idle_share",
                "idle_percent",
                "host_wait_ns",
                "host_wait",
                "causes",
                "evidence",
                "p99",
                "p99_ns",
                "p99_ns_text"
            ]
        );
        assert_eq!(
            v["idle_percent"],
            "99.1% of the 94.62 s lifetime in the window"
        );
        assert_eq!(v["evidence"][0]["value_text"], "42.9 ms");
        assert_eq!(
            v["causes"]["host_compute"],
            "49.38 s (52.6% of the 93.80 s idle time)"
        );
        assert_eq!(v["p99_ns_text"], "4.0 ms");
    }

    #[test]
    fn the_schema_declares_what_the_results_carry() {
        let mut s = json!({"properties": {
            "span_ns": {"type": "integer"}, "idle_share": {"type": "number"},
            "comm": {"type": "string"}, "start_ns": {"type": "string"}
        }});
        declare_in(s.as_object_mut().unwrap());
        let keys: Vec<&str> = s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "span_ns",
                "span",
                "idle_share",
                "idle_percent",
                "comm",
                "start_ns"
            ]
        );
    }
}
