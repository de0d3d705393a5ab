//! `merge_into` on the committed H200 captures: a schema-7 NCCL job
//! (nccl-ws1-h200-first.db, the first recording of the world-size-1 job) and two schema-1 files (the DataLoader starvation and
//! launch-storm benchmarks). Every expectation is computed with SQL on the
//! input files themselves, never taken from the merge's own summary.

use ingero_store::catalog::CUDA_OPS;
use ingero_store::merge::{merge_into, MergeInput, PID_STRIDE};
use ingero_store::schema::SCHEMA_VERSION;
use ingero_store::{DbFormat, StoreError, TraceDb};
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const NCCL: &str = "investigations/nccl-ws1-h200-first.db";
const LOADER: &str = "investigations/pytorch-dataloader-starvation-h200.db";
const STORM: &str = "investigations/launch-storm-cpu-contention-h200.db";
const GO_FILE: &str = "tests/data/ingero-investigations/sample-gpu-node-01.db";

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// A committed input, read-only and immutable (no side files next to it).
fn input_conn(path: &Path) -> Connection {
    Connection::open_with_flags(
        format!("file:{}?mode=ro&immutable=1", path.display()),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("open input")
}

/// The merge output, read-only.
fn output_conn(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open output")
}

fn one(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or(0)
}

fn text(conn: &Connection, sql: &str) -> String {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn tables(conn: &Connection) -> Vec<String> {
    conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         ORDER BY name",
    )
    .expect("prepare")
    .query_map([], |r| r.get(0))
    .expect("query")
    .collect::<rusqlite::Result<_>>()
    .expect("names")
}

fn has_table(conn: &Connection, table: &str) -> bool {
    tables(conn).iter().any(|t| t == table)
}

fn has_column(conn: &Connection, table: &str, column: &str) -> bool {
    one(
        conn,
        &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = '{column}'"),
    ) > 0
}

/// Rows of `table` in an input, 0 when it lacks the table.
fn rows_in(conn: &Connection, table: &str) -> i64 {
    if has_table(conn, table) {
        one(conn, &format!("SELECT COUNT(*) FROM {table}"))
    } else {
        0
    }
}

fn input(rel: &str, node: &str) -> MergeInput {
    MergeInput::new(repo(rel), node)
}

/// A writable copy of a committed input, changed by `sql`.
fn altered_copy(dir: &Path, rel: &str, name: &str, sql: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy(repo(rel), &path).expect("copy");
    let mut perms = std::fs::metadata(&path).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).expect("chmod");
    let conn = Connection::open(&path).expect("open copy");
    conn.execute_batch(sql).expect("alter copy");
    drop(conn);
    path
}

/// Bytes and side files of the inputs, to show that a merge leaves them alone.
fn fingerprint(paths: &[PathBuf]) -> Vec<(Vec<u8>, bool, bool)> {
    paths
        .iter()
        .map(|p| {
            let side = |s: &str| {
                let mut n = p.as_os_str().to_owned();
                n.push(s);
                PathBuf::from(n).exists()
            };
            (std::fs::read(p).expect("read"), side("-wal"), side("-shm"))
        })
        .collect()
}

#[test]
fn row_counts_are_the_sum_of_the_inputs() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("merged.db");
    let rels = [NCCL, LOADER, STORM];
    let paths: Vec<PathBuf> = rels.iter().map(|r| repo(r)).collect();
    let before = fingerprint(&paths);
    merge_into(
        &out,
        &[input(NCCL, "a"), input(LOADER, "b"), input(STORM, "c")],
    )
    .expect("merge");
    assert_eq!(before, fingerprint(&paths), "inputs untouched");

    let ins: Vec<Connection> = paths.iter().map(|p| input_conn(p)).collect();
    let merged = output_conn(&out);
    let mut checked = 0;
    for table in tables(&merged) {
        let got = one(&merged, &format!("SELECT COUNT(*) FROM {table}"));
        let expected = match table.as_str() {
            "ingero_meta" => continue,
            // One row per input session.
            "merge_sources" => ins.iter().map(|c| rows_in(c, "sessions")).sum(),
            // The catalogue of this build plus every op an input named.
            "cuda_ops" => {
                let mut ids: BTreeSet<i64> = CUDA_OPS.iter().map(|o| i64::from(o.id)).collect();
                for c in &ins {
                    let mut stmt = c.prepare("SELECT id FROM cuda_ops").expect("ops");
                    let rows = stmt.query_map([], |r| r.get::<_, i64>(0)).expect("ops");
                    ids.extend(rows.map(|r| r.expect("op id")));
                }
                ids.len() as i64
            }
            // Interned by content: distinct ids over the inputs.
            "stacks" => {
                let mut ids = BTreeSet::new();
                for c in ins.iter().filter(|c| has_table(c, "stacks")) {
                    let mut stmt = c.prepare("SELECT id FROM stacks").expect("stacks");
                    let rows = stmt.query_map([], |r| r.get::<_, i64>(0)).expect("stacks");
                    ids.extend(rows.map(|r| r.expect("stack id")));
                }
                ids.len() as i64
            }
            t => ins.iter().map(|c| rows_in(c, t)).sum(),
        };
        assert_eq!(got, expected, "{table}");
        if expected > 0 {
            checked += 1;
        }
    }
    assert!(checked >= 18, "{checked} non-empty tables compared");
    // Figures of the committed inputs: 3485 + 223 + 781 calls, 2028 + 8639 + 3488 host events.
    assert_eq!(one(&merged, "SELECT COUNT(*) FROM cuda_calls"), 4489);
    assert_eq!(one(&merged, "SELECT COUNT(*) FROM host_events"), 14155);
    assert_eq!(
        text(
            &merged,
            "SELECT group_concat(id, ',') FROM (SELECT id FROM sessions ORDER BY id)"
        ),
        "1,2,3"
    );
    let db = TraceDb::open(&out).expect("open merged");
    assert_eq!(
        db.format(),
        &DbFormat::Native {
            version: SCHEMA_VERSION
        }
    );
}

