//! Every scenario generates, opens as a trace database and holds what its
//! summary says; bad input is refused.

mod common;

use ingero_demo::{generate, generate_large, DemoError, DemoOptions, Scenario};
use ingero_store::TraceDb;

#[test]
fn every_scenario_opens_and_matches_its_summary() {
    for s in Scenario::ALL {
        let (path, summary) = common::db(s);
        let db = TraceDb::open(&path).expect("TraceDb::open");
        let c = db.conn();
        let count = |t: &str| -> u64 {
            c.query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| {
                r.get::<_, i64>(0)
            })
            .expect("count") as u64
        };
        assert_eq!(count("cuda_calls"), summary.cuda_calls, "{s}");
        assert_eq!(count("host_events"), summary.host_events, "{s}");
        assert_eq!(count("processes"), summary.processes, "{s}");
        assert_eq!(count("system_snapshots"), summary.snapshots, "{s}");
        assert_eq!(
            summary.snapshots as i64,
            summary.duration_ns / 1_000_000_000,
            "{s}: one snapshot a second"
        );
        let (host, gpu, tool): (String, String, String) = c
            .query_row(
                "SELECT host, gpu_model, tool_version FROM sessions",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("session");
        assert_eq!(host, "demo-host");
        assert_eq!(gpu, "Simulated GPU");
        assert!(
            tool.starts_with("ingero ") && tool.ends_with(" demo"),
            "{tool}"
        );
        let span = db.span();
        assert_eq!(span.start_ns, ingero_demo::EPOCH_NS, "{s}");
        assert!(
            summary.file_bytes < 10_000_000,
            "{s}: {} bytes",
            summary.file_bytes
        );
        assert!(
            summary.events() > 10_000,
            "{s}: {} events",
            summary.events()
        );
        // The aggregates count every raw row.
        let agg: i64 = c
            .query_row("SELECT SUM(count) FROM aggregates", [], |r| r.get(0))
            .expect("aggregates");
        assert_eq!(agg as u64, summary.events(), "{s}");
    }
}

#[test]
fn refuses_to_overwrite_without_permission() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    std::fs::write(&path, b"keep me").unwrap();
    let opts = DemoOptions {
        duration_s: Some(2),
        ..DemoOptions::default()
    };
    let err = generate(Scenario::ColdStart, &path, &opts).unwrap_err();
    assert!(matches!(err, DemoError::Exists(_)), "{err}");
    assert!(err.is_bad_input());
    assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
    let opts = DemoOptions {
        overwrite: true,
        ..opts
    };
    generate(Scenario::ColdStart, &path, &opts).expect("overwrite");
    TraceDb::open(&path).expect("valid after overwrite");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(leftovers, vec!["x.db".to_string()]);
}

#[test]
fn bad_options_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DemoOptions {
        duration_s: Some(0),
        ..DemoOptions::default()
    };
    let err = generate(Scenario::ColdStart, &dir.path().join("a.db"), &opts).unwrap_err();
    assert!(matches!(err, DemoError::BadOption(_)));
    assert!(err.is_bad_input());
    let err = generate(Scenario::ColdStart, dir.path(), &DemoOptions::default()).unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    assert!(!dir.path().join("a.db").exists());
}

#[test]
fn large_database_has_exactly_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.db");
    let s = generate_large(&path, 60_000, 3).expect("generate_large");
    assert_eq!(s.events(), 60_000);
    let db = TraceDb::open(&path).expect("open");
    let n: i64 = db
        .conn()
        .query_row(
            "SELECT (SELECT COUNT(*) FROM cuda_calls) + (SELECT COUNT(*) FROM host_events)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 60_000);
    let workers: i64 = db
        .conn()
        .query_row(
            "SELECT COUNT(*) FROM processes WHERE comm = 'pt_data_worker'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(workers > 4);
    assert!(generate_large(&path, 10, 3).unwrap_err().is_bad_input());
}
