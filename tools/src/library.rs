//! The folder of trace databases a server may show and open.
//!
//! A client names databases by path; every path is resolved against one
//! allowed folder and canonicalised (symlinks and `..` resolved) before it is
//! compared with the folder, so nothing outside it can be listed or opened.

use ingero_store::clip::{clip, clip_quoted};
use serde::Serialize;
use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

/// How deep [`Library::list`] descends below the folder.
const MAX_DEPTH: usize = 4;
/// Most entries [`Library::list`] returns.
const MAX_ENTRIES: usize = 1_000;

/// Why a path was refused or the folder cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    /// The allowed folder itself is unusable.
    #[error("{path}: cannot use as the database folder ({detail})", path = .path.display())]
    BadFolder {
        /// The folder given.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The path resolves outside the allowed folder. Messages quote a
    /// client's long path only in part.
    #[error("{}: outside the allowed folder {}", given(.0), .1.display())]
    Outside(PathBuf, PathBuf),
    /// Nothing at that path.
    #[error("{}: no such database in the allowed folder (list them with list_databases)", given(.0))]
    NotFound(PathBuf),
    /// The path is a folder or a special file.
    #[error("{}: not a regular file", given(.0))]
    NotAFile(PathBuf),
    /// The path is empty or contains a NUL byte.
    #[error("bad path {}", clip_quoted(.0))]
    BadPath(String),
}

/// A client-supplied path for a message: shortened when long.
fn given(path: &Path) -> String {
    clip(&path.to_string_lossy()).into_owned()
}

impl LibraryError {
    /// True when the caller's path is at fault (all but an unusable folder).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, LibraryError::BadFolder { .. })
    }
}

/// One database file found in the folder.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DbEntry {
    /// Path relative to the folder; pass it to `open_database`.
    pub name: String,
    /// Absolute, canonical path.
    pub path: String,
    /// File size, bytes (excluding any `-wal` side file).
    pub size_bytes: u64,
    /// Last modification, seconds since the Unix epoch (0 when unknown).
    pub modified_unix_s: i64,
    /// True when a `-wal` file sits next to it (a capture may still be writing).
    pub has_wal: bool,
}

/// The allowed folder.
#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
}

impl Library {
    /// Uses `dir` (which must exist) as the allowed folder.
    pub fn new(dir: &Path) -> Result<Library, LibraryError> {
        let bad = |detail: String| LibraryError::BadFolder {
            path: dir.to_path_buf(),
            detail,
        };
        let root = dir.canonicalize().map_err(|e| bad(e.to_string()))?;
        if !root.is_dir() {
            return Err(bad("not a directory".into()));
        }
        Ok(Library { root })
    }

