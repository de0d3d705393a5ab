//! The busy model on native files whose construction fixes the answer:
//! NVML samples decide busy, the host side only bounds it, and raw-row
//! sampling changes neither the breakdown nor the gap list.

use ingero_store::catalog::cuda_op_by_name;
use ingero_store::{
    CudaCall, Event, GpuDevice, GpuProcessSample, GpuSamples, GpuUtilKind, GpuUtilSample,
    HostEvent, HostKind, ProcessInfo, RawPolicy, SessionInfo, TraceDb, TraceWriter,
};
use ingero_tools::gpu_activity::BusySource;
use ingero_tools::idle::{idle_of, ProcessIdle};
use ingero_tools::{dataset::Dataset, Scope};
use std::path::Path;

const T0: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;
const US: i64 = 1_000;
const PID: i32 = 100;

fn call(op: &str, at: i64, dur: i64, stream: i64) -> Event {
    Event::Cuda(CudaCall {
        ts_ns: T0 + at,
        pid: PID,
        tid: PID,
        op_id: cuda_op_by_name(op).map(|o| o.id).expect(op),
        dur_ns: dur,
        copy_kind: -1,
        stream,
        ..Default::default()
    })
}

fn switch(at: i64, off: i64, preempted: bool) -> Event {
    Event::Host(HostEvent {
        ts_ns: T0 + at,
        pid: PID,
        tid: PID,
        kind: HostKind::SchedSwitch,
        dur_ns: off,
        arg: preempted as i64,
        cpu: 0,
        count: 1,
        bytes: 0,
    })
}

fn write(path: &Path, policy: RawPolicy, events: &[Event], end: i64, gpu: Option<&GpuSamples>) {
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(path, &info, policy).expect("writer");
    w.upsert_process(&ProcessInfo {
        pid: PID,
        comm: "python3".into(),
        first_seen_ns: T0,
        last_seen_ns: T0 + end,
        ..Default::default()
    })
    .expect("process");
    // Batches of 4,096 events, as the live capture hands them over.
    for chunk in events.chunks(4096) {
        w.write_batch(chunk).expect("batch");
    }
    if let Some(g) = gpu {
        w.write_gpu_devices(&[GpuDevice {
            gpu: 0,
            name: "stand-in".into(),
            ..Default::default()
        }])
        .expect("devices");
        w.write_gpu_samples(g).expect("samples");
    }
    w.finish(T0 + end).expect("finish");
}

fn idle(path: &Path) -> ProcessIdle {
    let db = TraceDb::open(path).expect("open");
    let ds = Dataset::load(&db, &Scope::ALL).expect("load");
    idle_of(&ds).into_iter().next().expect("a GPU process")
}

fn sql(path: &Path, q: &str) -> i64 {
    rusqlite::Connection::open(path)
        .expect("open")
        .query_row(q, [], |r| r.get(0))
        .expect(q)
}

/// Device samples every 200 ms from `from` to `to` at `pct`.
fn device_samples(from: i64, to: i64, pct: i64) -> Vec<GpuUtilSample> {
    (1..)
        .map(|i| from + i * 200 * MS)
        .take_while(|t| *t <= to)
        .map(|t| GpuUtilSample {
            ts_ns: T0 + t,
            gpu: 0,
            kind: GpuUtilKind::Sm,
            value: pct,
        })
        .collect()
}

/// A training-like loop for 12 s: every 3 ms a launch (10 us) and a sync
/// that waits 1 ms, the thread blocked 1 ms after every fourth step, and a
/// 700 ms pause with no CUDA call every 4 s.
fn loop_events() -> Vec<Event> {
    let mut ev = Vec::new();
    let mut t = 100 * MS;
    let mut step = 0;
    while t < 12_000 * MS {
        if step > 0 && step % 1333 == 0 {
            ev.push(switch(t + 10 * US, 700 * MS, false));
            t += 700 * MS + 20 * US;
        }
        ev.push(call("cudaLaunchKernel", t, 10 * US, 7));
        ev.push(call("cudaStreamSynchronize", t + 20 * US, MS, 7));
        if step % 4 == 0 {
            ev.push(switch(t + 1100 * US, MS, false));
        }
        t += 3 * MS;
        step += 1;
    }
    ev
}

