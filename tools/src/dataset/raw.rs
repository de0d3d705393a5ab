//! The two large raw-row reads of [`super::Dataset::load`]: the CUDA calls
//! of the window and the context switches of given processes. They take a
//! bare connection and return SQLite's own errors, so that either can run
//! on a second connection on another thread (a [`ingero_store::TraceDb`]
//! serves one thread at a time).

use crate::rows::{Call, HostRow, OpInfo};
use ingero_store::catalog::unfinished;
use ingero_store::nesting::{NESTED, NOT_RECORDED};
use ingero_store::open::LONGEST_SPAN_NS;
use ingero_store::{CaptureSpan, CudaApi, HostKind, ResolvedWindow};
use rusqlite::{params, Connection};
use std::collections::BTreeMap;

/// Largest total an aggregate row can hold (2^56: some 72 PB or 834 days
/// of summed time per bucket). A damaged file can hold any value; clamped
/// to their ranges, durations and totals plus times, and sums of a few
/// damaged values, stay far from overflowing.
pub(super) const MAX_TOTAL: i64 = 1 << 56;

/// A recorded duration brought into `0..=LONGEST_SPAN_NS`: no call or wait
/// lasts longer than a capture can.
pub(super) fn duration(ns: i64) -> i64 {
    ns.clamp(0, LONGEST_SPAN_NS)
}

/// An aggregate total brought into `0..=MAX_TOTAL`.
pub(super) fn total(v: i64) -> i64 {
    v.clamp(0, MAX_TOTAL)
}

/// Whether `ts_ns` lies in `window` (bounds included).
fn in_window(ts_ns: i64, window: ResolvedWindow) -> bool {
    (window.lo_ns..=window.hi_ns).contains(&ts_ns)
}

/// Threads of a launch (grid x block, columns 11 to 16 of the row), computed
/// here and saturating: in SQL a damaged file's product would overflow into
/// a real number.
fn threads(r: &rusqlite::Row<'_>) -> rusqlite::Result<i64> {
    (11..17).try_fold(1i64, |acc, i| Ok(acc.saturating_mul(r.get::<_, i64>(i)?)))
}

/// The window's raw CUDA calls, by entry time.
pub(super) struct RawCalls {
    /// The calls.
    pub calls: Vec<Call>,
    /// How many of them never returned (thread exit, capture stop).
    pub unfinished: i64,
}

/// Reads the raw CUDA calls of `window` (of process `pid`, 0 for all),
/// sorted by entry time, nesting marked where the file did not record it.
pub(super) fn load_calls(
    conn: &Connection,
    window: ResolvedWindow,
    span: CaptureSpan,
    pid: i32,
    ops: &BTreeMap<u16, OpInfo>,
) -> rusqlite::Result<RawCalls> {
    // Over the whole capture a plain table scan (rows arrive in time
    // order, sorted below for late ones) beats walking the time index.
    let whole = window.lo_ns <= span.start_ns && window.hi_ns >= span.end_ns;
    let sql = if whole {
        "SELECT ts_ns, dur_ns, bytes, pid, tid, op_id, copy_kind, stream, ret, nested, \
         dur_estimated, grid_x, grid_y, grid_z, block_x, block_y, block_z FROM cuda_calls NOT INDEXED \
         WHERE ts_ns BETWEEN ?1 AND ?2 AND (?3 = 0 OR pid = ?3)"
    } else {
        "SELECT ts_ns, dur_ns, bytes, pid, tid, op_id, copy_kind, stream, ret, nested, \
         dur_estimated, grid_x, grid_y, grid_z, block_x, block_y, block_z FROM cuda_calls \
         WHERE ts_ns BETWEEN ?1 AND ?2 AND (?3 = 0 OR pid = ?3) ORDER BY ts_ns"
    };
    let mut calls = Vec::new();
    let mut unfinished_calls = 0i64;
    let mut unrecorded_nesting = false;
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query(params![window.lo_ns, window.hi_ns, pid])?;
    while let Some(r) = rows.next()? {
        // The query already asks for the window; a damaged file can still
        // hand back a row outside it (the damaged-file property test found
        // one), and every time difference downstream assumes the window.
        let ts_ns: i64 = r.get(0)?;
        if !in_window(ts_ns, window) {
            continue;
        }
        let nested: i64 = r.get(9)?;
        calls.push(Call {
            ts_ns,
            dur_ns: duration(r.get(1)?),
            bytes: total(r.get(2)?),
            pid: r.get(3)?,
            tid: r.get(4)?,
            op_id: r.get::<_, i64>(5)? as u16,
            copy_kind: r.get::<_, i64>(6)?.clamp(-1, 127) as i8,
            stream: r.get(7)?,
            nested: nested == NESTED,
            threads: threads(r)?,
            estimated: r.get::<_, i64>(10)? != 0,
        });
        unrecorded_nesting |= nested == NOT_RECORDED;
        if unfinished::is_unfinished(r.get(8)?) {
            unfinished_calls += 1;
        }
    }
    calls.sort_by_key(|c| c.ts_ns);
    if unrecorded_nesting {
        mark_nested(&mut calls, ops);
    }
    Ok(RawCalls {
        calls,
        unfinished: unfinished_calls,
    })
}

/// Host-event rows of `sql`, which selects `ts_ns, pid, tid, kind, dur_ns,
/// arg` with `?1`/`?2` the window and `?3..` the `extra` values; rows of
/// kinds this build does not know are skipped.
pub(super) fn host_rows(
    conn: &Connection,
    sql: &str,
    window: ResolvedWindow,
    extra: &[i64],
) -> rusqlite::Result<Vec<HostRow>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut args: Vec<i64> = vec![window.lo_ns, window.hi_ns];
    args.extend_from_slice(extra);
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let Some(kind) = HostKind::from_id(r.get(3)?) else {
            continue;
        };
        let ts_ns: i64 = r.get(0)?;
        if !in_window(ts_ns, window) {
            continue;
        }
        out.push(HostRow {
            ts_ns,
            pid: r.get(1)?,
            tid: r.get(2)?,
            kind,
            dur_ns: duration(r.get(4)?),
            arg: r.get(5)?,
        });
    }
    Ok(out)
}

/// Context switches of process `pid` in the window, by time.
pub(super) fn switches_of(
    conn: &Connection,
    window: ResolvedWindow,
    pid: i32,
) -> rusqlite::Result<Vec<HostRow>> {
    host_rows(
        conn,
        "SELECT ts_ns, pid, tid, kind, dur_ns, arg FROM host_events \
         WHERE pid = ?3 AND kind = 1 AND ts_ns BETWEEN ?1 AND ?2 ORDER BY ts_ns",
        window,
        &[i64::from(pid)],
    )
}

/// Flags driver calls that run inside a runtime call of the same thread.
fn mark_nested(calls: &mut [Call], ops: &BTreeMap<u16, OpInfo>) {
    let mut open: std::collections::HashMap<i32, i64> = std::collections::HashMap::new();
    for c in calls.iter_mut() {
        match ops.get(&c.op_id).map(|o| o.api) {
            Some(CudaApi::Runtime | CudaApi::Nccl) => {
                let end = open.entry(c.tid).or_insert(i64::MIN);
                *end = (*end).max(c.ts_ns + c.dur_ns);
            }
            Some(CudaApi::Driver) => {
                c.nested = open
                    .get(&c.tid)
                    .is_some_and(|end| c.ts_ns + c.dur_ns <= *end);
            }
            None => {}
        }
    }
}
