//! The last guard on error texts: a caller's value quoted in an error is
//! shortened to a prefix, whoever wrote the message (serde's deserialisation
//! errors that rmcp passes on, the capture engine's argument checks).
//!
//! Messages this server writes already quote through
//! [`ingero_store::clip`]; this pass catches the rest. A quoted span longer
//! than [`QUOTE_CHARS`] characters, and an unquoted run without spaces longer
//! than [`LONG_RUN`] characters, keep their first [`QUOTE_CHARS`] characters,
//! then `…` and their length in bytes.

use ingero_store::clip::{clip, thousands, QUOTE_CHARS};
use rmcp::model::{CallToolResult, ContentBlock};
use std::borrow::Cow;

/// Characters an unquoted run may have before it is shortened (longer than
/// any path or identifier a message names on purpose).
pub const LONG_RUN: usize = 4 * QUOTE_CHARS;

/// `message` with every long quoted span and long unquoted run shortened.
pub fn shorten(message: &str) -> Cow<'_, str> {
    let quoted = shorten_quoted(message);
    match shorten_runs(&quoted) {
        Cow::Borrowed(_) => quoted,
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// `result` with the text of its content shortened, when it is an error.
pub fn shorten_error_result(mut result: CallToolResult) -> CallToolResult {
    if result.is_error != Some(true) {
        return result;
    }
    for block in &mut result.content {
        let Some(text) = block.as_text() else {
            continue;
        };
        if let Cow::Owned(short) = shorten(&text.text) {
            *block = ContentBlock::text(short);
        }
    }
    result
}

/// Shortens `"..."` spans (backslash escapes honoured) longer than
/// [`QUOTE_CHARS`] + 1 characters: one more than a span already shortened
/// (`QUOTE_CHARS` characters and `…`), so a second pass changes nothing.
fn shorten_quoted(message: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut rest_from = 0;
    while let Some(open) = message[rest_from..].find('"').map(|i| rest_from + i) {
        let body_start = open + 1;
        let Some(close) = closing_quote(&message[body_start..]).map(|i| body_start + i) else {
            break;
        };
        let body = &message[body_start..close];
        rest_from = close + 1;
        if body.chars().nth(QUOTE_CHARS + 1).is_none() {
            continue;
        }
        let keep = body
            .char_indices()
            .nth(QUOTE_CHARS)
            .map_or(body.len(), |(i, _)| i);
        let shown = body[..keep].trim_end_matches('\\');
        out.push_str(&message[copied..body_start]);
        out.push_str(shown);
        out.push_str(&format!("…\" ({} bytes)", thousands(body.len())));
        copied = close + 1;
    }
    if copied == 0 {
        return Cow::Borrowed(message);
    }
    out.push_str(&message[copied..]);
    Cow::Owned(out)
}

/// Byte offset of the quote that ends a span starting at `body`.
fn closing_quote(body: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i),
            _ => {}
        }
    }
    None
}

/// Shortens runs of non-whitespace longer than [`LONG_RUN`] characters.
fn shorten_runs(message: &str) -> Cow<'_, str> {
    let long = message
        .split_whitespace()
        .any(|run| run.chars().nth(LONG_RUN).is_some());
    if !long {
        return Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len().min(4096));
    let mut run_start: Option<usize> = None;
    for (i, c) in message.char_indices() {
        match (c.is_whitespace(), run_start) {
            (false, None) => run_start = Some(i),
            (true, Some(start)) => {
                push_run(&mut out, &message[start..i]);
                run_start = None;
                out.push(c);
            }
            (true, None) => out.push(c),
            (false, Some(_)) => {}
        }
    }
    if let Some(start) = run_start {
        push_run(&mut out, &message[start..]);
    }
    Cow::Owned(out)
}

/// Appends `run`, shortened when longer than [`LONG_RUN`] characters.
fn push_run(out: &mut String, run: &str) {
    if run.chars().nth(LONG_RUN).is_some() {
        out.push_str(&clip(run));
    } else {
        out.push_str(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_messages_are_untouched() {
        let m = r#"failed to deserialize parameters: invalid type: string "abc", expected i32"#;
        assert!(matches!(shorten(m), Cow::Borrowed(_)));
    }

    #[test]
    fn a_long_quoted_value_keeps_a_prefix_and_its_length() {
        let m = format!(
            "failed to deserialize parameters: invalid type: string \"{}\", expected i32",
            "a".repeat(900_000)
        );
        let s = shorten(&m);
        assert_eq!(
            s,
            format!(
                "failed to deserialize parameters: invalid type: string \"{}…\" (900,000 bytes), expected i32",
                "a".repeat(QUOTE_CHARS)
            )
        );
        assert_eq!(shorten(&s), s, "a second pass changes nothing");
    }

    #[test]
    fn escapes_inside_quotes_do_not_end_the_span() {
        let body = format!("x\\\"{}", "b".repeat(500));
        let m = format!("bad \"{body}\" here");
        let s = shorten(&m);
        assert!(s.starts_with("bad \"x\\\"bbb"), "{s}");
        assert!(s.ends_with("…\" (503 bytes) here"), "{s}");
    }

    #[test]
    fn a_long_unquoted_run_is_shortened() {
        let m = format!("ring_size: {} is not usable", "9".repeat(900_000));
        let s = shorten(&m);
        assert!(s.len() < 200, "{s}");
        assert!(s.starts_with("ring_size: 999"), "{s}");
        assert!(s.ends_with("… (900,000 bytes) is not usable"), "{s}");
    }

    #[test]
    fn error_results_are_shortened_and_others_kept() {
        let long = format!("bad \"{}\"", "c".repeat(1_000));
        let error = shorten_error_result(CallToolResult::error(vec![ContentBlock::text(
            long.clone(),
        )]));
        let text = error.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        assert!(text.len() < 200, "{text}");
        let ok = shorten_error_result(CallToolResult::success(vec![ContentBlock::text(
            long.clone(),
        )]));
        let text = ok.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        assert_eq!(text, long);
    }
}