#[test]
fn sampling_raw_rows_changes_neither_breakdown_nor_gaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (all, sampled) = (dir.path().join("all.db"), dir.path().join("s50.db"));
    let ev = loop_events();
    write(&all, RawPolicy::All, &ev, 12_300 * MS, None);
    let policy = RawPolicy::Sampled {
        per_second: 50,
        always_keep_ns: MS * 10,
    };
    write(&sampled, policy, &ev, 12_300 * MS, None);
    // The sampled file really dropped CUDA rows.
    let kept = sql(&sampled, "SELECT COUNT(*) FROM cuda_calls");
    let counted = sql(
        &sampled,
        "SELECT SUM(count) FROM aggregates WHERE source = 1",
    );
    assert!(kept * 4 < counted, "kept {kept} of {counted}");

    let (a, s) = (idle(&all), idle(&sampled));
    assert_eq!(a.busy_source, BusySource::HostBound);
    assert!(a.busy_is_upper_bound);
    // Built with two pauses of 700 ms (after steps 1333 and 2666): the
    // exact gap list, from the recorded spans, whatever the sampling.
    assert_eq!(a.host_gaps, 2);
    assert_eq!(a.long_gaps, s.long_gaps);
    assert_eq!(a.longest_gaps, s.longest_gaps);
    // From the end of the sync before a pause (1.02 ms into its 3 ms step)
    // to the launch after it (3 ms + 700.02 ms later).
    assert_eq!(a.longest_gaps[0].dur_ns, 702 * MS);
    let within = |x: i64, y: i64| (x - y).abs() as f64 <= 0.02 * x.max(y).max(1) as f64;
    for ((label, x), (_, y)) in a.causes.labelled().iter().zip(s.causes.labelled()) {
        assert!(within(*x, y), "{label}: {x} vs {y}");
    }
    assert_eq!(a.busy_ns, s.busy_ns);
    // Every block (the pauses, and 1 ms after every fourth sync) lies
    // between a sync's end and the next launch: all of it is blocked idle.
    let blocked: i64 = ev
        .iter()
        .filter_map(|e| match e {
            Event::Host(h) => Some(h.dur_ns),
            _ => None,
        })
        .sum();
    assert_eq!(a.causes.off_cpu_blocked_ns, blocked, "{:?}", a.causes);
    assert_eq!(a.launches.launches, s.launches.launches);
}

#[test]
fn nvml_samples_decide_busy_and_the_launch_calls_take_the_idle_time() {
    // A launch-bound loop: the thread is inside cudaLaunchKernel 8 us of
    // every 10 us for 2 s, while the device reports 10% busy.
    let mut ev = Vec::new();
    let mut t = 0;
    while t < 2_000 * MS {
        ev.push(call("cudaLaunchKernel", t, 8 * US, 0));
        t += 10 * US;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("launch.db");
    let gpu = GpuSamples {
        util: device_samples(0, 2_000 * MS, 10),
        ..Default::default()
    };
    write(&path, RawPolicy::All, &ev, 2_000 * MS, Some(&gpu));
    let p = idle(&path);
    assert_eq!(p.busy_source, BusySource::NvmlDevice);
    assert!(!p.busy_is_upper_bound);
    let span = p.span_ns as f64;
    // Samples cover the whole 2 s at 10%: idle 90%.
    assert!((p.idle_share - 0.9).abs() < 0.005, "{}", p.idle_share);
    // The host bound says the opposite (the thread never left CUDA).
    assert!(p.host_bound_busy_ns as f64 > 0.99 * span);
    // 80% of the thread's time inside launches, 20% between calls, shared
    // in proportion: 0.8 x idle in launch calls.
    let idle_ns = p.host_wait_ns as f64;
    let launch = p.causes.in_launch_calls_ns as f64;
    assert!((launch / idle_ns - 0.8).abs() < 0.01, "{:?}", p.causes);
    assert_eq!(p.causes.sum(), p.host_wait_ns);

    // Per-process samples of this pid win over the device figure.
    let path2 = dir.path().join("launch-proc.db");
    let mut gpu2 = gpu.clone();
    gpu2.process = gpu
        .util
        .iter()
        .map(|s| GpuProcessSample {
            ts_ns: s.ts_ns - MS,
            gpu: 0,
            pid: PID,
            sm_pct: 4,
            mem_pct: 0,
        })
        .collect();
    write(&path2, RawPolicy::All, &ev, 2_000 * MS, Some(&gpu2));
    let p2 = idle(&path2);
    assert_eq!(p2.busy_source, BusySource::NvmlProcess);
    assert!((p2.idle_share - 0.96).abs() < 0.005, "{}", p2.idle_share);
}

#[test]
fn allocation_calls_are_host_time_and_shares_stay_within_their_whole() {
    // A free/malloc loop: cudaFree 400 us, cudaMalloc 400 us, a 10 us launch,
    // 200 us between, for 1 s; the device says 0% busy throughout.
    let mut ev = Vec::new();
    let mut t = 0;
    while t < 1_000 * MS {
        ev.push(call("cudaFree", t, 400 * US, 0));
        ev.push(call("cudaMalloc", t + 400 * US, 400 * US, 0));
        ev.push(call("cudaLaunchKernel", t + 800 * US, 10 * US, 0));
        t += MS;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("alloc.db");
    let gpu = GpuSamples {
        util: device_samples(0, 1_000 * MS, 0),
        ..Default::default()
    };
    write(&path, RawPolicy::All, &ev, 1_000 * MS, Some(&gpu));
    let p = idle(&path);
    assert!(p.idle_share > 0.99, "{}", p.idle_share);
    let share = p.causes.in_alloc_free_ns as f64 / p.host_wait_ns as f64;
    assert!((share - 0.8).abs() < 0.02, "{:?}", p.causes);
    assert!(p.idle_share <= 1.0 && p.active_idle_share <= 1.0);
    // One 1 s gap of 0% samples.
    assert_eq!(p.long_gaps, 1);
}
