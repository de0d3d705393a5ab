//! Shared fixtures: the recorded PyTorch DataLoader starvation trace.

#![allow(dead_code)]

use ingero_store::TraceDb;
use ingero_tools::chains::{chains_of, ChainReport};
use ingero_tools::dataset::Dataset;
use ingero_tools::Scope;
use std::path::{Path, PathBuf};

/// Path of the bundled real trace.
pub fn seed_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
}

/// Path of the bundled multi-session cluster trace.
pub fn cluster_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/sample-cluster.db")
}

/// The seed trace opened read-only.
pub fn seed_db() -> TraceDb {
    TraceDb::open(&seed_path()).expect("open the seed trace")
}

/// The whole seed trace loaded, with its chains.
pub fn seed_dataset() -> (Dataset, ChainReport) {
    let db = seed_db();
    let ds = Dataset::load(&db, &Scope::ALL).expect("load the seed trace");
    let chains = chains_of(&ds);
    (ds, chains)
}
pub mod receiver;

/// Capture start of [`gpu_db`], a whole second.
pub const GPU_T0: i64 = 1_700_000_000_000_000_000;
/// The GPU-driving process of [`gpu_db`].
pub const GPU_PID: i32 = 100;
/// Device SM % of [`gpu_db`]'s samples.
pub const DEVICE_SM: i64 = 40;
/// Per-process SM % of [`gpu_db`]'s samples.
pub const PROCESS_SM: i64 = 34;
/// Device samples of [`gpu_db`]: every 200 ms for 6 s.
pub const DEVICE_SAMPLES: i64 = 30;
/// Status polls of [`gpu_db`]: every 500 ms for 6 s.
pub const STATUS_POLLS: i64 = 12;

/// A native 6 s capture of one process (pid 100) that launches a kernel and
/// synchronises every 100 ms, with NVML samples when `nvml` is set: device
/// SM at 40% and memory-controller at 20% every 200 ms, the process at 34%
/// in each of those periods, and a status poll every 500 ms (memory used
/// growing by 1 GiB per poll, 350 W, 1,980 MHz, PCIe rx 2,000 KB/s, tx not
/// available).
pub fn gpu_db(dir: &Path, nvml: bool) -> PathBuf {
    use ingero_store::catalog::cuda_op_by_name;
    use ingero_store::{
        CudaCall, Event, GpuDevice, GpuProcessSample, GpuSamples, GpuStatus, GpuUtilKind,
        GpuUtilSample, ProcessInfo, RawPolicy, SessionInfo, TraceWriter,
    };
    const MS: i64 = 1_000_000;
    let path = dir.join(if nvml { "gpu.db" } else { "plain.db" });
    let info = SessionInfo {
        started_ns: GPU_T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("writer");
    w.upsert_process(&ProcessInfo {
        pid: GPU_PID,
        ppid: 1,
        comm: "python3".into(),
        first_seen_ns: GPU_T0,
        last_seen_ns: GPU_T0 + 6_000 * MS,
        ..Default::default()
    })
    .expect("process");
    let op = |name: &str| cuda_op_by_name(name).map(|o| o.id).expect("op");
    let events: Vec<Event> = (0..60)
        .flat_map(|i| {
            let t = GPU_T0 + i * 100 * MS;
            [
                Event::Cuda(CudaCall {
                    ts_ns: t,
                    pid: GPU_PID,
                    tid: GPU_PID,
                    op_id: op("cudaLaunchKernel"),
                    dur_ns: 10_000,
                    copy_kind: -1,
                    ..Default::default()
                }),
                Event::Cuda(CudaCall {
                    ts_ns: t + 20_000,
                    pid: GPU_PID,
                    tid: GPU_PID,
                    op_id: op("cudaStreamSynchronize"),
                    dur_ns: MS,
                    copy_kind: -1,
                    ..Default::default()
                }),
            ]
        })
        .collect();
    w.write_batch(&events).expect("batch");
    if nvml {
        w.write_gpu_devices(&[GpuDevice {
            gpu: 0,
            name: "stand-in H200".into(),
            mem_total_bytes: 141 << 30,
            ..Default::default()
        }])
        .expect("devices");
        let mut g = GpuSamples::default();
        for i in 1..=DEVICE_SAMPLES {
            let ts = GPU_T0 + i * 200 * MS;
            for (kind, value) in [(GpuUtilKind::Sm, DEVICE_SM), (GpuUtilKind::Memory, 20)] {
                g.util.push(GpuUtilSample {
                    ts_ns: ts,
                    gpu: 0,
                    kind,
                    value,
                });
            }
            g.process.push(GpuProcessSample {
                ts_ns: ts,
                gpu: 0,
                pid: GPU_PID,
                sm_pct: PROCESS_SM,
                mem_pct: 10,
            });
        }
        for i in 1..=STATUS_POLLS {
            g.status.push(GpuStatus {
                ts_ns: GPU_T0 + i * 500 * MS,
                gpu: 0,
                mem_used_bytes: i << 30,
                pcie_rx_kbps: 2_000,
                pcie_tx_kbps: -1,
                sm_clock_mhz: 1_980,
                power_mw: 350_000,
                throttle_reasons: 0,
            });
        }
        w.write_gpu_samples(&g).expect("samples");
    }
    w.finish(GPU_T0 + 6_000 * MS).expect("finish");
    path
}
