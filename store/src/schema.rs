//! The one place where the native trace schema is defined, with its migrations.
//!
//! Version is kept in `PRAGMA user_version`; `ingero_meta` says the file is ours.

use crate::catalog::CUDA_OPS;
use crate::error::Result;
use rusqlite::{params, Connection};

/// Value of `ingero_meta.format` in every native database.
pub const FORMAT_TAG: &str = "ingero-rs";

/// Width of the rows in `aggregates`, in nanoseconds (one second).
pub const AGGREGATE_BUCKET_NS: i64 = 1_000_000_000;

/// Migrations, applied in order; `MIGRATIONS[i]` moves version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE ingero_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- One row per capture.
CREATE TABLE sessions (
    id           INTEGER PRIMARY KEY,
    host         TEXT NOT NULL DEFAULT '',
    kernel       TEXT NOT NULL DEFAULT '',
    cpu_model    TEXT NOT NULL DEFAULT '',
    cpu_cores    INTEGER NOT NULL DEFAULT 0,
    mem_total_mb INTEGER NOT NULL DEFAULT 0,
    gpu_model    TEXT NOT NULL DEFAULT '',
    gpu_driver   TEXT NOT NULL DEFAULT '',
    started_ns   INTEGER NOT NULL,
    stopped_ns   INTEGER NOT NULL DEFAULT 0,
    target_pids  TEXT NOT NULL DEFAULT '[]',   -- JSON array
    command      TEXT NOT NULL DEFAULT '',
    tool_version TEXT NOT NULL DEFAULT ''
);
-- Processes seen during a capture.
CREATE TABLE processes (
    session_id    INTEGER NOT NULL,
    pid           INTEGER NOT NULL,
    ppid          INTEGER NOT NULL DEFAULT 0,
    comm          TEXT NOT NULL DEFAULT '',
    cmdline       TEXT NOT NULL DEFAULT '',
    first_seen_ns INTEGER NOT NULL DEFAULT 0,
    last_seen_ns  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, pid)
);
-- Catalogue of CUDA functions (names for cuda_calls.op_id).
CREATE TABLE cuda_ops (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE,
    api   TEXT NOT NULL,          -- runtime | driver
    class TEXT NOT NULL           -- launch | copy | sync | alloc | free | other
);
-- Raw CUDA API calls (all of them, or a sample: compare aggregates.stored with count).
CREATE TABLE cuda_calls (
    id         INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL,
    ts_ns      INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    tid        INTEGER NOT NULL,
    op_id      INTEGER NOT NULL,
    dur_ns     INTEGER NOT NULL,
    bytes      INTEGER NOT NULL DEFAULT 0,
    copy_kind  INTEGER NOT NULL DEFAULT -1,  -- cudaMemcpyKind, -1 when not a copy
    stream     INTEGER NOT NULL DEFAULT 0,
    ret        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX cuda_calls_ts ON cuda_calls(ts_ns);
CREATE INDEX cuda_calls_pid_ts ON cuda_calls(pid, ts_ns);
-- Raw host events: kind 1 sched_switch (dur_ns = off-CPU time, arg = 1 preempted / 0 blocked / -1 unknown), 2 sched_wakeup,
-- 3 mm_page_alloc (arg = order), 4 fork (arg = child pid), 5 exec, 6 exit (arg = code).
CREATE TABLE host_events (
    id         INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL,
    ts_ns      INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    tid        INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    dur_ns     INTEGER NOT NULL DEFAULT 0,
    arg        INTEGER NOT NULL DEFAULT 0,
    cpu        INTEGER NOT NULL DEFAULT -1
);
CREATE INDEX host_events_ts ON host_events(ts_ns);
CREATE INDEX host_events_pid_kind ON host_events(pid, kind, ts_ns);
-- Whole-system samples (about one per second).
CREATE TABLE system_snapshots (
    session_id    INTEGER NOT NULL,
    ts_ns         INTEGER NOT NULL,
    cpu_pct       REAL NOT NULL,
    mem_used_pct  REAL NOT NULL,
    mem_avail_mb  INTEGER NOT NULL,
    swap_used_mb  INTEGER NOT NULL,
    load1         REAL NOT NULL,
    procs_running INTEGER NOT NULL DEFAULT -1,
    PRIMARY KEY (session_id, ts_ns)
);
-- Per-bucket totals of every event, stored or not (bucket width in ingero_meta).
-- source 1 = CUDA (code = cuda_ops.id), 2 = host (code = host_events.kind).
CREATE TABLE aggregates (
    session_id INTEGER NOT NULL,
    bucket_ns  INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    source     INTEGER NOT NULL,
    code       INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    stored     INTEGER NOT NULL,
    sum_dur_ns INTEGER NOT NULL,
    min_dur_ns INTEGER NOT NULL,
    max_dur_ns INTEGER NOT NULL,
    sum_bytes  INTEGER NOT NULL,
    PRIMARY KEY (session_id, bucket_ns, pid, source, code)
) WITHOUT ROWID;
-- Events the capture could not deliver (ring buffer full, decode failure).
CREATE TABLE capture_losses (
    session_id INTEGER NOT NULL,
    ts_ns      INTEGER NOT NULL,
    source     TEXT NOT NULL,
    lost       INTEGER NOT NULL
);
"#];

/// Newest schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings a writable connection up to [`SCHEMA_VERSION`], seeding catalogue rows.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current >= SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction()?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.execute(
        "INSERT OR REPLACE INTO ingero_meta(key, value) VALUES ('format', ?1)",
        params![FORMAT_TAG],
    )?;
    tx.execute(
        "INSERT OR REPLACE INTO ingero_meta(key, value) VALUES ('aggregate_bucket_ns', ?1)",
        params![AGGREGATE_BUCKET_NS.to_string()],
    )?;
    seed_catalog(&tx)?;
    tx.commit()?;
    Ok(())
}

/// Writes the CUDA op catalogue into `cuda_ops` (idempotent).
fn seed_catalog(conn: &Connection) -> Result<()> {
    let mut stmt = conn
        .prepare("INSERT OR REPLACE INTO cuda_ops(id, name, api, class) VALUES (?1, ?2, ?3, ?4)")?;
    for op in CUDA_OPS {
        let api = match op.api {
            crate::catalog::CudaApi::Runtime => "runtime",
            crate::catalog::CudaApi::Driver => "driver",
        };
        stmt.execute(params![op.id, op.name, api, op.class.as_str()])?;
    }
    Ok(())
}
