//! `ingero compare` on demo captures: the verdict names the finding a fix
//! removed, every figure checked here equals a SQL query on the two files
//! (not the tool's own output), a file compared with itself says "no
//! change", two seeds of one scenario are within noise, and a bad path
//! exits 2.

use rusqlite::{params, Connection};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ingero() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
}

/// Writes demo `scenario` with `seed` into `dir`.
fn demo(dir: &Path, scenario: &str, seed: u64) -> PathBuf {
    let path = dir.join(format!("{scenario}-{seed}.db"));
    let out = ingero()
        .args(["demo", scenario, "--seed", &seed.to_string(), "--db"])
        .arg(&path)
        .output()
        .expect("run ingero demo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

fn compare(base: &Path, new: &Path, json: bool) -> Output {
    let mut cmd = ingero();
    cmd.arg("compare").arg(base).arg(new);
    if json {
        cmd.arg("--json");
    }
    cmd.output().expect("run ingero compare")
}

fn compare_json(base: &Path, new: &Path) -> Value {
    let out = compare(base, new, true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("compare --json prints JSON")
}

/// The steady window of a file, from SQL: first CUDA call to the end of the last.
fn steady(db: &Connection) -> (i64, i64) {
    db.query_row(
        "SELECT MIN(ts_ns), MAX(ts_ns + dur_ns) FROM cuda_calls",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .expect("window")
}

fn close(a: f64, b: f64, what: &str) {
    let tol = 1e-9 * a.abs().max(b.abs()).max(1.0);
    assert!((a - b).abs() <= tol, "{what}: tool {a}, SQL {b}");
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number, got {v}"))
}

/// Nearest-rank percentile of an op's durations in the window, from SQL.
fn percentile(db: &Connection, op: &str, (lo, hi): (i64, i64), q: f64) -> Option<f64> {
    let n: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.name = ?1 AND c.ts_ns BETWEEN ?2 AND ?3",
            params![op, lo, hi],
            |r| r.get(0),
        )
        .expect("count");
    if n == 0 {
        return None;
    }
    let rank = ((q / 100.0 * n as f64).ceil() as i64).clamp(1, n);
    db.query_row(
        "SELECT c.dur_ns FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
         WHERE o.name = ?1 AND c.ts_ns BETWEEN ?2 AND ?3 ORDER BY c.dur_ns LIMIT 1 OFFSET ?4",
        params![op, lo, hi, rank - 1],
        |r| r.get::<_, i64>(0),
    )
    .ok()
    .map(|v| v as f64)
}

/// Checks one side (`base` or `new`) of the comparison against SQL on its file.
fn check_side(c: &Value, side: &str, path: &Path) {
    let db = Connection::open(path).expect("open");
    let (lo, hi) = steady(&db);
    let window_s = (hi - lo) as f64 / 1e9;
    close(num(&c[side]["window_s"]), window_s, "window_s");
    // Per op: count, total, bytes, per second, p50 and p99.
    let mut stmt = db
        .prepare(
            "SELECT o.name, COUNT(*), SUM(c.dur_ns), SUM(c.bytes) FROM cuda_calls c \
             JOIN cuda_ops o ON o.id = c.op_id WHERE c.ts_ns BETWEEN ?1 AND ?2 GROUP BY o.name",
        )
        .expect("prepare");
    let rows: Vec<(String, i64, i64, i64)> = stmt
        .query_map(params![lo, hi], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let ops = c["ops"].as_array().expect("ops");
    for op in ops {
        let name = op["op"].as_str().expect("op name");
        let sql = rows.iter().find(|r| r.0 == name);
        let (count, total, bytes) = sql.map_or((0, 0, 0), |r| (r.1, r.2, r.3));
        close(
            num(&op["count"][side]),
            count as f64,
            &format!("{name} count"),
        );
        close(
            num(&op["total_ns"][side]),
            total as f64,
            &format!("{name} total"),
        );
        close(
            num(&op["bytes"][side]),
            bytes as f64,
            &format!("{name} bytes"),
        );
        close(
            num(&op["count_per_s"][side]),
            count as f64 / window_s,
            &format!("{name} count per s"),
        );
        close(
            num(&op["total_ns_per_s"][side]),
            total as f64 / window_s,
            &format!("{name} total per s"),
        );
        for (key, q) in [("p50_ns", 50.0), ("p99_ns", 99.0)] {
            assert_eq!(
                op[key][side].as_f64(),
                percentile(&db, name, (lo, hi), q),
                "{name} {key} ({side})"
            );
        }
    }
    for r in &rows {
        assert!(
            ops.iter().any(|o| o["op"] == r.0.as_str()),
            "op {} of the file missing",
            r.0
        );
    }
    // Context switches and page allocations per process group (role and
    // command line), per second of window.
    let sched = |kind: i64, role: &str| -> f64 {
        let comm = if role == "dataloader_worker" {
            "pt_data_worker"
        } else {
            "python3"
        };
        let n: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM host_events h JOIN processes p ON p.pid = h.pid \
                 WHERE h.kind = ?1 AND h.ts_ns BETWEEN ?2 AND ?3 AND p.comm = ?4",
                params![kind, lo, hi, comm],
                |r| r.get(0),
            )
            .expect("host events");
        n as f64 / window_s
    };
    for g in c["processes"].as_array().expect("processes") {
        let role = g["role"].as_str().expect("role");
        // sched_switch is kind 1, mm_page_alloc kind 3 in the file's host_events.
        close(
            num(&g["context_switches_per_s"][side]),
            sched(1, role),
            role,
        );
        close(num(&g["page_allocs_per_s"][side]), sched(3, role), role);
    }
    // NVML busy: each 1 s sample's SM share over the part of its period inside the window.
    let busy: f64 = db
        .query_row(
            "SELECT SUM(sm_pct / 100.0 * (MIN(ts_ns, ?2) - MAX(ts_ns - 1000000000, ?1))) / (?2 - ?1) \
             FROM gpu_process_samples WHERE ts_ns > ?1 AND ts_ns - 1000000000 < ?2",
            params![lo, hi],
            |r| r.get(0),
        )
        .expect("nvml");
    let rate = |name: &str| {
        c["rates"]
            .as_array()
            .and_then(|r| r.iter().find(|x| x["name"] == name))
            .map(|x| num(&x["value"][side]))
            .unwrap_or_else(|| panic!("rate {name}"))
    };
    close(rate("nvml_busy_share"), busy, "NVML busy share");
    // Copy bytes per second of window.
    let copied: i64 = db
        .query_row(
            "SELECT COALESCE(SUM(c.bytes), 0) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.class = 'copy' AND c.ts_ns BETWEEN ?1 AND ?2",
            params![lo, hi],
            |r| r.get(0),
        )
        .expect("copies");
    close(
        rate("copy_bytes_per_s"),
        copied as f64 / window_s,
        "copy bytes per s",
    );
}

fn finding<'a>(c: &'a Value, key: &str) -> &'a Value {
    c["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|x| x["key"] == key))
        .unwrap_or_else(|| panic!("finding {key} in {}", c["findings"]))
}

#[test]
fn a_run_without_worker_contention_names_it_removed_and_figures_match_sql() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = demo(dir.path(), "dataloader-starvation", 42);
    let new = demo(dir.path(), "periodic-malloc-spike", 42);
    let c = compare_json(&base, &new);
    let v = &c["verdict"];
    assert_eq!(v["outcome"], "better", "{v}");
    assert_eq!(v["confidence"], "high", "{v}");
    assert_eq!(v["reduced"], "dataloader_worker_contention", "{v}");
    let sentence = v["sentence"].as_str().expect("sentence");
    assert!(
        sentence.contains("dataloader_worker_contention is gone"),
        "{sentence}"
    );
    assert!(sentence.contains("leads"), "{sentence}");
    let gone = finding(&c, "dataloader_worker_contention");
    assert_eq!(gone["presence"], "gone");
    assert_eq!(num(&gone["explained_ns"]["new"]), 0.0);
    assert!(num(&gone["explained_ns"]["base"]) > 0.0);
    // The workers are gone from the new run: by role and command line, not pid.
    let groups = c["processes"].as_array().expect("processes");
    let workers = groups
        .iter()
        .find(|g| g["role"] == "dataloader_worker")
        .expect("worker group");
    assert_eq!(workers["presence"], "gone");
    assert_eq!(num(&workers["processes"]["base"]), 4.0);
    let main = groups.iter().find(|g| g["role"] == "main").expect("main");
    assert_eq!(main["presence"], "both", "main matched across commands");
    check_side(&c, "base", &base);
    check_side(&c, "new", &new);
}

#[test]
fn a_capture_compared_with_itself_says_no_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = demo(dir.path(), "dataloader-starvation", 42);
    let c = compare_json(&base, &base);
    assert_eq!(c["verdict"]["outcome"], "no_change", "{}", c["verdict"]);
    let sentence = c["verdict"]["sentence"].as_str().expect("sentence");
    assert!(sentence.starts_with("No change"), "{sentence}");
    for f in c["findings"].as_array().expect("findings") {
        assert_eq!(f["presence"], "both");
        assert_eq!(num(&f["explained_ns"]["change"]), 0.0);
    }
    check_side(&c, "base", &base);
    let text = compare(&base, &base, false);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).starts_with("No change"));
}

