//! Causal-chain wording on native files written through the store writer:
//! with NVML samples a chain states the measured figure and names it, and
//! without them it says the figure is a host-side bound; a chain whose
//! mechanism the samples contradict (GPU-bound while the GPU is measured
//! idle) is not reported. Expected figures come from what was inserted.

use ingero_store::catalog::cuda_op_by_name;
use ingero_store::{
    CudaCall, Event, GpuDevice, GpuProcessSample, GpuSamples, GpuUtilKind, GpuUtilSample,
    HostEvent, HostKind, ProcessInfo, RawPolicy, SessionInfo, SystemSnapshot, TraceDb, TraceWriter,
};
use ingero_tools::chains::{causal_chains, CausalChain, Cause, ChainReport};
use ingero_tools::gpu_activity::BusySource;
use ingero_tools::Scope;
use std::path::Path;

const T0: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;
const US: i64 = 1_000;
const PID: i32 = 100;
/// Capture length of every scenario.
const END: i64 = 6_000 * MS;

fn call(op: &str, at: i64, dur: i64) -> Event {
    Event::Cuda(CudaCall {
        ts_ns: T0 + at,
        pid: PID,
        tid: PID,
        op_id: cuda_op_by_name(op).map(|o| o.id).expect(op),
        dur_ns: dur,
        copy_kind: -1,
        stream: 7,
        ..Default::default()
    })
}

fn switch(pid: i32, at: i64, off: i64) -> Event {
    Event::Host(HostEvent {
        ts_ns: T0 + at,
        pid,
        tid: pid,
        kind: HostKind::SchedSwitch,
        dur_ns: off,
        arg: 1,
        cpu: 0,
        count: 1,
        bytes: 0,
    })
}

/// What a scenario writes besides its events.
#[derive(Default)]
struct Extra {
    gpu: Option<GpuSamples>,
    cpu_pct: Option<f64>,
    stress_pid: Option<i32>,
}

fn write(path: &Path, events: &[Event], extra: &Extra) {
    let info = SessionInfo {
        started_ns: T0,
        cpu_cores: 4,
        ..Default::default()
    };
    let mut w = TraceWriter::create(path, &info, RawPolicy::All).expect("writer");
    let mut procs = vec![(PID, "python3")];
    if let Some(p) = extra.stress_pid {
        procs.push((p, "stress"));
    }
    for (pid, comm) in procs {
        w.upsert_process(&ProcessInfo {
            pid,
            ppid: 1,
            comm: comm.into(),
            first_seen_ns: T0,
            last_seen_ns: T0 + END,
            ..Default::default()
        })
        .expect("process");
    }
    for chunk in events.chunks(4096) {
        w.write_batch(chunk).expect("batch");
    }
    if let Some(cpu) = extra.cpu_pct {
        for i in 1..=6 {
            w.write_snapshot(&SystemSnapshot {
                ts_ns: T0 + i * 1_000 * MS,
                cpu_pct: cpu,
                mem_used_pct: 20.0,
                mem_avail_mb: 50_000,
                swap_used_mb: 0,
                load1: 4.0,
                procs_running: 8,
            })
            .expect("snapshot");
        }
    }
    if let Some(g) = &extra.gpu {
        w.write_gpu_devices(&[GpuDevice {
            gpu: 0,
            name: "stand-in".into(),
            ..Default::default()
        }])
        .expect("devices");
        w.write_gpu_samples(g).expect("samples");
    }
    w.finish(T0 + END).expect("finish");
}

fn chains(path: &Path) -> ChainReport {
    let db = TraceDb::open(path).expect("open");
    causal_chains(&db, &Scope::ALL).expect("chains")
}

/// Device samples every 200 ms over the capture at `pct`.
fn device(pct: i64) -> Vec<GpuUtilSample> {
    (1..=END / (200 * MS))
        .map(|i| GpuUtilSample {
            ts_ns: T0 + i * 200 * MS,
            gpu: 0,
            kind: GpuUtilKind::Sm,
            value: pct,
        })
        .collect()
}

/// Per-process samples of `PID` at `pct`, one with every device sample.
fn per_process(pct: i64) -> Vec<GpuProcessSample> {
    device(0)
        .iter()
        .map(|s| GpuProcessSample {
            ts_ns: s.ts_ns,
            gpu: 0,
            pid: PID,
            sm_pct: pct,
            mem_pct: 0,
        })
        .collect()
}

/// Everything a chain says, in one string.
fn words(c: &CausalChain) -> String {
    let steps: Vec<&str> = c.steps.iter().map(|s| s.detail.as_str()).collect();
    format!("{}\n{}\n{}", c.summary, steps.join("\n"), c.root_cause)
}

