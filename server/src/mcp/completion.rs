//! `completion/complete` for prompt arguments: an argument that names a
//! trace database completes to the `.db` files of the allowed folder, so a
//! chat client can offer them after `/investigate `. Other arguments are
//! free text and complete to nothing.

use rmcp::model::{CompletionInfo, Prompt};
use rmcp::ErrorData;

/// Prompt arguments whose value is a database name from `list_databases`.
pub const DATABASE_ARGUMENTS: &[&str] = &["db", "baseline", "candidate"];

/// Completes argument `argument` of prompt `prompt` from `value`, given the
/// server's prompts and the database names of the allowed folder.
///
/// An unknown prompt or argument is the client's error (-32602, naming
/// what exists), as the MCP completion spec asks.
pub fn complete_prompt_argument(
    prompts: &[Prompt],
    prompt: &str,
    argument: &str,
    value: &str,
    databases: impl FnOnce() -> Vec<String>,
) -> Result<CompletionInfo, ErrorData> {
    let Some(found) = prompts.iter().find(|p| p.name == prompt) else {
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        return Err(ErrorData::invalid_params(
            format!(
                "unknown prompt {:?}; prompts: {}",
                shorten(prompt),
                names.join(", ")
            ),
            None,
        ));
    };
    let declared: Vec<&str> = found
        .arguments
        .iter()
        .flatten()
        .map(|a| a.name.as_str())
        .collect();
    if !declared.contains(&argument) {
        return Err(ErrorData::invalid_params(
            format!(
                "prompt {prompt} has no argument {:?}; its arguments: {}",
                shorten(argument),
                declared.join(", ")
            ),
            None,
        ));
    }
    if !DATABASE_ARGUMENTS.contains(&argument) {
        return info(Vec::new(), 0);
    }
    let mut matching: Vec<String> = databases()
        .into_iter()
        .filter(|name| name.starts_with(value))
        .collect();
    matching.sort();
    let total = matching.len();
    matching.truncate(CompletionInfo::MAX_VALUES);
    info(matching, total)
}

fn info(values: Vec<String>, total: usize) -> Result<CompletionInfo, ErrorData> {
    let has_more = total > values.len();
    CompletionInfo::with_pagination(
        values,
        Some(u32::try_from(total).unwrap_or(u32::MAX)),
        has_more,
    )
    .map_err(|e| ErrorData::internal_error(e, None))
}

/// At most 80 characters of a client's value, for an error message.
fn shorten(value: &str) -> String {
    const KEEP: usize = 80;
    match value.char_indices().nth(KEEP) {
        None => value.to_string(),
        Some((cut, _)) => format!("{}... ({} bytes)", &value[..cut], value.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::PromptArgument;

    fn prompts() -> Vec<Prompt> {
        vec![Prompt::new(
            "investigate",
            Some("x"),
            Some(vec![
                PromptArgument::new("db"),
                PromptArgument::new("focus"),
            ]),
        )]
    }

    fn dbs() -> Vec<String> {
        vec!["run-b.db".into(), "run-a.db".into(), "other.db".into()]
    }

    #[test]
    fn database_arguments_complete_to_matching_files() {
        let c = complete_prompt_argument(&prompts(), "investigate", "db", "run", dbs)
            .expect("completes");
        assert_eq!(c.values, vec!["run-a.db", "run-b.db"]);
        assert_eq!(c.total, Some(2));
        assert_eq!(c.has_more, Some(false));
    }

    #[test]
    fn free_text_arguments_complete_to_nothing() {
        let c = complete_prompt_argument(&prompts(), "investigate", "focus", "gpu", dbs)
            .expect("completes");
        assert!(c.values.is_empty());
    }

    #[test]
    fn unknown_prompts_and_arguments_are_invalid_params() {
        let e = complete_prompt_argument(&prompts(), "nope", "db", "", dbs).expect_err("unknown");
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("investigate"), "{}", e.message);
        let e = complete_prompt_argument(&prompts(), "investigate", "x", "", dbs)
            .expect_err("unknown argument");
        assert!(e.message.contains("db, focus"), "{}", e.message);
    }
}
