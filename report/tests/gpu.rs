//! The GPU's own samples in every output: the report data carries each NVML
//! sample period and poll that was written, the Perfetto export has a
//! counter track per figure (and none made up where the device reported
//! nothing), and the SVG chart draws the GPU lanes; a file without samples
//! says so instead.

mod common;

use common::{gpu_db, DEVICE_SAMPLES, DEVICE_SM, GPU_PID, GPU_T0, PROCESS_SM, STATUS_POLLS};
use ingero_report::perfetto::{trace_of, TraceEvent, GPU_PID_BASE};
use ingero_report::svg::report_svg;
use ingero_report::ReportData;
use ingero_store::TraceDb;
use ingero_tools::chains::chains_of;
use ingero_tools::dataset::Dataset;
use ingero_tools::gpu_activity::BusySource;
use ingero_tools::Scope;
use std::path::Path;

fn data(path: &Path) -> ReportData {
    let db = TraceDb::open(path).expect("open");
    ReportData::load(&db, &Scope::ALL).expect("report data")
}

fn trace(path: &Path) -> Vec<TraceEvent> {
    let db = TraceDb::open(path).expect("open");
    let ds = Dataset::load(&db, &Scope::ALL).expect("load");
    let chains = chains_of(&ds);
    trace_of(&ds, &chains).trace_events
}

fn counters<'a>(events: &'a [TraceEvent], name: &str, pid: i64) -> Vec<&'a TraceEvent> {
    events
        .iter()
        .filter(|e| e.ph == "C" && e.name == name && e.pid == pid)
        .collect()
}

#[test]
fn report_data_carries_every_sample_period_and_poll() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = data(&gpu_db(dir.path(), true));
    assert_eq!(d.gpu_note, None);
    assert_eq!(d.gpus.len(), 1);
    let g = &d.gpus[0];
    assert_eq!((g.gpu, g.name.as_str()), (0, "stand-in H200"));
    assert_eq!(g.mem_total_bytes, 141 << 30);
    // One period per device sample, each from the previous one (the first
    // over the median period before it, so from the capture start).
    assert_eq!(g.sm.len() as i64, DEVICE_SAMPLES);
    assert_eq!((g.sm[0].0, g.sm[0].1), (0.0, 0.2));
    assert!(g.sm.iter().all(|r| r.2 == DEVICE_SM as f64));
    assert!((g.sm[g.sm.len() - 1].1 - 6.0).abs() < 1e-9);
    assert_eq!(g.processes.len(), 1);
    let p = &g.processes[0];
    assert_eq!((p.pid, p.comm.as_str()), (GPU_PID, "python3"));
    assert_eq!(p.sm.len() as i64, DEVICE_SAMPLES);
    assert!(p.sm.iter().all(|r| r.2 == PROCESS_SM as f64));
    assert_eq!(g.mem_used.len() as i64, STATUS_POLLS);
    for (i, m) in g.mem_used.iter().enumerate() {
        assert!((m.0 - 0.5 * (i + 1) as f64).abs() < 1e-9);
        assert_eq!(m.1, ((i as i64 + 1) << 30) as f64);
    }
    let idle = &d.gpu_idle[0];
    assert_eq!(idle.busy_source, BusySource::NvmlProcess);
    assert_eq!(idle.busy_ns, 6_000_000_000 * PROCESS_SM / 100);
}

#[test]
fn without_samples_the_report_says_why_there_is_no_gpu_chart() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = data(&gpu_db(dir.path(), false));
    assert!(d.gpus.is_empty());
    let note = d.gpu_note.expect("a note");
    assert!(note.contains("No NVML GPU samples"), "{note}");
    assert!(note.contains("NVIDIA driver"), "{note}");
    assert_eq!(d.gpu_idle[0].busy_source, BusySource::HostBound);
}

