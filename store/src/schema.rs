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

/// The measured-GPU-activity tables (schema version 2), as one literal so
/// that the migration and the read-only view of older files
/// ([`crate::compat`]) create them from the same text.
macro_rules! gpu_tables_v2 {
    () => {
        r#"
-- Version 2: measured GPU activity (NVML, sampled during the capture) and kernel launch geometry.
-- GPUs NVML saw during a capture (index = NVML device index).
CREATE TABLE gpu_devices (
    session_id      INTEGER NOT NULL,
    gpu             INTEGER NOT NULL,
    name            TEXT NOT NULL DEFAULT '',
    uuid            TEXT NOT NULL DEFAULT '',
    pci_bus_id      TEXT NOT NULL DEFAULT '',
    mem_total_bytes INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, gpu)
);
-- Driver samples of the device, on the capture clock (epoch ns, the driver's own sample time).
-- kind 1 = GPU (SM) utilisation %, 2 = memory-controller utilisation %; value over the driver's
-- sample period (about 1/6 s to 1 s, the gap to the previous sample of the same kind and gpu).
CREATE TABLE gpu_util_samples (
    session_id INTEGER NOT NULL,
    ts_ns      INTEGER NOT NULL,
    gpu        INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    value      INTEGER NOT NULL
);
CREATE INDEX gpu_util_samples_ts ON gpu_util_samples(gpu, kind, ts_ns);
-- Driver samples per process (nvmlDeviceGetProcessUtilization): SM and memory utilisation % of
-- one process over the sample period ending at ts_ns.
CREATE TABLE gpu_process_samples (
    session_id INTEGER NOT NULL,
    ts_ns      INTEGER NOT NULL,
    gpu        INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    sm_pct     INTEGER NOT NULL,
    mem_pct    INTEGER NOT NULL
);
CREATE INDEX gpu_process_samples_pid_ts ON gpu_process_samples(pid, ts_ns);
-- Device state polled by the recorder (ts_ns = when it asked); -1 = not available on this GPU.
CREATE TABLE gpu_status (
    session_id       INTEGER NOT NULL,
    ts_ns            INTEGER NOT NULL,
    gpu              INTEGER NOT NULL,
    mem_used_bytes   INTEGER NOT NULL DEFAULT -1,
    pcie_rx_kbps     INTEGER NOT NULL DEFAULT -1,
    pcie_tx_kbps     INTEGER NOT NULL DEFAULT -1,
    sm_clock_mhz     INTEGER NOT NULL DEFAULT -1,
    power_mw         INTEGER NOT NULL DEFAULT -1,
    throttle_reasons INTEGER NOT NULL DEFAULT -1,  -- nvmlClocksEventReasons bit mask
    PRIMARY KEY (session_id, gpu, ts_ns)
);
"#
    };
}

