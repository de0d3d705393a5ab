//! Read-only mapping of Ingero (Go) databases onto the native table names.
//!
//! The foreign file is attached read-only to an in-memory database; views and
//! small lookup tables in memory translate its rows. Nothing is written to it.

use crate::catalog::{cuda_op_by_name, CudaApi, FIRST_UNKNOWN_OP_ID};
use crate::error::{Result, StoreError};
use crate::schema::MIGRATIONS;
use rusqlite::{params, Connection};
use std::path::Path;

/// Ingero's `event_aggregates` are per minute.
const INGERO_BUCKET_NS: i64 = 60_000_000_000;

/// Ingero's source ids that carry CUDA calls (runtime, driver) and host events.
const SRC_CUDA: i64 = 1;
const SRC_DRIVER: i64 = 4;
const SRC_HOST: i64 = 3;

/// A mapped connection plus what was learned while mapping.
pub(crate) struct Mapped {
    pub conn: Connection,
    pub version: String,
    pub bucket_ns: i64,
}

/// Ingero host op -> native host kind. Ops not listed (oom_kill, pod_*) are not mapped.
const HOST_KIND_SQL: &str =
    "CASE e.op WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 WHEN 7 THEN 4 WHEN 5 THEN 5 WHEN 6 THEN 6 END";
const HOST_OPS: &str = "(1, 2, 3, 5, 6, 7)";

