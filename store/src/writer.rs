//! The batched writer every producer (live capture, demo generator) goes through.

use crate::activity::{ActivitySpan, ActivityTracker, OpRole};
use crate::aggregate::{AggKey, Aggregator};
use crate::catalog::{cuda_op, AggSource, HostKind};
use crate::error::Result;
use crate::insert_rows::insert_rows;
use crate::model::CudaCall;
use crate::model::{Event, ProcessInfo, SessionInfo, SystemSnapshot};
use crate::nesting::{NESTED, OUTER};
use crate::schema::migrate;
use rusqlite::{params, Connection};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Which raw rows to keep. Aggregates always count every event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RawPolicy {
    /// Keep every raw row (exact statistics, biggest files).
    #[default]
    All,
    /// Per second, per process and per op/kind, keep the first `per_second`
    /// rows plus every row slower than `always_keep_ns` (tails are never dropped).
    Sampled {
        /// Rows kept per (second, pid, op) before sampling starts.
        per_second: u32,
        /// Events at least this long are always kept.
        always_keep_ns: i64,
    },
}

/// Columns of a raw `cuda_calls` row, in the order of [`cuda_row`].
const CUDA_CALL_COLUMNS: [&str; 19] = [
    "session_id",
    "ts_ns",
    "pid",
    "tid",
    "op_id",
    "dur_ns",
    "bytes",
    "copy_kind",
    "stream",
    "ret",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "shared_mem",
    "nested",
    "dur_estimated",
];

/// Columns of a raw `host_events` row.
const HOST_EVENT_COLUMNS: [&str; 10] = [
    "session_id",
    "ts_ns",
    "pid",
    "tid",
    "kind",
    "dur_ns",
    "arg",
    "cpu",
    "count",
    "bytes",
];

/// The values of the raw row of `c`, in [`CUDA_CALL_COLUMNS`] order.
fn cuda_row(session_id: i64, c: &CudaCall) -> [i64; 19] {
    let [gx, gy, gz] = c.grid.map(i64::from);
    let [bx, by, bz] = c.block.map(i64::from);
    [
        session_id,
        c.ts_ns,
        i64::from(c.pid),
        i64::from(c.tid),
        i64::from(c.op_id),
        c.dur_ns,
        c.bytes,
        c.copy_kind,
        c.stream,
        c.ret,
        gx,
        gy,
        gz,
        bx,
        by,
        bz,
        i64::from(c.shared_mem),
        if c.nested { NESTED } else { OUTER },
        i64::from(c.dur_estimated),
    ]
}

/// Writes one capture session into a native trace database.
///
/// Every [`TraceWriter::write_batch`] is one transaction, so a process killed
/// at any moment leaves a readable file holding all earlier batches.
pub struct TraceWriter {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    session_id: i64,
    policy: RawPolicy,
    pending: Aggregator,
    kept_this_bucket: HashMap<AggKey, u32>,
    current_bucket: i64,
    pub(crate) activity: ActivityTracker,
    /// Threads seen making CUDA calls: their context switches are always kept.
    cuda_threads: HashSet<(i32, i32)>,
    /// Interned stacks and per-second stack sample counts ([`crate::writer_stacks`]).
    pub(crate) stacks: crate::writer_stacks::StackState,
    /// Sequence numbers and keys of NCCL communicators ([`crate::writer_nccl`]).
    pub(crate) nccl: crate::writer_nccl::NcclState,
    /// Room kept on the file system to record the stop ([`crate::reserve`]).
    pub(crate) reserve: crate::reserve::Reserve,
}

/// Columns of a `cuda_activity` row, in the order of [`activity_row`].
pub(crate) const ACTIVITY_COLUMNS: [&str; 12] = [
    "session_id",
    "pid",
    "tid",
    "kind",
    "start_ns",
    "end_ns",
    "calls",
    "launch_ns",
    "alloc_free_ns",
    "sync_ns",
    "copy_ns",
    "other_ns",
];

pub(crate) fn activity_row(session_id: i64, s: &ActivitySpan) -> [i64; 12] {
    [
        session_id,
        i64::from(s.pid),
        i64::from(s.tid),
        s.kind.id(),
        s.start_ns,
        s.end_ns,
        s.calls,
        s.parts[0],
        s.parts[1],
        s.parts[2],
        s.parts[3],
        s.parts[4],
    ]
}

impl TraceWriter {
    /// Creates (or extends) the database at `path` and starts a session in it.
    pub fn create(path: &Path, info: &SessionInfo, policy: RawPolicy) -> Result<TraceWriter> {
        TraceWriter::prepare(path)?.start_session(info, policy)
    }

