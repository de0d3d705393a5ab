//! The timeline's GPU track on native files written through the store
//! writer: per bucket the means of the NVML samples inserted there, null
//! where a bucket has none, throttle reasons by name, per-process SM % for
//! the processes in scope only, and a one-line note when the file has no
//! samples at all.

use ingero_store::catalog::cuda_op_by_name;
use ingero_store::{
    CudaCall, Event, GpuDevice, GpuProcessSample, GpuSamples, GpuStatus, GpuUtilKind,
    GpuUtilSample, ProcessInfo, RawPolicy, SessionInfo, TraceDb, TraceWriter,
};
use ingero_tools::timeline::{gpu_track_text, throttle_reason_names, timeline, Timeline};
use ingero_tools::Scope;
use std::path::Path;

/// A whole second, so buckets of 1 s start on it.
const T0: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;
const GIB: i64 = 1 << 30;

fn launch(pid: i32, at: i64) -> Event {
    Event::Cuda(CudaCall {
        ts_ns: T0 + at,
        pid,
        tid: pid,
        op_id: cuda_op_by_name("cudaLaunchKernel")
            .map(|o| o.id)
            .expect("op"),
        dur_ns: 10_000,
        copy_kind: -1,
        ..Default::default()
    })
}

fn util(at: i64, kind: GpuUtilKind, value: i64) -> GpuUtilSample {
    GpuUtilSample {
        ts_ns: T0 + at,
        gpu: 0,
        kind,
        value,
    }
}

fn proc_sample(at: i64, pid: i32, sm: i64) -> GpuProcessSample {
    GpuProcessSample {
        ts_ns: T0 + at,
        gpu: 0,
        pid,
        sm_pct: sm,
        mem_pct: 0,
    }
}

fn status(at: i64, mem: i64, rx: i64, clock: i64, power_mw: i64, reasons: i64) -> GpuStatus {
    GpuStatus {
        ts_ns: T0 + at,
        gpu: 0,
        mem_used_bytes: mem,
        pcie_rx_kbps: rx,
        pcie_tx_kbps: -1,
        sm_clock_mhz: clock,
        power_mw,
        throttle_reasons: reasons,
    }
}

/// Two processes (100 and 200, unrelated) each launching once a second for
/// 4 s, with `gpu` written when given.
fn write(path: &Path, gpu: Option<&GpuSamples>) {
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(path, &info, RawPolicy::All).expect("writer");
    for pid in [100, 200] {
        w.upsert_process(&ProcessInfo {
            pid,
            ppid: 1,
            comm: format!("job{pid}"),
            first_seen_ns: T0,
            last_seen_ns: T0 + 4 * S,
            ..Default::default()
        })
        .expect("process");
    }
    let events: Vec<Event> = (0..4)
        .flat_map(|i| [launch(100, i * S + 50 * MS), launch(200, i * S + 60 * MS)])
        .collect();
    w.write_batch(&events).expect("batch");
    if let Some(g) = gpu {
        w.write_gpu_devices(&[GpuDevice {
            gpu: 0,
            name: "stand-in H200".into(),
            mem_total_bytes: 141 * GIB,
            ..Default::default()
        }])
        .expect("devices");
        w.write_gpu_samples(g).expect("samples");
    }
    w.finish(T0 + 4 * S).expect("finish");
}