#[test]
fn the_clock_offset_is_subtracted_from_every_time() {
    const X: i64 = 1_234_567_891;
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("merged.db");
    let mut skewed = input(NCCL, "b");
    skewed.clock_offset_ns = X;
    skewed.offset_method = "test".into();
    skewed.offset_spread_ns = 7;
    skewed.matched = 201;
    let mut reference = input(STORM, "a");
    reference.reference = true;
    merge_into(&out, &[reference, skewed]).expect("merge");
    let merged = output_conn(&out);
    let nccl = input_conn(&repo(NCCL));
    let storm = input_conn(&repo(STORM));

    // Every instant column of the NCCL capture (session 2), first and last value.
    let instants: &[(&str, &str)] = &[
        ("cuda_calls", "ts_ns"),
        ("host_events", "ts_ns"),
        ("nccl_calls", "ts_ns"),
        ("nccl_comms", "init_ts_ns"),
        ("nccl_comms", "destroy_ts_ns"),
        ("aggregates", "bucket_ns"),
        ("stack_counts", "bucket_ns"),
        ("stack_samples", "ts_ns"),
        ("cuda_activity", "start_ns"),
        ("cuda_activity", "end_ns"),
        ("gpu_util_samples", "ts_ns"),
        ("gpu_process_samples", "ts_ns"),
        ("gpu_status", "ts_ns"),
        ("system_snapshots", "ts_ns"),
        ("processes", "first_seen_ns"),
        ("processes", "last_seen_ns"),
    ];
    for (table, column) in instants {
        for agg in ["MIN", "MAX"] {
            let theirs = one(&nccl, &format!("SELECT {agg}({column}) FROM {table}"));
            assert_ne!(theirs, 0, "{table}.{column} has data");
            let ours = one(
                &merged,
                &format!("SELECT {agg}({column}) FROM {table} WHERE session_id = 2"),
            );
            assert_eq!(ours, theirs - X, "{agg}({table}.{column})");
        }
    }
    for column in ["started_ns", "stopped_ns"] {
        let theirs = one(&nccl, &format!("SELECT {column} FROM sessions"));
        let ours = one(
            &merged,
            &format!("SELECT {column} FROM sessions WHERE id = 2"),
        );
        assert_eq!(ours, theirs - X, "sessions.{column}");
    }
    // Durations are not instants.
    for (table, column) in [
        ("cuda_calls", "dur_ns"),
        ("nccl_calls", "dur_ns"),
        ("nccl_comms", "init_dur_ns"),
        ("aggregates", "sum_dur_ns"),
        ("stack_samples", "off_cpu_ns"),
        ("cuda_activity", "sync_ns"),
    ] {
        assert_eq!(
            one(
                &merged,
                &format!("SELECT SUM({column}) FROM {table} WHERE session_id = 2")
            ),
            one(&nccl, &format!("SELECT SUM({column}) FROM {table}")),
            "{table}.{column}"
        );
    }
    // The reference keeps its clock.
    assert_eq!(
        one(
            &merged,
            "SELECT MIN(ts_ns) FROM cuda_calls WHERE session_id = 1"
        ),
        one(&storm, "SELECT MIN(ts_ns) FROM cuda_calls")
    );
    let row: (i64, i64, i64, i64, String, i64) = merged
        .query_row(
            "SELECT reference, clock_offset_ns, offset_spread_ns, matched, offset_method, \
             pid_offset FROM merge_sources WHERE session_id = 2",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .expect("merge_sources");
    assert_eq!(row.0, 0);
    assert_eq!((row.1, row.2, row.3, row.4.as_str()), (X, 7, 201, "test"));
    assert_eq!(
        one(
            &merged,
            "SELECT reference FROM merge_sources WHERE session_id = 1"
        ),
        1
    );
    assert_eq!(
        text(
            &merged,
            "SELECT path FROM merge_sources WHERE session_id = 2"
        ),
        repo(NCCL).to_string_lossy()
    );
}

#[test]
fn zero_means_unknown_and_stays_zero() {
    const X: i64 = 5_000_000_000;
    let dir = tempfile::tempdir().expect("tmp");
    let copy = altered_copy(
        dir.path(),
        NCCL,
        "running.db",
        "UPDATE sessions SET stopped_ns = 0; UPDATE nccl_comms SET destroy_ts_ns = 0; \
         UPDATE processes SET last_seen_ns = 0;",
    );
    let out = dir.path().join("merged.db");
    let mut skewed = MergeInput::new(&copy, "n");
    skewed.clock_offset_ns = X;
    merge_into(&out, &[skewed]).expect("merge");
    let merged = output_conn(&out);
    let src = input_conn(&copy);
    assert_eq!(one(&merged, "SELECT stopped_ns FROM sessions"), 0);
    assert_eq!(one(&merged, "SELECT destroy_ts_ns FROM nccl_comms"), 0);
    assert_eq!(one(&merged, "SELECT last_seen_ns FROM processes"), 0);
    assert_eq!(
        one(&merged, "SELECT started_ns FROM sessions"),
        one(&src, "SELECT started_ns FROM sessions") - X
    );
    assert_eq!(
        one(&merged, "SELECT first_seen_ns FROM processes"),
        one(&src, "SELECT first_seen_ns FROM processes") - X
    );
}

#[test]
fn a_file_merged_with_itself_gets_its_pids_apart() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("twice.db");
    merge_into(&out, &[input(LOADER, "x"), input(LOADER, "x#2")]).expect("merge");
    let merged = output_conn(&out);
    let src = input_conn(&repo(LOADER));
    assert_eq!(PID_STRIDE, 4_194_304);
    assert_eq!(
        text(
            &merged,
            "SELECT group_concat(pid_offset, ',') FROM (SELECT pid_offset FROM merge_sources \
             ORDER BY session_id)"
        ),
        "0,4194304"
    );
    // The first copy keeps its pids, the second has every pid and tid moved.
    for (table, column) in [
        ("processes", "pid"),
        ("processes", "ppid"),
        ("host_events", "pid"),
        ("host_events", "tid"),
        ("cuda_calls", "pid"),
        ("cuda_calls", "tid"),
        ("aggregates", "pid"),
    ] {
        let theirs = one(&src, &format!("SELECT SUM({column}) FROM {table}"));
        let n = one(
            &src,
            &format!("SELECT COUNT(*) FROM {table} WHERE {column} != 0"),
        );
        assert!(n > 0, "{table}.{column}");
        let first = one(
            &merged,
            &format!("SELECT SUM({column}) FROM {table} WHERE session_id = 1"),
        );
        let second = one(
            &merged,
            &format!("SELECT SUM({column}) FROM {table} WHERE session_id = 2"),
        );
        assert_eq!(first, theirs, "{table}.{column} of the first copy");
        assert_eq!(
            second,
            theirs + n * PID_STRIDE,
            "{table}.{column} of the second"
        );
    }
    // Not one pid or tid in common between the two sessions.
    let ids = |s: i64| {
        format!(
            "SELECT pid FROM processes WHERE session_id = {s} \
             UNION SELECT pid FROM host_events WHERE session_id = {s} \
             UNION SELECT tid FROM host_events WHERE session_id = {s} \
             UNION SELECT tid FROM cuda_calls WHERE session_id = {s}"
        )
    };
    assert_eq!(
        one(
            &merged,
            &format!(
                "SELECT COUNT(*) FROM (SELECT * FROM ({}) INTERSECT SELECT * FROM ({}))",
                ids(1),
                ids(2)
            )
        ),
        0
    );
    // Fork children (host_events kind 4: arg = child pid) move with their parents.
    let forks = one(&src, "SELECT COUNT(*) FROM host_events WHERE kind = 4");
    assert_eq!(forks, 4);
    assert_eq!(
        one(
            &merged,
            "SELECT SUM(arg) FROM host_events WHERE session_id = 2 AND kind = 4"
        ),
        one(&src, "SELECT SUM(arg) FROM host_events WHERE kind = 4") + forks * PID_STRIDE
    );
    // Exit codes (kind 6) and page orders (kind 3) are not pids.
    for kind in [3, 6] {
        assert_eq!(
            one(
                &merged,
                &format!("SELECT SUM(arg) FROM host_events WHERE session_id = 2 AND kind = {kind}")
            ),
            one(
                &src,
                &format!("SELECT SUM(arg) FROM host_events WHERE kind = {kind}")
            )
        );
    }
    // The target list names the moved pid.
    let target = one(
        &src,
        "SELECT pid FROM processes ORDER BY first_seen_ns LIMIT 1",
    );
    assert_eq!(
        text(&merged, "SELECT target_pids FROM sessions WHERE id = 2"),
        format!("[{}]", target + PID_STRIDE)
    );
    assert_eq!(
        text(&merged, "SELECT target_pids FROM sessions WHERE id = 1"),
        text(&src, "SELECT target_pids FROM sessions")
    );
    // Host names are the capture's own.
    assert_eq!(
        text(&merged, "SELECT group_concat(host, ',') FROM sessions"),
        "vm,vm"
    );
}

