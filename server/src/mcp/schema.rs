//! Tool schemas rewritten into the portable subset of JSON Schema.
//!
//! schemars writes valid JSON Schema 2020-12 that many MCP clients still
//! cannot map onto their own dialect (`mcp-inspector --cli --strict` lists
//! what it finds). [`portable`] rewrites every subschema of a tool schema,
//! without changing what it accepts:
//!
//! - a type array (`"type": ["integer", "null"]`, from `Option<T>`) becomes
//!   `anyOf` with one single-typed branch per type, each carrying the
//!   keywords that apply to its type (`minimum`, `items`, `enum` values...);
//! - a schema that accepts anything (`true`, or an object with no
//!   validation keyword) becomes an explicit `anyOf` of the six JSON types,
//!   and `false` becomes `{"not": {}}`;
//! - a `format` JSON Schema does not register (`int32`, `uint64`, `double`...)
//!   is removed; in input schemas the range a sized integer format stands for
//!   is kept as `minimum`/`maximum`, so out-of-range numbers are refused by
//!   validation instead of by deserialisation.

use serde_json::{json, Map, Value};

/// Which side of a tool a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `inputSchema`: what a client may send.
    Input,
    /// `outputSchema`: what the tool returns.
    Output,
}

/// Formats JSON Schema 2020-12 registers; any other is dropped.
pub const REGISTERED_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The six JSON types, for the explicit "any value" schema.
const ALL_TYPES: [&str; 6] = ["null", "boolean", "number", "string", "array", "object"];

/// Keywords whose value is one subschema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
];

/// Keywords whose value is a list of subschemas.
const SCHEMA_LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Keywords that constrain a value; a schema with none accepts anything.
const VALIDATION_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "items",
    "prefixItems",
    "contains",
    "additionalItems",
    "unevaluatedItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "dependentSchemas",
    "$ref",
    "$dynamicRef",
];

/// Keywords that apply to values of one JSON type only; they move into that
/// type's branch when a type array is split.
fn keyword_type(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "minLength" | "maxLength" | "pattern" | "format" | "contentEncoding"
        | "contentMediaType" | "contentSchema" => "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => "number",
        "items" | "prefixItems" | "contains" | "minContains" | "maxContains" | "minItems"
        | "maxItems" | "uniqueItems" | "additionalItems" | "unevaluatedItems" => "array",
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "propertyNames"
        | "minProperties"
        | "maxProperties"
        | "dependentRequired"
        | "dependentSchemas"
        | "unevaluatedProperties" => "object",
        _ => return None,
    })
}

/// Rewrites `schema` (a tool's whole input or output schema) in place.
pub fn portable(schema: &mut Value, side: Side) {
    rewrite(schema, side, None);
}

/// Rewrites one subschema found under `keyword` (None at the root).
fn rewrite(node: &mut Value, side: Side, keyword: Option<&str>) {
    match node {
        Value::Bool(true) if !keeps_boolean(keyword) => *node = any_value(Map::new()),
        Value::Bool(false) if !keeps_boolean(keyword) => *node = json!({ "not": {} }),
        Value::Object(map) => {
            drop_unregistered_format(map, side);
            split_type_array(map);
            if keyword != Some("not") && !constrains(map) {
                *node = any_value(std::mem::take(map));
                return;
            }
            rewrite_children(map, side);
        }
        _ => {}
    }
}

/// Where `true`/`false` is the usual spelling (`additionalProperties: false`).
fn keeps_boolean(keyword: Option<&str>) -> bool {
    matches!(
        keyword,
        Some(
            "additionalProperties"
                | "unevaluatedProperties"
                | "additionalItems"
                | "unevaluatedItems"
        )
    )
}

/// Rewrites every subschema directly below `map`.
fn rewrite_children(map: &mut Map<String, Value>, side: Side) {
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if key == "items" && value.is_array() {
            for item in value.as_array_mut().into_iter().flatten() {
                rewrite(item, side, Some("items"));
            }
        } else if SCHEMA_KEYWORDS.contains(&key) {
            rewrite(value, side, Some(key));
        } else if SCHEMA_LIST_KEYWORDS.contains(&key) {
            for item in value.as_array_mut().into_iter().flatten() {
                rewrite(item, side, Some(key));
            }
        } else if SCHEMA_MAP_KEYWORDS.contains(&key) {
            for item in value
                .as_object_mut()
                .into_iter()
                .flat_map(|m| m.values_mut())
            {
                rewrite(item, side, Some(key));
            }
        }
    }
}

/// True when `map` has a keyword that restricts what it accepts.
fn constrains(map: &Map<String, Value>) -> bool {
    map.keys()
        .any(|k| VALIDATION_KEYWORDS.contains(&k.as_str()))
        || (map.contains_key("if") && (map.contains_key("then") || map.contains_key("else")))
}