fn find(r: &ChainReport, cause: Cause) -> &CausalChain {
    r.chains
        .iter()
        .find(|c| c.cause == cause)
        .unwrap_or_else(|| panic!("no {cause:?} chain: {:#?}", r.chains))
}

fn evidence(c: &CausalChain, label: &str) -> (f64, String) {
    c.evidence
        .iter()
        .find(|e| e.label == label)
        .map(|e| (e.value, e.source.clone()))
        .unwrap_or_else(|| panic!("no {label} in {:?}", c.evidence))
}

/// An input-pipeline loop: every 100 ms a 10 us launch and a sync that
/// waits 1 ms, then 99 ms on the CPU outside CUDA (no switch).
fn pipeline_events() -> Vec<Event> {
    (0..60)
        .flat_map(|i| {
            let t = i * 100 * MS;
            [
                call("cudaLaunchKernel", t, 10 * US),
                call("cudaStreamSynchronize", t + 20 * US, MS),
            ]
        })
        .collect()
}

#[test]
fn pipeline_without_samples_states_a_host_side_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pipeline.db");
    write(&path, &pipeline_events(), &Extra::default());
    let r = chains(&path);
    let idle = &r.gpu_idle[0];
    assert_eq!(idle.busy_source, BusySource::HostBound);
    // Each step's burst runs from the launch to the end of the sync that
    // waited for it (1.02 ms): 60 of them in 6 s.
    assert_eq!(idle.host_bound_busy_ns, 60 * (MS + 20 * US));
    assert_eq!(idle.span_ns, END);
    // No DataLoader workers and no stacks in this file: the on-CPU time is
    // reported with its cause not identified.
    let c = find(&r, Cause::HostCompute);
    let text = words(c);
    assert!(
        text.contains("GPU busy at most 1.0% of the 6.00 s — host-side bound, no GPU samples"),
        "{text}"
    );
    assert!(
        c.summary
            .contains("at least: host-side bound, no GPU samples"),
        "{}",
        c.summary
    );
    assert!(!text.contains("NVML"), "{text}");
    let (busy, source) = evidence(c, "gpu_busy_share");
    assert!((busy - 1.02).abs() < 1e-9, "{busy}");
    assert!(source.starts_with("host-side bound"), "{source}");
    let (idle_pct, _) = evidence(c, "gpu_idle_share");
    assert!(
        (busy + idle_pct - 100.0).abs() < 1e-9,
        "shares of one whole"
    );
}

#[test]
fn pipeline_with_per_process_samples_states_the_measured_figure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pipeline-nvml.db");
    let extra = Extra {
        gpu: Some(GpuSamples {
            util: device(40),
            process: per_process(34),
            ..Default::default()
        }),
        ..Default::default()
    };
    write(&path, &pipeline_events(), &extra);
    let r = chains(&path);
    let idle = &r.gpu_idle[0];
    assert_eq!(idle.busy_source, BusySource::NvmlProcess);
    assert_eq!(idle.sampled_ns, END, "the samples cover the lifetime");
    // No DataLoader workers and no stacks in this file: the on-CPU time is
    // reported with its cause not identified.
    let c = find(&r, Cause::HostCompute);
    let text = words(c);
    assert!(
        text.contains("NVML: SM busy 34.0% of the 6.00 s (per-process samples of pid 100)"),
        "{text}"
    );
    assert!(
        !text.contains("at most") && !text.contains("no GPU samples"),
        "{text}"
    );
    assert!(c
        .summary
        .contains("GPU idle 66.0% of 6.00 s (NVML per-process samples"));
    let (busy, source) = evidence(c, "gpu_busy_share");
    assert!((busy - 34.0).abs() < 1e-9, "{busy}");
    assert_eq!(source, "NVML per-process samples");
    let (bound, _) = evidence(c, "gpu_busy_host_bound");
    assert_eq!(bound as i64, idle.host_bound_busy_ns);
    // The idle parts still add up to the idle time.
    assert_eq!(idle.causes.sum(), idle.host_wait_ns);
}

/// A sync-bound loop: every 10 ms a 10 us launch and a 9 ms sync.
fn sync_bound_events() -> Vec<Event> {
    (0..600)
        .flat_map(|i| {
            let t = i * 10 * MS;
            [
                call("cudaLaunchKernel", t, 10 * US),
                call("cudaStreamSynchronize", t + 20 * US, 9 * MS),
            ]
        })
        .collect()
}

