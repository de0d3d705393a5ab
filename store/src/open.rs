//! Opening a trace database for reading, whatever wrote it.

use crate::error::{Result, StoreError};
use crate::foreign;
use crate::schema::{AGGREGATE_BUCKET_NS, FORMAT_TAG, SCHEMA_VERSION};
use crate::window::{CaptureSpan, ResolvedWindow, TimeWindow};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Who wrote the database being read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum DbFormat {
    /// Written by this project; `version` is the schema version.
    Native {
        /// `PRAGMA user_version` of the file.
        version: i64,
    },
    /// Written by Ingero (Go); mapped read-only onto the native table names.
    IngeroGo {
        /// Ingero's `schema_info.version`, empty when absent.
        version: String,
    },
}

/// A read-only trace database, presenting the native table names whatever the
/// file's own schema is (`sessions`, `processes`, `cuda_ops`, `cuda_calls`,
/// `host_events`, `system_snapshots`, `aggregates`, `capture_losses`).
pub struct TraceDb {
    conn: Connection,
    path: PathBuf,
    /// Opened as an immutable write-ahead-log file at rest (see `open_read_only`).
    at_rest_wal: bool,
    format: DbFormat,
    bucket_ns: i64,
    span: CaptureSpan,
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

impl TraceDb {
    /// Opens `path` read-only. The file is never modified.
    pub fn open(path: &Path) -> Result<TraceDb> {
        let at_rest = check_file(path)?;
        let conn = open_read_only(path, at_rest)?;
        let tables = table_names(&conn).map_err(|e| StoreError::from_sqlite(path, e))?;
        if tables.is_empty() {
            return Err(StoreError::Empty(path.to_path_buf()));
        }
        let has = |t: &str| tables.iter().any(|n| n == t);
        let (conn, format, bucket_ns) = if has("ingero_meta") {
            let tag: Option<String> = conn
                .query_row(
                    "SELECT value FROM ingero_meta WHERE key = 'format'",
                    [],
                    |r| r.get(0),
                )
                .ok();
            if tag.as_deref() != Some(FORMAT_TAG) {
                return Err(StoreError::ForeignSchema {
                    path: path.to_path_buf(),
                    detail: format!("ingero_meta.format is {tag:?}"),
                });
            }
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
            let bucket: i64 = conn
                .query_row(
                    "SELECT CAST(value AS INTEGER) FROM ingero_meta WHERE key = 'aggregate_bucket_ns'",
                    [],
                    |r| r.get(0),
                )
                .unwrap_or(AGGREGATE_BUCKET_NS);
            present_native(&conn, version).map_err(|e| StoreError::from_sqlite(path, e))?;
            (conn, DbFormat::Native { version }, bucket)
        } else if has("events") && has("ops") && has("sources") {
            drop(conn);
            let mapped = foreign::attach_ingero_go(path, at_rest)?;
            (
                mapped.conn,
                DbFormat::IngeroGo {
                    version: mapped.version,
                },
                mapped.bucket_ns,
            )
        } else {
            let mut shown: Vec<&str> = tables.iter().map(String::as_str).take(5).collect();
            if tables.len() > 5 {
                shown.push("...");
            }
            return Err(StoreError::ForeignSchema {
                path: path.to_path_buf(),
                detail: format!("unknown tables: {}", shown.join(", ")),
            });
        };
        let native = matches!(format, DbFormat::Native { .. });
        let span = capture_span(&conn).map_err(|e| match e {
            e if native && crate::integrity::is_value_error(&e) => {
                match crate::integrity::every_row(&conn) {
                    Ok(Some(damage)) => StoreError::Unreadable {
                        path: path.to_path_buf(),
                        damage,
                    },
                    _ => StoreError::from_sqlite(path, e),
                }
            }
            e => StoreError::from_sqlite(path, e),
        })?;
        let Some(span) = span else {
            return Err(StoreError::Empty(path.to_path_buf()));
        };
        if !plausible(span) {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: format!(
                    "its recorded times run from {} to {} ns, which no capture spans",
                    span.start_ns, span.end_ns
                ),
            });
        }
        // Every column the analyses read, before any of them runs (see
        // `crate::integrity`); files of Ingero (Go) are views of the reader's.
        if native {
            let damage =
                crate::integrity::on_open(&conn).map_err(|e| StoreError::from_sqlite(path, e))?;
            if let Some(damage) = damage {
                return Err(StoreError::Unreadable {
                    path: path.to_path_buf(),
                    damage,
                });
            }
        }
        Ok(TraceDb {
            conn,
            path: path.to_path_buf(),
            at_rest_wal: at_rest,
            format,
            bucket_ns,
            span,
        })
    }

    /// A second read-only connection to the same file, presenting the same
    /// tables as [`TraceDb::conn`], so that a large read can run on another
    /// thread beside this one (a `Connection` serves one thread at a time).
    /// `None` for files whose presentation lives only in this connection (a
    /// foreign schema mapped in memory) or when the file cannot be opened
    /// again; callers then read on `conn`.
    pub fn reader(&self) -> Option<Connection> {
        let DbFormat::Native { version } = self.format else {
            return None;
        };
        let conn = open_read_only(&self.path, self.at_rest_wal).ok()?;
        present_native(&conn, version).ok()?;
        Some(conn)
    }

    /// True when the file holds the exact per-thread activity spans
    /// (`cuda_activity`, native schema 3 on); other files have them derived
    /// from raw rows by the reader.
    pub fn has_activity_spans(&self) -> bool {
        matches!(self.format, DbFormat::Native { version } if version >= 3)
    }

    /// An integer fact of `ingero_meta` (native files), `None` when absent.
    pub fn meta_i64(&self, key: &str) -> Option<i64> {
        self.conn
            .query_row(
                "SELECT CAST(value AS INTEGER) FROM ingero_meta WHERE key = ?1",
                [key],
                |r| r.get(0),
            )
            .ok()
    }

    /// The read-only connection, with the native table names available.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The file that was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Who wrote the file.
    pub fn format(&self) -> &DbFormat {
        &self.format
    }

    /// Width of the rows in `aggregates`, ns (1 s native, 60 s for Ingero files).
    pub fn aggregate_bucket_ns(&self) -> i64 {
        self.bucket_ns
    }

    /// First and last recorded instants.
    pub fn span(&self) -> CaptureSpan {
        self.span
    }

    /// Resolves a relative window against this capture.
    pub fn resolve(&self, window: &TimeWindow) -> ResolvedWindow {
        window.resolve(self.span)
    }

    /// Turns an SQLite error raised while reading this file into a store error
    /// that says whether the file is damaged. A value a read could not take
    /// (wrong type, out of range) is looked for in every row of the checked
    /// columns, and named ([`StoreError::Unreadable`]) when found.
    pub fn classify(&self, err: rusqlite::Error) -> StoreError {
        if crate::integrity::is_value_error(&err) {
            if let Ok(Some(damage)) = crate::integrity::every_row(&self.conn) {
                return StoreError::Unreadable {
                    path: self.path.clone(),
                    damage,
                };
            }
        }
        StoreError::from_sqlite(&self.path, err)
    }
}

