//! The capture's database file, opened and brought to the current schema on
//! a thread of its own while the probes load, so that a launched command is
//! released sooner. A capture that fails before its session starts removes a
//! file it created, so a failed start leaves nothing behind.

use crate::error::CaptureError;
use ingero_store::{PreparedDb, StoreError, TraceWriter};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

/// A database file being prepared (see the module documentation).
pub(crate) struct DbPrep {
    handle: Option<JoinHandle<Result<PreparedDb, StoreError>>>,
    path: PathBuf,
    existed: bool,
}

impl DbPrep {
    /// Starts preparing `path` when it is a new file. An existing file (a
    /// capture appended to an earlier one) is only touched once the probes
    /// are in place, at [`DbPrep::finish`], as is any file where no thread
    /// can be started.
    pub(crate) fn start(path: &Path) -> DbPrep {
        let existed = path.exists();
        let owned = path.to_path_buf();
        let handle = if existed {
            None
        } else {
            std::thread::Builder::new()
                .name("ingero-db-prep".into())
                .spawn(move || TraceWriter::prepare(&owned))
                .ok()
        };
        DbPrep {
            handle,
            path: path.to_path_buf(),
            existed,
        }
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
        // Close the connection before removing what it made.
        drop(h.join());
        if !self.existed {
            for f in ingero_store::side_files(&self.path) {
                let _ = std::fs::remove_file(f);
            }
        }
    }
}
