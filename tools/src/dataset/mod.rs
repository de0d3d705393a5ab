//! Everything an analysis needs from the database, loaded once per request.
//!
//! Raw CUDA calls are loaded for the window (they carry the latency
//! distribution); host events are read through the per-bucket aggregates,
//! except the few raw rows analyses need one by one (process lifecycle, and
//! the context switches of the threads that drive the GPU).

use crate::activity::ActivityOrigin;
use crate::error::Result;
use crate::gpu_activity::GpuActivity;
use crate::scope::Scope;
use early::Early;
use ingero_store::activity::ActivitySpan;
use ingero_store::catalog::loss_source;
use ingero_store::schema::SMALL_LAUNCH_THREADS;
use ingero_store::{
    AggSource, CaptureSpan, CudaApi, DbFormat, HostKind, OpClass, ProcessInfo, ResolvedWindow,
    SystemSnapshot, TraceDb,
};
use rusqlite::params;
use std::collections::{BTreeMap, BTreeSet, HashSet};

mod early;
mod folded;
mod raw;
pub mod sampled;

pub use sampled::SampledOps;

pub use crate::rows::{AggRow, Call, HostRow, OpInfo, Totals};
pub use folded::ThreadCalls;

/// Replaces the totals of buckets the window cuts (which also cover time
/// outside it) with totals rebuilt from the raw rows inside the window.
/// Returns true when one of those buckets had been sampled, so the rebuilt
/// counts are lower bounds.
fn edge_buckets(
    conn: &rusqlite::Connection,
    aggs: &mut Vec<AggRow>,
    calls: &[Call],
    ops: &BTreeMap<u16, OpInfo>,
    span: CaptureSpan,
    window: ResolvedWindow,
    bucket_ns: i64,
) -> rusqlite::Result<BTreeSet<(i32, AggSource, i64)>> {
    // A bucket counts as covered when its part inside the capture lies in the window.
    let inside = |b: i64| {
        let (a, z) = (b.max(span.start_ns), (b + bucket_ns - 1).min(span.end_ns));
        a >= window.lo_ns && z <= window.hi_ns
    };
    let cut: BTreeSet<i64> = aggs
        .iter()
        .filter(|a| !inside(a.bucket_ns))
        .map(|a| a.bucket_ns)
        .collect();
    if cut.is_empty() {
        return Ok(BTreeSet::new());
    }
    let sampled: BTreeSet<(i32, AggSource, i64)> = aggs
        .iter()
        .filter(|a| cut.contains(&a.bucket_ns) && a.count > a.stored)
        .map(|a| (a.pid, a.source, a.code))
        .collect();
    aggs.retain(|a| !cut.contains(&a.bucket_ns));
    let mut rebuilt: BTreeMap<(i64, i32, u8, i64), AggRow> = BTreeMap::new();
    fn add(
        rebuilt: &mut BTreeMap<(i64, i32, u8, i64), AggRow>,
        bucket: i64,
        pid: i32,
        source: AggSource,
        code: i64,
        (count, dur, bytes): (i64, i64, i64),
    ) -> &mut AggRow {
        let e = rebuilt
            .entry((bucket, pid, source as u8, code))
            .or_insert(AggRow {
                bucket_ns: bucket,
                pid,
                source,
                code,
                count: 0,
                stored: 0,
                sum_dur_ns: 0,
                max_dur_ns: 0,
                sum_bytes: 0,
                nested_count: 0,
                nested_dur_ns: 0,
                nested_bytes: 0,
                sum_threads: 0,
                small_launches: 0,
                nested_small_launches: 0,
                estimated_count: 0,
                estimated_bounded: 0,
                estimated_bound_ns: 0,
            });
        e.count += count;
        e.stored += count;
        e.sum_dur_ns += dur;
        e.max_dur_ns = e.max_dur_ns.max(dur);
        e.sum_bytes += bytes;
        e
    }
    for &b in &cut {
        let lo = b.max(window.lo_ns);
        let hi = (b + bucket_ns - 1).min(window.hi_ns);
        for c in calls.iter().filter(|c| c.ts_ns >= lo && c.ts_ns <= hi) {
            let copies = ops
                .get(&c.op_id)
                .is_some_and(|o| matches!(o.class, OpClass::Copy | OpClass::Alloc));
            let bytes = if copies { c.bytes } else { 0 };
            let e = add(
                &mut rebuilt,
                b,
                c.pid,
                AggSource::Cuda,
                c.op_id as i64,
                (1, c.dur_ns, bytes),
            );
            let small = i64::from(c.threads > 0 && c.threads <= SMALL_LAUNCH_THREADS);
            e.sum_threads += c.threads;
            e.small_launches += small;
            if c.nested {
                e.nested_count += 1;
                e.nested_dur_ns += c.dur_ns;
                e.nested_bytes += bytes;
                e.nested_small_launches += small;
            }
        }
        let mut stmt = conn.prepare_cached(
            "SELECT pid, kind, MAX(count, 1), dur_ns, CASE WHEN kind = 3 THEN bytes ELSE 0 END \
             FROM host_events WHERE ts_ns BETWEEN ?1 AND ?2",
        )?;
        let mut rows = stmt.query(params![lo, hi])?;
        while let Some(r) = rows.next()? {
            add(
                &mut rebuilt,
                b,
                r.get(0)?,
                AggSource::Host,
                r.get(1)?,
                (r.get(2)?, r.get(3)?, r.get(4)?),
            );
        }
    }
    aggs.extend(rebuilt.into_values());
    Ok(sampled)
}