/// The NCCL tables of schema version 7 (a macro, so the migration and the
/// empty tables an older file is shown can share one text).
macro_rules! nccl_tables_v7 {
    () => {
        r#"
-- Version 7: NCCL calls (libnccl), every one of them (never sampled): collectives, point-to-point,
-- groups and communicator set-up, as the process called them. The same calls are also in
-- cuda_calls/aggregates (api 'nccl' in cuda_ops) like any probed call. comm = the ncclComm_t
-- handle in that process; seq = 0-based order of the collective and point-to-point calls on
-- (pid, comm) the application made, -1 for the others (and for one NCCL made inside another); count = elements; datatype = ncclDataType_t (-1 none);
-- bytes = count x element size; red_op = ncclRedOp_t (-1 none); peer = root (broadcast, reduce)
-- or peer rank (send, recv), -1 none. node and rank: the process's node and global rank where
-- known (processes.rank; filled in merged files).
CREATE TABLE nccl_calls (
    id         INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL,
    ts_ns      INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    tid        INTEGER NOT NULL,
    op_id      INTEGER NOT NULL,
    dur_ns     INTEGER NOT NULL,
    comm       INTEGER NOT NULL DEFAULT 0,
    seq        INTEGER NOT NULL DEFAULT -1,
    count      INTEGER NOT NULL DEFAULT 0,
    datatype   INTEGER NOT NULL DEFAULT -1,
    bytes      INTEGER NOT NULL DEFAULT 0,
    red_op     INTEGER NOT NULL DEFAULT -1,
    peer       INTEGER NOT NULL DEFAULT -1,
    stream     INTEGER NOT NULL DEFAULT 0,
    ret        INTEGER NOT NULL DEFAULT 0,
    node       TEXT NOT NULL DEFAULT '',
    rank       INTEGER NOT NULL DEFAULT -1
);
CREATE INDEX nccl_calls_comm ON nccl_calls(pid, comm, seq);
CREATE INDEX nccl_calls_ts ON nccl_calls(ts_ns);
-- One row per communicator a process made (init, split). comm_key is equal on every rank of one
-- communicator (a 64-bit key of its ncclUniqueId; for a split, of the parent's key and the
-- color), 0 when unknown; comm_rank/nranks = this process's rank in it and its size, -1 unknown
-- (a split does not say); parent_comm = the split communicator's parent handle, 0 otherwise.
CREATE TABLE nccl_comms (
    session_id    INTEGER NOT NULL,
    pid           INTEGER NOT NULL,
    comm          INTEGER NOT NULL,
    comm_key      INTEGER NOT NULL DEFAULT 0,
    comm_rank     INTEGER NOT NULL DEFAULT -1,
    nranks        INTEGER NOT NULL DEFAULT -1,
    parent_comm   INTEGER NOT NULL DEFAULT 0,
    op_id         INTEGER NOT NULL,
    init_ts_ns    INTEGER NOT NULL,
    init_dur_ns   INTEGER NOT NULL DEFAULT 0,
    destroy_ts_ns INTEGER NOT NULL DEFAULT 0,
    node          TEXT NOT NULL DEFAULT '',
    rank          INTEGER NOT NULL DEFAULT -1,
    PRIMARY KEY (session_id, pid, comm)
);
-- Files made by `ingero merge`: one row per input database, merged as session session_id.
-- clock_offset_ns was subtracted from every time of that input to put it on the reference
-- clock (offset_method says how it was estimated; offset_spread_ns = the median absolute
-- deviation of the per-collective estimates, matched = collectives matched with the reference);
-- pid_offset was added to its pids and tids so that no two inputs share one.
CREATE TABLE merge_sources (
    session_id       INTEGER PRIMARY KEY,
    path             TEXT NOT NULL,
    node             TEXT NOT NULL,
    reference        INTEGER NOT NULL DEFAULT 0,
    clock_offset_ns  INTEGER NOT NULL DEFAULT 0,
    offset_spread_ns INTEGER NOT NULL DEFAULT -1,
    matched          INTEGER NOT NULL DEFAULT 0,
    offset_method    TEXT NOT NULL DEFAULT '',
    pid_offset       INTEGER NOT NULL DEFAULT 0
);
"#
    };
}

/// The columns schema version 7 adds to existing tables (a macro, for the
/// migration's `concat!`): the node and global rank of the process a row
/// belongs to (filled in processes at the capture, in every table by
/// `ingero merge`), and what the process's environment said of its place in
/// the job.
macro_rules! rank_columns_v7 {
    () => {
        r#"
-- Version 7: node and rank on every row that has a pid (node = host name of the capture that
-- recorded it, '' in a single capture; rank = global rank of the process, -1 unknown: filled in
-- processes by the capture, everywhere by `ingero merge`). processes.local_rank/world_size come
-- from the process's environment (LOCAL_RANK, WORLD_SIZE and the launchers' equivalents).
ALTER TABLE aggregates ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE aggregates ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE cuda_activity ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE cuda_activity ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE cuda_calls ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE cuda_calls ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE gpu_process_samples ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE gpu_process_samples ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE host_events ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE host_events ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE processes ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE processes ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE processes ADD COLUMN local_rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE processes ADD COLUMN world_size INTEGER NOT NULL DEFAULT -1;
ALTER TABLE stack_counts ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE stack_counts ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE stack_samples ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE stack_samples ADD COLUMN rank INTEGER NOT NULL DEFAULT -1;
"#
    };
}

/// Tables added in schema version 2 that an older file lacks (the reader
/// shows them empty).
pub const GPU_TABLES_SQL: &str = gpu_tables_v2!();

