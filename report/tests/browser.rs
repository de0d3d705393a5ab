//! The HTML report in a real browser: headless Chromium loads the page from
//! disk (no network), the script draws every section and reports what it drew
//! in attributes on <body>, and the console stays silent. CI installs
//! Chromium (`apt-get install -y chromium`); without it these tests fail and
//! say so rather than pass unchecked.

mod common;

use ingero_report::{html, ReportData};
use ingero_store::TraceDb;
use ingero_tools::Scope;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("INGERO_CHROMIUM") {
        return PathBuf::from(p);
    }
    for c in [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ] {
        if Path::new(c).exists() {
            return PathBuf::from(c);
        }
    }
    panic!(
        "Chromium is required by the HTML report tests and was not found: install it with \
         `apt-get install -y chromium` (CI does), or set INGERO_CHROMIUM to a Chromium binary"
    );
}

/// Runs headless Chromium on `url` with `extra` flags; returns (stdout, stderr).
fn headless(url: &str, extra: &[&str], dir: &Path) -> (String, String) {
    let profile = tempfile::tempdir_in(dir).expect("profile dir");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "could not start Chromium ({e}): install it with `apt-get install -y chromium` \
                 (CI does), or set INGERO_CHROMIUM to a Chromium binary"
            )
        });
    let mut out_pipe = child.stdout.take().expect("stdout");
    let mut err_pipe = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(50) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 50 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        out_reader.join().unwrap_or_default(),
        err_reader.join().unwrap_or_default(),
    )
}

/// Attributes of the first `<body ...>` tag of a dumped DOM.
fn body_attrs(dom: &str) -> BTreeMap<String, String> {
    let start = dom.find("<body").expect("a body element in the DOM");
    let end = start + dom[start..].find('>').expect("end of the body tag");
    let tag = &dom[start + 5..end];
    let mut attrs = BTreeMap::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].trim().to_string();
        let after = &rest[eq + 2..];
        let close = after.find('"').expect("closing quote");
        attrs.insert(name, after[..close].to_string());
        rest = &after[close + 1..];
    }
    attrs
}

fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

fn write_report(dir: &Path, db: &TraceDb, scope: &Scope) -> (ReportData, PathBuf) {
    let data = ReportData::load(db, scope).expect("report data");
    let page = html::report_html(&data).expect("page");
    let path = dir.join("report.html");
    std::fs::write(&path, page).expect("write page");
    (data, path)
}

fn attr(attrs: &BTreeMap<String, String>, key: &str) -> usize {
    attrs
        .get(key)
        .unwrap_or_else(|| panic!("body has no {key}: {attrs:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{key} is not a number: {attrs:?}"))
}

#[test]
fn report_renders_every_section_without_console_errors() {
    let dir = tempfile::tempdir().expect("tmp");
    let (data, path) = write_report(dir.path(), &common::seed_db(), &Scope::ALL);
    let url = format!("file://{}", path.display());
    let (dom, stderr) = headless(&url, &["--dump-dom"], dir.path());
    let attrs = body_attrs(&dom);
    assert_eq!(
        attrs.get("data-rendered").map(String::as_str),
        Some("true"),
        "not rendered: {attrs:?}\n{stderr}"
    );
    assert!(!attrs.contains_key("data-error"), "script error: {attrs:?}");
    assert_eq!(console_lines(&stderr), Vec::<&str>::new(), "console output");

    assert!(data.span_count() > 100, "the seed has raw CUDA calls");
    assert_eq!(attr(&attrs, "data-spans"), data.span_count());
    assert_eq!(attr(&attrs, "data-offcpu"), data.off_cpu_count());
    assert!(data.off_cpu_count() > 1000, "GPU thread switches are drawn");
    assert_eq!(attr(&attrs, "data-chains"), data.chains.len());
    assert!(data.chains.len() >= 3);
    assert_eq!(attr(&attrs, "data-chain-bands"), data.chains.len());
    assert_eq!(attr(&attrs, "data-histograms"), data.histograms.len());
    assert_eq!(attr(&attrs, "data-process-rows"), data.process_table.len());
    assert!(attr(&attrs, "data-lanes") >= 6);

    for needle in [
        "id=\"timeline-svg\"",
        "Causal chains",
        "GPU idle breakdown",
        "id=\"process-table\"",
        "cudaMemcpyAsync",
        "dataloader worker",
        "chain-1",
    ] {
        assert!(dom.contains(needle), "the page lacks {needle}");
    }
}

#[test]
fn deep_link_zooms_to_a_chain() {
    let dir = tempfile::tempdir().expect("tmp");
    let (data, path) = write_report(dir.path(), &common::seed_db(), &Scope::ALL);
    let target = data
        .chains
        .iter()
        .find(|c| c.end_offset_s - c.start_offset_s < data.window.duration_s / 2.0)
        .expect("a chain shorter than the window");
    let url = format!("file://{}#chain={}", path.display(), target.id);
    let (dom, stderr) = headless(&url, &["--dump-dom"], dir.path());
    let attrs = body_attrs(&dom);
    assert_eq!(attrs.get("data-rendered").map(String::as_str), Some("true"));
    assert_eq!(console_lines(&stderr), Vec::<&str>::new());
    assert_eq!(
        attrs.get("data-selected-chain").map(String::as_str),
        Some(target.id.as_str())
    );
    let view: Vec<f64> = attrs["data-view"]
        .split(',')
        .map(|v| v.parse().expect("view bound"))
        .collect();
    assert!(view[0] <= target.start_offset_s + 1e-6 && view[1] >= target.end_offset_s - 1e-6);
    assert!(view[1] - view[0] < data.window.duration_s, "zoomed in");
    assert!(attr(&attrs, "data-spans") <= data.span_count());
}