/// Samples in buckets 0 and 2 (and status in 3), none in bucket 1.
fn samples() -> GpuSamples {
    use GpuUtilKind::{Memory, Sm};
    GpuSamples {
        util: vec![
            util(200 * MS, Sm, 10),
            util(400 * MS, Sm, 20),
            util(600 * MS, Sm, 30),
            util(800 * MS, Sm, 40),
            util(2_200 * MS, Sm, 90),
            util(2_400 * MS, Sm, 70),
            util(200 * MS, Memory, 5),
            util(800 * MS, Memory, 15),
            util(2_400 * MS, Memory, 60),
        ],
        // Both processes answer at every device sample (as the driver lists
        // busy processes), idle at 2.2 s.
        process: [
            (200, 10, 5),
            (400, 50, 5),
            (600, 30, 5),
            (800, 10, 5),
            (2_200, 0, 0),
            (2_400, 80, 25),
        ]
        .iter()
        .flat_map(|&(at, a, b)| [proc_sample(at * MS, 100, a), proc_sample(at * MS, 200, b)])
        .collect(),
        status: vec![
            status(100 * MS, GIB, 1_000, 1_980, 300_000, 0x4),
            status(600 * MS, 3 * GIB, 3_000, 1_000, 500_000, 0x21),
            status(3_500 * MS, -1, -1, -1, -1, 0),
        ],
    }
}

fn load(path: &Path, scope: &Scope) -> Timeline {
    let db = TraceDb::open(path).expect("open");
    timeline(&db, scope, Some(S)).expect("timeline")
}

#[test]
fn buckets_carry_the_means_of_their_samples_and_null_without_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gpu.db");
    write(&path, Some(&samples()));
    let t = load(&path, &Scope::ALL);
    assert_eq!(t.bucket_ns, S);
    assert_eq!(t.gpus.len(), 1);
    assert_eq!(t.gpus[0].name, "stand-in H200");
    assert_eq!(t.gpus[0].mem_total_bytes, 141 * GIB);
    assert!(t.notes.iter().all(|n| !n.contains("NVML")), "{:?}", t.notes);
    for b in &t.buckets {
        assert_eq!(b.gpu.len(), 1, "every bucket has the GPU's slot");
    }
    let g0 = &t.buckets[0].gpu[0];
    assert_eq!(g0.util_samples, 4);
    assert_eq!(g0.sm_pct, Some(25.0));
    assert_eq!(g0.mem_pct, Some(10.0));
    // Process 100 in bucket 0: four 200 ms periods at 10, 50, 30 and 10%.
    let p100 = |b: &ingero_tools::timeline::GpuBucket| {
        b.processes
            .iter()
            .find(|p| p.pid == 100)
            .expect("pid 100")
            .sm_pct
    };
    assert_eq!(p100(g0), Some(25.0));
    assert_eq!(g0.status_samples, 2);
    assert_eq!(g0.mem_used_bytes, Some(2 * GIB));
    assert_eq!(g0.pcie_rx_kbps, Some(2_000.0));
    assert_eq!(g0.pcie_tx_kbps, None, "-1 is not available, not 0");
    assert_eq!(g0.sm_clock_mhz, Some(1_490.0));
    assert_eq!(g0.power_w, Some(400.0));
    assert_eq!(
        g0.throttle_reasons.as_deref(),
        Some(
            &[
                "GpuIdle".to_string(),
                "SwPowerCap".to_string(),
                "SwThermalSlowdown".to_string()
            ][..]
        )
    );

    // Bucket 1 has no sample of any kind: every figure is null.
    let g1 = &t.buckets[1].gpu[0];
    assert_eq!((g1.util_samples, g1.status_samples), (0, 0));
    assert_eq!((g1.sm_pct, g1.mem_pct), (None, None));
    assert_eq!(p100(g1), None);
    assert_eq!(g1.mem_used_bytes, None);
    assert_eq!(g1.power_w, None);
    assert_eq!(g1.throttle_reasons, None);

    let g2 = &t.buckets[2].gpu[0];
    assert_eq!(g2.sm_pct, Some(80.0));
    assert_eq!(g2.mem_pct, Some(60.0));
    // Idle from 0.8 s to 2.2 s (1.4 s at 0%), then 200 ms at 80%: weighted
    // by length, 10%.
    assert_eq!(p100(g2), Some(10.0));
    let p200 = g2.processes.iter().find(|p| p.pid == 200).expect("pid 200");
    assert_eq!(p200.sm_pct, Some(3.125));

    // Bucket 3: after the last sample period, and a status row that
    // reports no reason and nothing else.
    let g3 = &t.buckets[3].gpu[0];
    assert_eq!(p100(g3), None);
    assert_eq!(g3.status_samples, 1);
    assert_eq!(g3.throttle_reasons, Some(Vec::new()));
    assert_eq!((g3.mem_used_bytes, g3.sm_clock_mhz), (None, None));

    // Null, not 0, in the JSON too.
    let json = serde_json::to_value(&t).expect("json");
    let b1 = &json["buckets"][1]["gpu"][0];
    assert!(b1["sm_pct"].is_null() && b1["power_w"].is_null(), "{b1}");
    assert_eq!(json["buckets"][0]["gpu"][0]["sm_pct"], 25.0);

    let text = gpu_track_text(&t);
    assert!(text.contains("GPU 0 stand-in H200"), "{text}");
    assert!(
        text.contains("GpuIdle,SwPowerCap,SwThermalSlowdown"),
        "{text}"
    );
}