/// Columns added to existing tables in schema version 2, with the value an
/// older file reads as: `(table, column, value)`, grouped by table (the
/// reader makes one view per run of one table).
pub const COLUMNS_V2: &[(&str, &str, &str)] = &[
    ("cuda_calls", "grid_x", "0"),
    ("cuda_calls", "grid_y", "0"),
    ("cuda_calls", "grid_z", "0"),
    ("cuda_calls", "block_x", "0"),
    ("cuda_calls", "block_y", "0"),
    ("cuda_calls", "block_z", "0"),
    ("cuda_calls", "shared_mem", "0"),
    ("cuda_calls", "nested", "-1"),
    ("aggregates", "sum_threads", "0"),
    ("aggregates", "small_launches", "0"),
    ("aggregates", "nested_count", "0"),
    ("aggregates", "nested_dur_ns", "0"),
    ("aggregates", "nested_bytes", "0"),
    ("aggregates", "nested_threads", "0"),
    ("aggregates", "nested_small_launches", "0"),
];

/// Columns added to existing tables in schema version 5 (sampled launch
/// timing), with the value an older file reads as, grouped by table.
pub const COLUMNS_V5: &[(&str, &str, &str)] = &[
    ("cuda_calls", "dur_estimated", "0"),
    ("aggregates", "estimated_count", "0"),
    ("aggregates", "estimated_dur_ns", "0"),
];

/// Columns added in schema version 6 (page-allocation runs): an older row
/// is one event, and a page row covers 2^order pages.
pub const COLUMNS_V6: &[(&str, &str, &str)] = &[
    ("host_events", "count", "1"),
    (
        "host_events",
        "bytes",
        "CASE WHEN kind = 3 THEN 4096 << MIN(MAX(arg, 0), 20) ELSE 0 END",
    ),
];

/// Columns added in schema version 7 (ranks and nodes): an older file is
/// one node's capture whose ranks were not recorded.
pub const COLUMNS_V7: &[(&str, &str, &str)] = &[
    ("aggregates", "node", "''"),
    ("aggregates", "rank", "-1"),
    ("cuda_activity", "node", "''"),
    ("cuda_activity", "rank", "-1"),
    ("cuda_calls", "node", "''"),
    ("cuda_calls", "rank", "-1"),
    ("gpu_process_samples", "node", "''"),
    ("gpu_process_samples", "rank", "-1"),
    ("host_events", "node", "''"),
    ("host_events", "rank", "-1"),
    ("processes", "node", "''"),
    ("processes", "rank", "-1"),
    ("processes", "local_rank", "-1"),
    ("processes", "world_size", "-1"),
    ("stack_counts", "node", "''"),
    ("stack_counts", "rank", "-1"),
    ("stack_samples", "node", "''"),
    ("stack_samples", "rank", "-1"),
];

/// Columns added in schema version 8 (bounded untimed launches): an older
/// file bounded none.
pub const COLUMNS_V8: &[(&str, &str, &str)] = &[
    ("aggregates", "estimated_bounded", "0"),
    ("aggregates", "estimated_bound_ns", "0"),
];

/// Columns added in schema version 10 (why a capture ended): an older
/// file did not say, which reads as unknown (`''`).
pub const COLUMNS_V10: &[(&str, &str, &str)] = &[("sessions", "stop_reason", "''")];

/// Tables whose rows carry a pid, and so (from version 7) the node and rank
/// of that process.
pub const PID_TABLES: &[&str] = &[
    "aggregates",
    "cuda_activity",
    "cuda_calls",
    "gpu_process_samples",
    "host_events",
    "nccl_calls",
    "nccl_comms",
    "processes",
    "stack_counts",
    "stack_samples",
];

/// Every column added to an existing table after version 1, with the
/// version that added it (what [`crate::compat`] presents to older files).
pub const ADDED_COLUMNS: &[(i64, &[AddedColumn])] = &[
    (2, COLUMNS_V2),
    (5, COLUMNS_V5),
    (6, COLUMNS_V6),
    (7, COLUMNS_V7),
    (8, COLUMNS_V8),
    (10, COLUMNS_V10),
];

