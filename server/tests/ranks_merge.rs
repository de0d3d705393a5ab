//! End to end on this machine, as root: two ranks of a data-parallel job
//! (the stand-in libnccl.so.2) traced by two separate captures, the second
//! with its clock shifted by a known offset, one rank slowed on purpose; then
//! `ingero merge` and `ingero explain` on the merged file. The offset must be
//! recovered within 1 ms, and the report must name the slow rank, what it was
//! doing, and the wait it imposed, equal to what SQL on the file says.

mod common;

use common::{build_standins, explain_json};
use std::path::Path;
use std::process::{Child, Command};

fn ingero() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
}

/// Rank 1's capture runs this far ahead of rank 0's (not a round number).
const SKEW_NS: i64 = 37_512_345;
const ITERS: i64 = 30;
/// Rank 1 sleeps this long before each all-reduce: off-CPU, blocked.
const SLEEP_MS: i64 = 15;

fn trace_rank(dir: &Path, standin: &Path, rank: i64, id: &str) -> Child {
    let mut cmd = ingero();
    cmd.env("RANK", rank.to_string())
        .env("WORLD_SIZE", "2")
        .env("LOCAL_RANK", rank.to_string())
        .args(["trace", "--quiet", "--db"])
        .arg(dir.join(format!("rank{rank}.db")))
        .arg("--")
        .arg(standin.join("nccl_rank"))
        .args(["--rank", &rank.to_string(), "--world", "2", "--id", id])
        .args(["--iters", &ITERS.to_string(), "--wait-ms", "600"]);
    if rank == 1 {
        cmd.env("INGERO_CLOCK_SKEW_NS", SKEW_NS.to_string())
            .args(["--sleep-ms", &SLEEP_MS.to_string()]);
    }
    cmd.spawn().expect("start ingero trace")
}

