//! NVML sampling on the real capture path: a capture of the stand-in
//! workload with `INGERO_NVML_LIB` pointing at the stand-in
//! `libnvidia-ml.so.1`, whose answers are set by environment variables, so
//! the rows in the written file can be checked against what the "driver"
//! was told to report; and a capture where NVML fails to initialise, which
//! still succeeds with one warning and no GPU rows.

mod common;

use ingero_probes::{render, start, CaptureConfig, StopReason, Target, WarningKind};
use rusqlite::Connection;
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The stand-in reads its environment at nvmlInit: one test at a time.
static NVML_ENV: Mutex<()> = Mutex::new(());

const STANDIN_VARS: &[&str] = &[
    "STANDIN_NVML_FAIL",
    "STANDIN_NVML_DEVICES",
    "STANDIN_NVML_PERIOD_MS",
    "STANDIN_NVML_UTIL",
    "STANDIN_NVML_MEM_UTIL",
    "STANDIN_NVML_PID_UTIL",
    "STANDIN_NVML_PID_PERIOD_MS",
    "STANDIN_NVML_RING",
    "STANDIN_NVML_NOT_SUPPORTED",
];

/// Points the capture at the stand-in NVML and sets its answers (every
/// other stand-in variable unset).
fn use_standin_nvml(vars: &[(&str, String)]) {
    std::env::set_var(
        ingero_probes::nvml::NVML_LIB_ENV,
        common::standin().join("libnvidia-ml.so.1"),
    );
    for v in STANDIN_VARS {
        std::env::remove_var(v);
    }
    for (k, v) in vars {
        std::env::set_var(k, v);
    }
}

const SM_PATTERN: [i64; 10] = [5, 15, 25, 35, 45, 55, 65, 75, 85, 95];
const MEM_PATTERN: [i64; 3] = [1, 2, 3];
const PERIOD_NS: i64 = 200_000_000;

