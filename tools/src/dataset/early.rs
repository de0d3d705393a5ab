//! The reads of [`super::Dataset::load`] that need no raw CUDA call, made
//! while the calls load beside them: aggregates, system snapshots, the
//! process table, process lifecycle rows, and the context switches of the
//! processes the aggregates show calling CUDA.

use super::raw;
use crate::error::Result;
use crate::rows::{AggRow, HostRow};
use ingero_store::{AggSource, ProcessInfo, ResolvedWindow, SystemSnapshot, TraceDb};
use rusqlite::params;
use std::collections::{BTreeMap, BTreeSet};

/// What [`Early::load`] read.
pub(super) struct Early {
    /// Aggregate rows overlapping the window.
    pub aggs: Vec<AggRow>,
    /// System snapshots of the window, by time.
    pub snapshots: Vec<SystemSnapshot>,
    /// The process table.
    pub processes: BTreeMap<i32, ProcessInfo>,
    /// Fork, exec and exit rows of every known process, by time.
    pub lifecycle: Vec<HostRow>,
    /// Context switches of each process with CUDA calls in the aggregates
    /// (of `pid` only when one is given), by time.
    pub switches: BTreeMap<i32, Vec<HostRow>>,
}

impl Early {
    /// Reads them for `window` (aggregate buckets `bucket_ns` wide).
    pub fn load(db: &TraceDb, window: ResolvedWindow, bucket_ns: i64, pid: i32) -> Result<Early> {
        let conn = db.conn();
        let q = |e: rusqlite::Error| db.classify(e);
        let mut aggs = Vec::new();
        {
            let mut stmt = conn
            .prepare(
                "SELECT bucket_ns, pid, source, code, count, stored, sum_dur_ns, max_dur_ns, sum_bytes, \
                 nested_count, nested_dur_ns, nested_bytes, sum_threads, small_launches, nested_small_launches, \
                 estimated_count, estimated_bounded, estimated_bound_ns \
                 FROM aggregates WHERE bucket_ns + ?3 > ?1 AND bucket_ns <= ?2",
            )
            .map_err(q)?;
            let mut rows = stmt
                .query(params![window.lo_ns, window.hi_ns, bucket_ns])
                .map_err(q)?;
            while let Some(r) = rows.next().map_err(q)? {
                let Some(source) = AggSource::from_id(r.get(2).map_err(q)?) else {
                    continue;
                };
                aggs.push(AggRow {
                    bucket_ns: r.get(0).map_err(q)?,
                    pid: r.get(1).map_err(q)?,
                    source,
                    code: r.get::<_, Option<i64>>(3).map_err(q)?.unwrap_or(-1),
                    count: raw::total(r.get(4).map_err(q)?),
                    stored: raw::total(r.get(5).map_err(q)?),
                    sum_dur_ns: raw::total(r.get(6).map_err(q)?),
                    max_dur_ns: raw::total(r.get(7).map_err(q)?),
                    sum_bytes: raw::total(r.get(8).map_err(q)?),
                    nested_count: raw::total(r.get(9).map_err(q)?),
                    nested_dur_ns: raw::total(r.get(10).map_err(q)?),
                    nested_bytes: raw::total(r.get(11).map_err(q)?),
                    sum_threads: r.get(12).map_err(q)?,
                    small_launches: raw::total(r.get(13).map_err(q)?),
                    nested_small_launches: raw::total(r.get(14).map_err(q)?),
                    estimated_count: raw::total(r.get(15).map_err(q)?),
                    estimated_bounded: raw::total(r.get(16).map_err(q)?),
                    estimated_bound_ns: raw::total(r.get(17).map_err(q)?),
                });
            }
        }
        let mut snapshots = Vec::new();
        {
            let mut stmt = conn
            .prepare(
                "SELECT ts_ns, cpu_pct, mem_used_pct, mem_avail_mb, swap_used_mb, load1, procs_running \
                 FROM system_snapshots WHERE ts_ns BETWEEN ?1 AND ?2 ORDER BY ts_ns",
            )
            .map_err(q)?;
            let rows = stmt
                .query_map(params![window.lo_ns, window.hi_ns], |r| {
                    Ok(SystemSnapshot {
                        ts_ns: r.get(0)?,
                        cpu_pct: r.get(1)?,
                        mem_used_pct: r.get(2)?,
                        mem_avail_mb: r.get(3)?,
                        swap_used_mb: r.get(4)?,
                        load1: r.get(5)?,
                        procs_running: r.get(6)?,
                    })
                })
                .map_err(q)?;
            for s in rows {
                snapshots.push(s.map_err(q)?);
            }
        }

        let mut processes = BTreeMap::new();
        {
            let mut stmt = conn
                .prepare(
                    "SELECT pid, ppid, comm, cmdline, first_seen_ns, last_seen_ns FROM processes",
                )
                .map_err(q)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(ProcessInfo {
                        pid: r.get(0)?,
                        ppid: r.get(1)?,
                        comm: r.get(2)?,
                        cmdline: r.get(3)?,
                        first_seen_ns: r.get(4)?,
                        last_seen_ns: r.get(5)?,
                    })
                })
                .map_err(q)?;
            for p in rows {
                let p = p.map_err(q)?;
                processes.insert(p.pid, p);
            }
        }

        // Process lifecycle rows, read per pid through the (pid, kind, ts) index
        // so a large capture is never scanned whole.
        let mut lifecycle_pids: BTreeSet<i32> = processes.keys().copied().collect();
        lifecycle_pids.extend(aggs.iter().map(|a| a.pid));
        let mut lifecycle = Vec::new();
        for pid in lifecycle_pids {
            lifecycle.extend(
                raw::host_rows(
                    conn,
                    "SELECT ts_ns, pid, tid, kind, dur_ns, arg FROM host_events \
                     WHERE pid = ?3 AND kind IN (4, 5, 6) AND ts_ns BETWEEN ?1 AND ?2",
                    window,
                    &[i64::from(pid)],
                )
                .map_err(q)?,
            );
        }
        lifecycle.sort_by_key(|h| (h.ts_ns, h.pid, h.tid));

        let cuda_pids: BTreeSet<i32> = aggs
            .iter()
            .filter(|a| a.source == AggSource::Cuda && a.count > 0 && (pid == 0 || a.pid == pid))
            .map(|a| a.pid)
            .collect();
        let mut switches = BTreeMap::new();
        for p in cuda_pids {
            switches.insert(p, raw::switches_of(conn, window, p).map_err(q)?);
        }
        Ok(Early {
            aggs,
            snapshots,
            processes,
            lifecycle,
            switches,
        })
    }
}
