//! Raw events, filtered and paged, for drilling into what a chain cites.

use crate::error::{Result, ToolError};
use crate::scope::Scope;
use crate::stats::WindowInfo;
use ingero_store::catalog::{copy_kind, cuda_op_by_name};
use ingero_store::{HostKind, TraceDb};
use rusqlite::params;
use serde::{Deserialize, Serialize};

/// Most rows one page may hold.
pub const MAX_LIMIT: u32 = 5_000;

/// What to list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventQuery {
    /// Window and process.
    pub scope: Scope,
    /// A CUDA function (`cudaMemcpyAsync`) or host event (`sched_switch`,
    /// `mm_page_alloc`, `process_fork`...); all when absent.
    pub op: Option<String>,
    /// Only events at least this long, ns.
    pub min_dur_ns: Option<i64>,
    /// Rows per page (1-5000).
    pub limit: u32,
    /// Rows to skip.
    pub offset: u64,
}

/// One listed event.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EventRow {
    /// Event time, epoch ns, as a decimal string (exact; pass it to run_sql as
    /// a number).
    #[serde(with = "ingero_store::epoch_ns")]
    #[schemars(with = "ingero_store::epoch_ns::EpochNsText")]
    pub ts_ns: i64,
    /// Event time, ns after the capture began.
    pub offset_ns: i64,
    /// Seconds after the capture began.
    pub offset_s: f64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// `cuda` or `host`.
    pub source: String,
    /// Function or tracepoint name.
    pub name: String,
    /// Duration, ns (off-CPU time for sched_switch).
    pub dur_ns: i64,
    /// Bytes (copies, allocations, page allocations).
    pub bytes: i64,
    /// Extra detail: copy direction, page order, child pid.
    pub detail: String,
}

/// One page of events.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EventPage {
    /// The window covered.
    pub window: WindowInfo,
    /// Events matching the filters.
    pub total: i64,
    /// This page, in time order.
    pub rows: Vec<EventRow>,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<u64>,
}

enum Filter {
    All,
    Cuda(i64),
    Host(HostKind),
}

/// Lists raw events matching `query`.
pub fn query_events(db: &TraceDb, query: &EventQuery) -> Result<EventPage> {
    if query.limit == 0 || query.limit > MAX_LIMIT {
        return Err(ToolError::BadArgument(format!(
            "limit must be between 1 and {MAX_LIMIT}, got {}",
            query.limit
        )));
    }
    let filter = match query.op.as_deref() {
        None | Some("") => Filter::All,
        Some(name) => match (cuda_op_by_name(name), HostKind::parse(name)) {
            (Some(op), _) => Filter::Cuda(op.id as i64),
            (None, Some(kind)) => Filter::Host(kind),
            (None, None) => {
                let known: Option<i64> = db
                    .conn()
                    .query_row("SELECT id FROM cuda_ops WHERE name = ?1", [name], |r| {
                        r.get(0)
                    })
                    .ok();
                match known {
                    Some(id) => Filter::Cuda(id),
                    None => {
                        return Err(ToolError::BadArgument(format!(
                            "unknown op {name:?}: use a CUDA function such as cudaLaunchKernel or a host event \
                             (sched_switch, sched_wakeup, mm_page_alloc, process_fork, process_exec, process_exit)"
                        )))
                    }
                }
            }
        },
    };
    let w = db.resolve(&query.scope.window);
    let pid = query.scope.pid.unwrap_or(0);
    let min_dur = query.min_dur_ns.unwrap_or(0);
    let (cuda_op, host_kind): (i64, i64) = match filter {
        Filter::All => (0, 0),
        Filter::Cuda(id) => (id, -1),
        Filter::Host(k) => (-1, k.id() as i64),
    };
    let body = "FROM (
        SELECT c.ts_ns AS ts, c.pid, c.tid, 'cuda' AS src, COALESCE(o.name, 'op#' || c.op_id) AS name,
               c.dur_ns AS dur, c.bytes AS bytes, c.copy_kind AS a, -1 AS k, 1 AS n
          FROM cuda_calls c LEFT JOIN cuda_ops o ON o.id = c.op_id
         WHERE ?5 >= 0 AND (?5 = 0 OR c.op_id = ?5) AND c.ts_ns BETWEEN ?1 AND ?2
           AND (?3 = 0 OR c.pid = ?3) AND c.dur_ns >= ?4
        UNION ALL
        SELECT h.ts_ns, h.pid, h.tid, 'host', '', h.dur_ns, h.bytes, h.arg, h.kind, h.count
          FROM host_events h
         WHERE ?6 >= 0 AND (?6 = 0 OR h.kind = ?6) AND h.ts_ns BETWEEN ?1 AND ?2
           AND (?3 = 0 OR h.pid = ?3) AND h.dur_ns >= ?4)";
    let conn = db.conn();
    let q = |e| db.classify(e);
    let total: i64 = conn
        .query_row(
            &format!("SELECT COUNT(*) {body}"),
            params![w.lo_ns, w.hi_ns, pid, min_dur, cuda_op, host_kind],
            |r| r.get(0),
        )
        .map_err(q)?;
    let mut stmt = conn
        .prepare(&format!(
            "SELECT ts, pid, tid, src, name, dur, bytes, a, k, n {body} ORDER BY ts, src, tid LIMIT ?7 OFFSET ?8"
        ))
        .map_err(q)?;
    let start = db.span().start_ns;
    let rows = stmt
        .query_map(
            params![
                w.lo_ns,
                w.hi_ns,
                pid,
                min_dur,
                cuda_op,
                host_kind,
                query.limit,
                query.offset as i64
            ],
            |r| {
                let ts: i64 = r.get(0)?;
                let src: String = r.get(3)?;
                let a: i64 = r.get(7)?;
                let k: i64 = r.get(8)?;
                let (name, bytes, detail) = if src == "cuda" {
                    let detail = if a >= 0 {
                        copy_kind::label(a).to_string()
                    } else {
                        String::new()
                    };
                    (r.get::<_, String>(4)?, r.get::<_, i64>(6)?, detail)
                } else {
                    let kind = HostKind::from_id(k);
                    let name = kind.map_or_else(|| format!("host#{k}"), |k| k.name().to_string());
                    let (bytes, detail) = match kind {
                        Some(HostKind::PageAlloc) => {
                            let n: i64 = r.get(9)?;
                            let bytes: i64 = r.get(6)?;
                            let detail = if n > 1 {
                                format!("{n} allocations, largest order {a}")
                            } else {
                                format!("order {a}")
                            };
                            (bytes, detail)
                        }
                        Some(HostKind::Fork) => (0, format!("child {a}")),
                        Some(HostKind::Exit) => (0, format!("code {a}")),
                        _ => (0, String::new()),
                    };
                    (name, bytes, detail)
                };
                Ok(EventRow {
                    ts_ns: ts,
                    offset_ns: ts - start,
                    offset_s: (ts - start) as f64 / 1e9,
                    pid: r.get(1)?,
                    tid: r.get(2)?,
                    source: src,
                    name,
                    dur_ns: r.get(5)?,
                    bytes,
                    detail,
                })
            },
        )
        .map_err(q)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(q)?;
    let next = query.offset + rows.len() as u64;
    Ok(EventPage {
        window: WindowInfo::between(w, start, w.lo_ns <= start && w.hi_ns >= db.span().end_ns),
        total,
        rows,
        next_offset: ((next as i64) < total).then_some(next),
    })
}