#[test]
fn a_pid_filter_keeps_its_own_processes_and_says_the_device_is_shared() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gpu.db");
    write(&path, Some(&samples()));
    let t = load(
        &path,
        &Scope {
            pid: Some(100),
            ..Scope::ALL
        },
    );
    for b in &t.buckets {
        let pids: Vec<i32> = b.gpu[0].processes.iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![100]);
    }
    // Device figures stay those of the whole GPU.
    assert_eq!(t.buckets[2].gpu[0].sm_pct, Some(80.0));
    assert!(
        t.notes.iter().any(|n| n.contains("whole GPU")),
        "{:?}",
        t.notes
    );
}

#[test]
fn without_samples_the_track_is_empty_and_a_note_says_what_would_give_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plain.db");
    write(&path, None);
    let t = load(&path, &Scope::ALL);
    assert!(t.gpus.is_empty());
    assert!(t.buckets.iter().all(|b| b.gpu.is_empty()));
    let notes: Vec<&String> = t.notes.iter().filter(|n| n.contains("NVML")).collect();
    assert_eq!(notes.len(), 1, "{:?}", t.notes);
    assert!(
        notes[0].contains("No NVML GPU samples in this file"),
        "{}",
        notes[0]
    );
    assert!(notes[0].contains("NVIDIA driver"), "{}", notes[0]);
    assert!(!notes[0].contains('\n'), "one line");
    assert_eq!(gpu_track_text(&t), "");
    // The host columns are unchanged: one launch per process per second.
    assert_eq!(t.buckets[0].cuda_calls, 2);
}

#[test]
fn devices_without_samples_in_the_window_give_null_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("devices.db");
    write(&path, Some(&GpuSamples::default()));
    let t = load(&path, &Scope::ALL);
    assert_eq!(t.gpus.len(), 1);
    assert!(t
        .buckets
        .iter()
        .all(|b| b.gpu[0].sm_pct.is_none() && b.gpu[0].throttle_reasons.is_none()));
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("No NVML samples in this window")),
        "{:?}",
        t.notes
    );
}

#[test]
fn throttle_bits_are_named_as_nvml_names_them() {
    assert_eq!(throttle_reason_names(0), Vec::<String>::new());
    assert_eq!(throttle_reason_names(-1), Vec::<String>::new());
    assert_eq!(
        throttle_reason_names(0x1 | 0x8 | 0x40 | 0x80 | 0x100),
        vec![
            "GpuIdle",
            "HwSlowdown",
            "HwThermalSlowdown",
            "HwPowerBrakeSlowdown",
            "DisplayClockSetting"
        ]
    );
    assert_eq!(
        throttle_reason_names(0x2 | 0x10 | 0x200),
        vec!["ApplicationsClocksSetting", "SyncBoost", "0x200"]
    );
}
