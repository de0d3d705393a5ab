//! Whether an existing file may receive another capture session: only an
//! ingero trace (or an empty file) that the user running ingero owns. Any
//! other SQLite database, an Ingero (Go) one included, is left exactly as it
//! was: it is read, never written, to decide.

use crate::error::{Result, StoreError};
use crate::safe_open;
use crate::schema::{FORMAT_TAG, SCHEMA_VERSION};
use rusqlite::{Connection, OpenFlags};
use std::fs::File;
use std::io::Read;
use std::path::Path;

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Checks the existing file at `path` may be extended with a new session
/// (see the module documentation) and returns it open, so that the caller
/// can make sure the file it then writes is this one.
pub(crate) fn check_extendable(path: &Path) -> Result<File> {
    let mut file = safe_open::open_own_existing(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(file);
    }
    let mut header = [0u8; 20];
    let n = read_up_to(&mut file, &mut header)?;
    if n < header.len() || &header[..16] != SQLITE_MAGIC {
        return Err(StoreError::NotATrace {
            path: path.to_path_buf(),
            detail: "it is not an SQLite database".into(),
        });
    }
    // Bytes 18 and 19 are 2 in write-ahead-log mode; such a file with no log
    // beside it is read immutable, so that reading leaves no side files.
    let at_rest_wal = header[18] == 2 && header[19] == 2 && !crate::open::wal_file(path).exists();
    let conn = open_to_inspect(path, at_rest_wal)?;
    if !safe_open::still_same(&file, path)? {
        return Err(replaced(path));
    }
    inspect(&conn, path)?;
    Ok(file)
}

/// The error for a file swapped for another between two opens of its name.
pub(crate) fn replaced(path: &Path) -> StoreError {
    StoreError::Open {
        path: path.to_path_buf(),
        detail: "the file was replaced while ingero was opening it; try again".into(),
    }
}

/// Reads until `buf` is full or the file ends; returns how much was read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// A read-only connection to `path` that refuses a link in its place.
fn open_to_inspect(path: &Path, at_rest_wal: bool) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(crate::foreign::file_uri(path, at_rest_wal), flags)
        .map_err(|e| StoreError::from_sqlite(path, e))?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// Accepts a database with no tables or a native trace this build can
/// write to; refuses every other database with what it holds.
fn inspect(conn: &Connection, path: &Path) -> Result<()> {
    let tables = crate::open::table_names(conn).map_err(|e| StoreError::from_sqlite(path, e))?;
    if tables.is_empty() {
        return Ok(());
    }
    let has = |t: &str| tables.iter().any(|n| n == t);
    if has("ingero_meta") {
        let tag: Option<String> = conn
            .query_row(
                "SELECT value FROM ingero_meta WHERE key = 'format'",
                [],
                |r| r.get(0),
            )
            .ok();
        if tag.as_deref() == Some(FORMAT_TAG) {
            let version: i64 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(|e| StoreError::from_sqlite(path, e))?;
            if version > SCHEMA_VERSION {
                return Err(StoreError::NewerSchema {
                    path: path.to_path_buf(),
                    found: version,
                    known: SCHEMA_VERSION,
                });
            }
            return Ok(());
        }
    }
    let detail = if has("events") && has("ops") && has("sources") {
        "it holds an Ingero (Go) database".to_string()
    } else {
        let mut shown: Vec<&str> = tables.iter().map(String::as_str).take(5).collect();
        if tables.len() > 5 {
            shown.push("...");
        }
        format!("it holds other tables: {}", shown.join(", "))
    };
    Err(StoreError::NotATrace {
        path: path.to_path_buf(),
        detail,
    })
}
