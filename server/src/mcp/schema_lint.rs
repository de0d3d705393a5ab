//! Test-only: the portability rules of `mcp-inspector --cli --strict`
//! (Inspector 2.12), plus unregistered formats, checked over every schema of
//! the real tool router.

use super::schema::REGISTERED_FORMATS;
use super::server::IngeroMcp;
use serde_json::Value;

/// Keywords holding one subschema.
const ONE: &[&str] = &[
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
/// Keywords holding a list of subschemas.
const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords holding a map of subschemas.
const MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];
/// Where a boolean is an ordinary value.
const BOOLEAN_OK: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];
/// Keywords that constrain (the Inspector's list).
const CONSTRAINING: &[&str] = &[
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
    "dependencies",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
];

/// Every portability problem in `schema`, as `path: problem`.
pub fn findings(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(schema, "", None, &mut out);
    out
}

fn walk(node: &Value, path: &str, keyword: Option<&str>, out: &mut Vec<String>) {
    match node {
        Value::Bool(b) if !keyword.is_some_and(|k| BOOLEAN_OK.contains(&k)) => {
            out.push(format!("{path}: bare {b}"));
        }
        Value::Object(map) => {
            if map.get("type").is_some_and(Value::is_array) {
                out.push(format!("{path}: type array {}", map["type"]));
            }
            if let Some(Value::String(r)) = map.get("$ref") {
                if !r.starts_with('#') {
                    out.push(format!("{path}: remote $ref {r}"));
                }
            }
            if let Some(f) = map.get("format") {
                if !f.as_str().is_some_and(|f| REGISTERED_FORMATS.contains(&f)) {
                    out.push(format!("{path}: unregistered format {f}"));
                }
            }
            let constrains = map.keys().any(|k| CONSTRAINING.contains(&k.as_str()))
                || (map.contains_key("if")
                    && (map.contains_key("then") || map.contains_key("else")));
            if !constrains && keyword != Some("not") {
                out.push(format!("{path}: untyped schema"));
            }
            for (key, value) in map {
                let here = format!("{path}/{key}");
                let k = key.as_str();
                if ONE.contains(&k) {
                    if k == "items" && value.is_array() {
                        for (i, v) in value.as_array().into_iter().flatten().enumerate() {
                            walk(v, &format!("{here}/{i}"), Some(k), out);
                        }
                    } else {
                        walk(value, &here, Some(k), out);
                    }
                } else if LIST.contains(&k) {
                    for (i, v) in value.as_array().into_iter().flatten().enumerate() {
                        walk(v, &format!("{here}/{i}"), Some(k), out);
                    }
                } else if MAP.contains(&k) {
                    for (name, v) in value.as_object().into_iter().flatten() {
                        walk(v, &format!("{here}/{name}"), Some(k), out);
                    }
                }
            }
        }
        _ => {}
    }
}

#[test]
fn every_tool_schema_of_the_real_router_is_portable() {
    let router = IngeroMcp::tool_router();
    let tools = router.list_all();
    assert!(tools.len() >= 13, "{} tools", tools.len());
    let mut problems = Vec::new();
    for tool in &tools {
        let input = Value::Object(tool.input_schema.as_ref().clone());
        for f in findings(&input) {
            problems.push(format!("{} inputSchema{f}", tool.name));
        }
        let output = tool
            .output_schema
            .as_ref()
            .map(|o| Value::Object(o.as_ref().clone()));
        assert!(output.is_some(), "{} has no outputSchema", tool.name);
        for f in findings(&output.unwrap_or_default()) {
            problems.push(format!("{} outputSchema{f}", tool.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_raw_schemas_had_the_problems_this_guards_against() {
    // Without the rewrite the lint finds what the Inspector reported, so a
    // passing test above means something.
    let raw = IngeroMcp::analysis_router() + IngeroMcp::sql_router();
    let all: Vec<String> = raw
        .list_all()
        .iter()
        .flat_map(|t| {
            let mut v = findings(&Value::Object(t.input_schema.as_ref().clone()));
            if let Some(o) = &t.output_schema {
                v.extend(findings(&Value::Object(o.as_ref().clone())));
            }
            v
        })
        .collect();
    assert!(all.iter().any(|f| f.contains("type array")), "{all:?}");
    assert!(
        all.iter().any(|f| f.contains("unregistered format")),
        "{all:?}"
    );
}

#[test]
fn epoch_instants_are_exact_strings_in_every_output_schema() {
    // Every property documented as an epoch-ns instant is a string.
    let router = IngeroMcp::tool_router();
    let mut checked = 0;
    for tool in router.list_all() {
        let Some(out) = tool.output_schema else {
            continue;
        };
        epoch_properties(&Value::Object(out.as_ref().clone()), &mut |name, schema| {
            checked += 1;
            assert_eq!(
                schema.get("type").and_then(Value::as_str),
                Some("string"),
                "{} {name}: {schema}",
                tool.name
            );
        });
    }
    assert!(checked >= 6, "only {checked} epoch properties found");
}

/// Calls `f` on every property whose description says it is in epoch ns.
fn epoch_properties(node: &Value, f: &mut dyn FnMut(&str, &Value)) {
    match node {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                for (name, schema) in props {
                    let desc = schema
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if desc.contains("epoch ns") && schema.get("$ref").is_none() {
                        f(name, schema);
                    }
                }
            }
            for v in map.values() {
                epoch_properties(v, f);
            }
        }
        Value::Array(items) => {
            for v in items {
                epoch_properties(v, f);
            }
        }
        _ => {}
    }
}