#[test]
fn perfetto_has_a_counter_track_per_gpu_figure() {
    let dir = tempfile::tempdir().expect("tmp");
    let ev = trace(&gpu_db(dir.path(), true));
    let gpu = GPU_PID_BASE;
    let named = ev.iter().any(|e| {
        e.ph == "M"
            && e.name == "process_name"
            && e.pid == gpu
            && e.args["name"] == "GPU 0 stand-in H200 (NVML)"
    });
    assert!(named, "the GPU pseudo process is named");
    let sm = counters(&ev, "SM %", gpu);
    assert_eq!(sm.len() as i64, DEVICE_SAMPLES);
    assert!(sm.iter().all(|e| e.args["sm"] == DEVICE_SM as f64));
    // Each value starts where the period it describes starts.
    assert_eq!(sm[0].ts, 0.0);
    assert_eq!(sm[1].ts, 200_000.0);
    let mem = counters(&ev, "memory-controller %", gpu);
    assert_eq!(mem.len() as i64, DEVICE_SAMPLES);
    assert!(mem.iter().all(|e| e.args["mem"] == 20));
    let used = counters(&ev, "memory used MiB", gpu);
    assert_eq!(used.len() as i64, STATUS_POLLS);
    assert_eq!(used[0].args["used"], 1024.0);
    assert_eq!(used[11].args["used"], 12.0 * 1024.0);
    let power = counters(&ev, "power W", gpu);
    assert_eq!(power.len() as i64, STATUS_POLLS);
    assert!(power.iter().all(|e| e.args["power"] == 350.0));
    let clock = counters(&ev, "SM clock MHz", gpu);
    assert_eq!(clock.len() as i64, STATUS_POLLS);
    assert!(clock.iter().all(|e| e.args["clock"] == 1980));
    // tx was not available: left out, not drawn as 0.
    let pcie = counters(&ev, "PCIe MB/s", gpu);
    assert_eq!(pcie.len() as i64, STATUS_POLLS);
    assert!(pcie
        .iter()
        .all(|e| e.args["rx"] == 2.0 && e.args.get("tx").is_none()));
    let own = counters(&ev, "GPU 0 SM %", GPU_PID as i64);
    assert_eq!(own.len() as i64, DEVICE_SAMPLES);
    assert!(own.iter().all(|e| e.args["sm"] == PROCESS_SM as f64));
    for e in ev.iter().filter(|e| e.ph == "C") {
        assert!(e.ts >= 0.0, "{e:?}");
        let args = e.args.as_object().expect("counter args");
        assert!(
            !args.is_empty() && args.values().all(|v| v.is_number()),
            "{e:?}"
        );
    }
    let _ = GPU_T0;
}

#[test]
fn perfetto_without_samples_has_no_gpu_counters() {
    let dir = tempfile::tempdir().expect("tmp");
    let ev = trace(&gpu_db(dir.path(), false));
    assert!(
        ev.iter().all(|e| e.pid < GPU_PID_BASE),
        "no GPU pseudo process"
    );
    assert!(counters(&ev, "GPU 0 SM %", GPU_PID as i64).is_empty());
}

#[test]
fn the_svg_chart_draws_gpu_lanes_or_says_there_are_none() {
    let dir = tempfile::tempdir().expect("tmp");
    let with = report_svg(&data(&gpu_db(dir.path(), true)), None, 1200, 700);
    let doc = roxmltree::Document::parse(&with).expect("well-formed SVG");
    let bars = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("gpu-sm"))
        .count();
    // Device and process lanes, 30 periods of 40 px each at this width.
    assert_eq!(bars as i64, 2 * DEVICE_SAMPLES, "{with}");
    assert!(with.contains("GPU 0 SM % (NVML)"));
    assert!(with.contains("GPU 0 SM % (this pid)"));
    assert!(!with.contains("class=\"gpu-none\""));

    let without = report_svg(&data(&gpu_db(dir.path(), false)), None, 1200, 700);
    roxmltree::Document::parse(&without).expect("well-formed SVG");
    assert!(without.contains("class=\"gpu-none\""));
    assert!(without.contains("No NVML GPU samples"));
    assert!(!without.contains("class=\"gpu-sm\""));
}
