//! A crafted or broken database never panics a command: extreme process
//! lifetimes (first seen at the end of time, last seen before it began)
//! give an analysis or a clear refusal, exit 0 or 2, never 101.

use std::process::Command;

#[test]
fn extreme_process_lifetimes_do_not_panic_any_command() {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../investigations/pageable-vs-pinned-h200.db"
    );
    for (name, sql) in [
        (
            "first-seen-max",
            "UPDATE processes SET first_seen_ns = 9223372036854775807",
        ),
        (
            "last-seen-min",
            "UPDATE processes SET last_seen_ns = -9223372036854775808",
        ),
        (
            "first-after-last",
            "UPDATE processes SET first_seen_ns = last_seen_ns + 1000000000000",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join(format!("{name}.db"));
        std::fs::copy(src, &db).expect("copy");
        rusqlite::Connection::open(&db)
            .expect("open")
            .execute_batch(sql)
            .expect("craft");
        let out_html = dir.path().join("report.html");
        let out_json = dir.path().join("trace.json");
        for args in [
            vec![
                "explain".to_string(),
                "--db".into(),
                db.display().to_string(),
            ],
            vec![
                "report".to_string(),
                "--db".into(),
                db.display().to_string(),
                "--out".into(),
                out_html.display().to_string(),
            ],
            vec![
                "export".to_string(),
                "--format".into(),
                "perfetto".into(),
                "--db".into(),
                db.display().to_string(),
                "--out".into(),
                out_json.display().to_string(),
            ],
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
                .args(&args)
                .output()
                .expect("run");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0) | Some(2)),
                "{name} {}: {:?} {stderr}",
                args[0],
                out.status
            );
            assert!(!stderr.contains("panicked"), "{name} {}: {stderr}", args[0]);
            assert!(!stderr.contains("required arguments"), "{stderr}");
        }
    }
}