/// Attaches the Ingero file at `path` and builds the native views over it;
/// `at_rest_wal`: a write-ahead-log file with no writer.
pub(crate) fn attach_ingero_go(path: &Path, at_rest_wal: bool) -> Result<Mapped> {
    let sql_err = |e: rusqlite::Error| StoreError::from_sqlite(path, e);
    let conn = Connection::open_in_memory()?;
    // A write-ahead-log file with no writer is attached immutable, so reading
    // it creates no `-wal`/`-shm` files beside it; a file that cannot be
    // opened normally (read-only folder) falls back to immutable too.
    conn.execute(
        "ATTACH DATABASE ?1 AS src",
        params![file_uri(path, at_rest_wal)],
    )
    .or_else(|_| conn.execute("ATTACH DATABASE ?1 AS src", params![file_uri(path, true)]))
    .map_err(sql_err)?;
    // Native DDL gives us the real tables we fill in memory (cuda_ops,
    // processes, capture_losses); the rest are dropped and replaced by views.
    conn.execute_batch(MIGRATIONS[0]).map_err(sql_err)?;
    conn.execute_batch(
        "DROP TABLE sessions; DROP TABLE cuda_calls; DROP TABLE host_events; \
         DROP TABLE system_snapshots; DROP TABLE aggregates;",
    )?;
    let version: String = conn
        .query_row(
            "SELECT value FROM src.schema_info WHERE key = 'version'",
            [],
            |r| r.get(0),
        )
        .unwrap_or_default();
    conn.execute_batch(&format!(
        "INSERT INTO ingero_meta(key, value) VALUES ('format', 'ingero-go'), \
         ('source_version', '{}'), ('aggregate_bucket_ns', '{INGERO_BUCKET_NS}');",
        version.replace('\'', "''")
    ))?;
    build_op_map(&conn).map_err(sql_err)?;

    let events_cols = columns(&conn, "events").map_err(sql_err)?;
    let has = |cols: &[String], c: &str| cols.iter().any(|x| x == c);
    let sessions_cols = columns(&conn, "sessions").map_err(sql_err)?;
    let default_session: i64 = conn
        .query_row("SELECT COALESCE(MIN(id), 1) FROM src.sessions", [], |r| {
            r.get(0)
        })
        .map_err(sql_err)?;
    // Multi-node files tag each event with its node; sessions carry the node too.
    let by_node = has(&events_cols, "node") && has(&sessions_cols, "node");
    conn.execute_batch("CREATE TABLE node_sessions(node TEXT PRIMARY KEY, session_id INTEGER);")?;
    if by_node {
        conn.execute(
            "INSERT OR IGNORE INTO node_sessions SELECT node, id FROM src.sessions",
            [],
        )
        .map_err(sql_err)?;
    }
    let (node_join, session_expr) = if by_node {
        (
            "LEFT JOIN node_sessions ns ON ns.node = e.node",
            format!("COALESCE(ns.session_id, {default_session})"),
        )
    } else {
        ("", default_session.to_string())
    };
    let host_col = if has(&sessions_cols, "node") {
        "node"
    } else {
        "''"
    };

    let cuda_extra = crate::compat::added_columns("cuda_calls");
    let agg_extra = crate::compat::added_columns("aggregates");
    crate::compat::add_empty_gpu_tables(&conn).map_err(sql_err)?;
    conn.execute_batch(&format!(
        "
CREATE TEMP VIEW sessions AS SELECT id, {host_col} AS host, kernel, cpu_model, cpu_cores,
    mem_total AS mem_total_mb, gpu_model, gpu_driver, started_at AS started_ns,
    stopped_at AS stopped_ns,
    CASE WHEN pid_filter = '' THEN '[]' ELSE '[' || pid_filter || ']' END AS target_pids,
    '' AS command, ingero_ver AS tool_version
  FROM src.sessions;
CREATE TEMP VIEW cuda_calls AS SELECT e.rowid AS id, {session_expr} AS session_id,
    e.timestamp AS ts_ns, e.pid, e.tid, m.op_id, e.duration AS dur_ns,
    CASE WHEN o.class IN ('copy', 'alloc') THEN e.arg0 ELSE 0 END AS bytes,
    CASE WHEN o.class = 'copy' THEN e.arg1 ELSE -1 END AS copy_kind,
    0 AS stream, e.ret_code AS ret{cuda_extra}
  FROM src.events e
  JOIN foreign_op_map m ON m.source = e.source AND m.op = e.op
  JOIN cuda_ops o ON o.id = m.op_id {node_join};
CREATE TEMP VIEW host_events AS SELECT e.rowid AS id, {session_expr} AS session_id,
    e.timestamp AS ts_ns, e.pid, e.tid, {HOST_KIND_SQL} AS kind, e.duration AS dur_ns,
    CASE e.op WHEN 7 THEN e.arg1 WHEN 1 THEN -1
              WHEN 3 THEN (CASE WHEN e.arg0 <= 4096 THEN 0 WHEN e.arg0 <= 8192 THEN 1
                    WHEN e.arg0 <= 16384 THEN 2 WHEN e.arg0 <= 32768 THEN 3
                    WHEN e.arg0 <= 65536 THEN 4 WHEN e.arg0 <= 131072 THEN 5
                    WHEN e.arg0 <= 262144 THEN 6 WHEN e.arg0 <= 524288 THEN 7
                    WHEN e.arg0 <= 1048576 THEN 8 WHEN e.arg0 <= 2097152 THEN 9 ELSE 10 END)
              ELSE 0 END AS arg,
    -1 AS cpu
  FROM src.events e {node_join}
  WHERE e.source = {SRC_HOST} AND e.op IN {HOST_OPS};
CREATE TEMP VIEW system_snapshots AS SELECT {default_session} AS session_id, timestamp AS ts_ns,
    cpu_pct, mem_pct AS mem_used_pct, mem_avail AS mem_avail_mb, swap_mb AS swap_used_mb,
    load_avg AS load1, -1 AS procs_running
  FROM src.system_snapshots;
CREATE TEMP VIEW aggregates AS SELECT {default_session} AS session_id, e.bucket AS bucket_ns, e.pid,
    CASE WHEN e.source = {SRC_HOST} THEN 2 ELSE 1 END AS source,
    CASE WHEN e.source = {SRC_HOST} THEN {HOST_KIND_SQL} ELSE m.op_id END AS code,
    e.count, e.stored, e.sum_dur AS sum_dur_ns, e.min_dur AS min_dur_ns, e.max_dur AS max_dur_ns,
    CASE WHEN e.source = {SRC_HOST} OR o.class IN ('copy', 'alloc') THEN e.sum_arg0 ELSE 0 END
      AS sum_bytes{agg_extra}
  FROM src.event_aggregates e
  LEFT JOIN foreign_op_map m ON m.source = e.source AND m.op = e.op
  LEFT JOIN cuda_ops o ON o.id = m.op_id
  WHERE (e.source IN ({SRC_CUDA}, {SRC_DRIVER}) AND m.op_id IS NOT NULL)
     OR (e.source = {SRC_HOST} AND e.op IN {HOST_OPS});
CREATE TEMP VIEW recorded_chains AS SELECT * FROM src.causal_chains;
"
    ))
    .map_err(sql_err)?;
    fill_processes(&conn, default_session).map_err(sql_err)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(Mapped {
        conn,
        version,
        bucket_ns: INGERO_BUCKET_NS,
    })
}

