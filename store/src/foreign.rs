//! Read-only mapping of Ingero (Go) databases onto the native table names.
//!
//! The foreign file is attached read-only to an in-memory database; views and
//! small lookup tables in memory translate its rows. Nothing is written to it.

use crate::catalog::{cuda_op_by_name, FIRST_UNKNOWN_OP_ID};
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

/// Page order of an Ingero page-allocation row (op 3, `arg0` = bytes).
const PAGE_ORDER_SQL: &str = "(CASE WHEN e.arg0 <= 4096 THEN 0 WHEN e.arg0 <= 8192 THEN 1 \
    WHEN e.arg0 <= 16384 THEN 2 WHEN e.arg0 <= 32768 THEN 3 WHEN e.arg0 <= 65536 THEN 4 \
    WHEN e.arg0 <= 131072 THEN 5 WHEN e.arg0 <= 262144 THEN 6 WHEN e.arg0 <= 524288 THEN 7 \
    WHEN e.arg0 <= 1048576 THEN 8 WHEN e.arg0 <= 2097152 THEN 9 ELSE 10 END)";

/// Ingero host ops that [`HOST_KIND_SQL`] maps to sched_switch (native
/// kind 1), process_exit (kind 6) and process_fork (kind 4).
const OP_SWITCH: i64 = 1;
const OP_EXIT: i64 = 6;
const OP_FORK: i64 = 7;

