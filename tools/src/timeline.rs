//! Time-bucketed view of a trace: CUDA activity beside host pressure, and
//! beside both the GPU's own figures (NVML samples) where the capture has
//! them.
//!
//! The GPU track of a bucket is the mean of the driver samples whose time
//! stamp falls in it; a bucket without a sample says so (null), never 0.

use crate::dataset::Dataset;
use crate::error::{Result, ToolError};
use crate::format;
use crate::scope::Scope;
use crate::stats::WindowInfo;
use ingero_store::gpu::NOT_AVAILABLE;
use ingero_store::{AggSource, HostKind, OpClass, TraceDb};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One time bucket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TimelineBucket {
    /// Bucket start, epoch ns, as a decimal string (exact).
    #[serde(with = "ingero_store::epoch_ns")]
    #[schemars(with = "ingero_store::epoch_ns::EpochNsText")]
    pub start_ns: i64,
    /// Bucket start, ns after the capture began.
    pub offset_ns: i64,
    /// Bucket start in seconds after the capture began.
    pub offset_s: f64,
    /// CUDA calls.
    pub cuda_calls: i64,
    /// Time inside CUDA calls, ns.
    pub cuda_time_ns: i64,
    /// Of which in synchronisation calls, ns.
    pub sync_time_ns: i64,
    /// Of which in copies, ns.
    pub copy_time_ns: i64,
    /// Bytes copied.
    pub copy_bytes: i64,
    /// Context switches.
    pub context_switches: i64,
    /// Off-CPU time after those switches, ns.
    pub off_cpu_ns: i64,
    /// Page allocations.
    pub page_allocs: i64,
    /// Bytes covered by page allocations.
    pub page_alloc_bytes: i64,
    /// Forks.
    pub forks: i64,
    /// Mean CPU use over the bucket's samples, percent.
    pub cpu_pct: Option<f64>,
    /// Mean memory use, percent.
    pub mem_used_pct: Option<f64>,
    /// Slowest raw CUDA call in the bucket, ns.
    pub slowest_call_ns: Option<i64>,
    /// Its function.
    pub slowest_op: Option<String>,
    /// NVML figures per GPU of [`Timeline::gpus`], in the same order (empty
    /// when the capture has no GPU rows).
    pub gpu: Vec<GpuBucket>,
}

/// A GPU the timeline has NVML rows for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TimelineGpu {
    /// NVML device index.
    pub gpu: u32,
    /// Product name, empty when NVML did not say.
    pub name: String,
    /// Installed device memory, bytes (0 when unknown).
    pub mem_total_bytes: i64,
}

/// One process's share of a GPU in one bucket (NVML per-process samples).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProcessGpuBucket {
    /// Process id.
    pub pid: i32,
    /// SM utilisation of this process over its NVML sample periods that
    /// end in the bucket (weighted by their length), percent. The driver
    /// lists a process only while it uses the GPU, so sampled time in which
    /// it is missing counts as 0; null when no period ends in the bucket.
    pub sm_pct: Option<f64>,
}

/// NVML figures of one GPU in one bucket: means of the samples whose time
/// stamp falls in the bucket, null where none does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuBucket {
    /// NVML device index.
    pub gpu: u32,
    /// Device SM-utilisation samples in the bucket.
    pub util_samples: u32,
    /// Mean device SM utilisation (a kernel running), percent.
    pub sm_pct: Option<f64>,
    /// Mean device memory-controller utilisation, percent.
    pub mem_pct: Option<f64>,
    /// Per-process SM utilisation of the processes in scope with samples on
    /// this GPU.
    pub processes: Vec<ProcessGpuBucket>,
    /// Polled status samples in the bucket.
    pub status_samples: u32,
    /// Mean device memory in use, bytes.
    pub mem_used_bytes: Option<i64>,
    /// Mean PCIe receive throughput (host to device), KB/s.
    pub pcie_rx_kbps: Option<f64>,
    /// Mean PCIe transmit throughput (device to host), KB/s.
    pub pcie_tx_kbps: Option<f64>,
    /// Mean SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Mean power draw, watts.
    pub power_w: Option<f64>,
    /// Clock-event (throttle) reasons set in at least one status sample of
    /// the bucket, by NVML name (`SwPowerCap`, `HwSlowdown`, ...); empty when
    /// the samples set none, null when no sample reported them.
    pub throttle_reasons: Option<Vec<String>>,
}