/// Fills `cuda_ops` with the catalogue and `foreign_op_map` with Ingero's
/// (source, op) pairs translated to catalogue ids by name.
fn build_op_map(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE foreign_op_map(source INTEGER, op INTEGER, op_id INTEGER, \
         PRIMARY KEY (source, op));",
    )?;
    for op in crate::catalog::CUDA_OPS {
        let api = match op.api {
            CudaApi::Runtime => "runtime",
            CudaApi::Driver => "driver",
        };
        conn.execute(
            "INSERT INTO cuda_ops(id, name, api, class) VALUES (?1, ?2, ?3, ?4)",
            params![op.id, op.name, api, op.class.as_str()],
        )?;
    }
    let mut stmt = conn.prepare(&format!(
        "SELECT source_id, op_id, name FROM src.ops WHERE source_id IN ({SRC_CUDA}, {SRC_DRIVER})"
    ))?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut next_unknown = FIRST_UNKNOWN_OP_ID as i64;
    for (source, op, name) in rows {
        let id = match cuda_op_by_name(&name) {
            Some(spec) => spec.id as i64,
            None => {
                let api = if source == SRC_DRIVER {
                    "driver"
                } else {
                    "runtime"
                };
                let id = next_unknown;
                next_unknown += 1;
                conn.execute(
                    "INSERT OR IGNORE INTO cuda_ops(id, name, api, class) VALUES (?1, ?2, ?3, 'other')",
                    params![id, name, api],
                )?;
                id
            }
        };
        conn.execute(
            "INSERT OR REPLACE INTO foreign_op_map(source, op, op_id) VALUES (?1, ?2, ?3)",
            params![source, op, id],
        )?;
    }
    Ok(())
}

/// Builds `processes` from Ingero's name table, fork events (for parents) and
/// every pid that appears in events or aggregates.
fn fill_processes(conn: &Connection, session: i64) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT OR IGNORE INTO processes(session_id, pid, ppid, comm, cmdline, first_seen_ns, last_seen_ns)
             SELECT {session}, p.pid,
                COALESCE((SELECT f.pid FROM src.events f WHERE f.source = {SRC_HOST} AND f.op = 7
                          AND f.arg1 = p.pid ORDER BY f.timestamp DESC LIMIT 1), 0),
                COALESCE((SELECT n.name FROM src.process_names n WHERE n.pid = p.pid), ''),
                '',
                COALESCE((SELECT MIN(f.timestamp) FROM src.events f WHERE f.source = {SRC_HOST}
                          AND f.op = 7 AND f.arg1 = p.pid), p.lo),
                p.hi
             FROM (SELECT pid, MIN(lo) AS lo, MAX(hi) AS hi FROM (
                     SELECT pid, MIN(timestamp) AS lo, MAX(timestamp) AS hi FROM src.events GROUP BY pid
                     UNION ALL SELECT pid, MIN(bucket), MAX(bucket) FROM src.event_aggregates GROUP BY pid
                     UNION ALL SELECT pid, seen_at, seen_at FROM src.process_names)
                   WHERE pid > 0 GROUP BY pid) p"
        ),
        [],
    )?;
    Ok(())
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA src.table_info({table})"))?;
    let cols = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(cols)
}

/// `file:` URI for a read-only attach, with the characters SQLite treats
/// specially escaped.
pub(crate) fn file_uri(path: &Path, immutable: bool) -> String {
    let mut out = String::from("file:");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'%' | b'?' | b'#' => out.push_str(&format!("%{b:02X}")),
            _ => out.push(b as char),
        }
    }
    out.push_str("?mode=ro");
    if immutable {
        out.push_str("&immutable=1");
    }
    out
}
