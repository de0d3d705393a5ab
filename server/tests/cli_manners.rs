//! What a new user reads from the CLI agrees with itself: severities follow
//! the ranking, the score says what it measures, page allocations are counted
//! as allocations, a warning is printed once, and an export with nothing to
//! write says what the file holds.

mod common;

use common::explain_json;
use std::path::Path;
use std::process::{Command, Output};

fn ingero(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(args)
        .output()
        .expect("run ingero")
}

fn demo(dir: &Path, scenario: &str) -> std::path::PathBuf {
    let db = dir.join(format!("{scenario}.db"));
    let out = ingero(&["demo", scenario, "--db", db.to_str().expect("utf-8 path")]);
    assert!(out.status.success(), "demo {scenario}: {out:?}");
    db
}

fn rank(severity: &str) -> u8 {
    match severity {
        "HIGH" => 2,
        "MEDIUM" => 1,
        "LOW" => 0,
        other => panic!("unknown severity {other}"),
    }
}

#[test]
fn severity_never_rises_down_the_ranking_and_the_score_says_what_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in [
        "dataloader-starvation",
        "cpu-contention",
        "pageable-memcpy",
        "periodic-malloc-spike",
        "cold-start",
    ] {
        let db = demo(dir.path(), scenario);
        let v = explain_json(&db);
        let chains = v["chains"]["chains"].as_array().expect("chains");
        let sev: Vec<u8> = chains
            .iter()
            .map(|c| rank(c["severity"].as_str().expect("severity")))
            .collect();
        assert!(
            sev.windows(2).all(|w| w[0] >= w[1]),
            "{scenario}: severities {sev:?} rise down the ranking"
        );
        let text = ingero(&["explain", "--db", db.to_str().expect("utf-8")]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(!text.contains(", score "), "{scenario}: bare score: {text}");
        assert!(
            text.contains("evidence strength") && text.contains("of the loop's idle time"),
            "{scenario}: {text}"
        );
    }
}

#[test]
fn page_allocations_are_counted_as_allocations_not_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo(dir.path(), "dataloader-starvation");
    let v = explain_json(&db);
    let texts: Vec<String> = v["chains"]["chains"]
        .as_array()
        .expect("chains")
        .iter()
        .filter(|c| c["cause"] == "page_alloc_storm")
        .map(|c| c["root_cause"].as_str().unwrap_or_default().to_string())
        .collect();
    for t in &texts {
        assert!(t.contains("page allocations ("), "{t}");
        assert!(!t.contains(" pages ("), "{t}");
    }
}

#[test]
fn an_empty_folded_export_writes_nothing_and_says_what_the_file_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo(dir.path(), "cpu-contention");
    let conn = rusqlite::Connection::open(&db).expect("open");
    let held: i64 = conn
        .query_row("SELECT COUNT(*) FROM stack_samples", [], |r| r.get(0))
        .expect("count");
    // A thread id no sample has: nothing matches whatever the file holds.
    let out_path = dir.path().join("flame.folded");
    let out = ingero(&[
        "export",
        "--db",
        db.to_str().expect("utf-8"),
        "--format",
        "folded",
        "--tid",
        "999999999",
        "--out",
        out_path.to_str().expect("utf-8"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!out_path.exists(), "an empty file was written");
    assert!(stderr.contains("no stack samples match"), "{stderr}");
    if held == 0 {
        assert!(stderr.contains("holds no stack samples"), "{stderr}");
    } else {
        assert!(stderr.contains("the file holds"), "{stderr}");
    }
    // A file with no samples at all says how to record them.
    conn.execute("DELETE FROM stack_samples", [])
        .expect("delete");
    drop(conn);
    let out = ingero(&[
        "export",
        "--db",
        db.to_str().expect("utf-8"),
        "--format",
        "folded",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("holds no stack samples") && stderr.contains("ingero check"),
        "{stderr}"
    );
}

#[test]
fn trace_prints_the_nvml_warning_once() {
    if !common::can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.db");
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_NVML_LIB", dir.path().join("no-libnvidia-ml.so.1"))
        .args(["trace", "--db"])
        .arg(&db)
        .args(["--", "true"])
        .output()
        .expect("run ingero trace");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    assert_eq!(
        all.matches("NVML is not available").count(),
        1,
        "the NVML warning is not printed exactly once:\n{all}"
    );
    assert!(
        all.contains("raised during the capture, shown above"),
        "{all}"
    );
}

#[test]
fn counts_of_one_thread_in_two_sections_say_what_each_covers() {
    // The starvation basis counts the GPU thread's switches between its
    // first and last CUDA call, the thread line over its lifetime: each says
    // so, and both figures are readable numbers.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo(dir.path(), "dataloader-starvation");
    let out = ingero(&["explain", "--db", db.to_str().expect("utf-8")]);
    let text = String::from_utf8_lossy(&out.stdout);
    let basis = text
        .lines()
        .find(|l| l.contains("CUDA calls kept as raw rows") && l.contains("basis:"))
        .unwrap_or_else(|| panic!("no starvation basis line: {text}"));
    assert!(
        basis.contains("from its first to its last CUDA call"),
        "{basis}"
    );
    let thread = text
        .lines()
        .find(|l| l.contains("GPU thread tid"))
        .unwrap_or_else(|| panic!("no GPU thread line: {text}"));
    assert!(thread.contains("switches in its lifetime"), "{thread}");
    for line in [basis, thread] {
        assert!(
            !line
                .split_whitespace()
                .any(|w| w.len() > 4 && w.chars().all(|c| c.is_ascii_digit())),
            "a count without separators: {line}"
        );
    }
}

#[test]
fn rule_checks_read_in_words_and_units() {
    // The report lists the rule checks as they are in the JSON: a title a
    // reader knows, durations in units, counts with separators.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo(dir.path(), "dataloader-starvation");
    let v = explain_json(&db);
    let rules: Vec<&serde_json::Value> = v["chains"]["gpu_idle"]
        .as_array()
        .expect("gpu_idle")
        .iter()
        .flat_map(|p| p["rules"].as_array().into_iter().flatten())
        .collect();
    assert!(!rules.is_empty(), "no rule checks: {v}");
    for r in rules {
        let title = r["title"].as_str().expect("title");
        let detail = r["detail"].as_str().expect("detail");
        assert!(!title.contains('_') && title != "Rule check", "{title}");
        assert!(
            !detail
                .split(|c: char| !c.is_ascii_digit())
                .any(|run| run.len() > 4),
            "a count or duration without separators or units: {detail}"
        );
    }
}