/// Native `ts_ns` of an Ingero host row `e`. Ingero stamps a sched_switch
/// row when the thread comes back on the CPU (`timestamp` = end of the
/// off-CPU interval, `duration` = its length); native rows are stamped when
/// the thread leaves it, so the interval is `[ts_ns, ts_ns + dur_ns]`.
const HOST_TS_SQL: &str =
    "CASE WHEN e.source = 3 AND e.op = 1 THEN e.timestamp - e.duration ELSE e.timestamp END";

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
    classify_threads(&conn).map_err(sql_err)?;

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
    crate::compat::add_columns_to_table(&conn, "temp", "gpu_process_samples", 1)
        .map_err(sql_err)?;
    crate::compat::add_empty_nccl_tables(&conn).map_err(sql_err)?;
    crate::compat::add_empty_launch_level_table(&conn).map_err(sql_err)?;
    crate::compat::add_columns_to_table(&conn, "main", "processes", 1).map_err(sql_err)?;
    conn.execute_batch(&format!(
        "
CREATE TEMP VIEW sessions AS SELECT id, {host_col} AS host, kernel, cpu_model, cpu_cores,
    mem_total AS mem_total_mb, gpu_model, gpu_driver, started_at AS started_ns,
    stopped_at AS stopped_ns,
    CASE WHEN pid_filter = '' THEN '[]' ELSE '[' || pid_filter || ']' END AS target_pids,
    '' AS command, ingero_ver AS tool_version, '' AS stop_reason
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
    {HOST_TS_SQL} AS ts_ns, e.pid, e.tid, {HOST_KIND_SQL} AS kind, e.duration AS dur_ns,
    CASE e.op WHEN 7 THEN e.arg1 WHEN 1 THEN -1
              WHEN 3 THEN {PAGE_ORDER_SQL}
              ELSE 0 END AS arg,
    -1 AS cpu, 1 AS count,
    CASE e.op WHEN 3 THEN 4096 << {PAGE_ORDER_SQL} ELSE 0 END AS bytes, '' AS node, -1 AS rank
  FROM src.events e {node_join}
  WHERE e.source = {SRC_HOST} AND e.op IN {HOST_OPS}
    AND NOT (e.op = {OP_SWITCH} AND e.pid IN (SELECT tid FROM foreign_threads))
    AND NOT (e.op = {OP_FORK} AND EXISTS (SELECT 1 FROM foreign_threads t
                                 WHERE t.tid = e.arg1 AND t.pid = e.pid))
    AND NOT (e.op = {OP_EXIT} AND e.tid <> e.pid)
UNION ALL SELECT e.rowid, {session_expr}, e.timestamp - e.duration, t.pid, e.tid, 1, e.duration, -1, -1,
    1, 0, '', -1
  FROM foreign_threads t JOIN src.events e ON e.pid = t.tid {node_join}
  WHERE e.source = {SRC_HOST} AND e.op = {OP_SWITCH};
CREATE TEMP VIEW system_snapshots AS SELECT {default_session} AS session_id, timestamp AS ts_ns,
    cpu_pct, mem_pct AS mem_used_pct, mem_avail AS mem_avail_mb, swap_mb AS swap_used_mb,
    load_avg AS load1, -1 AS procs_running
  FROM src.system_snapshots;
CREATE TEMP VIEW aggregates AS SELECT {default_session} AS session_id, e.bucket AS bucket_ns, e.pid,
    CASE WHEN e.source = {SRC_HOST} THEN 2 ELSE 1 END AS source,
    CASE WHEN e.source = {SRC_HOST} THEN {HOST_KIND_SQL} ELSE m.op_id END AS code,
    e.count - COALESCE(d.n, 0) AS count, MAX(e.stored - COALESCE(d.n, 0), 0) AS stored,
    e.sum_dur AS sum_dur_ns, e.min_dur AS min_dur_ns, e.max_dur AS max_dur_ns,
    CASE WHEN e.source = {SRC_HOST} OR o.class IN ('copy', 'alloc') THEN e.sum_arg0 ELSE 0 END
      AS sum_bytes{agg_extra}
  FROM src.event_aggregates e
  LEFT JOIN foreign_op_map m ON m.source = e.source AND m.op = e.op
  LEFT JOIN cuda_ops o ON o.id = m.op_id
  LEFT JOIN foreign_thread_lifecycle d
    ON e.source = {SRC_HOST} AND d.bucket = e.bucket AND d.pid = e.pid AND d.op = e.op
  WHERE ((e.source IN ({SRC_CUDA}, {SRC_DRIVER}) AND m.op_id IS NOT NULL)
     OR (e.source = {SRC_HOST} AND e.op IN {HOST_OPS} AND e.op <> {OP_SWITCH}))
    AND e.count > COALESCE(d.n, 0)
UNION ALL SELECT {default_session}, e.bucket, COALESCE(t.pid, e.pid), 2, 1,
    SUM(e.count), SUM(e.stored), SUM(e.sum_dur), MIN(e.min_dur), MAX(e.max_dur), SUM(e.sum_arg0){agg_extra}
  FROM src.event_aggregates e LEFT JOIN foreign_threads t ON t.tid = e.pid
  WHERE e.source = {SRC_HOST} AND e.op = {OP_SWITCH}
  GROUP BY e.bucket, COALESCE(t.pid, e.pid);
CREATE TEMP VIEW recorded_chains AS SELECT * FROM src.causal_chains;
"
    ))
    .map_err(sql_err)?;
    fill_processes(&conn, default_session).map_err(sql_err)?;
    let stack_hash = has(&events_cols, "stack_hash");
    add_stack_views(&conn, stack_hash, &session_expr, node_join).map_err(sql_err)?;
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
        conn.execute(
            "INSERT INTO cuda_ops(id, name, api, class) VALUES (?1, ?2, ?3, ?4)",
            params![op.id, op.name, op.api.as_str(), op.class.as_str()],
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

/// Sorts Ingero's fork rows into new processes and new threads, filling
/// `foreign_threads` (thread id -> the process that owns it) and
/// `foreign_thread_lifecycle` (per bucket, process and op, the fork and exit
/// rows that concern a thread rather than a process).
///
/// Ingero records `sched_process_fork` for every new task, thread or process
/// (op 7, `pid` = the forking process, `arg1` = the child's id), and
/// `sched_process_exit` for every thread that ends (op 6, `tid` = that
/// thread). Its BPF side files every row under the calling task's process id
/// (`tgid`), except sched_switch rows (op 1), which carry the id of the thread
/// coming back on the CPU as both `pid` and `tid` (a forked child is enrolled
/// for tracing by that id, thread or not).
///
/// Rule: a fork row is a thread creation when its child never appears as the
/// `pid` of a row Ingero files by process id (any event or aggregate other
/// than sched_switch). A new process makes such rows under its own id almost
/// at once (page allocations of its copied memory, exec, exit, wake-ups it
/// sends); a new thread makes them under its parent's id (as `tid` there),
/// so appearing as a `tid` of the parent's rows implies the rule. In the
/// reference DataLoader capture this keeps the 4 `pt_data_worker` processes
/// (2254-2257: page allocations and wake-ups under their own ids) and finds
/// 7 threads: 2258 (`pt_data_pin`, PyTorch's pin-memory thread), 2259, 2260
/// and 2262 (`python3`; like 2258 forked by 2233 and seen only in
/// sched_switch totals filed under their own ids), 2264 and 2265 (threads of
/// systemd-journald 429, whose exit rows carry pid 429 and those tids) and
/// 2267 (forked by worker 2254, never seen again). A child that ran too briefly to leave any row is
/// counted as a thread too: the file cannot tell them apart.
///
/// An exit row ends its process only when the exiting thread is the main one
/// (`tid = pid`); other exit rows end a thread.
fn classify_threads(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE foreign_threads(tid INTEGER PRIMARY KEY, pid INTEGER NOT NULL);
         INSERT OR IGNORE INTO foreign_threads(tid, pid)
           SELECT f.arg1, f.pid FROM src.events f
           WHERE f.source = {SRC_HOST} AND f.op = {OP_FORK} AND f.arg1 > 0 AND f.arg1 <> f.pid
             AND NOT EXISTS (SELECT 1 FROM src.events e WHERE e.pid = f.arg1
                             AND NOT (e.source = {SRC_HOST} AND e.op = {OP_SWITCH}))
             AND NOT EXISTS (SELECT 1 FROM src.event_aggregates a WHERE a.pid = f.arg1
                             AND NOT (a.source = {SRC_HOST} AND a.op = {OP_SWITCH}))
           ORDER BY f.timestamp;
         CREATE TABLE foreign_thread_lifecycle(bucket INTEGER NOT NULL, pid INTEGER NOT NULL,
           op INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (bucket, pid, op));
         INSERT INTO foreign_thread_lifecycle(bucket, pid, op, n)
           SELECT e.timestamp - e.timestamp % {INGERO_BUCKET_NS}, e.pid, e.op, COUNT(*)
           FROM src.events e
           WHERE e.source = {SRC_HOST}
             AND ((e.op = {OP_FORK} AND EXISTS (SELECT 1 FROM foreign_threads t
                                                WHERE t.tid = e.arg1 AND t.pid = e.pid))
                  OR (e.op = {OP_EXIT} AND e.tid <> e.pid))
           GROUP BY 1, 2, 3;"
    ))
}

