//! End to end on this machine, as root: `ingero trace --stack-hz` on a
//! Python stand-in with a known pure-Python hot function, then the folded
//! export and the HTML report's flame graph name it.

use std::path::Path;
use std::process::Command;

fn ingero() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
}

/// As the probes tests: root runs it, otherwise skip, or fail under
/// `INGERO_EBPF_TESTS=require`.
fn can_trace() -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    if root {
        return true;
    }
    if std::env::var("INGERO_EBPF_TESTS").as_deref() == Ok("require") {
        panic!("this test needs root and INGERO_EBPF_TESTS=require is set");
    }
    eprintln!("skipping: needs root");
    false
}

#[test]
fn folded_export_and_report_flame_graph_name_the_hot_python_function() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("stacks.db");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/standin/burn.py");
    let out = ingero()
        .args(["trace", "--quiet", "--json", "--stack-hz", "99", "--db"])
        .arg(&db)
        .args(["--", "python3"])
        .arg(&script)
        .arg("1.5")
        .output()
        .expect("run ingero trace");
    assert!(
        out.status.success(),
        "trace failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let at = if stdout.starts_with('{') {
        Some(0)
    } else {
        stdout.find("\n{").map(|i| i + 1)
    };
    let json = at.map_or("{}", |i| &stdout[i..]);
    let v: serde_json::Value = serde_json::from_str(json).expect("summary json");
    let st = &v["status"]["stacks"];
    assert_eq!(st["hz"], 99, "{json}");
    assert!(st["python"].as_u64() > Some(50), "{st}");

    let out = ingero()
        .args(["export", "--format", "folded", "--db"])
        .arg(&db)
        .output()
        .expect("run ingero export");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let (path, w) = l.rsplit_once(' ')?;
            Some((w.parse().ok()?, path))
        })
        .collect();
    lines.sort_by_key(|l| std::cmp::Reverse(l.0));
    let (_, top) = lines.first().expect("folded stacks");
    assert!(
        top.ends_with("burn.py:ingero_py_outer;burn.py:ingero_py_spin"),
        "heaviest stack {top}"
    );
    let native = ingero()
        .args(["export", "--format", "folded", "--stacks", "on_cpu", "--db"])
        .arg(&db)
        .output()
        .expect("run ingero export");
    assert!(native.status.success());
    assert!(String::from_utf8_lossy(&native.stdout).contains("python3"));
    let bad = ingero()
        .args([
            "export",
            "--format",
            "folded",
            "--category",
            "nowhere",
            "--db",
        ])
        .arg(&db)
        .output()
        .expect("run ingero export");
    assert!(!bad.status.success());

    let page = dir.path().join("report.html");
    let out = ingero()
        .args(["report", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&page)
        .output()
        .expect("run ingero report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).expect("report");
    assert!(html.contains("<section id=\"flame-graph\">"));
    assert!(html.contains("burn.py:ingero_py_spin"));
}