/// The loaded view of one trace for one scope.
pub struct Dataset {
    /// Whole capture bounds.
    pub span: CaptureSpan,
    /// The window analysed.
    pub window: ResolvedWindow,
    /// True when the window is the whole capture.
    pub whole_capture: bool,
    /// Aggregate bucket width, ns.
    pub bucket_ns: i64,
    /// Process the caller focused on, if any.
    pub focus: Option<i32>,
    /// Who wrote the file.
    pub format: DbFormat,
    /// CUDA op names.
    pub ops: BTreeMap<u16, OpInfo>,
    /// Raw CUDA calls in the window (of the focus process when set), by time.
    pub calls: Vec<Call>,
    /// Aggregate rows overlapping the window (every process).
    pub aggs: Vec<AggRow>,
    /// System samples in the window.
    pub snapshots: Vec<SystemSnapshot>,
    /// Known processes.
    pub processes: BTreeMap<i32, ProcessInfo>,
    /// Fork, exec and exit rows in the window.
    pub lifecycle: Vec<HostRow>,
    /// Context switches of threads that made CUDA calls, in the window.
    pub gpu_thread_switches: Vec<HostRow>,
    /// Off-CPU stacks of the CUDA-calling threads, classified by what they
    /// waited for (empty without stack samples).
    pub waits: Vec<crate::waits::OffCpuWait>,
    /// What each thread's Python stack samples show it doing, by
    /// `(pid, tid)` (empty without Python stack samples).
    pub py_profiles: BTreeMap<(i32, i32), crate::pyframes::PyProfile>,
    /// Every stack sample of each CUDA-calling thread, by `(pid, tid)`, by
    /// time (empty without stack samples): what the idle time is
    /// attributed to ([`crate::code`]).
    pub thread_samples: BTreeMap<(i32, i32), Vec<ingero_store::thread_samples::ThreadSample>>,
    /// CPU count of the traced host, 0 when unknown.
    pub cpu_cores: i64,
    /// GPU model, empty when unknown.
    pub gpu_model: String,
    /// Events the capture reported lost.
    pub lost_events: i64,
    /// Sessions with no stop time: still being recorded, or the recorder was
    /// killed before it finished (its last batch may be missing).
    pub open_sessions: Vec<i64>,
    /// CUDA calls in scope stored without a return (thread exited inside the
    /// call, or still running at the stop): their durations are lower bounds.
    pub unfinished_calls: i64,
    /// (pid, source, code) whose rows were sampled in a bucket cut by the
    /// window's edge: their counts there come from raw rows only and are
    /// lower bounds.
    pub edge_sampled: BTreeSet<(i32, AggSource, i64)>,
    /// Launch rows: every outer launch at least this long (ns) kept its raw
    /// row, shorter ones one in K; `None` when the file's captures kept
    /// launch rows otherwise (percentiles then weight every kept row alike).
    pub launch_row_keep_ns: Option<i64>,
    /// Call folding: every call other than a launch that failed or lasted
    /// at least this long (ns) kept its raw row, faster ones a bounded
    /// sample; `None` when the file's captures did not fold calls.
    pub call_row_keep_ns: Option<i64>,
    /// Per-thread CUDA activity spans overlapping the window, by start.
    pub activity: Vec<ActivitySpan>,
    /// Where they came from.
    pub activity_origin: ActivityOrigin,
    /// NVML samples of the window.
    pub gpu: GpuActivity,
    /// When the capture stopped (and started again) probing the runtime's
    /// launch functions, every session, by session and time
    /// ([`crate::launch_levels`] reads them).
    pub launch_level_changes: Vec<ingero_store::LaunchLevelChange>,
}