/// A column added to an existing table: `(table, column, value an older
/// file reads as)`.
pub type AddedColumn = (&'static str, &'static str, &'static str);

/// A launch of at most this many threads (grid x block) is counted in
/// `aggregates.small_launches`: less than one wave on an H100/H200 (132
/// SMs x 2,048 threads would be 270,336; 65,536 is a quarter of that).
pub const SMALL_LAUNCH_THREADS: i64 = 65_536;

/// Under launch rows, and under sampled launch timing (the capture default), every timed outer kernel launch at
/// least this long keeps its raw row, whatever the one-in-K sampling of the
/// others (`LAUNCH_SLOW_NS` in probes/bpf/cuda.h). Analysis weights the kept
/// rows by it so percentiles are of every launch, not of the kept ones.
pub const LAUNCH_ROW_KEEP_NS: i64 = 50_000;

/// `ingero_meta` key present when a capture of the file kept launch rows
/// that way: its value is the threshold, ns ([`LAUNCH_ROW_KEEP_NS`]).
pub const META_LAUNCH_ROW_KEEP_NS: &str = "launch_row_keep_ns";

/// Call folding: every call other than a launch that failed or lasted at
/// least this long keeps its raw row; the faster successful ones keep a
/// bounded sample per second, thread and op, and the rest are counted in the
/// kernel (`CALL_KEEP_NS` in probes/bpf/call_folds.h). Analysis weights the
/// kept rows by it, as for launch rows.
pub const CALL_ROW_KEEP_NS: i64 = 50_000;

/// `ingero_meta` key present when a capture of the file folded calls: its
/// value is the threshold, ns ([`CALL_ROW_KEEP_NS`]).
pub const META_CALL_ROW_KEEP_NS: &str = "call_row_keep_ns";

/// Migrations, applied in order; `MIGRATIONS[i]` moves version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    concat!(
        gpu_tables_v2!(),
        r#"
-- Kernel launch geometry of a raw cuda_calls row (launch ops only): grid and block dimensions,
-- dynamic shared memory bytes. 0 where the call is not a launch or its geometry was not read.
ALTER TABLE cuda_calls ADD COLUMN grid_x INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cuda_calls ADD COLUMN grid_y INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cuda_calls ADD COLUMN grid_z INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cuda_calls ADD COLUMN block_x INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cuda_calls ADD COLUMN block_y INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cuda_calls ADD COLUMN block_z INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cuda_calls ADD COLUMN shared_mem INTEGER NOT NULL DEFAULT 0;
-- Per-bucket launch totals for every launch, kept or not: total threads (grid x block) launched,
-- and launches of at most 65,536 threads (a "tiny" kernel, under one wave of an H100/H200).
ALTER TABLE aggregates ADD COLUMN sum_threads INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aggregates ADD COLUMN small_launches INTEGER NOT NULL DEFAULT 0;
-- cuda_ops.class gains graph_launch | graph_setup | alloc_async | free_async | event_record |
-- stream_wait | query (store/src/catalog.rs says what each means).
-- Nested calls (rule in store/src/nesting.rs): 1 = made while another probed CUDA call of the
-- same thread was in flight (the driver half of a runtime call), 0 = an outer call, -1 = not
-- recorded (rows written before version 2).
ALTER TABLE cuda_calls ADD COLUMN nested INTEGER NOT NULL DEFAULT -1;
-- The part of count, sum_dur_ns, sum_bytes, sum_threads, small_launches that nested calls make
-- up: totals over outer calls only are the column minus its nested_ part.
ALTER TABLE aggregates ADD COLUMN nested_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aggregates ADD COLUMN nested_dur_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aggregates ADD COLUMN nested_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aggregates ADD COLUMN nested_threads INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aggregates ADD COLUMN nested_small_launches INTEGER NOT NULL DEFAULT 0;
"#
    ),
    ACTIVITY_TABLE_SQL,
    STACK_TABLES_SQL,
    ESTIMATED_DURATION_SQL,
    PAGE_RUNS_SQL,
    concat!(nccl_tables_v7!(), rank_columns_v7!()),
    BOUNDED_LAUNCHES_SQL,
    LAUNCH_LEVEL_TABLE_SQL,
    STOP_REASON_SQL,
];