fn one(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn merged_ranks_recover_the_clock_offset_and_name_the_straggler() {
    let dir = tempfile::tempdir().expect("tempdir");
    let standin = dir.path().join("standin");
    build_standins(&standin);
    let id = format!("merge-test-{}", std::process::id());
    let mut ranks = [
        trace_rank(dir.path(), &standin, 0, &id),
        trace_rank(dir.path(), &standin, 1, &id),
    ];
    for (r, child) in ranks.iter_mut().enumerate() {
        let status = child.wait().expect("wait for ingero trace");
        assert!(status.success(), "trace of rank {r} failed (run as root)");
    }
    let merged = dir.path().join("merged.db");
    let out = ingero()
        .arg("merge")
        .arg(&merged)
        .arg(dir.path().join("rank0.db"))
        .arg(dir.path().join("rank1.db"))
        .args(["--node", "node-a", "--node", "node-b"])
        .output()
        .expect("run ingero merge");
    assert!(
        out.status.success(),
        "merge: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let conn = rusqlite::Connection::open(&merged).expect("open merged");
    // Every collective of both ranks was recorded and matched.
    assert_eq!(
        one(&conn, "SELECT COUNT(*) FROM nccl_calls WHERE op_id = 201"),
        2 * ITERS
    );
    let offset = one(
        &conn,
        "SELECT clock_offset_ns FROM merge_sources WHERE node = 'node-b'",
    );
    assert!(
        (offset - SKEW_NS).abs() < 1_000_000,
        "offset {offset} ns, injected {SKEW_NS} ns"
    );
    assert_eq!(
        one(
            &conn,
            "SELECT matched FROM merge_sources WHERE node = 'node-b'"
        ),
        ITERS
    );
    // The per-collective estimates agree (on 2 CPUs a rank often waits for
    // a core after its collective completes: the wake-up, not the return,
    // is its completion).
    let spread = one(
        &conn,
        "SELECT offset_spread_ns FROM merge_sources WHERE node = 'node-b'",
    );
    assert!((0..1_000_000).contains(&spread), "spread {spread} ns");
    // The wait rank 1 imposed, from SQL: over the collectives it reached
    // last, its arrival minus rank 0's.
    let expected_wait = one(
        &conn,
        "SELECT SUM(b.ts_ns - a.ts_ns) FROM nccl_calls a \
         JOIN nccl_calls b ON b.seq = a.seq AND b.op_id = a.op_id \
         WHERE a.rank = 0 AND b.rank = 1 AND a.op_id = 201 AND b.ts_ns > a.ts_ns",
    );
    let constructed = ITERS * SLEEP_MS * 1_000_000;
    assert!(
        expected_wait >= constructed * 9 / 10 && expected_wait <= constructed * 2,
        "SQL wait {expected_wait} ns against {constructed} ns slept"
    );
    drop(conn);

    let v = explain_json(&merged);
    let stragglers = v["ranks"]["stragglers"].as_array().expect("stragglers");
    assert_eq!(stragglers.len(), 1, "{stragglers:?}");
    let s = &stragglers[0];
    assert_eq!(s["rank"], 1);
    assert_eq!(s["node"], "node-b");
    assert_eq!(s["wait_imposed_ns"].as_i64(), Some(expected_wait));
    assert_eq!(s["waits"][0]["wait_ns"].as_i64(), Some(expected_wait));
    let top = &s["during_late"][0];
    assert_eq!(top["state"], "off-CPU: blocked (I/O, locks, sleep)", "{s}");
    assert!(top["share"].as_f64().unwrap_or(0.0) >= 0.5, "{s}");
    let summary = s["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("rank 1") && summary.contains("blocked"),
        "{summary}"
    );

    let out = ingero()
        .args(["explain", "--db"])
        .arg(&merged)
        .output()
        .expect("run ingero explain");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[STRAGGLER] rank 1 (node-b"), "{text}");
    assert!(text.contains("clock of node-b"), "{text}");
}

/// A node's ranks in one capture (no merge): three stand-in ranks started
/// by one shell, rank 2 asleep before each all-reduce.
#[test]
fn one_capture_of_three_ranks_names_the_slow_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let standin = dir.path().join("standin");
    build_standins(&standin);
    let id = format!("three-{}", std::process::id());
    let rank = |r: i64, extra: &str| {
        format!(
            "RANK={r} WORLD_SIZE=3 {} --rank {r} --world 3 --id {id} --iters {ITERS} \
             --wait-ms 600 {extra}",
            standin.join("nccl_rank").display()
        )
    };
    let script = format!(
        "{} & {} & {}; wait",
        rank(0, ""),
        rank(1, ""),
        rank(2, &format!("--sleep-ms {SLEEP_MS}"))
    );
    let db = dir.path().join("node.db");
    let status = ingero()
        .args(["trace", "--quiet", "--db"])
        .arg(&db)
        .args(["--", "sh", "-c", &script])
        .status()
        .expect("run ingero trace");
    assert!(status.success(), "trace failed (run as root)");

    let conn = rusqlite::Connection::open(&db).expect("open");
    // From SQL: rank 0's wait for rank 2 over the all-reduces rank 2
    // reached after both others.
    let expected = one(
        &conn,
        "WITH c AS (SELECT n.seq, p.rank, n.ts_ns FROM nccl_calls n JOIN processes p \
         ON p.session_id = n.session_id AND p.pid = n.pid WHERE n.op_id = 201 AND n.seq >= 0) \
         SELECT SUM(c2.ts_ns - c0.ts_ns) FROM c c0 \
         JOIN c c1 ON c1.seq = c0.seq AND c1.rank = 1 \
         JOIN c c2 ON c2.seq = c0.seq AND c2.rank = 2 \
         WHERE c0.rank = 0 AND c2.ts_ns > c0.ts_ns AND c2.ts_ns > c1.ts_ns",
    );
    drop(conn);
    let v = explain_json(&db);
    let ranks = &v["ranks"];
    assert_eq!(
        ranks["arrivals"].as_array().map(Vec::len),
        Some(3),
        "{ranks}"
    );
    let stragglers = ranks["stragglers"].as_array().expect("stragglers");
    assert_eq!(stragglers.len(), 1, "{stragglers:?}");
    let s = &stragglers[0];
    assert_eq!(s["rank"], 2);
    assert_eq!(s["ranks_seen"], 3);
    assert_eq!(
        s["during_late"][0]["state"], "off-CPU: blocked (I/O, locks, sleep)",
        "{s}"
    );
    let on_rank0 = s["waits"]
        .as_array()
        .and_then(|w| {
            w.iter()
                .find(|x| x["who"].as_str().is_some_and(|t| t.starts_with("rank 0")))
        })
        .expect("rank 0's wait");
    assert_eq!(on_rank0["wait_ns"].as_i64(), Some(expected), "{s}");
    assert!(
        expected >= ITERS * SLEEP_MS * 1_000_000 * 8 / 10,
        "{expected}"
    );
}

/// A rank whose peer never comes is still inside ncclCommInitRank when the
/// capture stops: the call is kept as open at the stop in both tables, with
/// its NCCL meaning (no unique-id key taken for bytes).
#[test]
fn a_rank_left_waiting_is_recorded_inside_its_nccl_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let standin = dir.path().join("standin");
    build_standins(&standin);
    let db = dir.path().join("alone.db");
    let status = ingero()
        .env("INGERO_STANDIN_NCCL_TIMEOUT_MS", "5000")
        .args(["trace", "--quiet", "--duration", "2s", "--db"])
        .arg(&db)
        .arg("--")
        .arg(standin.join("nccl_rank"))
        .args([
            "--rank",
            "0",
            "--world",
            "2",
            "--iters",
            "3",
            "--wait-ms",
            "400",
        ])
        .args(["--id", &format!("alone-{}", std::process::id())])
        .status()
        .expect("run ingero trace");
    assert!(status.success(), "trace failed (run as root)");
    let conn = rusqlite::Connection::open(&db).expect("open");
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM nccl_calls WHERE op_id = 210 AND ret = -2 AND dur_ns > 1000000000"
        ),
        1
    );
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM cuda_calls WHERE op_id = 210 AND ret = -2 AND bytes = 0 \
             AND grid_x = 0 AND copy_kind = -1"
        ),
        1
    );
}
