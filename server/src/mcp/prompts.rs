//! Prompts served to MCP clients (`/investigate`, `/compare_runs`,
//! `/explain_chain`), embedded from the Markdown files in `prompts/`.
//!
//! Each file starts with a small front-matter header naming the prompt and
//! declaring its arguments; the body uses `{{argument}}` placeholders.

use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use rmcp::ErrorData;
use serde_json::{Map, Value};

/// The embedded prompt sources.
const SOURCES: &[&str] = &[
    include_str!("../../../prompts/investigate.md"),
    include_str!("../../../prompts/compare_runs.md"),
    include_str!("../../../prompts/explain_chain.md"),
];

/// One declared argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSpec {
    /// Argument name, as used in `{{name}}`.
    pub name: String,
    /// Shown to users by clients.
    pub description: String,
    /// Whether a client must supply it.
    pub required: bool,
}

/// A parsed prompt file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptDoc {
    /// Prompt name (what clients show as `/name`).
    pub name: String,
    /// Short human title.
    pub title: String,
    /// One-line description.
    pub description: String,
    /// Declared arguments.
    pub arguments: Vec<ArgSpec>,
    /// Template body.
    pub body: String,
}

/// Why a prompt file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("prompt file: {0}")]
pub struct PromptParseError(String);

/// Parses the front-matter header and body of one prompt file.
pub fn parse(source: &str) -> Result<PromptDoc, PromptParseError> {
    let err = |m: &str| PromptParseError(m.to_string());
    let rest = source
        .strip_prefix("---\n")
        .ok_or_else(|| err("missing front-matter opening ---"))?;
    let end = rest
        .find("\n---\n")
        .ok_or_else(|| err("missing front-matter closing ---"))?;
    let (header, body) = (&rest[..end], &rest[end + 5..]);
    let mut doc = PromptDoc {
        name: String::new(),
        title: String::new(),
        description: String::new(),
        arguments: Vec::new(),
        body: body.trim().to_string(),
    };
    let mut in_args = false;
    for line in header.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let indented = line.starts_with(' ');
        let item = line.trim_start();
        let (item, new_arg) = match item.strip_prefix("- ") {
            Some(rest) => (rest, true),
            None => (item, false),
        };
        let (key, value) = item
            .split_once(':')
            .ok_or_else(|| PromptParseError(format!("bad header line {line:?}")))?;
        let value = value.trim().to_string();
        if !indented {
            in_args = key == "arguments";
            match key {
                "name" => doc.name = value,
                "title" => doc.title = value,
                "description" => doc.description = value,
                "arguments" => {}
                other => return Err(PromptParseError(format!("unknown header key {other:?}"))),
            }
            continue;
        }
        if !in_args {
            return Err(err("indented line outside arguments"));
        }
        if new_arg {
            doc.arguments.push(ArgSpec {
                name: String::new(),
                description: String::new(),
                required: false,
            });
        }
        let arg = doc
            .arguments
            .last_mut()
            .ok_or_else(|| err("argument field before '- name:'"))?;
        match key {
            "name" => arg.name = value,
            "description" => arg.description = value,
            "required" => arg.required = value == "true",
            other => return Err(PromptParseError(format!("unknown argument key {other:?}"))),
        }
    }
    if doc.name.is_empty() || doc.description.is_empty() {
        return Err(err("name and description are required"));
    }
    if doc.arguments.iter().any(|a| a.name.is_empty()) {
        return Err(err("an argument has no name"));
    }
    Ok(doc)
}

/// The prompt catalogue.
pub struct Prompts {
    docs: Vec<PromptDoc>,
}

impl Prompts {
    /// Parses the embedded prompt files.
    pub fn load() -> Result<Prompts, PromptParseError> {
        let docs = SOURCES
            .iter()
            .map(|s| parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Prompts { docs })
    }

    /// What `prompts/list` returns.
    pub fn list(&self) -> Vec<Prompt> {
        self.docs
            .iter()
            .map(|d| {
                let args = d
                    .arguments
                    .iter()
                    .map(|a| {
                        PromptArgument::new(a.name.clone())
                            .with_description(a.description.clone())
                            .with_required(a.required)
                    })
                    .collect();
                Prompt::new(d.name.clone(), Some(d.description.clone()), Some(args))
                    .with_title(d.title.clone())
            })
            .collect()
    }

    /// What `prompts/get` returns: the body with arguments filled in.
    pub fn get(
        &self,
        name: &str,
        args: Option<&Map<String, Value>>,
    ) -> Result<GetPromptResult, ErrorData> {
        let doc = self.docs.iter().find(|d| d.name == name).ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "unknown prompt {}; available: {}",
                    ingero_store::clip::clip_quoted(name),
                    self.docs
                        .iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            )
        })?;
        let empty = Map::new();
        let args = args.unwrap_or(&empty);
        let mut values: Vec<(&str, String)> = Vec::with_capacity(doc.arguments.len());
        for spec in &doc.arguments {
            let given = match args.get(&spec.name) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            };
            let value = match (given, spec.required) {
                (Some(v), _) => v,
                (None, true) => {
                    return Err(ErrorData::invalid_params(
                        format!("prompt {name:?} needs the argument {:?}", spec.name),
                        None,
                    ))
                }
                (None, false) => default_for(&spec.name).to_string(),
            };
            values.push((spec.name.as_str(), value));
        }
        let text = fill(&doc.body, &values);
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(doc.description.clone()),
        )
    }
}

