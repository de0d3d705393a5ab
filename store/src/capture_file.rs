//! The database file a capture writes: a new file ingero creates itself
//! (exclusively, mode 0600, never through a link) or an existing trace of
//! the same user ([`crate::extend`]), and then opened by SQLite, checked to be
//! the file that was claimed. SQLite gives its `-wal` and `-shm` files the
//! database's mode.

use crate::error::{Result, StoreError};
use crate::extend::{check_extendable, replaced};
use crate::open::side_files;
use crate::safe_open;
use rusqlite::{Connection, OpenFlags};
use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;

/// Refuses, without writing anything, a path a capture may not write to;
/// the same checks [`open_for_capture`] makes, for a caller that wants the
/// answer before it starts work.
pub(crate) fn check_target(path: &Path) -> Result<()> {
    if exists(path)? {
        check_extendable(path).map(drop)
    } else {
        refuse_leftovers(path)
    }
}

/// The write connection to the capture file at `path`, and whether this
/// call created the file. A file it created is removed again when opening
/// it fails.
pub(crate) fn open_for_capture(path: &Path) -> Result<(Connection, bool)> {
    let (held, created) = claim(path)?;
    match open_claimed(path, &held) {
        Ok(conn) => Ok((conn, created)),
        Err(e) => {
            if created {
                remove_created(path);
            }
            Err(e)
        }
    }
}

/// Removes a database ingero created at `path` and SQLite's files beside it
/// (best effort: what cannot be removed is left), for a capture that failed
/// before it recorded anything.
pub(crate) fn remove_created(path: &Path) {
    for f in side_files(path) {
        let _ = std::fs::remove_file(f);
    }
}

/// The file at `path`, open, and whether it was created here.
fn claim(path: &Path) -> Result<(File, bool)> {
    if exists(path)? {
        return Ok((check_extendable(path)?, false));
    }
    refuse_leftovers(path)?;
    match safe_open::create_new(path) {
        Ok(f) => Ok((f, true)),
        // Made by someone else since the look above: judged as any existing file.
        Err(StoreError::AlreadyExists(_)) => Ok((check_extendable(path)?, false)),
        Err(e) => Err(e),
    }
}

/// Whether anything, a dangling link included, is at `path`.
fn exists(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::Open {
            path: path.to_path_buf(),
            detail: e.to_string(),
        }),
    }
}

/// Refuses a new database beside a journal, log or shared-memory file of
/// an earlier one: SQLite would take it for the new file's own.
fn refuse_leftovers(path: &Path) -> Result<()> {
    for side in side_files(path).iter().skip(1) {
        if std::fs::symlink_metadata(side).is_ok() {
            return Err(StoreError::LeftoverSideFile(side.clone()));
        }
    }
    Ok(())
}

/// Opens the claimed file with SQLite (never creating, never through a
/// link) and makes sure the name still leads to `held`.
fn open_claimed(path: &Path, held: &File) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(|e| StoreError::Open {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    if !safe_open::still_same(held, path)? {
        return Err(replaced(path));
    }
    Ok(conn)
}