#[test]
fn a_trace_without_chains_or_calls_still_renders() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = TraceDb::open(&common::seed_path()).expect("open");
    // systemd-journal made no CUDA calls: empty timeline lanes, no histograms.
    let scope = Scope {
        pid: Some(429),
        ..Scope::ALL
    };
    let (data, path) = write_report(dir.path(), &db, &scope);
    assert_eq!(data.span_count(), 0);
    let (dom, stderr) = headless(
        &format!("file://{}", path.display()),
        &["--dump-dom"],
        dir.path(),
    );
    let attrs = body_attrs(&dom);
    assert_eq!(
        attrs.get("data-rendered").map(String::as_str),
        Some("true"),
        "{stderr}"
    );
    assert!(!attrs.contains_key("data-error"), "{attrs:?}");
    assert_eq!(console_lines(&stderr), Vec::<&str>::new());
    assert_eq!(attr(&attrs, "data-spans"), 0);
    assert_eq!(attr(&attrs, "data-histograms"), 0);
}

#[test]
fn screenshot_of_the_report() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_, path) = write_report(dir.path(), &common::seed_db(), &Scope::ALL);
    let shot = dir.path().join("report.png");
    let url = format!("file://{}", path.display());
    let (_, stderr) = headless(
        &url,
        &[
            "--window-size=1400,1500",
            &format!("--screenshot={}", shot.display()),
        ],
        dir.path(),
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {stderr}"));
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(png.len() > 20_000, "a drawn page, not a blank one");
    // `INGERO_REPORT_SCREENSHOT=docs/report.png cargo test -p ingero-report --test browser
    // screenshot` refreshes the README picture.
    if let Some(dest) = std::env::var_os("INGERO_REPORT_SCREENSHOT") {
        std::fs::copy(&shot, &dest).expect("copy the screenshot");
    }
}

/// A native trace with many calls: tens of thousands of spans must still
/// draw (merged below a pixel) within the browser's time budget.
fn dense_native_db(dir: &Path, calls: i64) -> PathBuf {
    use ingero_store::catalog::cuda_op_by_name;
    use ingero_store::{
        CudaCall, Event, HostEvent, HostKind, ProcessInfo, RawPolicy, SessionInfo, TraceWriter,
    };
    const T0: i64 = 1_700_000_000_000_000_000;
    let path = dir.join("dense.db");
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("writer");
    w.upsert_process(&ProcessInfo {
        pid: 100,
        comm: "python3".into(),
        first_seen_ns: T0,
        last_seen_ns: T0 + calls * 100_000,
        ..Default::default()
    })
    .expect("process");
    let launch = cuda_op_by_name("cudaLaunchKernel")
        .map(|o| o.id)
        .expect("op");
    let sync = cuda_op_by_name("cudaStreamSynchronize")
        .map(|o| o.id)
        .expect("op");
    let mut batch = Vec::new();
    for i in 0..calls {
        let ts = T0 + i * 100_000;
        batch.push(Event::Cuda(CudaCall {
            ts_ns: ts,
            pid: 100,
            tid: 100 + (i % 2) as i32,
            op_id: if i % 10 == 9 { sync } else { launch },
            dur_ns: 5_000 + (i % 7) * 3_000,
            bytes: 0,
            copy_kind: -1,
            stream: 0,
            ret: 0,
            ..Default::default()
        }));
        if i % 4 == 0 {
            batch.push(Event::Host(HostEvent {
                ts_ns: ts + 40_000,
                pid: 100,
                tid: 100,
                kind: HostKind::SchedSwitch,
                dur_ns: 20_000,
                arg: (i % 8 == 0) as i64,
                cpu: 0,
                count: 1,
                bytes: 0,
            }));
        }
        if batch.len() >= 10_000 {
            w.write_batch(&batch).expect("write");
            batch.clear();
        }
    }
    w.write_batch(&batch).expect("write");
    w.finish(T0 + calls * 100_000).expect("finish");
    path
}

#[test]
fn a_dense_trace_renders_every_span() {
    let dir = tempfile::tempdir().expect("tmp");
    let db_path = dense_native_db(dir.path(), 40_000);
    let db = TraceDb::open(&db_path).expect("open dense trace");
    let (data, path) = write_report(dir.path(), &db, &Scope::ALL);
    assert_eq!(data.span_count(), 40_000);
    let (dom, stderr) = headless(
        &format!("file://{}", path.display()),
        &["--dump-dom"],
        dir.path(),
    );
    let attrs = body_attrs(&dom);
    assert_eq!(
        attrs.get("data-rendered").map(String::as_str),
        Some("true"),
        "{stderr}"
    );
    assert_eq!(console_lines(&stderr), Vec::<&str>::new());
    assert_eq!(attr(&attrs, "data-spans"), 40_000);
    assert_eq!(attr(&attrs, "data-offcpu"), data.off_cpu_count());
    let rects = dom.matches("class=\"span\"").count();
    assert!(
        rects < 5_000,
        "sub-pixel spans are merged ({rects} rectangles)"
    );
}