/// An explicit "any JSON value" schema keeping the annotations of `rest`.
fn any_value(mut rest: Map<String, Value>) -> Value {
    let branches = ALL_TYPES.iter().map(|t| json!({ "type": t })).collect();
    rest.insert("anyOf".to_string(), Value::Array(branches));
    Value::Object(rest)
}

/// Removes a `format` JSON Schema does not register. On the input side, the
/// range of a sized integer format becomes `minimum`/`maximum`.
fn drop_unregistered_format(map: &mut Map<String, Value>, side: Side) {
    let Some(Value::String(format)) = map.get("format") else {
        return;
    };
    if REGISTERED_FORMATS.contains(&format.as_str()) {
        return;
    }
    let range = integer_range(format);
    map.remove("format");
    if let (Some((lo, hi)), Side::Input) = (range, side) {
        tighten(map, "minimum", lo, |old, new| new > old);
        tighten(map, "maximum", hi, |old, new| new < old);
    }
}

/// The range of a sized integer format, as schemars names them.
fn integer_range(format: &str) -> Option<(i64, i64)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        _ => return None,
    })
}

/// Sets `key` to `bound` unless the schema already has a tighter one.
fn tighten(map: &mut Map<String, Value>, key: &str, bound: i64, tighter: fn(f64, f64) -> bool) {
    let keep = map
        .get(key)
        .and_then(Value::as_f64)
        .is_some_and(|old| !tighter(old, bound as f64));
    if !keep {
        map.insert(key.to_string(), Value::from(bound));
    }
}

/// Replaces `"type": [A, B, ...]` by `anyOf` branches, one per type, each
/// taking the keywords (and `enum` values) of its type. A schema that
/// already has `anyOf` keeps it, and the branches join through `allOf`.
fn split_type_array(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let types: Vec<String> = types
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    map.remove("type");
    if let [only] = types.as_slice() {
        map.insert("type".to_string(), Value::String(only.clone()));
        return;
    }
    let mut typed: Vec<(&'static str, String, Value)> = Vec::new();
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        let Some(owner) = keyword_type(&key) else {
            continue;
        };
        if let Some(value) = map.remove(&key) {
            typed.push((owner, key, value));
        }
    }
    let values = match map.remove("enum") {
        Some(Value::Array(values)) => Some(values),
        Some(other) => {
            map.insert("enum".to_string(), other);
            None
        }
        None => None,
    };
    let mut branches = Vec::new();
    for t in &types {
        let mut branch = Map::new();
        branch.insert("type".to_string(), Value::String(t.clone()));
        for (owner, key, value) in &typed {
            if owner == t || (*owner == "number" && t == "integer") {
                branch.insert(key.clone(), value.clone());
            }
        }
        if let Some(values) = &values {
            let own: Vec<Value> = values
                .iter()
                .filter(|v| is_of_type(v, t))
                .cloned()
                .collect();
            if own.is_empty() {
                continue;
            }
            if t != "null" {
                branch.insert("enum".to_string(), Value::Array(own));
            }
        }
        branches.push(Value::Object(branch));
    }
    if let Some(existing) = map.remove("anyOf") {
        let all = map
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(all) = all {
            all.push(json!({ "anyOf": existing }));
            all.push(json!({ "anyOf": branches }));
        }
    } else {
        map.insert("anyOf".to_string(), Value::Array(branches));
    }
}

