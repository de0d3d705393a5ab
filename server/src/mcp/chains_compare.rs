//! `get_causal_chains` with `compare_with`: the chain report of this run,
//! then how it compares with the baseline (the verdict and the findings
//! that moved most, as `compare_runs` answers), so a model asking "why is
//! it idle, and did my fix help?" gets both from one call.

use super::readable;
use ingero_tools::compare::{text, Comparison};
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::ErrorData;
use serde_json::Value;

/// Findings the appended text lists (the structured comparison has all).
pub const FINDINGS_LISTED: usize = 5;

/// Adds `c` to a successful chains answer: as `comparison` in its
/// structured content and as the brief comparison text after its text,
/// naming the baseline as the caller did (`base`).
pub fn append(result: &mut CallToolResult, c: &Comparison, base: &str) -> Result<(), ErrorData> {
    let mut json = serde_json::to_value(c).map_err(|e| {
        ErrorData::internal_error(format!("cannot serialise comparison: {e}"), None)
    })?;
    readable::annotate(&mut json);
    if let Some(Value::Object(map)) = result.structured_content.as_mut() {
        map.insert("comparison".to_string(), json);
    }
    let addition = format!(
        "\nCompared with the baseline {base} (each run's steady phase, as compare_runs):\n{}",
        text::brief_top(c, FINDINGS_LISTED)
    );
    let first_text = result.content.iter_mut().find_map(|b| {
        let text = b.as_text()?.text.clone();
        Some((b, text))
    });
    match first_text {
        Some((block, text)) => *block = ContentBlock::text(format!("{text}{addition}")),
        None => result.content.push(ContentBlock::text(addition)),
    }
    Ok(())
}

/// The answer when the comparison could not be made (a baseline that is
/// not in the library, a file that cannot be read): the failure, saying
/// it came from `compare_with`.
pub fn refused(mut failed: CallToolResult) -> CallToolResult {
    for block in &mut failed.content {
        if let Some(text) = block.as_text() {
            let said = format!("compare_with: {}", text.text);
            *block = ContentBlock::text(said);
        }
    }
    failed
}