/// Answer of `get_timeline`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Timeline {
    /// The window covered.
    pub window: WindowInfo,
    /// Bucket width, ns.
    pub bucket_ns: i64,
    /// Buckets in time order.
    pub buckets: Vec<TimelineBucket>,
    /// GPUs of the GPU track, in the order of every bucket's `gpu` list.
    pub gpus: Vec<TimelineGpu>,
    /// Caveats.
    pub notes: Vec<String>,
}

/// Most buckets a timeline returns.
pub const MAX_BUCKETS: i64 = 2_000;

/// Builds the timeline for `scope`; `bucket_ns` defaults to about 60 buckets.
pub fn timeline(db: &TraceDb, scope: &Scope, bucket_ns: Option<i64>) -> Result<Timeline> {
    let ds = Dataset::load(db, scope)?;
    timeline_of(&ds, bucket_ns)
}

/// Builds the timeline from a loaded dataset.
pub fn timeline_of(ds: &Dataset, bucket_ns: Option<i64>) -> Result<Timeline> {
    if let Some(b) = bucket_ns {
        if b <= 0 {
            return Err(ToolError::BadArgument(format!(
                "bucket must be positive, got {b} ns"
            )));
        }
    }
    let mut notes = Vec::new();
    let span = ds.window.duration_ns().max(1);
    let wanted = bucket_ns.unwrap_or_else(|| (span / 60).max(1));
    let mut width = round_up(wanted, ds.bucket_ns);
    if width != wanted && bucket_ns.is_some() {
        notes.push(format!(
            "host events are stored per {} s, so buckets were widened to {} s",
            ds.bucket_ns as f64 / 1e9,
            width as f64 / 1e9
        ));
    }
    if span / width >= MAX_BUCKETS {
        width = round_up(span / MAX_BUCKETS + 1, ds.bucket_ns);
        notes.push(format!(
            "bucket widened to {} s to stay under {MAX_BUCKETS} buckets",
            width as f64 / 1e9
        ));
    }
    let origin = ds.window.lo_ns.div_euclid(ds.bucket_ns) * ds.bucket_ns;
    let n = ((ds.window.hi_ns - origin) / width + 1).max(1) as usize;
    let mut buckets: Vec<TimelineBucket> = (0..n)
        .map(|i| {
            let start = origin + i as i64 * width;
            TimelineBucket {
                start_ns: start,
                offset_ns: start - ds.span.start_ns,
                offset_s: (start - ds.span.start_ns) as f64 / 1e9,
                ..Default::default()
            }
        })
        .collect();
    let index = |ts: i64| -> Option<usize> {
        let i = (ts - origin).div_euclid(width);
        (i >= 0 && (i as usize) < n).then_some(i as usize)
    };
    let in_scope = |pid: i32| {
        ds.focus
            .is_none_or(|f| pid == f || ds.descends_from(pid, f))
    };
    for a in &ds.aggs {
        if !in_scope(a.pid) {
            continue;
        }
        let Some(i) = index(a.bucket_ns) else {
            continue;
        };
        let b = &mut buckets[i];
        match a.source {
            AggSource::Cuda => {
                b.cuda_calls += a.count;
                b.cuda_time_ns += a.sum_dur_ns;
                match ds.op_class(a.code as u16) {
                    OpClass::Sync => b.sync_time_ns += a.sum_dur_ns,
                    OpClass::Copy => {
                        b.copy_time_ns += a.sum_dur_ns;
                        b.copy_bytes += a.sum_bytes;
                    }
                    _ => {}
                }
            }
            AggSource::Host => match HostKind::from_id(a.code) {
                Some(HostKind::SchedSwitch) => {
                    b.context_switches += a.count;
                    b.off_cpu_ns += a.sum_dur_ns;
                }
                Some(HostKind::PageAlloc) => {
                    b.page_allocs += a.count;
                    b.page_alloc_bytes += a.sum_bytes;
                }
                Some(HostKind::Fork) => b.forks += a.count,
                _ => {}
            },
        }
    }
    for c in &ds.calls {
        let Some(i) = index(c.ts_ns) else { continue };
        let b = &mut buckets[i];
        if b.slowest_call_ns.is_none_or(|s| c.dur_ns > s) {
            b.slowest_call_ns = Some(c.dur_ns);
            b.slowest_op = Some(ds.op_name(c.op_id).to_string());
        }
    }
    let mut cpu: Vec<(f64, f64, u32)> = vec![(0.0, 0.0, 0); n];
    for s in &ds.snapshots {
        if let Some(i) = index(s.ts_ns) {
            cpu[i].0 += s.cpu_pct;
            cpu[i].1 += s.mem_used_pct;
            cpu[i].2 += 1;
        }
    }
    for (b, (c, m, k)) in buckets.iter_mut().zip(cpu) {
        if k > 0 {
            b.cpu_pct = Some(c / k as f64);
            b.mem_used_pct = Some(m / k as f64);
        }
    }
    let gpus = gpu_track(ds, &mut buckets, &index, &in_scope);
    if let Some(n) = gpu_note(ds, &gpus) {
        notes.push(n);
    }
    Ok(Timeline {
        window: WindowInfo::of(ds),
        bucket_ns: width,
        buckets,
        gpus,
        notes,
    })
}