/// Column added in schema version 10: why each capture ended, in the
/// capture's own words.
pub const STOP_REASON_SQL: &str = r#"
-- Version 10: why the capture ended, written when it finalised: a signal ('SIGTERM', 'SIGINT',
-- 'SIGHUP'), 'traced command exited (status N)', 'traced process N exited', 'duration 10 s
-- elapsed', 'size limit reached', 'stop_trace requested', 'MCP client disconnected (stdin
-- closed)', 'server shutting down (SIGTERM)', 'writer failed: <error>' (the capture stopped at
-- its first storage error; stopped_ns is then the last instant the file holds in full). 'running'
-- while it records; '' = not said (a file written before version 10).
ALTER TABLE sessions ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
"#;

/// Table added in schema version 9: when a capture stopped (and started
/// again) probing the runtime's launch functions, which changes what their
/// counts cover. An older file reads it empty.
pub const LAUNCH_LEVEL_TABLE_SQL: &str = r#"
-- Version 9: changes of the probed launch level. A launch through the CUDA runtime (cudaLaunchKernel
-- and its variants) makes the driver's (cuLaunchKernel and its variants). Once every runtime launch
-- seen had reached a driver launch, the capture detached the runtime launch probes (runtime_probed
-- = 0 at ts_ns): later runtime launches are counted only under the driver's launch functions, as
-- outer calls. runtime_probed = 1: runtime launch probes attached again at ts_ns (a process mapped
-- the runtime after they went); they go again at a later 0 row. runtime_launches = runtime launches
-- the capture had probed by ts_ns, every process together. No row: both levels were probed the
-- whole capture (or the file was written before version 9).
CREATE TABLE launch_level_changes (
    session_id       INTEGER NOT NULL,
    ts_ns            INTEGER NOT NULL,
    runtime_probed   INTEGER NOT NULL,
    runtime_launches INTEGER NOT NULL DEFAULT 0
);
"#;

/// Columns added in schema version 8: what is known of the launches whose
/// duration was estimated.
pub const BOUNDED_LAUNCHES_SQL: &str = r#"
-- Version 8: of estimated_count (launches not timed under sampled launch timing), those proven
-- shorter than 50 us because their thread's next probed call entered less than 50 us after them,
-- and the sum of those gaps (an upper bound of their real total). estimated_count -
-- estimated_bounded launches may have lasted longer: their duration is unknown.
ALTER TABLE aggregates ADD COLUMN estimated_bounded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aggregates ADD COLUMN estimated_bound_ns INTEGER NOT NULL DEFAULT 0;
"#;

/// Tables added in schema version 7 that an older file lacks (the reader
/// shows them empty).
pub const NCCL_TABLES_SQL: &str = nccl_tables_v7!();

/// Columns added in schema version 6: a host row may stand for many events
/// (page allocations coalesced in the kernel into runs).
pub const PAGE_RUNS_SQL: &str = r#"
-- Version 6: count = events the row stands for (1, or the allocations of a page-allocation run:
-- consecutive allocations of one thread on one CPU, at most 1 ms, ts_ns the first and dur_ns the
-- span to the last clock stamp, taken at least every 8th allocation and at each kernel tick; arg
-- the largest order). bytes = 4 KiB pages x 4096 of a page-allocation row.
ALTER TABLE host_events ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE host_events ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE host_events SET bytes = 4096 << MIN(MAX(arg, 0), 20) WHERE kind = 3;
"#;

/// Columns added in schema version 5: durations that were estimated, not
/// measured (sampled launch timing, `ingero trace --launch-sample N`).
pub const ESTIMATED_DURATION_SQL: &str = r#"
-- Version 5: sampled launch timing. dur_estimated = 1: the call was not timed (its return was not
-- probed, to halve the probe cost of a launch); dur_ns is the thread's moving mean (weight 1/8 on
-- the newest) of its timed outer launches, not a measurement. 0 = measured.
ALTER TABLE cuda_calls ADD COLUMN dur_estimated INTEGER NOT NULL DEFAULT 0;
-- The part of count and sum_dur_ns made of calls whose duration was estimated (min/max include
-- the estimates).
ALTER TABLE aggregates ADD COLUMN estimated_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aggregates ADD COLUMN estimated_dur_ns INTEGER NOT NULL DEFAULT 0;
"#;