#[test]
fn two_seeds_of_one_scenario_are_within_noise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = demo(dir.path(), "dataloader-starvation", 42);
    let new = demo(dir.path(), "dataloader-starvation", 7);
    let c = compare_json(&base, &new);
    assert_eq!(c["verdict"]["outcome"], "within_noise", "{}", c["verdict"]);
    assert_eq!(c["verdict"]["confidence"], "low");
    let band = num(&c["idle"]["noise_band"]);
    let change = num(&c["idle"]["loop_idle_share"]["change"]);
    assert!(change.abs() <= band, "{change} within {band}");
    assert_eq!(
        finding(&c, "dataloader_worker_contention")["presence"],
        "both"
    );
    check_side(&c, "base", &base);
    check_side(&c, "new", &new);
}

#[test]
fn a_bad_path_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = demo(dir.path(), "cold-start", 42);
    let missing = dir.path().join("missing.db");
    let not_db = dir.path().join("notes.db");
    std::fs::write(&not_db, "not a database").expect("write");
    for (a, b) in [(&missing, &good), (&good, &missing), (&good, &not_db)] {
        let out = compare(a, b, false);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("ingero: "));
    }
    let out = ingero().arg("compare").arg(&good).output().expect("run");
    assert_eq!(out.status.code(), Some(2), "one path only is a usage error");
}