impl StoreError {
    /// Maps SQLite's "corrupt" and "not a database" codes to the matching
    /// user-facing errors; everything else stays an SQLite error.
    pub fn from_sqlite(path: &Path, err: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode;
        match err.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => StoreError::NotSqlite(path.to_path_buf()),
            Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: err.to_string(),
            },
            Some(ErrorCode::CannotOpen) | Some(ErrorCode::PermissionDenied) => StoreError::Open {
                path: path.to_path_buf(),
                detail: err.to_string(),
            },
            _ => StoreError::Sqlite(err),
        }
    }
}

/// Checks the file is an SQLite database; returns true when it is a
/// write-ahead-log file with no writer (no `-wal` beside it).
fn check_file(path: &Path) -> Result<bool> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StoreError::NotFound(path.to_path_buf()))
        }
        Err(e) => {
            return Err(StoreError::Open {
                path: path.to_path_buf(),
                detail: e.to_string(),
            })
        }
    };
    if meta.is_dir() {
        return Err(StoreError::Open {
            path: path.to_path_buf(),
            detail: "is a directory".into(),
        });
    }
    if meta.len() == 0 {
        return Err(StoreError::Empty(path.to_path_buf()));
    }
    let mut header = [0u8; 20];
    let mut f = std::fs::File::open(path).map_err(|e| StoreError::Open {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let n = f.read(&mut header)?;
    if n < 20 || &header[..16] != SQLITE_MAGIC {
        return Err(StoreError::NotSqlite(path.to_path_buf()));
    }
    // Bytes 18 and 19 are 2 in write-ahead-log mode.
    let wal_mode = header[18] == 2 && header[19] == 2;
    Ok(wal_mode && !wal_file(path).exists())
}

/// The write-ahead log SQLite keeps next to a database (`<path>-wal`) while
/// a writer has it open.
pub fn wal_file(path: &Path) -> PathBuf {
    with_suffix(path, "-wal")
}

/// The database and the files SQLite may keep next to it (rollback journal,
/// write-ahead log, shared memory): what goes when a file this tool made is
/// removed.
pub fn side_files(path: &Path) -> [PathBuf; 4] {
    [
        path.to_path_buf(),
        with_suffix(path, "-journal"),
        wal_file(path),
        with_suffix(path, "-shm"),
    ]
}

/// Presents a native file of schema `version` on `conn` as the current
/// schema: older files read through views and empty tables in TEMP, made
/// with the connection's query-only guard lifted for that moment only.
fn present_native(conn: &Connection, version: i64) -> rusqlite::Result<()> {
    conn.pragma_update(None, "query_only", false)
        .and_then(|()| crate::compat::present_native(conn, version))
        .and_then(|()| conn.pragma_update(None, "query_only", true))
}

/// Latest instant a capture can hold: 2^62 ns after the epoch (year 2116).
pub const LATEST_NS: i64 = 1 << 62;
/// Longest span a capture can cover: one year (captures merged from
/// several nodes or sessions included). [`TraceDb::open`] refuses a file
/// whose times run longer as damaged, and no recorded duration can be longer.
pub const LONGEST_SPAN_NS: i64 = 366 * 86_400 * 1_000_000_000;

/// Whether `span` can come from a capture: times after the epoch, before
/// [`LATEST_NS`], at most [`LONGEST_SPAN_NS`] apart. A damaged file can hold
/// any value; one outside this range would make differences and sums of
/// times overflow in the analyses, so it is refused as corrupt instead.
fn plausible(span: CaptureSpan) -> bool {
    span.start_ns >= 0
        && span.end_ns <= LATEST_NS
        && span.start_ns <= span.end_ns
        && span.end_ns - span.start_ns <= LONGEST_SPAN_NS
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Opens read-only. A write-ahead-log file at rest (no writer) is opened
/// immutable: otherwise SQLite creates `-wal` and `-shm` files next to it
/// just to read, and tools would take it for a capture in progress.
fn open_read_only(path: &Path, at_rest_wal: bool) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let opened = if at_rest_wal {
        Connection::open_with_flags(crate::foreign::file_uri(path, true), flags)
    } else {
        Connection::open_with_flags(path, flags)
    };
    let conn = opened.map_err(|e| StoreError::Open {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// Names of the tables and views of `conn`'s main database, sorted.
pub(crate) fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

/// Earliest and latest instant of the capture; `None` when nothing at all was
/// recorded. Session bounds win where known; raw rows come next; aggregate
/// buckets (rounded to their width) are the last resort.
fn capture_span(conn: &Connection) -> rusqlite::Result<Option<CaptureSpan>> {
    let bucket: i64 = conn
        .query_row(
            "SELECT CAST(value AS INTEGER) FROM ingero_meta WHERE key = 'aggregate_bucket_ns'",
            [],
            |r| r.get(0),
        )
        .unwrap_or(AGGREGATE_BUCKET_NS);
    let pair = |sql: &str| -> rusqlite::Result<(Option<i64>, Option<i64>)> {
        conn.query_row(sql, [], |r| Ok((r.get(0)?, r.get(1)?)))
    };
    let sess = pair("SELECT MIN(NULLIF(started_ns, 0)), MAX(NULLIF(stopped_ns, 0)) FROM sessions")?;
    // A finished capture is bounded by its sessions: nothing is recorded
    // outside them, so there is no need to scan the raw rows.
    if let (Some(start), Some(stop)) = sess {
        let any: bool = conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM cuda_calls) OR EXISTS(SELECT 1 FROM host_events) \
             OR EXISTS(SELECT 1 FROM aggregates) OR EXISTS(SELECT 1 FROM system_snapshots) \
             OR EXISTS(SELECT 1 FROM stack_counts)",
            [],
            |r| r.get(0),
        )?;
        if stop >= start {
            return Ok(any.then_some(CaptureSpan {
                start_ns: start,
                end_ns: stop,
            }));
        }
    }
    let raw = pair(
        "SELECT MIN(lo), MAX(hi) FROM ( \
           SELECT MIN(ts_ns) AS lo, MAX(ts_ns + dur_ns) AS hi FROM cuda_calls \
           UNION ALL SELECT MIN(ts_ns), MAX(ts_ns) FROM host_events \
           UNION ALL SELECT MIN(ts_ns), MAX(ts_ns) FROM system_snapshots)",
    )?;
    let agg: (Option<i64>, Option<i64>) = conn.query_row(
        "SELECT MIN(bucket_ns), MAX(bucket_ns) + ?1 - 1 FROM aggregates",
        [bucket],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let data_lo = raw.0.or(agg.0);
    let data_hi = raw.1.or(agg.1);
    let (Some(data_lo), Some(data_hi)) = (data_lo, data_hi) else {
        return Ok(None);
    };
    let start = sess.0.map_or(data_lo, |s| s.min(raw.0.unwrap_or(s)));
    let end = match sess.1 {
        Some(stop) if stop >= start => stop.max(raw.1.unwrap_or(stop)),
        _ => data_hi,
    };
    Ok(Some(CaptureSpan {
        start_ns: start,
        end_ns: end.max(start),
    }))
}
