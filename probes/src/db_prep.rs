//! The capture's database file, opened and brought to the current schema on
//! a thread of its own while the probes load, so that a launched command is
//! released sooner. A path the capture may not write to (a link, another
//! user's file, a database that is not an ingero trace) is refused before
//! anything starts. A capture that fails before its session starts removes a
//! file it created, so a failed start leaves nothing behind.

use crate::error::CaptureError;
use ingero_store::{PreparedDb, StoreError, TraceWriter};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

/// A database file being prepared (see the module documentation).
pub(crate) struct DbPrep {
    handle: Option<JoinHandle<Result<PreparedDb, StoreError>>>,
    path: PathBuf,
}

impl DbPrep {
    /// Refuses a path the capture may not write to, then starts preparing
    /// `path` when it is a new file. An existing file (a capture appended to
    /// an earlier one) is only written once the probes are in place, at
    /// [`DbPrep::finish`], as is any file where no thread can be started.
    pub(crate) fn start(path: &Path) -> Result<DbPrep, CaptureError> {
        TraceWriter::check_target(path)?;
        let existed = std::fs::symlink_metadata(path).is_ok();
        let owned = path.to_path_buf();
        let handle = if existed {
            None
        } else {
            std::thread::Builder::new()
                .name("ingero-db-prep".into())
                .spawn(move || TraceWriter::prepare(&owned))
                .ok()
        };
        Ok(DbPrep {
            handle,
            path: path.to_path_buf(),
        })
    }

    /// The prepared file, once its thread is done.
    pub(crate) fn finish(mut self) -> Result<PreparedDb, CaptureError> {
        let prepared = match self.handle.take() {
            Some(h) => h.join().map_err(|_| {
                CaptureError::Internal("the thread preparing the database panicked".into())
            })?,
            None => TraceWriter::prepare(&self.path),
        };
        Ok(prepared?)
    }
}

impl Drop for DbPrep {
    fn drop(&mut self) {
        let Some(h) = self.handle.take() else {
            return;
        };
        // Only a file the thread created goes; a thread that failed removed
        // what it made itself. The connection is closed before removing.
        let Ok(Ok(prepared)) = h.join() else {
            return;
        };
        let created = prepared.created();
        drop(prepared);
        if created {
            for f in ingero_store::side_files(&self.path) {
                let _ = std::fs::remove_file(f);
            }
        }
    }
}