#[test]
fn pid_offsets_only_where_ids_collide() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("three.db");
    merge_into(
        &out,
        &[input(NCCL, "a"), input(LOADER, "b"), input(STORM, "c")],
    )
    .expect("merge");
    let merged = output_conn(&out);
    // Which inputs share a pid or tid with an earlier one, by SQL on the inputs.
    let ids = "SELECT pid FROM processes UNION SELECT pid FROM host_events \
               UNION SELECT tid FROM host_events UNION SELECT pid FROM cuda_calls \
               UNION SELECT tid FROM cuda_calls";
    let nccl_ids = format!("{ids} UNION SELECT tid FROM nccl_calls UNION SELECT tid FROM stack_samples UNION SELECT tid FROM cuda_activity");
    let c = input_conn(&repo(LOADER));
    c.execute(
        &format!(
            "ATTACH 'file:{}?mode=ro&immutable=1' AS n",
            repo(NCCL).display()
        ),
        [],
    )
    .expect("attach");
    c.execute(
        &format!(
            "ATTACH 'file:{}?mode=ro&immutable=1' AS s",
            repo(STORM).display()
        ),
        [],
    )
    .expect("attach");
    let in_schema = |schema: &str, q: &str| q.replace("FROM ", &format!("FROM {schema}."));
    let loader_meets_nccl = one(
        &c,
        &format!(
            "SELECT COUNT(*) FROM (SELECT * FROM ({}) INTERSECT SELECT * FROM ({}))",
            in_schema("main", ids),
            in_schema("n", &nccl_ids)
        ),
    );
    let storm_meets_either = one(
        &c,
        &format!(
            "SELECT COUNT(*) FROM (SELECT * FROM ({}) INTERSECT SELECT * FROM ({} UNION {}))",
            in_schema("s", ids),
            in_schema("main", ids),
            in_schema("n", &nccl_ids)
        ),
    );
    // The committed files: the DataLoader benchmark's threads 526..529 are
    // pids and tids of the NCCL job; the launch storm's 591..636 are free.
    assert!(loader_meets_nccl > 0, "{loader_meets_nccl}");
    assert_eq!(storm_meets_either, 0);
    assert_eq!(
        text(
            &merged,
            "SELECT group_concat(pid_offset, ',') FROM (SELECT pid_offset FROM merge_sources \
             ORDER BY session_id)"
        ),
        format!("0,{},0", PID_STRIDE)
    );
    assert_eq!(
        one(
            &merged,
            "SELECT MIN(pid) FROM processes WHERE session_id = 3"
        ),
        one(&c, "SELECT MIN(pid) FROM s.processes")
    );
}

