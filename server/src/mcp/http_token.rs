//! The HTTP server's credential: where the bearer token comes from and
//! whether it is strong enough to protect anything.
//!
//! A token on the command line shows in `ps` and `/proc/PID/cmdline` to
//! every local user, so it may also come from `INGERO_TOKEN` or from a file
//! only its owner can read (`--token-file`). Whatever its source, a token
//! that can be guessed (short, few distinct characters, a repeated pattern,
//! a run such as `abcdef…`) is refused: it would only look like protection.

use std::path::{Path, PathBuf};

/// Shortest token accepted, in characters.
pub const MIN_TOKEN_CHARS: usize = 32;

/// Least estimated entropy accepted, in bits (length × the Shannon entropy
/// of its characters): 32 random hex digits give about 115, 32 random
/// base64 characters about 140.
pub const MIN_TOKEN_BITS: f64 = 100.0;

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("cannot read the token file {path}: {source}")]
    Read {
        /// The file named by `--token-file`.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Another user could read (or replace) the token.
    #[error("refusing the token file {path}: its mode {mode:04o} lets group or others access it; run `chmod 600 {path}`")]
    Exposed {
        /// The file named by `--token-file`.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Nothing but white space in it.
    #[error("the token file {0} is empty")]
    Empty(PathBuf),
    /// The token is not UTF-8 text.
    #[error("the token file {0} is not text")]
    NotText(PathBuf),
}

/// Reads a token from `path`: the file must be accessible to its owner
/// only; one trailing newline (`\n` or `\r\n`) is dropped.
pub fn read_token_file(path: &Path) -> Result<String, TokenFileError> {
    let read = |source| TokenFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read)?;
    let mode = permission_bits(&meta);
    if mode & 0o077 != 0 {
        return Err(TokenFileError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    let bytes = std::fs::read(path).map_err(read)?;
    let text = String::from_utf8(bytes).map_err(|_| TokenFileError::NotText(path.to_path_buf()))?;
    let token = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text);
    if token.trim().is_empty() {
        return Err(TokenFileError::Empty(path.to_path_buf()));
    }
    Ok(token.to_string())
}

#[cfg(unix)]
fn permission_bits(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn permission_bits(_meta: &std::fs::Metadata) -> u32 {
    0o600
}

/// Why `token` is too weak to guard the server, if it is.
pub fn token_weakness(token: &str) -> Option<String> {
    let chars: Vec<char> = token.chars().collect();
    let n = chars.len();
    if n < MIN_TOKEN_CHARS {
        return Some(format!(
            "it has {n} characters, at least {MIN_TOKEN_CHARS} are needed"
        ));
    }
    if chars.iter().any(|c| c.is_whitespace()) {
        return Some("it contains white space".to_string());
    }
    let mut distinct = chars.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 8 {
        return Some(format!(
            "it uses only {} distinct characters",
            distinct.len()
        ));
    }
    let period = smallest_period(&chars);
    if period * 2 <= n {
        return Some(format!("it repeats a {period}-character pattern"));
    }
    let steps = chars
        .windows(2)
        .filter(|w| (w[1] as i64 - w[0] as i64).abs() <= 1)
        .count();
    if steps * 2 > n - 1 {
        return Some("it is mostly runs such as aaaa or abcd or 4321".to_string());
    }
    let bits = estimated_bits(&chars);
    if bits < MIN_TOKEN_BITS {
        return Some(format!(
            "its characters carry about {bits:.0} bits, at least {MIN_TOKEN_BITS:.0} are needed"
        ));
    }
    None
}

/// The shortest `p` such that `chars` is a prefix of its first `p`
/// characters repeated (`n` when it repeats nothing).
fn smallest_period(chars: &[char]) -> usize {
    // Knuth–Morris–Pratt failure function: the longest proper border.
    let mut border = vec![0usize; chars.len()];
    let mut k = 0;
    for i in 1..chars.len() {
        while k > 0 && chars[i] != chars[k] {
            k = border[k - 1];
        }
        if chars[i] == chars[k] {
            k += 1;
        }
        border[i] = k;
    }
    chars.len() - border.last().copied().unwrap_or(0)
}

/// Length × the Shannon entropy of the character frequencies.
fn estimated_bits(chars: &[char]) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in chars {
        *counts.entry(*c).or_insert(0usize) += 1;
    }
    let n = chars.len() as f64;
    let per_char: f64 = counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum();
    per_char * n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_tokens_are_named() {
        assert!(token_weakness("a").is_some());
        assert!(token_weakness(&"a".repeat(64)).is_some());
        assert!(token_weakness(&"12".repeat(20)).is_some());
        assert!(token_weakness(&"12345678".repeat(8)).is_some());
        assert!(token_weakness(&"abcdefghij".repeat(4)).is_some());
        assert!(token_weakness("abcdefghijklmnopqrstuvwxyz0123456789").is_some());
        assert!(token_weakness("change me change me change me change me").is_some());
        assert!(token_weakness("test-token-0123456789").is_some());
    }

    #[test]
    fn random_tokens_pass() {
        assert!(token_weakness("Qm9vdHN0cmFwIHRoZSB0b2tlbiBoZXJlIQ==").is_none());
        assert!(token_weakness("Zm9yIHRlc3RzIG9ubHk6IGEgc3Ryb25nIHRva2Vu").is_none());
        assert!(token_weakness("3f9c1a7e52b04d8896e1c0f2a7b35d64").is_none());
        assert!(token_weakness("q2mL9xR4vT7bN1cK8pZ3wF6hJ0sD5gYa").is_none());
    }

    #[test]
    fn periods_are_found() {
        let p = |s: &str| smallest_period(&s.chars().collect::<Vec<_>>());
        assert_eq!(p("abcabcab"), 3);
        assert_eq!(p("abcd"), 4);
        assert_eq!(p("aaaa"), 1);
    }

    #[cfg(unix)]
    #[test]
    fn token_files_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        std::fs::write(&path, "secret-value\r\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(
            read_token_file(&path),
            Err(TokenFileError::Exposed { mode: 0o644, .. })
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(read_token_file(&path).expect("read"), "secret-value");
        std::fs::write(&path, "\n").expect("write");
        assert!(matches!(
            read_token_file(&path),
            Err(TokenFileError::Empty(_))
        ));
    }
}
