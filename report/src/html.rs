//! The self-contained HTML report: one file with its stylesheet, its script
//! and its data inline, so it opens from a laptop, a CI artifact or an e-mail
//! attachment with no network. A Content-Security-Policy forbids every fetch,
//! which keeps that promise checked by the browser itself.

use crate::data::ReportData;
use crate::error::Result;

const CSS: &str = include_str!("../assets/report.css");
const JS: &str = include_str!("../assets/report.js");

/// Renders the report page for `data`.
pub fn report_html(data: &ReportData) -> Result<String> {
    let json = script_safe_json(&serde_json::to_string(data)?);
    let title = escape_html(&format!("ingero report: {}", data.capture.source));
    let mut page = String::with_capacity(json.len() + CSS.len() + JS.len() + 1024);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    page.push_str(&format!(
        "<title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n"
    ));
    page.push_str("<body data-rendered=\"false\">\n");
    page.push_str("<noscript>This report draws its charts with JavaScript; enable it to see them.</noscript>\n");
    // Static, so it reads without the script; the script moves it under the header.
    if let Some(c) = &data.comparison {
        page.push_str(&crate::compare::comparison_section(c));
    }
    page.push_str("<div id=\"app\"></div>\n");
    if let Some(flame) = &data.flame_html {
        page.push_str(flame);
    }
    page.push_str("<script type=\"application/json\" id=\"ingero-data\">");
    page.push_str(&json);
    page.push_str("</script>\n<script>\n");
    page.push_str(JS);
    page.push_str("</script>\n</body>\n</html>\n");
    Ok(page)
}

/// Makes JSON safe to place inside a `<script>` element: no `</script>`, no
/// `<!--`, and no line separators that old parsers treat as newlines. The
/// replacements are JSON escapes, so `JSON.parse` reads the same value back.
pub fn script_safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for ch in json.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_cannot_close_the_script() {
        let raw = serde_json::to_string(&"</script><!-- & \u{2028}").unwrap_or_default();
        let safe = script_safe_json(&raw);
        assert!(!safe.contains("</"));
        assert!(!safe.contains("<!--"));
        let back: String = serde_json::from_str(&safe).unwrap_or_default();
        assert_eq!(back, "</script><!-- & \u{2028}");
    }

    #[test]
    fn html_text_is_escaped() {
        assert_eq!(escape_html("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