#[test]
fn gpu_bound_is_an_inference_without_samples_and_a_measurement_with_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("sync.db");
    write(&plain, &sync_bound_events(), &Extra::default());
    let r = chains(&plain);
    let c = find(&r, Cause::GpuBound);
    let text = words(c);
    assert!(
        text.contains("inferred from the waits; no GPU samples"),
        "{text}"
    );
    assert!(text.contains("— host-side bound, no GPU samples"), "{text}");
    assert!(!text.contains("NVML"), "{text}");

    let busy = dir.path().join("sync-busy.db");
    let extra = Extra {
        gpu: Some(GpuSamples {
            util: device(95),
            ..Default::default()
        }),
        ..Default::default()
    };
    write(&busy, &sync_bound_events(), &extra);
    let r = chains(&busy);
    let c = find(&r, Cause::GpuBound);
    let text = words(c);
    assert!(
        text.contains("NVML: SM busy 95.0% of the 6.00 s (device samples of GPU 0)"),
        "{text}"
    );
    assert!(!text.contains("no GPU samples"), "{text}");
    let (share, source) = evidence(c, "gpu_busy_share");
    assert!((share - 95.0).abs() < 1e-9);
    assert_eq!(source, "NVML device samples");
}

#[test]
fn waits_on_a_measured_idle_gpu_are_not_called_gpu_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sync-idle.db");
    let extra = Extra {
        gpu: Some(GpuSamples {
            util: device(10),
            ..Default::default()
        }),
        ..Default::default()
    };
    write(&path, &sync_bound_events(), &extra);
    let r = chains(&path);
    assert!(
        r.chains.iter().all(|c| c.cause != Cause::GpuBound),
        "{:#?}",
        r.chains
    );
    let note = r
        .notes
        .iter()
        .find(|n| n.contains("not called GPU-bound"))
        .unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(
        note.contains("NVML: SM busy 10.0% of the 6.00 s (device samples of GPU 0)"),
        "{note}"
    );
    assert!(
        note.contains("90.0%"),
        "sync share of its wall time: {note}"
    );
}

/// The GPU thread preempted 2 ms of every 10 ms while an unrelated process
/// switches 500 times a second and the CPU is saturated.
fn contention_events(stress: i32) -> Vec<Event> {
    let mut ev = Vec::new();
    for i in 0..600 {
        let t = i * 10 * MS;
        ev.push(call("cudaLaunchKernel", t, 10 * US));
        ev.push(call("cudaStreamSynchronize", t + 20 * US, 5 * MS));
        ev.push(switch(PID, t + 6 * MS, 2 * MS));
    }
    for i in 0..3_000 {
        ev.push(switch(stress, i * 2 * MS + 500 * US, MS));
    }
    ev.sort_by_key(Event::ts_ns);
    ev
}

#[test]
fn contention_names_the_measured_gpu_figure_or_the_bound() {
    let stress = 300;
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("contention.db");
    let mut extra = Extra {
        cpu_pct: Some(100.0),
        stress_pid: Some(stress),
        ..Default::default()
    };
    write(&plain, &contention_events(stress), &extra);
    let r = chains(&plain);
    let c = find(&r, Cause::CpuContention);
    assert_eq!(c.culprit_pids, vec![stress]);
    let text = words(c);
    assert!(text.contains("host-side bound, no GPU samples"), "{text}");
    assert!(text.contains("and the GPU waits for it"), "{text}");
    let (_, source) = evidence(c, "gpu_busy_share_while_saturated");
    assert!(source.starts_with("host-side bound"), "{source}");

    let measured = dir.path().join("contention-nvml.db");
    extra.gpu = Some(GpuSamples {
        util: device(90),
        ..Default::default()
    });
    write(&measured, &contention_events(stress), &extra);
    let r = chains(&measured);
    let c = find(&r, Cause::CpuContention);
    let text = words(c);
    // Saturated from the first sample's interval to the last: the whole 6 s.
    assert!(
        text.contains("NVML: SM busy 90.0% of the 6.00 s (device samples of GPU 0)"),
        "{text}"
    );
    // The samples show a busy GPU: the chain must not say it waited.
    assert!(!text.contains("the GPU waits for it"), "{text}");
    assert!(text.contains("the GPU stayed busy"), "{text}");
    assert!(!text.contains("no GPU samples"), "{text}");
    let (share, source) = evidence(c, "gpu_busy_share_while_saturated");
    assert!((share - 90.0).abs() < 1e-9, "{share}");
    assert_eq!(source, "NVML device samples");
}