/// Builds `processes` from Ingero's name table, fork events (for parents) and
/// every pid that appears in events or aggregates; thread ids
/// ([`classify_threads`]) count for the process that owns them.
///
/// A process begins at its fork row when it has one, else at its first sign
/// (a row, an aggregate bucket's start, its name being read). It ends at its
/// exit row (main thread, `tid = pid`) when it has one, whatever other rows
/// say (an aggregate bucket starts up to a minute before or after it);
/// otherwise at its last sign.
fn fill_processes(conn: &Connection, session: i64) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT OR IGNORE INTO processes(session_id, pid, ppid, comm, cmdline, first_seen_ns, last_seen_ns)
             SELECT {session}, q.pid, q.ppid, q.comm, '', q.first_ns, MAX(q.first_ns, q.last_ns)
             FROM (SELECT p.pid,
                COALESCE((SELECT f.pid FROM src.events f WHERE f.source = {SRC_HOST} AND f.op = {OP_FORK}
                          AND f.arg1 = p.pid ORDER BY f.timestamp DESC LIMIT 1), 0) AS ppid,
                COALESCE((SELECT n.name FROM src.process_names n WHERE n.pid = p.pid), '') AS comm,
                COALESCE((SELECT MIN(f.timestamp) FROM src.events f WHERE f.source = {SRC_HOST}
                          AND f.op = {OP_FORK} AND f.arg1 = p.pid), p.lo) AS first_ns,
                COALESCE((SELECT MAX(x.timestamp) FROM src.events x WHERE x.pid = p.pid
                          AND x.source = {SRC_HOST} AND x.op = {OP_EXIT} AND x.tid = x.pid), p.hi) AS last_ns
             FROM (SELECT COALESCE(t.pid, s.pid) AS pid, MIN(s.lo) AS lo, MAX(s.hi) AS hi FROM (
                     SELECT pid, MIN({HOST_TS_SQL}) AS lo, MAX(e.timestamp) AS hi
                       FROM src.events e GROUP BY pid
                     UNION ALL SELECT pid, MIN(bucket), MAX(bucket) FROM src.event_aggregates GROUP BY pid
                     UNION ALL SELECT pid, seen_at, seen_at FROM src.process_names) s
                   LEFT JOIN foreign_threads t ON t.tid = s.pid
                   WHERE s.pid > 0 GROUP BY 1) p) q"
        ),
        [],
    )?;
    Ok(())
}