/// Table added in schema version 3: per-thread CUDA activity spans, written
/// exactly whatever the raw-row sampling (rule in [`crate::activity`]).
pub const ACTIVITY_TABLE_SQL: &str = r#"
-- Per-thread CUDA activity, every outer call folded in (store/src/activity.rs):
-- kind 1 = burst (outer calls of one thread less than 1 ms apart; *_ns = time inside them per
-- part, the rest of the span is host time between calls), kind 2 = queued work (first
-- asynchronous launch/copy/graph launch after a sync, to the end of a sync that waited >= 100 us).
CREATE TABLE cuda_activity (
    session_id    INTEGER NOT NULL,
    pid           INTEGER NOT NULL,
    tid           INTEGER NOT NULL,
    kind          INTEGER NOT NULL,
    start_ns      INTEGER NOT NULL,
    end_ns        INTEGER NOT NULL,
    calls         INTEGER NOT NULL DEFAULT 0,
    launch_ns     INTEGER NOT NULL DEFAULT 0,
    alloc_free_ns INTEGER NOT NULL DEFAULT 0,
    sync_ns       INTEGER NOT NULL DEFAULT 0,
    copy_ns       INTEGER NOT NULL DEFAULT 0,
    other_ns      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX cuda_activity_pid ON cuda_activity(pid, start_ns);
"#;

/// Tables added in schema version 4: stack samples (what the host was doing
/// while the GPU waited), interned stacks and their exact per-second counts
/// (rules in [`crate::stacks`]). An older file reads them empty.
pub const STACK_TABLES_SQL: &str = r#"
-- Version 4: stack samples.
-- Distinct stacks, interned: id = FNV-1a 64 of the frames JSON (as a signed integer). frames is a
-- JSON array, innermost frame first, of {"kind": "native" | "kernel" | "python", "module": file
-- name of the ELF object (native, kernel: "kernel") or of the Python module's source,
-- "function": symbol (demangled) or Python function name, "0x..." when unresolved, "offset":
-- bytes past the symbol's start (native) or 0, "file": source file (Python) or "", "line":
-- source line (Python) or 0}.
CREATE TABLE stacks (
    id     INTEGER PRIMARY KEY,
    depth  INTEGER NOT NULL,
    frames TEXT NOT NULL
);
-- One stack sample (kept per the raw-row policy; stack_counts counts all of them).
-- kind 1 = on-CPU (CPU-clock perf event; user + kernel frames), 2 = off-CPU (a CUDA-calling
-- thread leaving the CPU: off_cpu_ns = how long it stayed off, -1 when it had not come back at
-- the stop; state 1 = preempted, 0 = blocked), 3 = Python (py-spy sampler; state 1 = the thread
-- was running or runnable, 0 = idle in py-spy's judgement), 4 = CUDA call site (stack at a CUDA
-- call's entry, Ingero files). cpu = -1 where unknown.
CREATE TABLE stack_samples (
    session_id INTEGER NOT NULL,
    ts_ns      INTEGER NOT NULL,
    pid        INTEGER NOT NULL,
    tid        INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    off_cpu_ns INTEGER NOT NULL DEFAULT 0,
    state      INTEGER NOT NULL DEFAULT -1,
    cpu        INTEGER NOT NULL DEFAULT -1,
    stack_id   INTEGER NOT NULL
);
CREATE INDEX stack_samples_tid_ts ON stack_samples(tid, ts_ns);
CREATE INDEX stack_samples_pid_ts ON stack_samples(pid, kind, ts_ns);
-- Every sample taken, kept or not, per second (bucket width in ingero_meta), thread and kind;
-- sum_off_cpu_ns sums off_cpu_ns of off-CPU samples (those still off at the stop count 0).
CREATE TABLE stack_counts (
    session_id     INTEGER NOT NULL,
    bucket_ns      INTEGER NOT NULL,
    pid            INTEGER NOT NULL,
    tid            INTEGER NOT NULL,
    kind           INTEGER NOT NULL,
    count          INTEGER NOT NULL,
    stored         INTEGER NOT NULL,
    sum_off_cpu_ns INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, bucket_ns, pid, tid, kind)
) WITHOUT ROWID;
-- How each kind was sampled in a session: hz = samples per second per thread (0 = per event,
-- as off-CPU stacks are), note = what the sampler said (attached processes, why not).
CREATE TABLE stack_sources (
    session_id INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    hz         INTEGER NOT NULL,
    note       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, kind)
);
"#;

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
        stmt.execute(params![op.id, op.name, op.api.as_str(), op.class.as_str()])?;
    }
    Ok(())
}
