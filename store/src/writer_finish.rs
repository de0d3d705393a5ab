//! Closing a capture session: its stop time and the reason it ended go into
//! `sessions`, then the write-ahead log is folded into the file. The stop
//! is recorded even when the file system is full: it is one small update,
//! written before anything else at the end, and tried again once SQLite has
//! had a chance to move its log into the file.

use crate::error::{Result, StoreError};
use crate::insert_rows::insert_rows;
use crate::writer::{activity_row, TraceWriter, ACTIVITY_COLUMNS};
use rusqlite::{params, ErrorCode};
use std::path::PathBuf;

/// What closing a session did.
#[derive(Debug)]
pub struct Closed {
    /// The database file.
    pub path: PathBuf,
    /// What went wrong after the stop was recorded (the last activity
    /// spans, or folding the log into the file): the file is readable and
    /// says why it ended, but is not complete or not self-contained.
    pub tidy_error: Option<StoreError>,
}

impl TraceWriter {
    /// Marks the session stopped at `stopped_ns` and folds the WAL into the
    /// main file, so the database is a single self-contained file that opens
    /// read-only anywhere. The reason is left unsaid (`''`).
    pub fn finish(self, stopped_ns: i64) -> Result<PathBuf> {
        let closed = self.finish_because(stopped_ns, "")?;
        match closed.tidy_error {
            Some(e) => Err(e),
            None => Ok(closed.path),
        }
    }

    /// Closes the session as [`TraceWriter::finish`] does, recording why it
    /// ended (`sessions.stop_reason`). An error means the stop itself could
    /// not be recorded; later trouble is in [`Closed::tidy_error`].
    pub fn finish_because(mut self, stopped_ns: i64, reason: &str) -> Result<Closed> {
        let spans = self.write_last_activity().err();
        self.record_stop(stopped_ns, reason)?;
        self.reserve.release();
        let tidy = self.tidy().err();
        Ok(Closed {
            path: self.path,
            tidy_error: spans.or(tidy),
        })
    }

    /// Closes the session after a storage error: only the stop time (the
    /// last instant the file holds in full) and the reason are written,
    /// then the log is folded into the file if there is room for it.
    pub fn finish_after_failure(mut self, stopped_ns: i64, reason: &str) -> Result<Closed> {
        self.record_stop(stopped_ns, reason)?;
        // What room is left goes to the final checkpoint.
        self.reserve.release();
        let tidy = self.tidy().err();
        Ok(Closed {
            path: self.path,
            tidy_error: tidy,
        })
    }

    /// Writes the activity spans still open at the stop.
    fn write_last_activity(&mut self) -> Result<()> {
        let spans = std::mem::take(&mut self.activity).finish();
        let rows: Vec<[i64; 12]> = spans
            .iter()
            .map(|s| activity_row(self.session_id(), s))
            .collect();
        let tx = self.conn.transaction()?;
        insert_rows(&tx, "cuda_activity", &ACTIVITY_COLUMNS, &rows)?;
        tx.commit()?;
        Ok(())
    }

    /// Sets the session's stop time and reason. On a full file system the
    /// update is tried again with the room the writer kept
    /// ([`crate::reserve`]) given back, then once more after a passive
    /// checkpoint. Measured on tmpfs mounts of 3 to 17 MiB: the first try
    /// fails whenever the disk filled while SQLite's log had to grow past
    /// a partial checkpoint, and the try with the room given back then
    /// succeeds.
    fn record_stop(&mut self, stopped_ns: i64, reason: &str) -> Result<()> {
        let mut last = self.update_stop(stopped_ns, reason);
        if matches!(&last, Err(e) if is_full(e)) && self.reserve.held() {
            self.reserve.release();
            last = self.update_stop(stopped_ns, reason);
        }
        if matches!(&last, Err(e) if is_full(e)) {
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            last = self.update_stop(stopped_ns, reason);
        }
        last.map_err(StoreError::from)
    }

    /// The one small update that records the stop.
    fn update_stop(&self, stopped_ns: i64, reason: &str) -> rusqlite::Result<()> {
        self.conn
            .execute(
                "UPDATE sessions SET stopped_ns = ?2, stop_reason = ?3 WHERE id = ?1",
                params![self.session_id(), stopped_ns, reason],
            )
            .map(|_| ())
    }

    /// Folds the log into the file and leaves rollback-journal mode. Best
    /// effort: while a reader has the capture open (an MCP server following
    /// it live) SQLite refuses the switch; the file then stays in WAL mode,
    /// complete and readable, and its last connection folds the log back in.
    fn tidy(&self) -> Result<()> {
        let tidy = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .and_then(|()| {
                self.conn
                    .query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
            });
        match tidy {
            Err(e) if e.sqlite_error_code() != Some(ErrorCode::DatabaseBusy) => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// True for SQLite's "database or disk is full".
fn is_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(ErrorCode::DiskFull)
}