#[test]
fn node_and_rank_are_filled_on_every_pid_table() {
    let dir = tempfile::tempdir().expect("tmp");
    let ranked = altered_copy(
        dir.path(),
        NCCL,
        "rank3.db",
        "UPDATE processes SET rank = 3, local_rank = 1, world_size = 8;",
    );
    let out = dir.path().join("merged.db");
    merge_into(
        &out,
        &[MergeInput::new(&ranked, "alpha"), input(LOADER, "beta")],
    )
    .expect("merge");
    let merged = output_conn(&out);
    let src = input_conn(&ranked);
    let old = input_conn(&repo(LOADER));
    let pid_tables = ingero_store::schema::PID_TABLES;
    let mut filled = 0;
    for table in pid_tables {
        // Rows of a process the input ranks get its rank; the others -1.
        let ranked_rows = one(
            &src,
            &format!(
                "SELECT COUNT(*) FROM {table} WHERE pid IN \
                 (SELECT pid FROM processes WHERE rank = 3)"
            ),
        );
        let all = rows_in(&src, table);
        let q = |w: &str| one(&merged, &format!("SELECT COUNT(*) FROM {table} WHERE {w}"));
        assert_eq!(q("session_id = 1 AND node = 'alpha'"), all, "{table} node");
        assert_eq!(
            q("session_id = 1 AND rank = 3"),
            ranked_rows,
            "{table} rank"
        );
        assert_eq!(
            q("session_id = 1 AND rank = -1"),
            all - ranked_rows,
            "{table} unranked"
        );
        let old_rows = rows_in(&old, table);
        assert_eq!(q("session_id = 2 AND node = 'beta'"), old_rows, "{table}");
        assert_eq!(q("session_id = 2 AND rank = -1"), old_rows, "{table}");
        filled += ranked_rows;
    }
    // Every row of the NCCL job is its one process's: 44 aggregates, 5 activity spans,
    // 3485 calls, 1 GPU sample, 2028 host events, 264 NCCL calls, 1 communicator,
    // 1 process, 34 stack counts, 1074 stack samples.
    let expected: i64 = pid_tables.iter().map(|t| rows_in(&src, t)).sum();
    assert_eq!((filled, expected), (6937, 6937));
    // processes keep their own place in the job.
    assert_eq!(
        text(
            &merged,
            "SELECT group_concat(rank || '/' || local_rank || '/' || world_size, ',') \
             FROM processes WHERE session_id = 1"
        ),
        "3/1/8"
    );
    assert_eq!(
        one(
            &merged,
            "SELECT COUNT(*) FROM processes WHERE session_id = 2 AND rank = -1 \
             AND local_rank = -1 AND world_size = -1"
        ),
        one(&old, "SELECT COUNT(*) FROM processes")
    );
    assert_eq!(
        text(
            &merged,
            "SELECT group_concat(node, ',') FROM (SELECT node FROM merge_sources ORDER BY session_id)"
        ),
        "alpha,beta"
    );
    assert_eq!(
        text(&merged, "SELECT group_concat(host, ',') FROM sessions"),
        "vm,vm"
    );
}