    /// Opens or creates the database at `path` and brings it to the current
    /// schema, without starting a session. A new file is created by ingero
    /// itself, mode 0600, never through a link; an existing one is written
    /// only when it is an ingero trace of the user ingero runs as
    /// ([`crate::capture_file`]). A file this call created is removed again
    /// when it fails.
    pub fn prepare(path: &Path) -> Result<PreparedDb> {
        let (mut conn, created) = crate::capture_file::open_for_capture(path)?;
        let brought = (|| -> Result<()> {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            migrate(&mut conn)
        })();
        if let Err(e) = brought {
            drop(conn);
            if created {
                crate::capture_file::remove_created(path);
            }
            return Err(e);
        }
        Ok(PreparedDb {
            conn,
            path: path.to_path_buf(),
            created,
        })
    }

    /// Refuses, before any work starts and without writing anything, a path
    /// [`TraceWriter::prepare`] would refuse: a link, a file of another user,
    /// a database that is not an ingero trace, leftovers of an earlier one.
    pub fn check_target(path: &Path) -> Result<()> {
        crate::capture_file::check_target(path)
    }
}

/// A database file opened, checked and brought to the current schema, with
/// no session in it yet: a capture makes it while its probes load, and
/// starts the session once it knows what it traces.
pub struct PreparedDb {
    conn: Connection,
    path: PathBuf,
    created: bool,
}

impl PreparedDb {
    /// True when preparing created the file (it did not exist before), so
    /// that a capture failing before its session starts knows it may
    /// remove it.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Starts a session in the prepared file.
    pub fn start_session(self, info: &SessionInfo, policy: RawPolicy) -> Result<TraceWriter> {
        let PreparedDb { conn, path, .. } = self;
        conn.execute(
            "INSERT INTO sessions(host, kernel, cpu_model, cpu_cores, mem_total_mb, gpu_model, \
             gpu_driver, started_ns, stopped_ns, target_pids, command, tool_version, stop_reason) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'running')",
            params![
                info.host,
                info.kernel,
                info.cpu_model,
                info.cpu_cores,
                info.mem_total_mb,
                info.gpu_model,
                info.gpu_driver,
                info.started_ns,
                info.stopped_ns,
                serde_json::to_string(&info.target_pids).unwrap_or_else(|_| "[]".into()),
                info.command,
                info.tool_version,
            ],
        )?;
        let session_id = conn.last_insert_rowid();
        let reserve = crate::reserve::Reserve::hold(&path);
        Ok(TraceWriter {
            conn,
            path,
            session_id,
            policy,
            pending: Aggregator::default(),
            kept_this_bucket: HashMap::new(),
            current_bucket: i64::MIN,
            activity: ActivityTracker::default(),
            cuda_threads: HashSet::new(),
            stacks: Default::default(),
            nccl: Default::default(),
            reserve,
        })
    }
}

impl TraceWriter {
    /// Id of the session this writer appends to.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// Which raw rows this writer keeps.
    pub fn raw_policy(&self) -> RawPolicy {
        self.policy
    }