/// The version-4 stack tables over Ingero's call-site stacks: `stacks` from
/// `stack_traces` (frames innermost first, as Ingero stores them; a frame's
/// `s` symbol, still mangled, is cut at its `+0x` offset, a frame with only
/// an address `i` is named by it, `f` is the module; a stack whose frames
/// were never resolved lists its raw addresses), `stack_samples` of kind 4
/// (CUDA call site) from every CUDA event with a stack, and their counts per
/// Ingero bucket. A file without stacks reads with the tables empty.
fn add_stack_views(
    conn: &Connection,
    events_have_stacks: bool,
    session_expr: &str,
    node_join: &str,
) -> rusqlite::Result<()> {
    crate::compat::add_empty_stack_tables(conn)?;
    for table in ["stack_samples", "stack_counts"] {
        crate::compat::add_columns_to_table(conn, "temp", table, 1)?;
    }
    let has_table: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM src.sqlite_master WHERE type = 'table' AND name = 'stack_traces'",
        [],
        |r| r.get(0),
    )?;
    if !(has_table && events_have_stacks) {
        return Ok(());
    }
    conn.execute_batch(&format!(
        "DROP TABLE temp.stacks; DROP TABLE temp.stack_samples; DROP TABLE temp.stack_counts;
CREATE TEMP VIEW stacks AS SELECT t.hash AS id,
    CASE WHEN json_valid(t.frames) AND t.frames LIKE '[%' THEN json_array_length(t.frames)
         WHEN json_valid(t.ips) THEN json_array_length(t.ips) ELSE 0 END AS depth,
    CASE WHEN json_valid(t.frames) AND t.frames LIKE '[%' THEN
      (SELECT json_group_array(json_object('kind', 'native', 'module', m,
          'function', CASE WHEN sym IS NULL THEN COALESCE(ip, '')
                           WHEN instr(sym, '+0x') > 0 THEN substr(sym, 1, instr(sym, '+0x') - 1)
                           ELSE sym END,
          'offset', 0, 'file', '', 'line', 0))
       FROM (SELECT json_extract(j.value, '$.s') AS sym, json_extract(j.value, '$.i') AS ip,
                    COALESCE(json_extract(j.value, '$.f'), '') AS m
             FROM json_each(t.frames) j ORDER BY j.key))
    WHEN json_valid(t.ips) THEN
      (SELECT json_group_array(json_object('kind', 'native', 'module', '', 'function', j.value,
          'offset', 0, 'file', '', 'line', 0)) FROM json_each(t.ips) j)
    ELSE '[]' END AS frames
  FROM src.stack_traces t;
CREATE TEMP VIEW stack_samples AS SELECT {session_expr} AS session_id, e.timestamp AS ts_ns,
    e.pid, e.tid, 4 AS kind, 0 AS off_cpu_ns, -1 AS state, -1 AS cpu, e.stack_hash AS stack_id,
    '' AS node, -1 AS rank
  FROM src.events e {node_join}
  WHERE e.stack_hash <> 0 AND e.source IN ({SRC_CUDA}, {SRC_DRIVER});
CREATE TEMP VIEW stack_counts AS SELECT session_id,
    ts_ns - ts_ns % {INGERO_BUCKET_NS} AS bucket_ns, pid, tid, kind,
    COUNT(*) AS count, COUNT(*) AS stored, 0 AS sum_off_cpu_ns, '' AS node, -1 AS rank
  FROM stack_samples GROUP BY 1, 2, 3, 4, 5;"
    ))
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