#[test]
fn an_old_input_reads_as_the_current_schema() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("old.db");
    let old = input_conn(&repo(LOADER));
    assert_eq!(one(&old, "PRAGMA user_version"), 1);
    assert!(!has_column(&old, "cuda_calls", "nested"));
    assert!(!has_column(&old, "host_events", "bytes"));
    merge_into(&out, &[input(NCCL, "a"), input(LOADER, "b")]).expect("merge");
    let merged = output_conn(&out);
    assert_eq!(one(&merged, "PRAGMA user_version"), SCHEMA_VERSION);
    let calls = one(&old, "SELECT COUNT(*) FROM cuda_calls");
    let count = |w: &str| one(&merged, &format!("SELECT COUNT(*) FROM {w}"));
    // Columns added after version 1 read as an old file means them.
    assert_eq!(
        count("cuda_calls WHERE session_id = 2 AND nested = -1 AND dur_estimated = 0 AND grid_x = 0 AND shared_mem = 0"),
        calls
    );
    assert_eq!(
        count("aggregates WHERE session_id = 2 AND sum_threads = 0 AND nested_count = 0 AND estimated_count = 0"),
        one(&old, "SELECT COUNT(*) FROM aggregates")
    );
    assert_eq!(
        count("host_events WHERE session_id = 2 AND count = 1"),
        one(&old, "SELECT COUNT(*) FROM host_events")
    );
    // bytes of a page allocation = 4 KiB x 2^order.
    assert_eq!(
        one(
            &merged,
            "SELECT SUM(bytes) FROM host_events WHERE session_id = 2"
        ),
        one(
            &old,
            "SELECT SUM(CASE WHEN kind = 3 THEN 4096 << arg ELSE 0 END) FROM host_events"
        )
    );
    // The NCCL file's own values are copied, not defaulted.
    let nccl = input_conn(&repo(NCCL));
    assert_eq!(
        one(
            &merged,
            "SELECT SUM(bytes) FROM host_events WHERE session_id = 1"
        ),
        one(&nccl, "SELECT SUM(bytes) FROM host_events")
    );
    assert_eq!(
        count("cuda_calls WHERE session_id = 1 AND nested = -1"),
        one(&nccl, "SELECT COUNT(*) FROM cuda_calls WHERE nested = -1")
    );
    // Tables the old file lacks hold nothing of it.
    for table in ["nccl_calls", "stack_samples", "gpu_status", "cuda_activity"] {
        assert_eq!(
            count(&format!("{table} WHERE session_id = 2")),
            0,
            "{table}"
        );
    }
}