/// Replaces each `{{name}}` of `body` that has a value, in one pass over the
/// template, so a value is inserted as given: placeholders inside a value
/// are never filled in turn. Other `{{...}}` text is left as it is.
fn fill(body: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let known = after.find("}}").and_then(|close| {
            let name = &after[..close];
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (v, close))
        });
        match known {
            Some((value, close)) => {
                out.push_str(value);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Wording used when an optional argument is left out.
fn default_for(arg: &str) -> &'static str {
    match arg {
        "db" => "(the server's current database)",
        "focus" => "none given; find the main cause of GPU idle time",
        "chain" => "(the most severe one)",
        _ => "(not given)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_prompts_parse_and_fill() {
        let p = Prompts::load().expect("load");
        let names: Vec<String> = p.list().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["investigate", "compare_runs", "explain_chain"]);
        let mut args = Map::new();
        args.insert("db".into(), Value::String("run1.db".into()));
        let r = p.get("investigate", Some(&args)).expect("get");
        let text = serde_json::to_string(&r).expect("json");
        assert!(text.contains("run1.db"));
        assert!(!text.contains("{{"));
        assert!(p.get("compare_runs", None).is_err());
        assert!(p.get("nope", None).is_err());
    }

    #[test]
    fn argument_values_are_inserted_as_given() {
        // Found by tests/mcp/fuzz_tool_args.py: a value holding another
        // argument's placeholder used to be filled in turn.
        let p = Prompts::load().expect("load");
        let mut args = Map::new();
        args.insert("db".into(), Value::String("{{focus}}".into()));
        args.insert("focus".into(), Value::String("GPU idles".into()));
        let r = p.get("investigate", Some(&args)).expect("get");
        let text = serde_json::to_string(&r).expect("json");
        assert!(text.contains("{{focus}}"), "{text}");
        let filled = fill(
            "a {{x}} b {{y}} {{z}} {{",
            &[("x", "{{y}}".into()), ("y", "2".into())],
        );
        assert_eq!(filled, "a {{y}} b 2 {{z}} {{");
    }

    /// Names written in backticks in a prompt body, in order.
    fn backticked(body: &str) -> Vec<&str> {
        body.split('`').skip(1).step_by(2).collect()
    }

    #[test]
    fn prompts_lead_to_the_tools_and_name_no_prompt_as_a_tool() {
        let p = Prompts::load().expect("load");
        let tools: Vec<String> = super::super::server::IngeroMcp::tool_router()
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        for doc in &p.docs {
            let named = backticked(&doc.body);
            // A prompt sharing its name with a tool (`compare_runs`) may
            // name that tool.
            for prompt in p.docs.iter().filter(|d| !tools.contains(&d.name)) {
                assert!(
                    !named.contains(&prompt.name.as_str()),
                    "{} names the prompt {} as if it were a tool",
                    doc.name,
                    prompt.name
                );
            }
            let first = named.iter().find(|n| tools.iter().any(|t| t == *n));
            // Comparing two runs starts from the comparison of their findings.
            let lead = if doc.name == "compare_runs" {
                "compare_runs"
            } else {
                "get_causal_chains"
            };
            assert_eq!(first, Some(&lead), "{}", doc.name);
            let before = doc.body.find("Call the tools before you answer");
            let steps = doc.body.find("\n1. ");
            let answer = doc.body.find("When the tool results are in");
            assert!(
                before.is_some() && before < steps && steps < answer,
                "{}: the call-the-tools rule, then the steps, then the answer",
                doc.name
            );
        }
        assert!(
            super::super::server::INSTRUCTIONS.contains("Start with get_causal_chains"),
            "the server instructions start where the prompts do"
        );
    }

    #[test]
    fn prompts_carry_no_example_finding_or_fix() {
        let causes = serde_json::to_value(schemars::schema_for!(ingero_tools::chains::Cause))
            .expect("schema");
        let mut names: Vec<String> = Vec::new();
        collect_enum_strings(&causes, &mut names);
        assert!(names.len() > 5, "{causes}");
        let fixes = [
            "pin_memory",
            "num_workers",
            "randperm",
            "pre-shuffled",
            "batchsampler",
            "dataloader",
            "taskset",
        ];
        for doc in Prompts::load().expect("load").docs {
            let body = doc.body.to_lowercase();
            for word in names.iter().map(String::as_str).chain(fixes) {
                assert!(
                    !body.contains(word),
                    "{} mentions {word:?}: a prompt leads to the evidence, not to a finding",
                    doc.name
                );
            }
        }
    }

    /// Every string inside an `enum` list of a JSON schema.
    fn collect_enum_strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("enum", Value::Array(items)) => {
                            out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_string)))
                        }
                        ("const", Value::String(s)) => out.push(s.clone()),
                        _ => collect_enum_strings(x, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|x| collect_enum_strings(x, out)),
            _ => {}
        }
    }

    #[test]
    fn a_huge_unknown_prompt_name_is_quoted_in_part() {
        let p = Prompts::load().expect("load");
        let name = "p".repeat(900_000);
        let e = p.get(&name, None).expect_err("unknown");
        assert!(e.message.len() < 300, "{} bytes", e.message.len());
        assert!(e.message.contains("(900,000 bytes)"), "{}", e.message);
    }
}
