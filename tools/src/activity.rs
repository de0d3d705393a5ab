//! Per-thread CUDA activity spans of a scope: read from the file where the
//! recorder kept them (`cuda_activity`, exact whatever the sampling),
//! otherwise folded from the raw rows by the recorder's own rule.

use crate::rows::{Call, OpInfo};
use ingero_store::activity::{ActivityKind, ActivitySpan, ActivityTracker, CallPart, OpRole};
use rusqlite::{params, Connection};
use std::collections::BTreeMap;

/// Where a scope's activity spans came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityOrigin {
    /// The recorder's table: every call folded in, exact.
    Recorded,
    /// Folded from raw rows at read time: exact only where no row was sampled away.
    FromRawRows,
}

/// The role of every op of the file's catalogue.
pub fn op_roles(ops: &BTreeMap<u16, OpInfo>) -> BTreeMap<u16, OpRole> {
    ops.iter()
        .map(|(id, o)| (*id, OpRole::of(&o.name, o.class)))
        .collect()
}

/// Spans overlapping `[lo, hi]` from the `cuda_activity` table (of `pid` when non-zero).
pub fn read_recorded(
    conn: &Connection,
    lo: i64,
    hi: i64,
    pid: i32,
) -> rusqlite::Result<Vec<ActivitySpan>> {
    let cols: Vec<&str> = CallPart::ALL.iter().map(|p| p.column()).collect();
    let sql = format!(
        "SELECT pid, tid, kind, start_ns, end_ns, calls, {} FROM cuda_activity \
         WHERE end_ns >= ?1 AND start_ns <= ?2 AND (?3 = 0 OR pid = ?3) ORDER BY start_ns",
        cols.join(", ")
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(params![lo, hi, pid])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let Some(kind) = ActivityKind::from_id(r.get(2)?) else {
            continue;
        };
        let mut parts = [0i64; 5];
        for (i, p) in parts.iter_mut().enumerate() {
            *p = r.get(6 + i)?;
        }
        out.push(ActivitySpan {
            pid: r.get(0)?,
            tid: r.get(1)?,
            kind,
            start_ns: r.get(3)?,
            end_ns: r.get(4)?,
            calls: r.get(5)?,
            parts,
        });
    }
    Ok(out)
}

/// Spans folded from raw rows (time-ordered), nested calls left out.
pub fn fold_raw(calls: &[Call], ops: &BTreeMap<u16, OpInfo>) -> Vec<ActivitySpan> {
    let roles = op_roles(ops);
    let mut t = ActivityTracker::default();
    for c in calls.iter().filter(|c| !c.nested) {
        let role = roles.get(&c.op_id).copied().unwrap_or_default();
        t.add(c.pid, c.tid, c.ts_ns, c.dur_ns, c.stream, role);
    }
    let mut spans = t.finish();
    spans.sort_by_key(|s| (s.start_ns, s.pid, s.tid));
    spans
}