#[test]
fn a_merged_file_merges_again() {
    let dir = tempfile::tempdir().expect("tmp");
    let first = dir.path().join("first.db");
    let mut second_input = input(LOADER, "b");
    second_input.clock_offset_ns = 1_000;
    merge_into(&first, &[input(NCCL, "a"), second_input]).expect("first merge");
    let again = dir.path().join("again.db");
    let mut copy = MergeInput::new(&first, "ignored");
    copy.clock_offset_ns = 10;
    merge_into(&again, &[MergeInput::new(&first, "ignored"), copy]).expect("second merge");
    let merged = output_conn(&again);
    let inner = output_conn(&first);
    let rows = |c: &Connection| {
        c.prepare(
            "SELECT session_id, path, node, clock_offset_ns, pid_offset FROM merge_sources \
             ORDER BY session_id",
        )
        .expect("prepare")
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })
        .expect("query")
        .collect::<rusqlite::Result<Vec<_>>>()
        .expect("rows")
    };
    let theirs = rows(&inner);
    assert_eq!(theirs.len(), 2);
    // The second copy's pid offset, by SQL on the first merge: the first
    // multiple of the stride that moves every pid and tid clear of the
    // first copy's. Its NCCL pids plus one stride meet the DataLoader's,
    // which the first merge moved by one stride already, so it takes two.
    let id_sql = "SELECT pid AS id FROM processes UNION SELECT pid FROM host_events \
                  UNION SELECT tid FROM host_events UNION SELECT tid FROM cuda_calls \
                  UNION SELECT tid FROM nccl_calls UNION SELECT tid FROM stack_samples";
    let meets = |k: i64| {
        one(
            &inner,
            &format!(
                "WITH ids(id) AS ({id_sql}) SELECT COUNT(*) FROM ids AS a \
                 JOIN ids AS b ON b.id = a.id + {}",
                k * PID_STRIDE
            ),
        )
    };
    assert!(meets(1) > 0);
    assert_eq!(meets(2), 0);
    let second_offset = 2 * PID_STRIDE;
    let ours = rows(&merged);
    assert_eq!(ours.len(), 4, "{ours:?}");
    for (i, row) in ours.iter().enumerate() {
        let (sid, path, node, clock, pids) = &theirs[i % 2];
        let copy = (i / 2) as i64;
        assert_eq!(row.0, sid + 2 * copy);
        assert_eq!((&row.1, &row.2), (path, node), "carried over");
        assert_eq!(row.3, clock + 10 * copy);
        assert_eq!(row.4, pids + second_offset * copy);
    }
    // Rows keep the node names the first merge gave them.
    assert_eq!(
        text(
            &merged,
            "SELECT group_concat(node, ',') FROM (SELECT DISTINCT session_id, node FROM \
             cuda_calls ORDER BY session_id)"
        ),
        "a,b,a,b"
    );
    let db = TraceDb::open(&again).expect("open");
    assert_eq!(
        one(db.conn(), "SELECT COUNT(*) FROM sessions"),
        2 * one(&inner, "SELECT COUNT(*) FROM sessions")
    );
}

#[test]
fn the_merged_file_opens_with_every_session() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("all.db");
    merge_into(&out, &[input(STORM, "a"), input(NCCL, "b")]).expect("merge");
    let db = TraceDb::open(&out).expect("open");
    let storm = input_conn(&repo(STORM));
    let nccl = input_conn(&repo(NCCL));
    assert_eq!(one(db.conn(), "SELECT COUNT(*) FROM sessions"), 2);
    let span = db.span();
    assert_eq!(
        span.start_ns,
        one(&storm, "SELECT started_ns FROM sessions")
            .min(one(&nccl, "SELECT started_ns FROM sessions"))
    );
    assert_eq!(
        span.end_ns,
        one(&storm, "SELECT stopped_ns FROM sessions")
            .max(one(&nccl, "SELECT stopped_ns FROM sessions"))
    );
    assert_eq!(db.aggregate_bucket_ns(), 1_000_000_000);
    // The sessions' own columns are the inputs'.
    assert_eq!(
        text(db.conn(), "SELECT command FROM sessions WHERE id = 2"),
        text(&nccl, "SELECT command FROM sessions")
    );
    // The schema's indexes are all there (the merge builds them at the end).
    let indexes = |c: &Connection| {
        text(
            c,
            "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master \
             WHERE type = 'index' AND sql IS NOT NULL ORDER BY name)",
        )
    };
    assert_eq!(indexes(db.conn()), indexes(&nccl));
    assert!(indexes(&nccl).contains("cuda_calls_pid_ts"));
    // No side files are left next to the output.
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut side = out.as_os_str().to_owned();
        side.push(suffix);
        assert!(!PathBuf::from(side).exists(), "{suffix}");
    }
}

