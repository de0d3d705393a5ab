//! Opening the files ingero writes (trace databases, report and export
//! output) the way a tool that often runs as root must: never through a
//! symbolic link, new files readable by their owner only, and an existing
//! file added to only when the user running ingero owns it.

use crate::error::{Result, StoreError};
use std::fs::{File, Metadata, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Permissions of every file ingero creates: a capture holds command lines,
/// host names and stacks, which are nobody else's business.
pub const NEW_FILE_MODE: u32 = 0o600;

/// Creates `path` as a new, empty file of mode [`NEW_FILE_MODE`], failing
/// when anything (a file, a link, even a dangling one) is already there, so
/// that the file ingero then fills is the one it made.
pub fn create_new(path: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(NEW_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| open_error(path, e))
}

/// Opens `path` for writing an output (a report page, an export), creating
/// it with mode [`NEW_FILE_MODE`] when new and emptying it when it exists,
/// and refusing a symbolic link in its place.
pub fn create_output(path: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(NEW_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| open_error(path, e))
}

/// Opens the existing regular file at `path` for reading, refusing a link,
/// anything that is not a plain file, and a file owned by another user
/// than the one ingero runs as. The open file is kept by the caller to
/// check, with [`still_same`], that what it opens by name later is this file.
pub fn open_own_existing(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(StoreError::NotRegularFile(path.to_path_buf()));
    }
    let uid = effective_uid();
    if meta.uid() != uid {
        return Err(StoreError::NotOwned {
            path: path.to_path_buf(),
            owner: meta.uid(),
            uid,
        });
    }
    Ok(file)
}

/// True when `path` names, without following a link, the very file `file`
/// has open: what SQLite opened by name is then the file that was checked.
pub fn still_same(file: &File, path: &Path) -> Result<bool> {
    let held = file.metadata()?;
    let named = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(open_error(path, e)),
    };
    Ok(same_inode(&held, &named))
}

fn same_inode(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// The user whose files ingero may add to: the effective uid.
fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Turns an `open(2)` failure into the store error that says what to do:
/// a link in the way (`ELOOP` from `O_NOFOLLOW`, or `EEXIST` on a link
/// from `O_EXCL`) is named as such.
fn open_error(path: &Path, err: std::io::Error) -> StoreError {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link || err.raw_os_error() == Some(libc::ELOOP) {
        return StoreError::Symlink(path.to_path_buf());
    }
    if err.kind() == ErrorKind::AlreadyExists {
        return StoreError::AlreadyExists(path.to_path_buf());
    }
    StoreError::Open {
        path: path.to_path_buf(),
        detail: err.to_string(),
    }
}
