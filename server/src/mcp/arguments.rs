//! Tool arguments checked against the tool's advertised input schema before
//! the tool runs, so a value the schema forbids (`run_sql` with
//! `max_rows: 0`, a `pid` of the wrong type) is refused with the argument
//! and the constraint named, the same way for every tool.
//!
//! Refusals are tool execution errors (`isError: true`), not JSON-RPC
//! errors: since MCP 2025-11-25 (SEP-1303) input validation failures are
//! reported that way, so the model reads the message and corrects itself.

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;
use std::collections::HashMap;

use ingero_store::clip::{clip, clip_quoted};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::ValidationError;

/// Most problems one refusal lists.
const MAX_PROBLEMS: usize = 5;

/// Compiled input schemas of every tool, by tool name.
pub struct ArgumentCheck {
    validators: HashMap<String, jsonschema::Validator>,
    /// The arguments each tool accepts, for refusals of unknown ones.
    accepted: HashMap<String, Vec<String>>,
    /// Read-only tools, where another tool's argument is set aside rather
    /// than refused (a tool that changes the machine refuses it).
    forgiving: Vec<String>,
}

impl ArgumentCheck {
    /// Compiles the input schema of each of `tools`; a schema that does not
    /// compile is a bug in this server, reported with the tool's name.
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a Tool>) -> anyhow::Result<ArgumentCheck> {
        let mut validators = HashMap::new();
        let mut accepted = HashMap::new();
        let mut forgiving = Vec::new();
        for tool in tools {
            if tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false)
            {
                forgiving.push(tool.name.to_string());
            }
            let names: Vec<String> = tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            accepted.insert(tool.name.to_string(), names);
            let schema = Value::Object(tool.input_schema.as_ref().clone());
            let validator = jsonschema::validator_for(&schema).map_err(|e| {
                anyhow::anyhow!("input schema of tool {} does not compile: {e}", tool.name)
            })?;
            validators.insert(tool.name.to_string(), validator);
        }
        Ok(ArgumentCheck {
            validators,
            accepted,
            forgiving,
        })
    }

    /// Removes from `arguments` each argument `tool` does not take but
    /// another tool of this server does (a model carrying `detail` from
    /// `get_causal_chains` over to the next tool), and returns a note per
    /// argument set aside, naming the tools that take it. Only read-only
    /// tools do this; a name no tool takes stays, to be refused as unknown
    /// (a misspelling).
    pub fn set_aside(&self, tool: &str, arguments: &mut Option<JsonObject>) -> Vec<String> {
        let (Some(own), Some(map)) = (self.accepted.get(tool), arguments.as_mut()) else {
            return Vec::new();
        };
        if !self.forgiving.iter().any(|t| t == tool) {
            return Vec::new();
        }
        let mut notes = Vec::new();
        let foreign: Vec<String> = map.keys().filter(|k| !own.contains(k)).cloned().collect();
        for name in foreign {
            let mut takers: Vec<&str> = self
                .accepted
                .iter()
                .filter(|(_, args)| args.contains(&name))
                .map(|(t, _)| t.as_str())
                .collect();
            if takers.is_empty() {
                continue;
            }
            takers.sort_unstable();
            map.remove(&name);
            let more = takers.len().saturating_sub(3);
            takers.truncate(3);
            notes.push(format!(
                "note: argument {} ignored: {tool} does not take it (taken by {}{})",
                clip_quoted(&name),
                takers.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        notes
    }

    /// `Ok` when `arguments` (absent counts as `{}`) satisfy the input schema
    /// of `tool`, or when no such tool exists (the router answers that);
    /// otherwise the message to return, naming each argument at fault.
    pub fn check(&self, tool: &str, arguments: Option<&JsonObject>) -> Result<(), String> {
        let Some(validator) = self.validators.get(tool) else {
            return Ok(());
        };
        let instance = Value::Object(arguments.cloned().unwrap_or_default());
        let mut problems: Vec<String> = Vec::new();
        let mut more = 0usize;
        let accepted = self.accepted.get(tool).map_or(&[][..], Vec::as_slice);
        for error in validator.iter_errors(&instance) {
            if problems.len() < MAX_PROBLEMS {
                problems.push(describe(&error, tool, accepted));
            } else {
                more += 1;
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        let mut message = format!("invalid arguments for {tool}: {}", problems.join("; "));
        if more > 0 {
            message.push_str(&format!("; and {more} more"));
        }
        Err(message)
    }
}

/// One problem, as `argument: what is wrong`; `accepted` are the arguments
/// of `tool`, listed when an unknown one is refused.
fn describe(error: &ValidationError<'_>, tool: &str, accepted: &[String]) -> String {
    let at = argument_name(error);
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } if at.is_empty() => {
            unknown_arguments(unexpected, tool, accepted)
        }
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            let name = join(&at, &name);
            format!("{name}: required argument missing")
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            match closest_branch(error, context) {
                Some(inner) => describe(inner, tool, accepted),
                None => format!(
                    "{}: {} is not of type {}",
                    label(&at),
                    value_text(error.instance()),
                    expected_types(context)
                ),
            }
        }
        _ => format!(
            "{}: {}",
            label(&at),
            error.masked_with(value_text(error.instance()))
        ),
    }
}

/// `unknown argument "db": start_trace accepts pid, pids, ...`.
fn unknown_arguments(unexpected: &[String], tool: &str, accepted: &[String]) -> String {
    let names: Vec<String> = unexpected.iter().map(|n| clip_quoted(n)).collect();
    let which = match names.as_slice() {
        [one] => format!("unknown argument {one}"),
        many => format!("unknown arguments {}", many.join(", ")),
    };
    let takes = if accepted.is_empty() {
        format!("{tool} takes no arguments")
    } else {
        format!("{tool} accepts {}", accepted.join(", "))
    };
    format!("{which}: {takes}")
}

/// The branch of a failed `anyOf` that got furthest: the first whose
/// failure is not just a different type at the same place (for
/// `max_rows: 0` against `integer >= 1 | null`, the `minimum`).
fn closest_branch<'e>(
    error: &ValidationError<'_>,
    context: &'e [Vec<ValidationError<'static>>],
) -> Option<&'e ValidationError<'static>> {
    let here = error.instance_path().as_str();
    context.iter().find_map(|branch| {
        let type_miss = branch.iter().any(|e| {
            matches!(e.kind(), ValidationErrorKind::Type { .. })
                && e.instance_path().as_str() == here
        });
        if type_miss {
            None
        } else {
            branch.first()
        }
    })
}