#[test]
fn an_existing_output_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("taken.db");
    std::fs::write(&out, b"keep me").expect("write");
    let err = merge_into(&out, &[input(NCCL, "a")]).expect_err("refused");
    assert!(matches!(err, StoreError::MergeOutputExists(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("already exists") && msg.contains("taken.db"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&out).expect("read"), b"keep me");
    assert!(err.is_bad_input());
}

#[test]
fn different_bucket_widths_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let minute = altered_copy(
        dir.path(),
        STORM,
        "minute.db",
        "UPDATE ingero_meta SET value = '60000000000' WHERE key = 'aggregate_bucket_ns';",
    );
    let out = dir.path().join("merged.db");
    let err =
        merge_into(&out, &[input(NCCL, "a"), MergeInput::new(&minute, "b")]).expect_err("refused");
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            StoreError::MergeBucketMismatch {
                found: 60_000_000_000,
                expected: 1_000_000_000,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        msg.contains("minute.db")
            && msg.contains("nccl-ws1-h200-first.db")
            && msg.contains("bucket"),
        "{msg}"
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn an_ingero_go_file_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("merged.db");
    let go = repo(GO_FILE);
    let before = std::fs::read(&go).expect("read");
    let err =
        merge_into(&out, &[input(NCCL, "a"), MergeInput::new(&go, "b")]).expect_err("refused");
    assert!(matches!(err, StoreError::MergeForeign(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("Ingero (Go)")
            && msg.contains("ingero-rs")
            && msg.contains("sample-gpu-node-01.db"),
        "{msg}"
    );
    assert!(!out.exists(), "nothing written");
    assert_eq!(std::fs::read(&go).expect("read"), before);
}

#[test]
fn no_inputs_and_missing_inputs_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("merged.db");
    let err = merge_into(&out, &[]).expect_err("refused");
    assert!(matches!(err, StoreError::MergeNoInputs), "{err:?}");
    let missing = dir.path().join("nope.db");
    let err =
        merge_into(&out, &[input(NCCL, "a"), MergeInput::new(&missing, "b")]).expect_err("refused");
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
    assert!(!out.exists());
}

/// Ten million calls and five million host events merge in seconds (run
/// with `cargo test --release -p ingero-store --test merge -- --ignored`).
#[test]
#[ignore = "builds a 15M-row input; a timing check, run by hand"]
fn large_inputs_merge_in_seconds() {
    let dir = tempfile::tempdir().expect("tmp");
    let big = altered_copy(
        dir.path(),
        NCCL,
        "big.db",
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999999) \
         INSERT INTO cuda_calls(session_id, ts_ns, pid, tid, op_id, dur_ns, nested) \
         SELECT 1, 1796412676685261682 + i * 400, 526, 526 + i % 16, 1 + i % 20, 900, 0 FROM n; \
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4999999) \
         INSERT INTO host_events(session_id, ts_ns, pid, tid, kind, dur_ns, arg) \
         SELECT 1, 1796412676685261682 + i * 800, 526, 526 + i % 16, 1 + i % 3, 5000, i % 2 FROM n;",
    );
    let out = dir.path().join("merged.db");
    let mut second = MergeInput::new(&big, "b");
    second.clock_offset_ns = 12_345;
    let started = std::time::Instant::now();
    merge_into(&out, &[MergeInput::new(&big, "a"), second]).expect("merge");
    let took = started.elapsed();
    let merged = output_conn(&out);
    let src = input_conn(&big);
    assert_eq!(
        one(&merged, "SELECT COUNT(*) FROM cuda_calls"),
        2 * one(&src, "SELECT COUNT(*) FROM cuda_calls")
    );
    eprintln!("merged 2 x {} rows in {took:?}", 15_006_000);
    assert!(took.as_secs() < 60, "{took:?}");
}

