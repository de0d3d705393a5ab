//! The read-only mapping of Ingero (Go) databases, checked against plain SQL
//! on the reference files themselves: sched_switch rows start when the thread
//! leaves the CPU, fork rows of new threads make no child processes, and a
//! process ends at its exit row.

use ingero_store::TraceDb;
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations")
        .join(name)
}

fn seed() -> PathBuf {
    reference("pytorch-dataloader-starvation.db")
}

/// The file in its own (Ingero) schema, read-only.
fn raw(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open raw")
}

fn one(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

fn rows3(conn: &Connection, sql: &str) -> Vec<(i64, i64, i64)> {
    let mut stmt = conn.prepare(sql).expect(sql);
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect(sql)
        .collect::<rusqlite::Result<Vec<_>>>()
        .expect(sql)
}

fn ids(conn: &Connection, sql: &str) -> BTreeSet<i64> {
    let mut stmt = conn.prepare(sql).expect(sql);
    stmt.query_map([], |r| r.get(0))
        .expect(sql)
        .collect::<rusqlite::Result<BTreeSet<i64>>>()
        .expect(sql)
}

/// Children of fork rows that never appear as the pid of a row Ingero files
/// by process id (everything but sched_switch, which carries the thread id).
const THREAD_CHILDREN_SQL: &str = "SELECT DISTINCT f.arg1 FROM events f \
    WHERE f.source = 3 AND f.op = 7 AND f.arg1 <> f.pid \
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.pid = f.arg1 AND NOT (e.source = 3 AND e.op = 1)) \
      AND NOT EXISTS (SELECT 1 FROM event_aggregates a WHERE a.pid = f.arg1 AND NOT (a.source = 3 AND a.op = 1))";

#[test]
fn switch_rows_start_when_the_thread_leaves_the_cpu() {
    for name in [
        "pytorch-dataloader-starvation.db",
        "sample-cluster.db",
        "sample-gpu-node-01.db",
    ] {
        let path = reference(name);
        let src = raw(&path);
        let db = TraceDb::open(&path).expect(name);
        // Every raw sched_switch row, in the view: start = switch-in stamp - length.
        let want = rows3(
            &src,
            "SELECT rowid, timestamp - duration, duration FROM events \
             WHERE source = 3 AND op = 1 ORDER BY rowid",
        );
        let got = rows3(
            db.conn(),
            "SELECT id, ts_ns, dur_ns FROM host_events WHERE kind = 1 ORDER BY id",
        );
        assert!(!want.is_empty(), "{name}");
        assert_eq!(got, want, "{name}");
        // Off-CPU per thread is unchanged by the shift.
        let per_tid_src = rows3(
            &src,
            "SELECT tid, COUNT(*), SUM(duration) FROM events WHERE source = 3 AND op = 1 \
             GROUP BY tid ORDER BY tid",
        );
        let per_tid_view = rows3(
            db.conn(),
            "SELECT tid, COUNT(*), SUM(dur_ns) FROM host_events WHERE kind = 1 \
             GROUP BY tid ORDER BY tid",
        );
        assert_eq!(per_tid_view, per_tid_src, "{name}");
    }
    // Why: read as switch-out stamps, consecutive intervals of thread 2233
    // overlap; read as switch-in stamps (the view) none does.
    let src = raw(&seed());
    let overlaps_if_out = one(
        &src,
        "SELECT COUNT(*) FROM (SELECT timestamp AS t, LAG(timestamp + duration) \
         OVER (PARTITION BY tid ORDER BY timestamp) AS prev_end FROM events \
         WHERE source = 3 AND op = 1) WHERE prev_end > t",
    );
    assert!(overlaps_if_out > 0);
    let db = TraceDb::open(&seed()).expect("open");
    let overlaps_in_view = one(
        db.conn(),
        "SELECT COUNT(*) FROM (SELECT ts_ns AS t, LAG(ts_ns + dur_ns) \
         OVER (PARTITION BY tid ORDER BY ts_ns) AS prev_end FROM host_events \
         WHERE kind = 1) WHERE prev_end > t",
    );
    assert_eq!(overlaps_in_view, 0);
    // A window sees the off-CPU time that lies inside it.
    let (lo, hi) = (1_774_015_600_000_000_000_i64, 1_774_015_630_000_000_000_i64);
    let inside_src = one(
        &src,
        &format!(
            "SELECT SUM(MIN(timestamp, {hi}) - MAX(timestamp - duration, {lo})) FROM events \
             WHERE source = 3 AND op = 1 AND tid = 2233 \
               AND timestamp > {lo} AND timestamp - duration < {hi}"
        ),
    );
    let inside_view = one(
        db.conn(),
        &format!(
            "SELECT SUM(MIN(ts_ns + dur_ns, {hi}) - MAX(ts_ns, {lo})) FROM host_events \
             WHERE kind = 1 AND tid = 2233 AND ts_ns + dur_ns > {lo} AND ts_ns < {hi}"
        ),
    );
    assert!(inside_src > 0);
    assert_eq!(inside_view, inside_src);
}

#[test]
fn fork_rows_of_new_threads_make_no_child_processes() {
    let src = raw(&seed());
    let db = TraceDb::open(&seed()).expect("open");
    let forks = one(
        &src,
        "SELECT COUNT(*) FROM events WHERE source = 3 AND op = 7",
    );
    let threads = ids(&src, THREAD_CHILDREN_SQL);
    assert_eq!(forks, 11);
    assert_eq!(
        threads,
        BTreeSet::from([2258, 2259, 2260, 2262, 2264, 2265, 2267])
    );
    // The threads of systemd-journald show up as tids of its own rows.
    let as_tids = ids(
        &src,
        "SELECT DISTINCT e.tid FROM events e JOIN events f ON f.source = 3 AND f.op = 7 \
         AND f.arg1 = e.tid AND f.pid = e.pid WHERE e.tid <> e.pid",
    );
    assert_eq!(as_tids, BTreeSet::from([2264, 2265]));
    assert!(as_tids.is_subset(&threads));

    // No thread is a process; its fork row is no fork in the view.
    let procs = ids(db.conn(), "SELECT pid FROM processes");
    assert!(procs.is_disjoint(&threads), "{procs:?}");
    let process_forks = rows3(
        &src,
        &format!(
            "SELECT pid, arg1, timestamp FROM events WHERE source = 3 AND op = 7 \
             AND arg1 NOT IN ({THREAD_CHILDREN_SQL}) ORDER BY timestamp"
        ),
    );
    assert_eq!(
        process_forks.iter().map(|f| f.1).collect::<Vec<_>>(),
        vec![2254, 2255, 2256, 2257]
    );
    let view_forks = rows3(
        db.conn(),
        "SELECT pid, arg, ts_ns FROM host_events WHERE kind = 4 ORDER BY ts_ns",
    );
    assert_eq!(view_forks, process_forks);
    for (parent, child, ts) in &process_forks {
        let (ppid, first): (i64, i64) = db
            .conn()
            .query_row(
                "SELECT ppid, first_seen_ns FROM processes WHERE pid = ?1",
                [child],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("child process");
        assert_eq!((ppid, first), (*parent, *ts), "child {child}");
    }
    // Fork totals count the new processes only.
    assert_eq!(
        one(
            db.conn(),
            "SELECT SUM(count) FROM aggregates WHERE source = 2 AND code = 4 AND pid = 2233"
        ),
        4
    );
    assert_eq!(
        one(
            db.conn(),
            "SELECT COUNT(*) FROM aggregates WHERE source = 2 AND code = 4 AND pid = 429"
        ),
        0
    );
    // Switch totals Ingero filed under a thread's id count for its process.
    let want = one(
        &src,
        &format!(
            "SELECT SUM(count) FROM event_aggregates WHERE source = 3 AND op = 1 \
             AND (pid = 2233 OR pid IN (SELECT arg1 FROM events WHERE source = 3 AND op = 7 \
                  AND pid = 2233 AND arg1 IN ({THREAD_CHILDREN_SQL})))"
        ),
    );
    assert_eq!(want, 3713 + 18_093 + 512 + 213 + 247);
    assert_eq!(
        one(
            db.conn(),
            "SELECT SUM(count) FROM aggregates WHERE source = 2 AND code = 1 AND pid = 2233"
        ),
        want
    );
    // The aggregates keep one row per bucket, process and code.
    assert_eq!(
        one(
            db.conn(),
            "SELECT COUNT(*) FROM (SELECT 1 FROM aggregates \
             GROUP BY bucket_ns, pid, source, code HAVING COUNT(*) > 1)"
        ),
        0
    );
    // Exit rows of threads other than the main one end no process.
    let thread_exits = one(
        &src,
        "SELECT COUNT(*) FROM events WHERE source = 3 AND op = 6 AND tid <> pid",
    );
    assert_eq!(thread_exits, 5);
    assert_eq!(
        one(db.conn(), "SELECT COUNT(*) FROM host_events WHERE kind = 6"),
        one(
            &src,
            "SELECT COUNT(*) FROM events WHERE source = 3 AND op = 6 AND tid = pid"
        )
    );
}

#[test]
fn a_process_ends_at_its_exit_row() {
    // Thread exits of 2233 (at +63 s) do not end it: it lives to its last sign.
    let src = raw(&seed());
    let db = TraceDb::open(&seed()).expect("open");
    let last_sign = one(
        &src,
        "SELECT MAX(t) FROM (SELECT MAX(timestamp) AS t FROM events WHERE pid = 2233 \
         UNION ALL SELECT MAX(bucket) FROM event_aggregates WHERE pid = 2233 \
         UNION ALL SELECT seen_at FROM process_names WHERE pid = 2233)",
    );
    let thread_exit = one(
        &src,
        "SELECT MAX(timestamp) FROM events WHERE source = 3 AND op = 6 AND pid = 2233",
    );
    assert!(thread_exit < last_sign);
    assert_eq!(
        one(
            db.conn(),
            "SELECT last_seen_ns FROM processes WHERE pid = 2233"
        ),
        last_sign
    );
    drop(db);

    // A copy of the file where worker 2255 exits (its main thread) at +80 s,
    // before its name was read and after the start of its last aggregate bucket.
    let dir = tempfile::tempdir().expect("tmp");
    let copy = dir.path().join("exit.db");
    std::fs::copy(seed(), &copy).expect("copy");
    let exit_ts = 1_774_015_640_000_000_000_i64;
    {
        let w = Connection::open(&copy).expect("open copy");
        w.execute(
            "INSERT INTO events(timestamp, pid, tid, source, op, duration) \
             VALUES (?1, 2255, 2255, 3, 6, 0), (?2, 2255, 2299, 3, 6, 0)",
            [exit_ts, exit_ts + 5_000_000_000],
        )
        .expect("insert exits");
    }
    let src = raw(&copy);
    let want = one(
        &src,
        "SELECT MAX(timestamp) FROM events WHERE source = 3 AND op = 6 AND pid = 2255 AND tid = pid",
    );
    assert_eq!(want, exit_ts);
    let later = one(
        &src,
        "SELECT MAX(t) FROM (SELECT MAX(bucket) AS t FROM event_aggregates WHERE pid = 2255 \
         UNION ALL SELECT seen_at FROM process_names WHERE pid = 2255)",
    );
    assert!(later > exit_ts, "a later sign exists");
    let earlier_bucket = one(
        &src,
        "SELECT MAX(bucket) FROM event_aggregates WHERE pid = 2255",
    );
    assert!(earlier_bucket < exit_ts);
    let db = TraceDb::open(&copy).expect("open copy");
    assert_eq!(
        one(
            db.conn(),
            "SELECT last_seen_ns FROM processes WHERE pid = 2255"
        ),
        want
    );
    // Its main thread's exit is a process exit in the view; the other is not.
    assert_eq!(
        rows3(
            db.conn(),
            "SELECT pid, tid, ts_ns FROM host_events WHERE kind = 6"
        ),
        vec![(2255, 2255, exit_ts)]
    );
}