/// The types the branches of a failed `anyOf` expected: `"integer" or "null"`.
fn expected_types(context: &[Vec<ValidationError<'static>>]) -> String {
    let mut names: Vec<String> = Vec::new();
    for e in context.iter().flatten() {
        if let ValidationErrorKind::Type { kind } = e.kind() {
            let found: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![t.as_str()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
            };
            for t in found {
                let quoted = format!("{t:?}");
                if !names.contains(&quoted) {
                    names.push(quoted);
                }
            }
        }
    }
    if names.is_empty() {
        "any of the allowed shapes".to_string()
    } else {
        names.join(" or ")
    }
}

/// Where in the arguments the error is: `max_rows`, `pids[1]`; empty for
/// the arguments object itself.
fn argument_name(error: &ValidationError<'_>) -> String {
    let mut out = String::new();
    for segment in error.instance_path().segments() {
        match segment {
            jsonschema::paths::LocationSegment::Index(i) => out.push_str(&format!("[{i}]")),
            jsonschema::paths::LocationSegment::Property(name) => {
                let name = clip(&name).into_owned();
                out = join(&out, &name);
            }
        }
    }
    out
}

/// `parent.name`, or `name` at the top.
fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        clip(name).into_owned()
    } else {
        format!("{parent}.{}", clip(name))
    }
}

/// The argument's name, or `arguments` for the object as a whole.
fn label(at: &str) -> &str {
    if at.is_empty() {
        "arguments"
    } else {
        at
    }
}