impl Dataset {
    /// Loads what the analyses need for `scope`.
    pub fn load(db: &TraceDb, scope: &Scope) -> Result<Dataset> {
        let conn = db.conn();
        let window = db.resolve(&scope.window);
        let span = db.span();
        let bucket_ns = db.aggregate_bucket_ns().max(1);
        let q = |e: rusqlite::Error| db.classify(e);

        let mut ops = BTreeMap::new();
        {
            let mut stmt = conn
                .prepare("SELECT id, name, api, class FROM cuda_ops")
                .map_err(q)?;
            let rows = stmt
                .query_map([], |r| {
                    let api: String = r.get(2)?;
                    let class: String = r.get(3)?;
                    Ok(OpInfo {
                        id: r.get(0)?,
                        name: r.get(1)?,
                        api: CudaApi::parse(&api),
                        class: OpClass::parse(&class),
                    })
                })
                .map_err(q)?;
            for op in rows {
                let op = op.map_err(q)?;
                ops.insert(op.id, op);
            }
        }

        let pid_filter = scope.pid.unwrap_or(0);
        // The calls are the largest read: on a second connection where the
        // file allows one, they load on another thread while this one reads
        // everything else, then join for the reads that need them.
        let reader = db.reader();
        let (raw_calls, early) = std::thread::scope(|s| {
            let ops = &ops;
            let beside =
                reader.map(|c| s.spawn(move || raw::load_calls(&c, window, span, pid_filter, ops)));
            let early = Early::load(db, window, bucket_ns, pid_filter);
            let raw_calls = match beside {
                Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                None => raw::load_calls(conn, window, span, pid_filter, ops),
            };
            (raw_calls, early)
        });
        let raw::RawCalls {
            calls,
            unfinished: unfinished_calls,
        } = raw_calls.map_err(q)?;
        let Early {
            mut aggs,
            snapshots,
            processes,
            lifecycle,
            mut switches,
        } = early?;
        let edge_sampled =
            edge_buckets(conn, &mut aggs, &calls, &ops, span, window, bucket_ns).map_err(q)?;

        // Threads that drive the GPU: every (pid, tid) seen making CUDA calls.
        let gpu_threads: HashSet<(i32, i32)> = calls.iter().map(|c| (c.pid, c.tid)).collect();
        let gpu_pids: BTreeSet<i32> = gpu_threads.iter().map(|(p, _)| *p).collect();
        let mut gpu_thread_switches = Vec::new();
        for pid in &gpu_pids {
            // Read beside the calls for the pids the aggregates name; any
            // other pid of the calls is read now.
            let rows = match switches.remove(pid) {
                Some(rows) => rows,
                None => raw::switches_of(conn, window, *pid).map_err(q)?,
            };
            gpu_thread_switches.extend(
                rows.into_iter()
                    .filter(|h| gpu_threads.contains(&(h.pid, h.tid))),
            );
        }

        // Off-CPU stacks of those threads (what each wait was for), where
        // the capture recorded stacks.
        let mut waits =
            crate::waits::load(conn, window.lo_ns, window.hi_ns, pid_filter).map_err(q)?;
        waits.retain(|w| gpu_threads.contains(&(w.pid, w.tid)));
        let py_profiles =
            crate::pyframes::load(conn, window.lo_ns, window.hi_ns, pid_filter).map_err(q)?;
        let mut thread_samples = BTreeMap::new();
        for &(pid, tid) in &gpu_threads {
            let rows = db.thread_samples(pid, tid, window.lo_ns, window.hi_ns)?;
            if !rows.is_empty() {
                thread_samples.insert((pid, tid), rows);
            }
        }

        let (cpu_cores, gpu_model): (i64, String) = conn
            .query_row(
                "SELECT COALESCE(MAX(cpu_cores), 0), COALESCE(MAX(gpu_model), '') FROM sessions",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(q)?;
        let lost_events: i64 = conn
            .query_row(
                "SELECT COALESCE(SUM(lost), 0) FROM capture_losses \
                 WHERE ts_ns BETWEEN ?1 AND ?2 AND source NOT IN (?3, ?4)",
                params![
                    window.lo_ns,
                    window.hi_ns,
                    loss_source::UNFINISHED_CALL,
                    loss_source::OPEN_AT_STOP
                ],
                |r| r.get(0),
            )
            .map_err(q)?;
        let open_sessions: Vec<i64> = conn
            .prepare("SELECT id FROM sessions WHERE COALESCE(stopped_ns, 0) = 0 ORDER BY id")
            .and_then(|mut stmt| stmt.query_map([], |r| r.get(0))?.collect())
            .map_err(q)?;

        let (activity, activity_origin) = if db.has_activity_spans() {
            (
                crate::activity::read_recorded(conn, window.lo_ns, window.hi_ns, pid_filter)
                    .map_err(q)?,
                ActivityOrigin::Recorded,
            )
        } else {
            (
                crate::activity::fold_raw(&calls, &ops),
                ActivityOrigin::FromRawRows,
            )
        };
        let gpu = GpuActivity::load(conn, window.lo_ns, window.hi_ns).map_err(q)?;
        let launch_level_changes =
            ingero_store::launch_levels::read_launch_level_changes(conn).map_err(q)?;

        Ok(Dataset {
            activity,
            activity_origin,
            gpu,
            span,
            window,
            whole_capture: window.lo_ns <= span.start_ns && window.hi_ns >= span.end_ns,
            bucket_ns,
            focus: scope.pid,
            format: db.format().clone(),
            ops,
            calls,
            aggs,
            snapshots,
            processes,
            lifecycle,
            gpu_thread_switches,
            waits,
            py_profiles,
            thread_samples,
            cpu_cores,
            gpu_model,
            lost_events,
            unfinished_calls,
            open_sessions,
            edge_sampled,
            launch_level_changes,
            call_row_keep_ns: match db.format() {
                DbFormat::Native { .. } => db.meta_i64(ingero_store::schema::META_CALL_ROW_KEEP_NS),
                _ => None,
            },
            launch_row_keep_ns: match db.format() {
                DbFormat::Native { .. } => {
                    db.meta_i64(ingero_store::schema::META_LAUNCH_ROW_KEEP_NS)
                }
                _ => None,
            },
        })
    }

    /// Name of an op id (`unknown op` when the catalogue lacks it).
    pub fn op_name(&self, id: u16) -> &str {
        self.ops.get(&id).map_or("unknown op", |o| o.name.as_str())
    }

    /// Class of an op id.
    pub fn op_class(&self, id: u16) -> OpClass {
        self.ops.get(&id).map_or(OpClass::Other, |o| o.class)
    }

    /// Sums aggregate rows matching the filters.
    pub fn totals(&self, source: AggSource, code: Option<i64>, pid: Option<i32>) -> Totals {
        let mut t = Totals::default();
        for a in &self.aggs {
            if a.source == source
                && code.is_none_or(|c| a.code == c)
                && pid.is_none_or(|p| a.pid == p)
            {
                t.add(a);
            }
        }
        t
    }

    /// Host-event totals of one kind for one process.
    pub fn host_totals(&self, kind: HostKind, pid: Option<i32>) -> Totals {
        self.totals(AggSource::Host, Some(kind.id() as i64), pid)
    }

    /// Pids that made CUDA calls (raw rows or aggregates) in the window.
    pub fn cuda_pids(&self) -> BTreeSet<i32> {
        let mut pids: BTreeSet<i32> = self.calls.iter().map(|c| c.pid).collect();
        pids.extend(
            self.aggs
                .iter()
                .filter(|a| a.source == AggSource::Cuda && a.count > 0)
                .map(|a| a.pid),
        );
        if let Some(f) = self.focus {
            pids.retain(|p| *p == f);
        }
        pids
    }

    /// Every pid seen in aggregates or the process table.
    pub fn all_pids(&self) -> BTreeSet<i32> {
        let mut pids: BTreeSet<i32> = self.aggs.iter().map(|a| a.pid).collect();
        pids.extend(self.processes.keys().copied());
        pids.retain(|p| *p > 0);
        pids
    }

    /// Parent of a pid (from the process table, then from fork rows), 0 if unknown.
    pub fn parent_of(&self, pid: i32) -> i32 {
        if let Some(p) = self.processes.get(&pid) {
            if p.ppid != 0 {
                return p.ppid;
            }
        }
        self.lifecycle
            .iter()
            .find(|h| h.kind == HostKind::Fork && h.arg == pid as i64)
            .map_or(0, |h| h.pid)
    }

    /// True when `pid` descends from `ancestor` (not counting itself).
    pub fn descends_from(&self, pid: i32, ancestor: i32) -> bool {
        let mut cur = pid;
        for _ in 0..64 {
            let parent = self.parent_of(cur);
            if parent == 0 || parent == cur {
                return false;
            }
            if parent == ancestor {
                return true;
            }
            cur = parent;
        }
        false
    }

    /// The thread of `pid` that spent the most time in raw CUDA calls (in
    /// outer calls of its activity spans, when the capture folded calls):
    /// the one that drives the GPU.
    pub fn gpu_thread(&self, pid: i32) -> Option<i32> {
        let mut per_tid: BTreeMap<i32, i64> = BTreeMap::new();
        for c in self.calls.iter().filter(|c| c.pid == pid) {
            *per_tid.entry(c.tid).or_default() += c.dur_ns;
        }
        if self.per_thread_from_spans() {
            for tid in per_tid.keys().copied().collect::<Vec<_>>() {
                let api = self.thread_calls(pid, tid).map_or(0, |t| t.api_ns);
                per_tid.insert(tid, api);
            }
        }
        per_tid
            .into_iter()
            .max_by_key(|(_, t)| *t)
            .map(|(tid, _)| tid)
    }

    /// Short command name of a pid, empty when unknown.
    pub fn comm(&self, pid: i32) -> &str {
        self.processes.get(&pid).map_or("", |p| p.comm.as_str())
    }

    /// Length of the analysed window in seconds.
    pub fn window_secs(&self) -> f64 {
        self.window.duration_ns() as f64 / 1e9
    }
}
