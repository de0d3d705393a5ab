//! Tool definitions as a model reads them: the fewest tokens that still say
//! every argument's name, type and meaning.
//!
//! A model pays for every tool definition on every request, and a local
//! model with a window of a few thousand tokens cannot afford the portable
//! schemas' repetitions. [`lean_input`] rewrites an advertised input schema,
//! keeping what it accepts for every argument a client means to give:
//!
//! - the arguments every analysis tool shares ([`SHARED_ARGUMENTS`]) lose
//!   their descriptions: the server's instructions and the `investigate`
//!   prompt say once what they mean;
//! - an optional argument's `null` branch goes (the server drops
//!   null-valued arguments before checking them, see [`drop_nulls`]), and a
//!   one-branch `anyOf` left behind becomes that branch;
//! - bounds that only restate a sized integer's range, `default: null`,
//!   `$schema` and titles go;
//! - a `$ref` to a set of string constants becomes an inline `enum`.
//!
//! The server still checks every call against the full portable schema,
//! whose only further limits are those integer ranges.

use rmcp::model::JsonObject;
use serde_json::{Map, Value};

/// Arguments whose meaning the instructions state once for every tool.
pub const SHARED_ARGUMENTS: &[&str] = &["db", "since", "until", "pid", "rank"];

/// Integer bounds that only restate a machine type's range.
const TYPE_BOUNDS: &[f64] = &[
    i32::MIN as f64,
    i32::MAX as f64,
    u32::MAX as f64,
    i64::MIN as f64,
    i64::MAX as f64,
    u64::MAX as f64,
];

/// The lean form of a tool's input schema.
pub fn lean_input(schema: &JsonObject) -> JsonObject {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut root = Value::Object(schema.clone());
    if let Value::Object(map) = &mut root {
        map.remove("$schema");
        map.remove("$defs");
        map.remove("title");
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                if SHARED_ARGUMENTS.contains(&name.as_str()) {
                    if let Value::Object(p) = prop {
                        p.remove("description");
                    }
                }
                lean_node(prop, &defs);
            }
        }
    }
    match root {
        Value::Object(mut map) => {
            // A reference that is not a set of constants still needs its definitions.
            if !defs.is_empty() && Value::Object(map.clone()).to_string().contains("\"$ref\"") {
                map.insert("$defs".into(), Value::Object(defs));
            }
            map
        }
        _ => schema.clone(),
    }
}

/// Rewrites one property schema (and the schemas inside it).
fn lean_node(node: &mut Value, defs: &Map<String, Value>) {
    let Value::Object(map) = node else { return };
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    map.remove("title");
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.retain(|b| b.get("type") != Some(&Value::String("null".into())));
        for b in branches.iter_mut() {
            inline_ref(b, defs);
            lean_node(b, defs);
        }
        if branches.len() == 1 {
            if let Some(Value::Object(only)) = branches.pop() {
                map.remove("anyOf");
                for (k, v) in only {
                    map.entry(k).or_insert(v);
                }
            }
        }
    }
    inline_ref(node, defs);
    let Value::Object(map) = node else { return };
    for bound in ["minimum", "maximum"] {
        if map
            .get(bound)
            .and_then(Value::as_f64)
            .is_some_and(|b| TYPE_BOUNDS.contains(&b))
        {
            map.remove(bound);
        }
    }
    if let Some(items) = map.get_mut("items") {
        lean_node(items, defs);
    }
}

/// Replaces a `$ref` to a definition that is a set of string constants by
/// an inline `enum`, keeping the referring node's description.
fn inline_ref(node: &mut Value, defs: &Map<String, Value>) {
    let Value::Object(map) = node else { return };
    let Some(name) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    else {
        return;
    };
    let Some(values) = defs.get(name).and_then(constants) else {
        return;
    };
    map.remove("$ref");
    map.insert("type".into(), Value::String("string".into()));
    map.insert("enum".into(), Value::Array(values));
}

/// The values of a definition made only of string constants (`oneOf` of
/// `const`s, or an `enum`), if it is one.
fn constants(def: &Value) -> Option<Vec<Value>> {
    if let Some(values) = def.get("enum").and_then(Value::as_array) {
        return values.iter().all(Value::is_string).then(|| values.clone());
    }
    def.get("oneOf")?
        .as_array()?
        .iter()
        .map(|b| b.get("const").filter(|c| c.is_string()).cloned())
        .collect()
}

/// Removes null-valued arguments: a model that writes `"pid": null` means
/// the argument is absent, which is what every optional argument's schema
/// and deserialiser take.
pub fn drop_nulls(arguments: &mut Option<JsonObject>) {
    if let Some(map) = arguments {
        map.retain(|_, v| !v.is_null());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lean(v: Value) -> Value {
        Value::Object(lean_input(v.as_object().expect("object")))
    }

    #[test]
    fn shared_arguments_lose_prose_and_null_branches() {
        let got = lean(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "pid": {"description": "Only this process id.",
                        "anyOf": [{"type": "integer", "minimum": -2147483648, "maximum": 2147483647},
                                  {"type": "null"}]},
                "since": {"description": "A window.", "default": null,
                          "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
                "limit": {"description": "Page size.", "anyOf": [{"type": "integer", "minimum": 1, "maximum": 1000},
                                                                 {"type": "null"}]}
            },
            "additionalProperties": false
        }));
        assert_eq!(
            got,
            json!({
                "type": "object",
                "properties": {
                    "pid": {"type": "integer"},
                    "since": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                    "limit": {"description": "Page size.", "type": "integer", "minimum": 1, "maximum": 1000}
                },
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn a_reference_to_string_constants_becomes_an_enum() {
        let got = lean(json!({
            "$defs": {"Detail": {"oneOf": [{"const": "brief", "type": "string", "description": "x"},
                                           {"const": "full", "type": "string"}]}},
            "type": "object",
            "properties": {"detail": {"description": "How much.",
                                      "anyOf": [{"$ref": "#/$defs/Detail"}, {"type": "null"}]}}
        }));
        assert_eq!(
            got,
            json!({"type": "object", "properties": {"detail": {
                "description": "How much.", "type": "string", "enum": ["brief", "full"]}}})
        );
    }

    #[test]
    fn null_arguments_are_dropped_and_others_kept() {
        let mut args = json!({"pid": null, "db": "a.db"}).as_object().cloned();
        drop_nulls(&mut args);
        assert_eq!(args, json!({"db": "a.db"}).as_object().cloned());
    }
}