fn list(values: &[i64]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Starts the workload held on stdin and waits until it has loaded the
/// stand-in CUDA libraries.
fn held_workload(iters: u32) -> Child {
    let child = Command::new(common::standin().join("workload"))
        .args(["--stdin", "--iters", &iters.to_string()])
        .env("INGERO_STANDIN_US", "10000")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn workload");
    let maps = format!("/proc/{}/maps", child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("libcuda.so.1")) {
        assert!(
            Instant::now() < deadline,
            "the workload never loaded the stand-ins"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

fn rows(conn: &Connection, sql: &str) -> Vec<Vec<i64>> {
    let mut stmt = conn.prepare(sql).expect(sql);
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, i64>(i)).collect())
        .expect(sql)
        .collect::<Result<_, _>>()
        .expect(sql)
}

fn one(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

/// Checks one utilisation series: in the span, 200 ms apart, the pattern
/// from its start, nothing missing at either end.
fn check_series(conn: &Connection, kind: i64, pattern: &[i64], span: (i64, i64)) -> usize {
    let got = rows(
        conn,
        &format!("SELECT ts_ns, value FROM gpu_util_samples WHERE gpu = 0 AND kind = {kind} ORDER BY ts_ns"),
    );
    assert!(
        got.len() >= 8,
        "kind {kind}: {} samples: {got:?}",
        got.len()
    );
    for (i, r) in got.iter().enumerate() {
        assert!(
            r[0] > span.0 && r[0] <= span.1,
            "kind {kind} sample {i} at {} outside {span:?}",
            r[0]
        );
        assert_eq!(
            r[1],
            pattern[i % pattern.len()],
            "kind {kind} sample {i}: {got:?}"
        );
        if i > 0 {
            assert_eq!(
                r[0] - got[i - 1][0],
                PERIOD_NS,
                "kind {kind} gap before {i}"
            );
        }
    }
    // The first sample is the driver's first after the start, the last one
    // the last before the stop (drained at the stop).
    assert!(got[0][0] - span.0 < 2 * PERIOD_NS, "{got:?} {span:?}");
    assert!(
        span.1 - got[got.len() - 1][0] < PERIOD_NS,
        "{got:?} {span:?}"
    );
    got.len()
}

#[test]
fn gpu_samples_of_a_real_capture_are_what_the_driver_reported() {
    if !common::can_trace() {
        return;
    }
    let _env = NVML_ENV.lock().unwrap_or_else(|p| p.into_inner());
    let mut child = held_workload(60);
    let pid = child.id() as i32;
    use_standin_nvml(&[
        ("STANDIN_NVML_UTIL", list(&SM_PATTERN)),
        ("STANDIN_NVML_MEM_UTIL", list(&MEM_PATTERN)),
        ("STANDIN_NVML_PERIOD_MS", "200".into()),
        // pid 1 is on the GPU too, but not traced.
        ("STANDIN_NVML_PID_UTIL", format!("{pid}:40:7,1:90:9")),
        ("STANDIN_NVML_PID_PERIOD_MS", "500".into()),
        ("STANDIN_NVML_NOT_SUPPORTED", "power,pcie".into()),
    ]);
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("gpu.db");
    let mut cfg = CaptureConfig::new(Target::Pid(pid), &db);
    cfg.duration = Some(Duration::from_secs(30));
    let handle = start(cfg).expect("start");
    std::thread::sleep(Duration::from_millis(1200));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go\n")
        .expect("release the workload");
    assert!(child.wait().expect("wait workload").success());
    let summary = handle.wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
    let status = &summary.status;
    assert!(
        !status
            .warnings
            .iter()
            .any(|w| w.kind == WarningKind::NvmlUnavailable),
        "{:?}",
        status.warnings
    );

    let conn = Connection::open(&db).expect("open");
    let span = (
        one(&conn, "SELECT started_ns FROM sessions"),
        one(&conn, "SELECT stopped_ns FROM sessions"),
    );
    assert_eq!(span, (summary.started_ns, summary.stopped_ns));
    let (name, uuid, bus, total): (String, String, String, i64) = conn
        .query_row(
            "SELECT name, uuid, pci_bus_id, mem_total_bytes FROM gpu_devices WHERE gpu = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .expect("gpu_devices row");
    assert_eq!(name, "Stand-in GPU 0");
    assert_eq!(uuid, "GPU-00000000-0000-0000-0000-000000000000");
    assert_eq!(bus, "00000000:00:00.0");
    assert_eq!(total, 80 << 30);
    assert_eq!(one(&conn, "SELECT COUNT(*) FROM gpu_devices"), 1);

    let sm = check_series(&conn, 1, &SM_PATTERN, span);
    let mem = check_series(&conn, 2, &MEM_PATTERN, span);
    assert_eq!(sm, mem);

    let procs = rows(
        &conn,
        "SELECT ts_ns, pid, sm_pct, mem_pct FROM gpu_process_samples ORDER BY ts_ns",
    );
    assert!(procs.len() >= 3, "{procs:?}");
    for (i, p) in procs.iter().enumerate() {
        assert_eq!(&p[1..], &[i64::from(pid), 40, 7], "{procs:?}");
        assert!(p[0] > span.0 && p[0] <= span.1, "{procs:?} {span:?}");
        if i > 0 {
            assert_eq!(p[0] - procs[i - 1][0], 500_000_000, "{procs:?}");
        }
    }

    let polls = rows(
        &conn,
        "SELECT ts_ns, mem_used_bytes, pcie_rx_kbps, pcie_tx_kbps, sm_clock_mhz, power_mw, \
         throttle_reasons FROM gpu_status WHERE gpu = 0 ORDER BY ts_ns",
    );
    assert!(polls.len() >= 8, "{} polls", polls.len());
    for p in &polls {
        assert!(p[0] >= span.0 && p[0] <= span.1, "{p:?} {span:?}");
        assert_eq!(&p[1..], &[1 << 30, -1, -1, 1980, -1, 1], "{p:?}");
    }
    let mut gaps: Vec<i64> = polls.windows(2).map(|w| w[1][0] - w[0][0]).collect();
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    assert!(
        (150_000_000..=300_000_000).contains(&median),
        "median poll gap {median} ns"
    );

    let g = &status.gpu;
    let lib = common::standin().join("libnvidia-ml.so.1");
    assert_eq!(
        g.library.as_deref(),
        Some(lib.display().to_string().as_str())
    );
    assert_eq!(g.devices, 1);
    assert_eq!(g.util_samples, (sm + mem) as u64);
    assert_eq!(g.process_samples, procs.len() as u64);
    // pid 1's samples, one for each of the workload's.
    assert_eq!(g.process_samples_ignored, procs.len() as u64, "{g:?}");
    assert_eq!(g.status_polls, polls.len() as u64);
    assert_eq!(g.errors, 0, "{g:?}");
    for what in ["gpu 0: power", "gpu 0: pcie rx", "gpu 0: pcie tx"] {
        assert!(g.unsupported.iter().any(|u| u == what), "{g:?}");
    }
    assert!(g.nvml_calls > 0 && g.nvml_time_ns > 0, "{g:?}");
    let text = render::summary(&summary);
    let line = render::gpu_line(status).expect("gpu line");
    assert!(text.contains(&line), "{text}");
    eprintln!("{line}");
}

#[test]
fn a_capture_whose_nvml_fails_to_initialise_succeeds_with_one_warning() {
    if !common::can_trace() {
        return;
    }
    let _env = NVML_ENV.lock().unwrap_or_else(|p| p.into_inner());
    use_standin_nvml(&[("STANDIN_NVML_FAIL", "init".into())]);
    let dir = common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("nogpu.db");
    let argv = vec![
        dir.join("workload").display().to_string(),
        "--iters".into(),
        "20".into(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(Duration::from_secs(30));
    let summary = start(cfg).expect("start").wait().expect("capture");
    assert_eq!(summary.command_exit, Some(0));
    assert!(summary.status.cuda_calls > 0, "{:?}", summary.status);
    let nvml: Vec<_> = summary
        .status
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::NvmlUnavailable)
        .collect();
    assert_eq!(nvml.len(), 1, "{:?}", summary.status.warnings);
    let lib = dir.join("libnvidia-ml.so.1").display().to_string();
    assert!(
        nvml[0].message.starts_with("NVML is not available") && nvml[0].message.contains(&lib),
        "{}",
        nvml[0].message
    );
    assert_eq!(summary.status.gpu.library, None);
    let text = render::summary(&summary);
    assert_eq!(text.matches("NVML is not available").count(), 1, "{text}");
    assert!(render::gpu_line(&summary.status).is_none());
    let json = serde_json::to_value(&summary).expect("json");
    let listed = json["status"]["warnings"].as_array().expect("array");
    assert_eq!(
        listed
            .iter()
            .filter(|w| w["kind"] == "nvml_unavailable")
            .count(),
        1,
        "{json}"
    );

    let conn = Connection::open(&db).expect("open");
    for table in [
        "gpu_devices",
        "gpu_util_samples",
        "gpu_process_samples",
        "gpu_status",
    ] {
        assert_eq!(
            one(&conn, &format!("SELECT COUNT(*) FROM {table}")),
            0,
            "{table}"
        );
    }
    assert!(one(&conn, "SELECT COUNT(*) FROM cuda_calls") > 0);
}