    /// The canonical allowed folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `.db` files under the folder (a few levels deep), sorted by name.
    /// Entries whose canonical path leaves the folder (symlinks) are skipped.
    pub fn list(&self) -> Result<Vec<DbEntry>, LibraryError> {
        let mut out = Vec::new();
        self.walk(&self.root, 0, &mut out)
            .map_err(|e| LibraryError::BadFolder {
                path: self.root.clone(),
                detail: e.to_string(),
            })?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn walk(&self, dir: &Path, depth: usize, out: &mut Vec<DbEntry>) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if out.len() >= MAX_ENTRIES {
                return Ok(());
            }
            let Ok(real) = entry.path().canonicalize() else {
                continue;
            };
            if !real.starts_with(&self.root) {
                continue;
            }
            let Ok(meta) = std::fs::metadata(&real) else {
                continue;
            };
            if meta.is_dir() {
                if depth + 1 < MAX_DEPTH && real != *dir {
                    self.walk(&real, depth + 1, out)?;
                }
                continue;
            }
            let is_db = real.extension().is_some_and(|e| e == "db");
            if !meta.is_file() || !is_db {
                continue;
            }
            let logical = entry.path();
            let name = logical
                .strip_prefix(&self.root)
                .unwrap_or(&logical)
                .to_string_lossy()
                .into_owned();
            let modified_unix_s = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64);
            out.push(DbEntry {
                name,
                path: real.to_string_lossy().into_owned(),
                size_bytes: meta.len(),
                modified_unix_s,
                has_wal: ingero_store::wal_file(&real).exists(),
            });
        }
        Ok(())
    }

    /// Resolves a client-supplied path (relative to the folder, or absolute)
    /// to an existing regular file inside the folder.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, LibraryError> {
        if requested.trim().is_empty() || requested.contains('\0') {
            return Err(LibraryError::BadPath(requested.to_string()));
        }
        let given = Path::new(requested);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        // Refuse lexical escapes before touching the file system, so the
        // answer does not reveal whether a file outside the folder exists.
        if !lexically_inside(&self.root, &joined) {
            return Err(LibraryError::Outside(
                given.to_path_buf(),
                self.root.clone(),
            ));
        }
        let real = match joined.canonicalize() {
            Ok(p) => p,
            Err(_) => return Err(LibraryError::NotFound(given.to_path_buf())),
        };
        if !real.starts_with(&self.root) {
            return Err(LibraryError::Outside(
                given.to_path_buf(),
                self.root.clone(),
            ));
        }
        if !real.is_file() {
            return Err(LibraryError::NotAFile(given.to_path_buf()));
        }
        Ok(real)
    }
}

/// True when `path`, with `.` and `..` folded without following links, stays under `root`.
fn lexically_inside(root: &Path, path: &Path) -> bool {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(parts.last(), Some(Component::Normal(_))) {
                    parts.pop();
                } else {
                    return false;
                }
            }
            other => parts.push(other),
        }
    }
    let folded: PathBuf = parts.iter().collect();
    folded.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_inside_and_refuses_escapes() {
        let top = tempfile::tempdir().expect("tmp");
        let lib_dir = top.path().join("lib");
        std::fs::create_dir_all(lib_dir.join("sub")).expect("mkdir");
        std::fs::write(lib_dir.join("a.db"), b"x").expect("write");
        std::fs::write(lib_dir.join("sub/b.db"), b"x").expect("write");
        std::fs::write(lib_dir.join("notes.txt"), b"x").expect("write");
        std::fs::write(top.path().join("secret.db"), b"x").expect("write");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(top.path().join("secret.db"), lib_dir.join("link.db"))
                .expect("symlink");
            std::os::unix::fs::symlink(top.path(), lib_dir.join("up")).expect("symlink");
        }
        let lib = Library::new(&lib_dir).expect("lib");
        let names: Vec<String> = lib
            .list()
            .expect("list")
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec!["a.db".to_string(), "sub/b.db".to_string()]);
        assert!(lib.resolve("a.db").is_ok());
        assert!(lib.resolve("sub/../a.db").is_ok());
        let abs = lib_dir.join("sub/b.db");
        assert!(lib.resolve(&abs.to_string_lossy()).is_ok());
        for bad in [
            "../secret.db",
            "sub/../../secret.db",
            "link.db",
            "up/secret.db",
            "/etc/passwd",
        ] {
            let err = lib.resolve(bad).expect_err(bad);
            assert!(matches!(err, LibraryError::Outside(..)), "{bad}: {err}");
        }
        assert!(matches!(
            lib.resolve("nope.db"),
            Err(LibraryError::NotFound(_))
        ));
        assert!(matches!(lib.resolve("sub"), Err(LibraryError::NotAFile(_))));
        assert!(matches!(lib.resolve(""), Err(LibraryError::BadPath(_))));
    }

    #[test]
    fn a_huge_path_is_quoted_in_part() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = Library::new(dir.path()).expect("lib");
        let huge = "d".repeat(900_000);
        for requested in [huge.clone(), format!("../{huge}"), format!("{huge}\0")] {
            let message = lib.resolve(&requested).expect_err("refused").to_string();
            assert!(message.len() < 400, "{} bytes", message.len());
            assert!(message.contains("bytes)"), "{message}");
        }
    }
}