#[test]
fn an_input_with_a_wal_and_no_writer_is_read_as_it_stands() {
    let dir = tempfile::tempdir().expect("tmp");
    // A capture stopped uncleanly: rows only in its -wal, no writer left.
    let live = altered_copy(dir.path(), NCCL, "live.db", "PRAGMA journal_mode = WAL;");
    let writer = Connection::open(&live).expect("writer");
    writer
        .execute_batch(
            "PRAGMA wal_autocheckpoint = 0; \
             INSERT INTO cuda_calls(session_id, ts_ns, pid, tid, op_id, dur_ns) \
             SELECT session_id, ts_ns + 1, pid, tid, op_id, dur_ns FROM cuda_calls LIMIT 1000;",
        )
        .expect("write to the log");
    let snap = dir.path().join("snap.db");
    let mut snap_wal = snap.as_os_str().to_owned();
    snap_wal.push("-wal");
    let mut live_wal = live.as_os_str().to_owned();
    live_wal.push("-wal");
    std::fs::copy(&live, &snap).expect("copy db");
    std::fs::copy(&live_wal, &snap_wal).expect("copy wal");
    drop(writer);
    let before = (
        std::fs::read(&snap).expect("db"),
        std::fs::read(&snap_wal).expect("wal"),
    );
    assert!(before.1.len() > 4096, "rows are in the log");

    let out = dir.path().join("merged.db");
    merge_into(&out, &[MergeInput::new(&snap, "n")]).expect("merge");
    let after = (
        std::fs::read(&snap).expect("db"),
        std::fs::read(&snap_wal).expect("wal"),
    );
    assert!(before == after, "the input and its log are untouched");
    let in_file = TraceDb::open(&snap).expect("open input");
    let expected = one(in_file.conn(), "SELECT COUNT(*) FROM cuda_calls");
    assert_eq!(expected, 3485 + 1000);
    assert_eq!(
        one(&output_conn(&out), "SELECT COUNT(*) FROM cuda_calls"),
        expected
    );

    // The writer's own file, closed cleanly: write-ahead-log mode at rest
    // (no -wal). It is read as it is, without SQLite's side files appearing.
    let side = |suffix: &str| {
        let mut name = live.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name).exists()
    };
    assert!(!side("-wal") && !side("-shm"));
    let at_rest = dir.path().join("at-rest.db");
    merge_into(&at_rest, &[MergeInput::new(&live, "n")]).expect("merge at rest");
    assert!(
        !side("-wal") && !side("-shm"),
        "no side files next to the input"
    );
    assert_eq!(
        one(&output_conn(&at_rest), "SELECT COUNT(*) FROM cuda_calls"),
        expected
    );
}

#[test]
fn the_launch_row_threshold_of_an_input_carries_over() {
    let dir = tempfile::tempdir().expect("tmp");
    let with = altered_copy(
        dir.path(),
        NCCL,
        "rows.db",
        "INSERT OR REPLACE INTO ingero_meta(key, value) VALUES ('launch_row_keep_ns', '50000');",
    );
    let out = dir.path().join("merged.db");
    merge_into(&out, &[input(LOADER, "a"), MergeInput::new(&with, "b")]).expect("merge");
    let merged = output_conn(&out);
    assert_eq!(
        text(
            &merged,
            "SELECT value FROM ingero_meta WHERE key = 'launch_row_keep_ns'"
        ),
        "50000"
    );
    // Inputs without it give a file without it.
    let plain = dir.path().join("plain.db");
    merge_into(&plain, &[input(LOADER, "a"), input(STORM, "b")]).expect("merge");
    assert_eq!(
        one(
            &output_conn(&plain),
            "SELECT COUNT(*) FROM ingero_meta WHERE key = 'launch_row_keep_ns'"
        ),
        0
    );
}

/// The launch-level changes of a version-9 input carry over: their session
/// mapped, their instant shifted by the input's clock offset.
#[test]
fn launch_level_changes_carry_over_with_the_clock_offset() {
    const X: i64 = 987_654_321;
    let dir = tempfile::tempdir().expect("tmp");
    let changed = altered_copy(dir.path(), NCCL, "nccl-v9.db", "");
    let mut conn = Connection::open(&changed).expect("open");
    ingero_store::schema::migrate(&mut conn).expect("migrate the copy");
    conn.execute_batch(
        "INSERT INTO launch_level_changes(session_id, ts_ns, runtime_probed, runtime_launches)
           SELECT id, started_ns + 5000000000, 0, 1234 FROM sessions;",
    )
    .expect("a change");
    let theirs = one(&conn, "SELECT ts_ns FROM launch_level_changes");
    drop(conn);
    let mut skewed = MergeInput::new(&changed, "b");
    skewed.clock_offset_ns = X;
    let mut reference = input(STORM, "a");
    reference.reference = true;
    let out = dir.path().join("merged.db");
    merge_into(&out, &[reference, skewed]).expect("merge");
    let merged = output_conn(&out);
    assert_eq!(rows_in(&merged, "launch_level_changes"), 1);
    let row: (i64, i64, i64, i64) = merged
        .query_row(
            "SELECT session_id, ts_ns, runtime_probed, runtime_launches FROM launch_level_changes",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .expect("row");
    assert_eq!(row, (2, theirs - X, 0, 1234));
}