#[test]
fn the_gpu_chart_sits_beside_the_host_tracks_and_the_busy_source_is_stated() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = TraceDb::open(&common::gpu_db(dir.path(), true)).expect("open");
    let (data, path) = write_report(dir.path(), &db, &Scope::ALL);
    let (dom, stderr) = headless(
        &format!("file://{}", path.display()),
        &["--dump-dom"],
        dir.path(),
    );
    let attrs = body_attrs(&dom);
    assert_eq!(
        attrs.get("data-rendered").map(String::as_str),
        Some("true"),
        "{stderr}"
    );
    assert!(!attrs.contains_key("data-error"), "{attrs:?}");
    assert_eq!(console_lines(&stderr), Vec::<&str>::new());
    // Device SM, memory used, and the process's own SM lane.
    assert_eq!(attr(&attrs, "data-gpu-lanes"), 3);
    let g = &data.gpus[0];
    let periods = g.sm.len() + g.processes.iter().map(|p| p.sm.len()).sum::<usize>();
    assert_eq!(attr(&attrs, "data-gpu-periods"), periods);
    assert!(
        dom.matches("class=\"gpu-sm\"").count() >= 2,
        "SM bars drawn"
    );
    assert!(dom.contains("class=\"gpu-proc\""), "per-process line drawn");
    assert!(dom.contains("class=\"gpu-mem\""), "memory used drawn");
    for needle in [
        "GPU 0 SM % (NVML device)",
        "GPU 0 SM % (NVML, pid)",
        "GPU 0 memory used",
        "data-busy-source=\"nvml_process\"",
        "GPU busy 34.0% (2.04 s of 6.00 s), measured by NVML per-process samples of GPU 0",
    ] {
        assert!(dom.contains(needle), "the page lacks {needle}");
    }
    // The breakdown bar is busy plus every idle part: the whole lifetime.
    let idle = &data.gpu_idle[0];
    assert_eq!(idle.busy_ns + idle.causes.sum(), idle.span_ns);
    assert!(
        dom.contains(&format!("data-stack-ns=\"{}\"", idle.span_ns)),
        "the bar covers the lifetime"
    );
}

#[test]
fn without_nvml_samples_the_page_says_the_busy_figure_is_a_host_side_bound() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = TraceDb::open(&common::gpu_db(dir.path(), false)).expect("open");
    let (data, path) = write_report(dir.path(), &db, &Scope::ALL);
    let (dom, stderr) = headless(
        &format!("file://{}", path.display()),
        &["--dump-dom"],
        dir.path(),
    );
    let attrs = body_attrs(&dom);
    assert_eq!(
        attrs.get("data-rendered").map(String::as_str),
        Some("true"),
        "{stderr}"
    );
    assert_eq!(console_lines(&stderr), Vec::<&str>::new());
    assert_eq!(attr(&attrs, "data-gpu-lanes"), 0);
    assert!(dom.contains("class=\"lane-label gpu-none\""));
    let note = data.gpu_note.as_deref().expect("note");
    assert!(dom.contains(note), "the page shows: {note}");
    assert!(dom.contains("data-busy-source=\"host_bound\""));
    assert!(dom.contains("not measured: host-side bound only (no GPU samples)"));
    assert!(dom.contains("GPU idle at least"));
}

#[test]
fn a_comparison_with_a_baseline_reads_under_the_header() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = common::seed_db();
    let data = ReportData::load(&db, &Scope::ALL)
        .expect("report data")
        .with_baseline(
            &common::seed_db(),
            &db,
            ingero_tools::compare::WindowChoice::Steady,
        )
        .expect("comparison");
    let path = dir.path().join("report.html");
    std::fs::write(&path, html::report_html(&data).expect("page")).expect("write page");
    let url = format!("file://{}", path.display());
    let (dom, stderr) = headless(&url, &["--dump-dom"], dir.path());
    let attrs = body_attrs(&dom);
    assert_eq!(
        attrs.get("data-rendered").map(String::as_str),
        Some("true"),
        "not rendered: {attrs:?}\n{stderr}"
    );
    assert_eq!(console_lines(&stderr), Vec::<&str>::new(), "console output");
    // The seed compared with itself.
    assert_eq!(
        attrs.get("data-comparison").map(String::as_str),
        Some("no_change")
    );
    let h1 = dom.find("Why the GPU waited").expect("header");
    let section = dom.find("id=\"comparison\"").expect("comparison section");
    let timeline = dom.find("id=\"timeline-svg\"").expect("timeline");
    assert!(
        h1 < section && section < timeline,
        "between header and timeline"
    );
    assert!(dom.contains("No change:"));
}