/// True when `value` is an instance of the JSON type named `t`.
fn is_of_type(value: &Value, t: &str) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(mut v: Value) -> Value {
        portable(&mut v, Side::Input);
        v
    }

    fn output(mut v: Value) -> Value {
        portable(&mut v, Side::Output);
        v
    }

    #[test]
    fn an_optional_bounded_integer_becomes_typed_branches() {
        let got = input(json!({
            "type": "object",
            "properties": {
                "max_rows": {
                    "description": "Most rows.",
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 1
                }
            }
        }));
        assert_eq!(
            got["properties"]["max_rows"],
            json!({
                "description": "Most rows.",
                "anyOf": [
                    { "type": "integer", "minimum": 1, "maximum": 4_294_967_295_u32 },
                    { "type": "null" }
                ]
            })
        );
    }

    #[test]
    fn output_schemas_lose_formats_without_gaining_bounds() {
        let got = output(json!({ "type": ["integer", "null"], "format": "int32" }));
        assert_eq!(
            got,
            json!({ "anyOf": [{ "type": "integer" }, { "type": "null" }] })
        );
        let got = output(json!({ "type": "integer", "format": "uint64", "minimum": 0 }));
        assert_eq!(got, json!({ "type": "integer", "minimum": 0 }));
        let got = output(json!({ "type": "number", "format": "double" }));
        assert_eq!(got, json!({ "type": "number" }));
    }

    #[test]
    fn registered_formats_stay_and_tighter_bounds_win() {
        let got = input(json!({ "type": "string", "format": "date-time" }));
        assert_eq!(got, json!({ "type": "string", "format": "date-time" }));
        let got =
            input(json!({ "type": "integer", "format": "int32", "minimum": 1, "maximum": 1000 }));
        assert_eq!(
            got,
            json!({ "type": "integer", "minimum": 1, "maximum": 1000 })
        );
        let got = input(json!({ "type": "integer", "format": "int32" }));
        assert_eq!(
            got,
            json!({ "type": "integer", "minimum": i32::MIN, "maximum": i32::MAX })
        );
    }

    #[test]
    fn keywords_move_to_the_branch_of_their_type() {
        let got = input(json!({
            "type": ["array", "string", "null"],
            "items": { "type": "integer", "format": "int64" },
            "maxLength": 8,
            "description": "Either."
        }));
        assert_eq!(
            got,
            json!({
                "description": "Either.",
                "anyOf": [
                    { "type": "array", "items": { "type": "integer" } },
                    { "type": "string", "maxLength": 8 },
                    { "type": "null" }
                ]
            })
        );
    }

    #[test]
    fn enum_values_go_to_their_own_type() {
        let got = input(json!({ "type": ["string", "null"], "enum": ["rows", "bytes", null] }));
        assert_eq!(
            got,
            json!({ "anyOf": [
                { "type": "string", "enum": ["rows", "bytes"] },
                { "type": "null" }
            ]})
        );
    }

    #[test]
    fn any_value_schemas_become_explicit() {
        let got = output(json!({
            "type": "object",
            "properties": {
                "rows": { "type": "array", "items": { "type": "array", "items": true } },
                "note": { "description": "Anything." }
            }
        }));
        let any = json!([
            { "type": "null" }, { "type": "boolean" }, { "type": "number" },
            { "type": "string" }, { "type": "array" }, { "type": "object" }
        ]);
        assert_eq!(
            got["properties"]["rows"]["items"]["items"],
            json!({ "anyOf": any })
        );
        assert_eq!(
            got["properties"]["note"],
            json!({ "description": "Anything.", "anyOf": any })
        );
    }

    #[test]
    fn booleans_stay_where_they_are_ordinary() {
        let got = input(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": { "never": false }
        }));
        assert_eq!(got["additionalProperties"], json!(false));
        assert_eq!(got["properties"]["never"], json!({ "not": {} }));
    }

    #[test]
    fn definitions_and_nested_branches_are_rewritten_too() {
        let got = output(json!({
            "type": "object",
            "properties": { "w": { "$ref": "#/$defs/W" } },
            "$defs": {
                "W": {
                    "type": "object",
                    "properties": {
                        "p": { "anyOf": [{ "$ref": "#/$defs/P" }, { "type": "null" }] },
                        "t": { "type": ["number", "null"], "format": "double" }
                    }
                },
                "P": { "type": "integer", "format": "int32" }
            }
        }));
        assert_eq!(got["$defs"]["P"], json!({ "type": "integer" }));
        assert_eq!(
            got["$defs"]["W"]["properties"]["t"],
            json!({ "anyOf": [{ "type": "number" }, { "type": "null" }] })
        );
        assert_eq!(
            got["$defs"]["W"]["properties"]["p"],
            json!({ "anyOf": [{ "$ref": "#/$defs/P" }, { "type": "null" }] })
        );
    }

    #[test]
    fn a_type_array_beside_anyof_joins_through_allof() {
        let got = input(json!({
            "type": ["string", "null"],
            "anyOf": [{ "minLength": 1 }, { "type": "null" }]
        }));
        assert_eq!(
            got,
            json!({ "allOf": [
                { "anyOf": [{ "minLength": 1 }, { "type": "null" }] },
                { "anyOf": [{ "type": "string" }, { "type": "null" }] }
            ]})
        );
    }

    #[test]
    fn the_rewrite_accepts_and_refuses_what_the_original_did() {
        let original = json!({
            "type": "object",
            "properties": {
                "limit": { "type": ["integer", "null"], "format": "uint32", "minimum": 1, "maximum": 1000 },
                "op": { "type": ["string", "null"] },
                "cells": { "type": "array", "items": true }
            }
        });
        let rewritten = input(original.clone());
        let (Ok(a), Ok(b)) = (
            jsonschema::validator_for(&original),
            jsonschema::validator_for(&rewritten),
        ) else {
            panic!("schemas compile");
        };
        for instance in [
            json!({}),
            json!({ "limit": null, "op": null }),
            json!({ "limit": 1, "op": "x", "cells": [1, "a", null, [], {}] }),
            json!({ "limit": 0 }),
            json!({ "limit": 1001 }),
            json!({ "limit": "many" }),
            json!({ "op": 3 }),
            json!({ "limit": 2.5 }),
        ] {
            assert_eq!(a.is_valid(&instance), b.is_valid(&instance), "{instance}");
        }
    }
}