/// A value for a message: strings quoted, anything shortened to a prefix.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => clip_quoted(s),
        other => clip(&other.to_string()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::server::IngeroMcp;
    use serde_json::json;

    fn check(tool: &str, args: Value) -> Result<(), String> {
        let router = IngeroMcp::tool_router();
        let check = ArgumentCheck::new(router.map.values().map(|r| &r.attr));
        let Ok(check) = check else {
            panic!("every input schema compiles");
        };
        check.check(tool, args.as_object())
    }

    #[test]
    fn good_arguments_and_unknown_tools_pass() {
        assert_eq!(
            check("run_sql", json!({ "sql": "SELECT 1", "max_rows": 5 })),
            Ok(())
        );
        assert_eq!(
            check("get_events", json!({ "limit": 1000, "pid": null })),
            Ok(())
        );
        assert_eq!(check("get_trace_status", json!({})), Ok(()));
        assert_eq!(check("no_such_tool", json!({ "x": 1 })), Ok(()));
    }

    #[test]
    fn a_value_below_the_minimum_names_argument_and_bound() {
        let e = check("run_sql", json!({ "sql": "SELECT 1", "max_rows": 0 })).err();
        assert_eq!(
            e.as_deref(),
            Some("invalid arguments for run_sql: max_rows: 0 is less than the minimum of 1")
        );
        let e = check("get_events", json!({ "limit": 100_000 }))
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("limit: 100000 is greater than the maximum of 1000"),
            "{e}"
        );
    }

    #[test]
    fn wrong_types_and_missing_arguments_are_named() {
        let e = check("get_trace_stats", json!({ "pid": "abc" }))
            .err()
            .unwrap_or_default();
        assert_eq!(
            e,
            r#"invalid arguments for get_trace_stats: pid: "abc" is not of type "integer" or "null""#
        );
        let e = check("run_sql", json!({})).err().unwrap_or_default();
        assert_eq!(
            e,
            "invalid arguments for run_sql: sql: required argument missing"
        );
        let e = check("start_trace", json!({ "pids": [1, "x"] }))
            .err()
            .unwrap_or_default();
        assert!(
            e.contains(r#"pids[1]: "x" is not of type "integer""#),
            "{e}"
        );
    }

    #[test]
    fn unknown_arguments_are_refused_with_the_accepted_ones_listed() {
        let e = check(
            "start_trace",
            json!({ "command": ["python", "x.py"], "db": "cap1.db", "duration": "6s" }),
        )
        .err()
        .unwrap_or_default();
        assert!(
            e.starts_with(r#"invalid arguments for start_trace: unknown arguments "command", "db": start_trace accepts "#),
            "{e}"
        );
        for name in [
            "pid",
            "pids",
            "process_name",
            "all_processes",
            "duration",
            "output",
            "ring_size",
            "launch_sample",
            "launch_rows",
        ] {
            assert!(e.contains(name), "{name} missing: {e}");
        }
        let e = check("list_gpu_processes", json!({ "all": true }))
            .err()
            .unwrap_or_default();
        assert_eq!(
            e,
            r#"invalid arguments for list_gpu_processes: unknown argument "all": list_gpu_processes takes no arguments"#
        );
    }

    #[test]
    fn another_tools_argument_is_set_aside_with_a_note() {
        let router = IngeroMcp::tool_router();
        let Ok(check) = ArgumentCheck::new(router.map.values().map(|r| &r.attr)) else {
            panic!("every input schema compiles");
        };
        let mut args = json!({"db": "a.db", "detail": "full", "no_such_argument": 1})
            .as_object()
            .cloned();
        let notes = check.set_aside("get_trace_stats", &mut args);
        assert_eq!(
            notes,
            ["note: argument \"detail\" ignored: get_trace_stats does not take it (taken by compare_runs, get_causal_chains)"]
        );
        assert_eq!(
            args,
            json!({"db": "a.db", "no_such_argument": 1})
                .as_object()
                .cloned()
        );
        assert!(check
            .check("get_trace_stats", args.as_ref())
            .is_err_and(|e| e.contains("no_such_argument")));
        // A tool that changes the machine refuses it instead.
        let mut args = json!({"db": "a.db", "duration": "5s"}).as_object().cloned();
        assert!(check.set_aside("start_trace", &mut args).is_empty());
        assert!(check
            .check("start_trace", args.as_ref())
            .is_err_and(|e| e.contains("unknown argument \"db\"")));
    }

    #[test]
    fn every_tool_refuses_an_argument_it_does_not_have() {
        let router = IngeroMcp::tool_router();
        let check = ArgumentCheck::new(router.map.values().map(|r| &r.attr));
        let Ok(check) = check else {
            panic!("every input schema compiles");
        };
        let mut tools = 0;
        for tool in router.list_all() {
            assert_eq!(
                tool.input_schema.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{}",
                tool.name
            );
            let mut args = serde_json::Map::new();
            args.insert("no_such_argument".into(), json!(1));
            let e = check
                .check(&tool.name, Some(&args))
                .err()
                .unwrap_or_default();
            assert!(
                e.contains(r#"unknown argument "no_such_argument""#),
                "{}: {e}",
                tool.name
            );
            tools += 1;
        }
        assert!(tools >= 15, "{tools} tools");
    }

    #[test]
    fn a_pid_beyond_32_bits_is_refused_before_deserialising() {
        let e = check("get_events", json!({ "pid": 1_u64 << 40 }))
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("pid: 1099511627776 is greater than the maximum of 2147483647"),
            "{e}"
        );
    }

    #[test]
    fn a_huge_value_is_quoted_in_part() {
        let huge = "7".repeat(900_000);
        let e = check("get_trace_stats", json!({ "pid": huge, "since": true }))
            .err()
            .unwrap_or_default();
        assert!(
            e.len() < 400,
            "{} bytes: {}",
            e.len(),
            &e[..400.min(e.len())]
        );
        assert!(
            e.contains(&format!("pid: \"{}…\" (900,000 bytes)", "7".repeat(80))),
            "{e}"
        );
        assert!(
            e.contains("since: true is not of type \"string\" or \"number\" or \"null\""),
            "{e}"
        );
        let e = check("run_sql", json!({ "sql": 1, "max_rows": [huge] }))
            .err()
            .unwrap_or_default();
        assert!(e.len() < 400, "{} bytes", e.len());
        assert!(e.contains("(900,004 bytes)"), "{e}");
    }
}
