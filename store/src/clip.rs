//! Short quotes of caller-supplied values for error messages.
//!
//! An error names the value it refuses so the caller can see what was wrong,
//! but a value can be huge (a 900 KB string sent as a duration): echoing it
//! whole makes the error as large as the request. Errors quote at most
//! [`QUOTE_CHARS`] characters of a value, then an ellipsis and its full
//! length.

use std::borrow::Cow;

/// Most characters of a value an error message repeats.
pub const QUOTE_CHARS: usize = 80;

/// `text` whole when it has at most [`QUOTE_CHARS`] characters; otherwise its
/// first [`QUOTE_CHARS`] characters, `…` and the full length, e.g.
/// `aaaa… (900,000 bytes)`.
pub fn clip(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(QUOTE_CHARS) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… ({} bytes)",
            &text[..cut],
            thousands(text.len())
        )),
    }
}

/// `text` quoted as Rust's `{:?}` would, shortened like [`clip`]: the
/// ellipsis inside the quotes, the length after them, e.g.
/// `"aaaa…" (900,000 bytes)`.
pub fn clip_quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => {
            let shown = format!("{:?}", &text[..cut]);
            let open = shown.strip_suffix('"').unwrap_or(&shown);
            format!("{open}…\" ({} bytes)", thousands(text.len()))
        }
    }
}

/// `n` with a comma between groups of three digits: `900,000`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let groups: Vec<&str> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).unwrap_or_default())
        .collect();
    groups.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole() {
        assert_eq!(clip("30s"), "30s");
        assert_eq!(clip_quoted("yesterday"), "\"yesterday\"");
        let exact = "x".repeat(QUOTE_CHARS);
        assert_eq!(clip(&exact), exact.as_str());
    }

    #[test]
    fn long_values_keep_a_prefix_and_their_length() {
        let long = "a".repeat(900_000);
        let c = clip(&long);
        assert_eq!(c, format!("{}… (900,000 bytes)", "a".repeat(QUOTE_CHARS)));
        let q = clip_quoted(&long);
        assert_eq!(
            q,
            format!("\"{}…\" (900,000 bytes)", "a".repeat(QUOTE_CHARS))
        );
    }

    #[test]
    fn cuts_on_character_boundaries() {
        let long = "é".repeat(200);
        let c = clip(&long);
        assert!(c.starts_with(&"é".repeat(QUOTE_CHARS)), "{c}");
        assert!(c.ends_with("… (400 bytes)"), "{c}");
    }

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
