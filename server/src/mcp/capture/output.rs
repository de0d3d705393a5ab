//! Where a capture writes: a new plain file name inside the allowed folder,
//! so a client can neither leave the folder nor overwrite a database.

use super::CaptureError;
use std::path::{Path, PathBuf};

/// The file name and path for `name` (default `capture-<unix time>.db`)
/// in `dir`; refused when it is not a plain `.db` name or already exists.
pub fn path(dir: &Path, name: Option<&str>) -> Result<(String, PathBuf), CaptureError> {
    let name = match name {
        Some(n) => n.to_string(),
        None => format!(
            "capture-{}.db",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        ),
    };
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !plain || !name.ends_with(".db") {
        return Err(CaptureError::BadRequest(format!(
            "output must be a plain file name ending in .db (letters, digits, '-', '_', '.'), got {name:?}"
        )));
    }
    let path = dir.join(&name);
    // A link counts as taken, a dangling one included: the writer never
    // writes through one.
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(CaptureError::BadRequest(format!(
            "{name} already exists in the allowed folder; choose another name"
        )));
    }
    Ok((name, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_plain_database_names_are_taken() {
        let dir = std::env::temp_dir();
        for bad in ["../x.db", "/etc/x.db", ".hidden.db", "x.txt", "", "a b.db"] {
            assert!(path(&dir, Some(bad)).is_err(), "{bad} accepted");
        }
        let made = path(&dir, None).map(|(n, _)| n).unwrap_or_default();
        assert!(
            made.starts_with("capture-") && made.ends_with(".db"),
            "{made}"
        );
    }
}