/// The `nvmlClocksEventReasons` bits, by NVML name.
pub const THROTTLE_REASONS: [(i64, &str); 9] = [
    (0x1, "GpuIdle"),
    (0x2, "ApplicationsClocksSetting"),
    (0x4, "SwPowerCap"),
    (0x8, "HwSlowdown"),
    (0x10, "SyncBoost"),
    (0x20, "SwThermalSlowdown"),
    (0x40, "HwThermalSlowdown"),
    (0x80, "HwPowerBrakeSlowdown"),
    (0x100, "DisplayClockSetting"),
];

/// Names of the clock-event reasons set in `mask`, lowest bit first; a bit
/// NVML did not define when this was written is named by its value
/// (`0x200`). A negative mask (not reported) has none.
pub fn throttle_reason_names(mask: i64) -> Vec<String> {
    if mask < 0 {
        return Vec::new();
    }
    (0..63)
        .map(|b| 1i64 << b)
        .filter(|bit| mask & bit != 0)
        .map(|bit| {
            THROTTLE_REASONS
                .iter()
                .find(|(v, _)| *v == bit)
                .map_or_else(|| format!("{bit:#x}"), |(_, n)| (*n).to_string())
        })
        .collect()
}

/// Running mean of the values that were reported.
#[derive(Default, Clone, Copy)]
struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    fn add(&mut self, v: f64) {
        self.sum += v;
        self.n += 1;
    }

    /// Adds a polled value unless the device could not report it.
    fn add_reported(&mut self, v: i64) {
        if v != NOT_AVAILABLE && v >= 0 {
            self.add(v as f64);
        }
    }

    fn get(self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// Running mean weighted by period length.
#[derive(Default, Clone, Copy)]
struct Weighted {
    sum: f64,
    weight: f64,
}

impl Weighted {
    fn add(&mut self, v: f64, weight: f64) {
        self.sum += v * weight;
        self.weight += weight;
    }

    fn get(self) -> Option<f64> {
        (self.weight > 0.0).then(|| self.sum / self.weight)
    }
}

/// Fills every bucket's GPU figures; returns the GPUs in bucket order.
fn gpu_track(
    ds: &Dataset,
    buckets: &mut [TimelineBucket],
    index: &dyn Fn(i64) -> Option<usize>,
    in_scope: &dyn Fn(i32) -> bool,
) -> Vec<TimelineGpu> {
    let g = &ds.gpu;
    let (lo, hi) = (ds.window.lo_ns, ds.window.hi_ns);
    let in_window = |ts: i64| ts >= lo && ts <= hi;
    let mut ids: BTreeSet<u32> = g.devices.iter().map(|d| d.gpu).collect();
    ids.extend(g.sm.keys());
    ids.extend(g.memory.keys());
    ids.extend(g.process.iter().map(|s| s.gpu));
    ids.extend(g.status.iter().map(|s| s.gpu));
    let gpus: Vec<TimelineGpu> = ids
        .iter()
        .map(|&gpu| {
            let d = g.devices.iter().find(|d| d.gpu == gpu);
            TimelineGpu {
                gpu,
                name: d.map(|d| d.name.clone()).unwrap_or_default(),
                mem_total_bytes: d.map_or(0, |d| d.mem_total_bytes),
            }
        })
        .collect();
    if gpus.is_empty() {
        return gpus;
    }
    let n = buckets.len();
    for (slot, tg) in gpus.iter().enumerate() {
        let gpu = tg.gpu;
        let mut sm = vec![Mean::default(); n];
        let mut mem = vec![Mean::default(); n];
        for (series, out) in [(g.sm.get(&gpu), &mut sm), (g.memory.get(&gpu), &mut mem)] {
            for s in series.into_iter().flatten().filter(|s| in_window(s.ts_ns)) {
                if let Some(i) = index(s.ts_ns) {
                    out[i].add(s.value as f64);
                }
            }
        }
        // Processes in scope with samples on this GPU, each on the device's
        // sample grid where there is one.
        let pids: BTreeSet<i32> = g
            .process
            .iter()
            .filter(|s| s.gpu == gpu && in_scope(s.pid))
            .map(|s| s.pid)
            .collect();
        let mut per_pid: BTreeMap<i32, Vec<Weighted>> = BTreeMap::new();
        for &pid in &pids {
            let mut m = vec![Weighted::default(); n];
            for p in g.process_periods(pid, gpu) {
                if in_window(p.end_ns) {
                    if let Some(i) = index(p.end_ns) {
                        m[i].add(p.busy * 100.0, (p.end_ns - p.start_ns) as f64);
                    }
                }
            }
            per_pid.insert(pid, m);
        }
        let mut mem_used = vec![Mean::default(); n];
        let mut rx = vec![Mean::default(); n];
        let mut tx = vec![Mean::default(); n];
        let mut clock = vec![Mean::default(); n];
        let mut power = vec![Mean::default(); n];
        let mut status_n = vec![0u32; n];
        let mut reasons: Vec<Option<i64>> = vec![None; n];
        for s in g
            .status
            .iter()
            .filter(|s| s.gpu == gpu && in_window(s.ts_ns))
        {
            let Some(i) = index(s.ts_ns) else { continue };
            status_n[i] += 1;
            mem_used[i].add_reported(s.mem_used_bytes);
            rx[i].add_reported(s.pcie_rx_kbps);
            tx[i].add_reported(s.pcie_tx_kbps);
            clock[i].add_reported(s.sm_clock_mhz);
            power[i].add_reported(s.power_mw);
            if s.throttle_reasons >= 0 {
                reasons[i] = Some(reasons[i].unwrap_or(0) | s.throttle_reasons);
            }
        }
        for (i, b) in buckets.iter_mut().enumerate() {
            debug_assert_eq!(b.gpu.len(), slot);
            b.gpu.push(GpuBucket {
                gpu,
                util_samples: sm[i].n,
                sm_pct: sm[i].get(),
                mem_pct: mem[i].get(),
                processes: per_pid
                    .iter()
                    .map(|(pid, m)| ProcessGpuBucket {
                        pid: *pid,
                        sm_pct: m[i].get(),
                    })
                    .collect(),
                status_samples: status_n[i],
                mem_used_bytes: mem_used[i].get().map(|v| v.round() as i64),
                pcie_rx_kbps: rx[i].get(),
                pcie_tx_kbps: tx[i].get(),
                sm_clock_mhz: clock[i].get(),
                power_w: power[i].get().map(|mw| mw / 1000.0),
                throttle_reasons: reasons[i].map(throttle_reason_names),
            });
        }
    }
    gpus
}

/// The one-line caveat about the GPU track, if any.
fn gpu_note(ds: &Dataset, gpus: &[TimelineGpu]) -> Option<String> {
    let g = &ds.gpu;
    let samples = g.sm.values().any(|v| !v.is_empty())
        || g.memory.values().any(|v| !v.is_empty())
        || !g.process.is_empty()
        || !g.status.is_empty();
    if g.devices.is_empty() && !samples {
        return Some(
            "No NVML GPU samples in this file, so the GPU track is empty: GPU utilisation, memory, PCIe, clocks, power and throttle reasons come from a capture on a host with the NVIDIA driver (the recorder loads libnvidia-ml.so.1)."
                .to_string(),
        );
    }
    if !samples {
        return Some(format!(
            "No NVML samples in this window (the capture saw {} GPU(s)): the GPU figures are null.",
            gpus.len()
        ));
    }
    ds.focus.map(|pid| {
        format!(
            "GPU device figures (SM %, memory, PCIe, clock, power) are of the whole GPU, whatever the pid filter; per-process SM % is given for {pid} and its descendants."
        )
    })
}

/// The GPU track as text, one line per bucket and GPU (empty without GPUs).
pub fn gpu_track_text(t: &Timeline) -> String {
    if t.gpus.is_empty() {
        return String::new();
    }
    let mut s = String::from("GPU track (NVML samples; - where a bucket has none)\n");
    for g in &t.gpus {
        let _ = writeln!(
            s,
            "  GPU {}{}",
            g.gpu,
            if g.name.is_empty() {
                String::new()
            } else {
                format!(" {}", g.name)
            }
        );
    }
    let _ = writeln!(
        s,
        "  {:>8} {:>3} {:>5} {:>5} {:>10} {:>9} {:>9} {:>6} {:>7}  pid:SM % per process; throttle reasons",
        "+s", "gpu", "sm%", "mem%", "mem used", "pcie rx", "pcie tx", "MHz", "W"
    );
    let opt = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
    };
    let rate = |kbps: Option<f64>| {
        kbps.map_or_else(|| "-".to_string(), |k| format!("{:.1} MB/s", k / 1000.0))
    };
    for b in &t.buckets {
        for g in &b.gpu {
            let procs: Vec<String> = g
                .processes
                .iter()
                .map(|p| format!("{}:{}", p.pid, opt(p.sm_pct, 1)))
                .collect();
            let reasons = match &g.throttle_reasons {
                None => "-".to_string(),
                Some(r) if r.is_empty() => "none".to_string(),
                Some(r) => r.join(","),
            };
            let _ = writeln!(
                s,
                "  {:>8.1} {:>3} {:>5} {:>5} {:>10} {:>9} {:>9} {:>6} {:>7}  {}; {}",
                b.offset_s,
                g.gpu,
                opt(g.sm_pct, 0),
                opt(g.mem_pct, 0),
                g.mem_used_bytes
                    .map_or_else(|| "-".to_string(), format::bytes),
                rate(g.pcie_rx_kbps),
                rate(g.pcie_tx_kbps),
                opt(g.sm_clock_mhz, 0),
                opt(g.power_w, 1),
                if procs.is_empty() {
                    "-".to_string()
                } else {
                    procs.join(" ")
                },
                reasons
            );
        }
    }
    s
}

fn round_up(v: i64, unit: i64) -> i64 {
    let unit = unit.max(1);
    ((v + unit - 1) / unit).max(1) * unit
}
