//! `ingero merge` on the committed H200 captures: node names from the
//! capture's host, the clock offsets estimated between copies of the NCCL
//! job, the skew warning, `--json`, and exit code 2 with a one-line message
//! for every input or argument it refuses. Expectations come from SQL on
//! the input files.

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NCCL: &str = "investigations/nccl-ws1-h200-first.db";
const LOADER: &str = "investigations/pytorch-dataloader-starvation-h200.db";

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn merge(args: &[&Path], extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
        .arg("merge")
        .args(args)
        .args(extra)
        .output()
        .expect("run ingero")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn read_only(path: &Path) -> Connection {
    Connection::open_with_flags(
        format!("file:{}?mode=ro&immutable=1", path.display()),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("open")
}

fn one(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn text(conn: &Connection, sql: &str) -> String {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn merge_names_nodes_after_their_hosts_and_matches_the_collectives() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("merged.db");
    let (nccl, loader) = (repo(NCCL), repo(LOADER));
    let o = merge(&[&out, &nccl, &loader, &nccl], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stdout(&o);
    assert!(said.starts_with("merged 3 inputs into "), "{said}");
    for line in [
        "  vm: session 1, reference clock",
        "  vm#2: session 2",
        "  vm#3: session 3",
    ] {
        assert!(said.contains(line), "{line:?} in {said}");
    }
    let merged = read_only(&out);
    let input = read_only(&nccl);
    // Both copies of the NCCL job share a communicator: every collective it
    // numbered (seq >= 0) is matched, and the clocks agree exactly.
    let collectives = one(&input, "SELECT COUNT(*) FROM nccl_calls WHERE seq >= 0");
    // The first recording numbered the job's 201 all-reduces, 20 ncclBcast,
    // the 20 ncclBroadcast they make inside (later builds do not number
    // those again) and 20 all-gathers.
    assert_eq!(collectives, 261);
    assert_eq!(
        one(
            &merged,
            "SELECT matched FROM merge_sources WHERE session_id = 3"
        ),
        collectives
    );
    assert_eq!(
        one(
            &merged,
            "SELECT clock_offset_ns FROM merge_sources WHERE session_id = 3"
        ),
        0
    );
    assert!(
        said.contains(&format!("{collectives} collectives matched")),
        "{said}"
    );
    assert_eq!(
        text(
            &merged,
            "SELECT group_concat(node, ',') FROM (SELECT node FROM merge_sources ORDER BY session_id)"
        ),
        "vm,vm#2,vm#3"
    );
    assert_eq!(
        one(
            &merged,
            "SELECT reference FROM merge_sources WHERE session_id = 1"
        ),
        1
    );
    // The third input is the first again: its pids move by two strides.
    assert_eq!(
        one(
            &merged,
            "SELECT MIN(pid) FROM processes WHERE session_id = 3"
        ),
        one(&input, "SELECT MIN(pid) FROM processes") + 2 * 4_194_304
    );
    let explain = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["explain", "--db"])
        .arg(&out)
        .output()
        .expect("explain");
    assert!(explain.status.success(), "{}", stderr(&explain));
}

#[test]
fn json_gives_the_summary_and_the_offsets() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("merged.db");
    let nccl = repo(NCCL);
    let o = merge(
        &[&out, &nccl, &nccl],
        &["--node", "a", "--node", "b", "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let input = read_only(&nccl);
    assert_eq!(v["inputs"][0]["node"], "a");
    assert_eq!(v["inputs"][1]["node"], "b");
    assert_eq!(v["inputs"][1]["pid_offset"], 4_194_304);
    assert_eq!(v["inputs"][1]["sessions"], serde_json::json!([2]));
    assert_eq!(
        v["inputs"][1]["tables"]["cuda_calls"],
        one(&input, "SELECT COUNT(*) FROM cuda_calls")
    );
    assert_eq!(v["offsets"][0]["reference"], true);
    assert_eq!(v["offsets"][1]["reference"], false);
    assert_eq!(v["offsets"][1]["offset_ns"], 0);
    assert_eq!(
        v["offsets"][1]["matched"],
        one(&input, "SELECT COUNT(*) FROM nccl_calls WHERE seq >= 0")
    );
}

#[test]
fn a_spread_beyond_the_threshold_is_warned_about() {
    let dir = tempfile::tempdir().expect("tmp");
    // A copy whose collectives end 0, 3, 6, 9, 12 ms late in turn: the
    // estimate is the median (6 ms) and its spread 3 ms.
    let jittered = dir.path().join("jittered.db");
    std::fs::copy(repo(NCCL), &jittered).expect("copy");
    let mut perms = std::fs::metadata(&jittered).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&jittered, perms).expect("chmod");
    let conn = Connection::open(&jittered).expect("open copy");
    conn.execute_batch("UPDATE nccl_calls SET ts_ns = ts_ns + (seq % 5) * 3000000 WHERE seq >= 0;")
        .expect("jitter");
    drop(conn);
    let nccl = repo(NCCL);
    let out = dir.path().join("warned.db");
    let o = merge(&[&out, &nccl, &jittered], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let warned = stderr(&o);
    assert!(
        warned.starts_with("ingero: warning: vm#2 (")
            && warned.contains("clock offset spread 3.")
            && warned.contains("ms exceeds --skew-threshold 1.000 ms"),
        "{warned}"
    );
    let merged = read_only(&out);
    let (offset, spread): (i64, i64) = merged
        .query_row(
            "SELECT clock_offset_ns, offset_spread_ns FROM merge_sources WHERE session_id = 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("merge_sources");
    assert!((offset - 6_000_000).abs() < 100_000, "{offset}");
    assert!((spread - 3_000_000).abs() < 100_000, "{spread}");
    // Its times were moved by the estimate.
    let copy = read_only(&jittered);
    assert_eq!(
        one(
            &merged,
            "SELECT MIN(ts_ns) FROM cuda_calls WHERE session_id = 2"
        ),
        one(&copy, "SELECT MIN(ts_ns) FROM cuda_calls") - offset
    );
    let numbered = one(
        &read_only(&nccl),
        "SELECT COUNT(*) FROM nccl_calls WHERE seq >= 0",
    );
    let line = format!(
        "offset {:.3} ± {:.3} ms, {numbered} collectives matched",
        offset as f64 / 1e6,
        spread as f64 / 1e6
    );
    assert!(stdout(&o).contains(&line), "{line:?} in {}", stdout(&o));
    let quiet = dir.path().join("quiet.db");
    let o = merge(&[&quiet, &nccl, &jittered], &["--skew-threshold", "5ms"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn refusals_exit_2_with_one_line_and_write_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let nccl = repo(NCCL);
    let go = repo("tests/data/ingero-investigations/sample-gpu-node-01.db");
    let taken = dir.path().join("taken.db");
    std::fs::write(&taken, b"x").expect("write");
    let fresh = dir.path().join("fresh.db");
    let cases: Vec<(Vec<&Path>, Vec<&str>, &str)> = vec![
        (vec![&taken, &nccl], vec![], "already exists"),
        (vec![&fresh, &nccl, &go], vec![], "Ingero (Go) database"),
        (
            vec![&fresh, &nccl],
            vec!["--node", "a", "--node", "b"],
            "2 node names for 1 inputs",
        ),
        (
            vec![&fresh, &nccl],
            vec!["--skew-threshold", "soon"],
            "bad duration",
        ),
    ];
    for (paths, extra, message) in cases {
        let o = merge(&paths, &extra);
        assert_eq!(o.status.code(), Some(2), "{message}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with("ingero: ") && err.contains(message),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!fresh.exists(), "{message}");
    }
    assert_eq!(std::fs::read(&taken).expect("read"), b"x");
}