    /// File being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn keep_raw(&mut self, event: &Event) -> bool {
        // Runs of launches and folds of calls counted in the kernel have no
        // raw row: they are their totals.
        if matches!(event, Event::LaunchRun(_) | Event::CallFold(_)) {
            return false;
        }
        let RawPolicy::Sampled {
            per_second,
            always_keep_ns,
        } = self.policy
        else {
            return true;
        };
        // The GPU-driving threads' context switches place their off-CPU
        // time exactly in the idle breakdown: never sampled away.
        if let Event::Host(h) = event {
            if h.kind == HostKind::SchedSwitch && self.cuda_threads.contains(&(h.pid, h.tid)) {
                return true;
            }
        }
        let (key, dur, _) = Aggregator::key_of(event);
        if key.bucket_ns != self.current_bucket {
            if key.bucket_ns > self.current_bucket {
                self.kept_this_bucket.clear();
                self.current_bucket = key.bucket_ns;
            } else {
                // Late event from an earlier second: keep only tails.
                return dur >= always_keep_ns;
            }
        }
        if dur >= always_keep_ns {
            return true;
        }
        let kept = self.kept_this_bucket.entry(key).or_insert(0);
        if *kept < per_second {
            *kept += 1;
            true
        } else {
            false
        }
    }

    /// Stores a batch of events (raw rows per policy, plus aggregates) in one transaction.
    pub fn write_batch(&mut self, events: &[Event]) -> Result<()> {
        let mut newest = i64::MIN;
        // Runs and folds a thread's flush sent together arrive side by side:
        // each stretch of them reaches the activity spans in the order of
        // their last calls, as the calls happened.
        let mut i = 0;
        while i < events.len() {
            let stretch = events[i..]
                .iter()
                .take_while(|e| matches!(e, Event::LaunchRun(_) | Event::CallFold(_)))
                .count();
            if stretch > 1 {
                let mut group: Vec<&Event> = events[i..i + stretch].iter().collect();
                group.sort_by_key(|e| match e {
                    Event::LaunchRun(r) => r.last_ts_ns,
                    Event::CallFold(f) => f.last_ts_ns,
                    _ => i64::MIN,
                });
                for e in group {
                    newest = newest.max(self.track_activity(e));
                }
                i += stretch;
            } else {
                newest = newest.max(self.track_activity(&events[i]));
                i += 1;
            }
        }
        if newest > i64::MIN {
            self.activity.close_before(newest);
        }
        let spans = self.activity.drain();
        let keep: Vec<bool> = events.iter().map(|e| self.keep_raw(e)).collect();
        for (e, k) in events.iter().zip(&keep) {
            self.pending.add(e, *k);
        }
        let tx = self.conn.transaction()?;
        {
            let mut cuda: Vec<[i64; 19]> = Vec::new();
            let mut host: Vec<[i64; 10]> = Vec::new();
            for (e, k) in events.iter().zip(&keep) {
                if !*k {
                    continue;
                }
                match e {
                    Event::LaunchRun(_) | Event::CallFold(_) => {}
                    Event::Cuda(c) => cuda.push(cuda_row(self.session_id, c)),
                    Event::Host(h) => host.push([
                        self.session_id,
                        h.ts_ns,
                        i64::from(h.pid),
                        i64::from(h.tid),
                        i64::from(h.kind.id()),
                        h.dur_ns,
                        h.arg,
                        i64::from(h.cpu),
                        h.count.max(1),
                        h.page_bytes(),
                    ]),
                }
            }
            insert_rows(&tx, "cuda_calls", &CUDA_CALL_COLUMNS, &cuda)?;
            insert_rows(&tx, "host_events", &HOST_EVENT_COLUMNS, &host)?;
            let activity: Vec<[i64; 12]> = spans
                .iter()
                .map(|s| activity_row(self.session_id, s))
                .collect();
            insert_rows(&tx, "cuda_activity", &ACTIVITY_COLUMNS, &activity)?;
            let mut agg = tx.prepare_cached(
                "INSERT INTO aggregates(session_id, bucket_ns, pid, source, code, count, stored, \
                 sum_dur_ns, min_dur_ns, max_dur_ns, sum_bytes, sum_threads, small_launches, \
                 nested_count, nested_dur_ns, nested_bytes, nested_threads, nested_small_launches, \
                 estimated_count, estimated_dur_ns, estimated_bounded, estimated_bound_ns) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
                 ?19, ?20, ?21, ?22) \
                 ON CONFLICT(session_id, bucket_ns, pid, source, code) DO UPDATE SET \
                 count = count + excluded.count, stored = stored + excluded.stored, \
                 sum_dur_ns = sum_dur_ns + excluded.sum_dur_ns, \
                 min_dur_ns = MIN(min_dur_ns, excluded.min_dur_ns), \
                 max_dur_ns = MAX(max_dur_ns, excluded.max_dur_ns), \
                 sum_bytes = sum_bytes + excluded.sum_bytes, \
                 sum_threads = sum_threads + excluded.sum_threads, \
                 small_launches = small_launches + excluded.small_launches, \
                 nested_count = nested_count + excluded.nested_count, \
                 nested_dur_ns = nested_dur_ns + excluded.nested_dur_ns, \
                 nested_bytes = nested_bytes + excluded.nested_bytes, \
                 nested_threads = nested_threads + excluded.nested_threads, \
                 nested_small_launches = nested_small_launches + excluded.nested_small_launches, \
                 estimated_count = estimated_count + excluded.estimated_count, \
                 estimated_dur_ns = estimated_dur_ns + excluded.estimated_dur_ns, \
                 estimated_bounded = estimated_bounded + excluded.estimated_bounded, \
                 estimated_bound_ns = estimated_bound_ns + excluded.estimated_bound_ns",
            )?;
            for (k, t) in self.pending.drain() {
                agg.execute(params![
                    self.session_id,
                    k.bucket_ns,
                    k.pid,
                    k.source as i64,
                    k.code,
                    t.count,
                    t.stored,
                    t.sum_dur_ns,
                    t.min_dur_ns,
                    t.max_dur_ns,
                    t.sum_bytes,
                    t.sum_threads,
                    t.small_launches,
                    t.nested.count,
                    t.nested.sum_dur_ns,
                    t.nested.sum_bytes,
                    t.nested.sum_threads,
                    t.nested.small_launches,
                    t.estimated_count,
                    t.estimated_dur_ns,
                    t.estimated_bounded,
                    t.estimated_bound_ns
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Folds one event into the activity spans; returns its newest time
    /// (`i64::MIN` for host events).
    fn track_activity(&mut self, e: &Event) -> i64 {
        let role_of = |op_id: u16| {
            cuda_op(op_id)
                .map(|op| OpRole::of(op.name, op.class))
                .unwrap_or_default()
        };
        match e {
            Event::Cuda(c) => {
                self.cuda_threads.insert((c.pid, c.tid));
                if !c.nested {
                    self.activity
                        .add(c.pid, c.tid, c.ts_ns, c.dur_ns, c.stream, role_of(c.op_id));
                }
                c.ts_ns
            }
            Event::LaunchRun(r) => {
                self.cuda_threads.insert((r.pid, r.tid));
                let role = role_of(r.op_id);
                let each = r.mean_dur_ns();
                for ts in r.spread() {
                    self.activity.add(r.pid, r.tid, ts, each, r.stream, role);
                }
                r.last_ts_ns
            }
            Event::CallFold(f) => {
                self.cuda_threads.insert((f.pid, f.tid));
                if !f.nested {
                    self.activity.add_fold(f, role_of(f.op_id));
                }
                f.last_ts_ns
            }
            Event::Host(_) => i64::MIN,
        }
    }

    /// Records or refreshes a process (first/last seen widen, names fill in).
    pub fn upsert_process(&mut self, p: &ProcessInfo) -> Result<()> {
        self.conn.execute(
            "INSERT INTO processes(session_id, pid, ppid, comm, cmdline, first_seen_ns, last_seen_ns) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT(session_id, pid) DO UPDATE SET \
             ppid = CASE WHEN excluded.ppid != 0 THEN excluded.ppid ELSE ppid END, \
             comm = CASE WHEN excluded.comm != '' THEN excluded.comm ELSE comm END, \
             cmdline = CASE WHEN excluded.cmdline != '' THEN excluded.cmdline ELSE cmdline END, \
             first_seen_ns = MIN(first_seen_ns, excluded.first_seen_ns), \
             last_seen_ns = MAX(last_seen_ns, excluded.last_seen_ns)",
            params![
                self.session_id,
                p.pid,
                p.ppid,
                p.comm,
                p.cmdline,
                p.first_seen_ns,
                p.last_seen_ns
            ],
        )?;
        Ok(())
    }

    /// Stores one whole-system sample.
    pub fn write_snapshot(&mut self, s: &SystemSnapshot) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO system_snapshots(session_id, ts_ns, cpu_pct, mem_used_pct, \
             mem_avail_mb, swap_used_mb, load1, procs_running) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                self.session_id,
                s.ts_ns,
                s.cpu_pct,
                s.mem_used_pct,
                s.mem_avail_mb,
                s.swap_used_mb,
                s.load1,
                s.procs_running
            ],
        )?;
        Ok(())
    }

    /// Records events the capture lost before they reached the writer.
    pub fn record_loss(&mut self, ts_ns: i64, source: &str, lost: i64) -> Result<()> {
        if lost > 0 {
            self.conn.execute(
                "INSERT INTO capture_losses(session_id, ts_ns, source, lost) VALUES (?1, ?2, ?3, ?4)",
                params![self.session_id, ts_ns, source, lost],
            )?;
        }
        Ok(())
    }

    /// Sets one file-wide fact in `ingero_meta` (what the file's rows mean).
    pub fn set_meta(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO ingero_meta(key, value) VALUES (?1, ?2)",
            params![key, value],
        )?;
        Ok(())
    }

    /// Records the session's GPU model and driver.
    pub fn set_gpu(&mut self, model: &str, driver: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE sessions SET gpu_model = ?2, gpu_driver = ?3 WHERE id = ?1",
            params![self.session_id, model, driver],
        )?;
        Ok(())
    }
}

impl AggSource {
    /// Inverse of the stored number.
    pub fn from_id(id: i64) -> Option<AggSource> {
        match id {
            1 => Some(AggSource::Cuda),
            2 => Some(AggSource::Host),
            _ => None,
        }
    }
}
