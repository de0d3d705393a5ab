//! The data a report draws, gathered once from a loaded trace: every raw CUDA
//! call as a span, the off-CPU intervals of the GPU-driving threads, the
//! page-allocation rate and CPU use over time, and the analyses (causal
//! chains, GPU-idle breakdown, per-process table, latency histograms), and
//! beside them the GPU's own NVML samples (device and per-process SM %,
//! memory used) where the capture has them.
//!
//! Times are seconds after the capture start, the same origin as a chain's
//! `start_offset_s`, so highlighting a chain on the timeline needs no
//! conversion. Spans are serialised as short arrays to keep large traces small
//! inside an HTML page.

use crate::error::Result;
use crate::histogram::{histograms_of, OpHistogram};
use ingero_store::{AggSource, DbFormat, HostKind, TraceDb};
use ingero_tools::chains::{chains_of, CausalChain, ChainReport};
use ingero_tools::compare::{compare_dbs, Comparison, WindowChoice};
use ingero_tools::dataset::Dataset;
use ingero_tools::gpu_activity::{clip, UtilPeriod};
use ingero_tools::idle::ProcessIdle;
use ingero_tools::processes::{per_process_of, ProcessBreakdown, ProcessRow, Role};
use ingero_tools::stats::WindowInfo;
use ingero_tools::Scope;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Most CUDA spans a report carries; beyond it the longest are kept.
pub const MAX_SPANS: usize = 250_000;
/// Most off-CPU intervals a report carries; beyond it the longest are kept.
pub const MAX_OFF_CPU: usize = 100_000;
/// Most processes given a timeline track.
pub const MAX_TRACKS: usize = 16;

/// Recording facts shown in the report header.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CaptureInfo {
    /// Name of the database file the report was made from.
    pub source: String,
    /// Who wrote the database.
    pub format: DbFormat,
    /// Capture start, epoch ns (the origin of every offset).
    pub start_ns: i64,
    /// Capture end, epoch ns.
    pub end_ns: i64,
    /// Capture length in seconds.
    pub duration_s: f64,
    /// GPU model, when recorded.
    pub gpu_model: Option<String>,
    /// CPU count of the traced host, when recorded.
    pub cpu_cores: Option<i64>,
}

/// Name and class of an op, indexed by a span's op field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OpRef {
    /// CUDA function name.
    pub name: String,
    /// Op class (`launch`, `copy`, `sync`, `alloc`, `free`, `other`).
    pub class: String,
}

/// One CUDA call: `[start_s, dur_s, op index, bytes]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SpanRow(pub f64, pub f64, pub u32, pub i64);

/// One off-CPU interval: `[start_s, dur_s, reason]`, reason 1 when the
/// thread was preempted (still runnable), 0 when it blocked, -1 when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OffCpuRow(pub f64, pub f64, pub i8);

/// A per-bucket rate, from the recorder's aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RatePoint {
    /// Bucket start, seconds after capture start.
    pub t: f64,
    /// Bucket length, seconds.
    pub d: f64,
    /// Events per second over the bucket.
    pub per_s: f64,
    /// Bytes per second over the bucket.
    pub bytes_per_s: f64,
}

/// One thread's lane: its CUDA calls and, for threads that drive the GPU,
/// the intervals it spent off the CPU.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ThreadTrack {
    /// Thread id.
    pub tid: i32,
    /// CUDA calls in time order.
    pub calls: Vec<SpanRow>,
    /// Off-CPU intervals in time order.
    pub off_cpu: Vec<OffCpuRow>,
}

/// One process's group of lanes on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProcessTrack {
    /// Process id.
    pub pid: i32,
    /// Command name, empty when unknown.
    pub comm: String,
    /// Role in the job.
    pub role: Role,
    /// Threads that made CUDA calls.
    pub threads: Vec<ThreadTrack>,
    /// Page allocations per bucket.
    pub page_alloc: Vec<RatePoint>,
}

/// CPU use sample: `[offset_s, percent]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CpuPoint(pub f64, pub f64);

/// One NVML sample period: `[start_s, end_s, percent]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuPeriodRow(pub f64, pub f64, pub f64);

/// One polled GPU value: `[offset_s, value]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuPoint(pub f64, pub f64);

/// One process's SM utilisation on a GPU (NVML per-process samples, on the
/// device's sample grid: 0 in periods the driver did not list it).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuProcessSeries {
    /// Process id.
    pub pid: i32,
    /// Command name, empty when unknown.
    pub comm: String,
    /// SM % per sample period.
    pub sm: Vec<GpuPeriodRow>,
}

/// What NVML recorded for one GPU over the window.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GpuSeries {
    /// NVML device index.
    pub gpu: u32,
    /// Product name, empty when NVML did not say.
    pub name: String,
    /// Installed device memory, bytes (0 when unknown).
    pub mem_total_bytes: i64,
    /// Device SM utilisation (a kernel running) per sample period.
    pub sm: Vec<GpuPeriodRow>,
    /// Per-process SM utilisation of the processes in scope.
    pub processes: Vec<GpuProcessSeries>,
    /// Device memory in use, bytes, per status poll.
    pub mem_used: Vec<GpuPoint>,
}

/// Most sample periods or points a GPU series carries; beyond it
/// neighbours are merged (time-weighted).
pub const MAX_GPU_POINTS: usize = 20_000;

/// Everything the HTML report and the SVG chart draw.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReportData {
    /// Tool and version that made the report.
    pub generator: String,
    /// The recording.
    pub capture: CaptureInfo,
    /// The window shown.
    pub window: WindowInfo,
    /// Width of the recorder's aggregate buckets, seconds.
    pub bucket_s: f64,
    /// Op names and classes, indexed by [`SpanRow`]'s third field.
    pub ops: Vec<OpRef>,
    /// System CPU use.
    pub cpu: Vec<CpuPoint>,
    /// Page allocations of every process together, per bucket.
    pub page_alloc_total: Vec<RatePoint>,
    /// Timeline tracks, GPU-driving processes first.
    pub processes: Vec<ProcessTrack>,
    /// Causal chains, strongest first.
    pub chains: Vec<CausalChain>,
    /// How idle the GPU was per GPU-driving process, and why.
    pub gpu_idle: Vec<ProcessIdle>,
    /// The per-process table.
    pub process_table: Vec<ProcessRow>,
    /// Latency histograms per op.
    pub histograms: Vec<OpHistogram>,
    /// NVML samples per GPU, drawn beside the host tracks.
    pub gpus: Vec<GpuSeries>,
    /// Why there is no GPU chart, when the window has no NVML samples.
    pub gpu_note: Option<String>,
    /// Caveats (sampling, trimming).
    pub notes: Vec<String>,
    /// The flame graph section (HTML with an inline SVG, [`crate::flame`]),
    /// when the trace has stack samples; placed after the charts.
    #[serde(skip)]
    pub flame_html: Option<String>,
    /// The run compared with a baseline ([`ReportData::with_baseline`]),
    /// drawn as the page's comparison section ([`crate::compare`]).
    #[serde(skip)]
    pub comparison: Option<Comparison>,
}

impl ReportData {
    /// Loads the trace for `scope` and gathers the report's data.
    pub fn load(db: &TraceDb, scope: &Scope) -> Result<ReportData> {
        let ds = Dataset::load(db, scope)?;
        let chains = chains_of(&ds);
        let processes = per_process_of(&ds);
        let source = db.path().file_name().map_or_else(
            || db.path().display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut data = ReportData::build(&ds, &chains, &processes, &source);
        data.flame_html = crate::flame::flame_section(db, scope)?;
        Ok(data)
    }

    /// Gathers the report's data from analyses already computed on `ds`.
    pub fn build(
        ds: &Dataset,
        chains: &ChainReport,
        processes: &ProcessBreakdown,
        source: &str,
    ) -> ReportData {
        let origin = ds.span.start_ns;
        let secs = |ns: i64| (ns - origin) as f64 / 1e9;
        let mut notes: Vec<String> = chains.notes.clone();
        notes.extend(processes.notes.iter().cloned());

        let mut op_index: BTreeMap<u16, u32> = BTreeMap::new();
        let mut ops = Vec::new();
        for c in &ds.calls {
            op_index.entry(c.op_id).or_insert_with(|| {
                ops.push(OpRef {
                    name: ds.op_name(c.op_id).to_string(),
                    class: ds.op_class(c.op_id).as_str().to_string(),
                });
                (ops.len() - 1) as u32
            });
        }

        let calls = keep_longest(&ds.calls, MAX_SPANS, |c| c.dur_ns);
        if calls.len() < ds.calls.len() {
            notes.push(format!(
                "The timeline shows the {} longest of {} raw CUDA calls.",
                calls.len(),
                ds.calls.len()
            ));
        }
        let switches: Vec<_> = ds
            .gpu_thread_switches
            .iter()
            .filter(|h| h.kind == HostKind::SchedSwitch && h.dur_ns > 0)
            .copied()
            .collect();
        let switch_count = switches.len();
        let switches = keep_longest(&switches, MAX_OFF_CPU, |h| h.dur_ns);
        if switches.len() < switch_count {
            notes.push(format!(
                "The timeline shows the {} longest off-CPU intervals of the GPU-driving threads.",
                switches.len()
            ));
        }

        let mut threads: BTreeMap<(i32, i32), ThreadTrack> = BTreeMap::new();
        for c in &calls {
            let t = threads
                .entry((c.pid, c.tid))
                .or_insert_with(|| ThreadTrack {
                    tid: c.tid,
                    calls: Vec::new(),
                    off_cpu: Vec::new(),
                });
            let op = op_index.get(&c.op_id).copied().unwrap_or(0);
            t.calls.push(SpanRow(
                secs(c.ts_ns),
                c.dur_ns.max(0) as f64 / 1e9,
                op,
                c.bytes,
            ));
        }
        for h in &switches {
            if let Some(t) = threads.get_mut(&(h.pid, h.tid)) {
                let reason = h.arg.clamp(-1, 1) as i8;
                t.off_cpu
                    .push(OffCpuRow(secs(h.ts_ns), h.dur_ns as f64 / 1e9, reason));
            }
        }

        let bucket_s = ds.bucket_ns as f64 / 1e9;
        let mut pages: BTreeMap<i32, BTreeMap<i64, (i64, i64)>> = BTreeMap::new();
        let mut page_total: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
        let page_code = HostKind::PageAlloc.id() as i64;
        for a in &ds.aggs {
            if a.source != AggSource::Host || a.code != page_code || a.count <= 0 {
                continue;
            }
            let e = pages
                .entry(a.pid)
                .or_default()
                .entry(a.bucket_ns)
                .or_default();
            e.0 += a.count;
            e.1 = e.1.saturating_add(a.sum_bytes);
            let t = page_total.entry(a.bucket_ns).or_default();
            t.0 += a.count;
            t.1 = t.1.saturating_add(a.sum_bytes);
        }
        let rates = |m: &BTreeMap<i64, (i64, i64)>| -> Vec<RatePoint> {
            m.iter()
                .map(|(b, (n, bytes))| RatePoint {
                    t: secs(*b),
                    d: bucket_s,
                    per_s: *n as f64 / bucket_s.max(1e-9),
                    bytes_per_s: *bytes as f64 / bucket_s.max(1e-9),
                })
                .collect()
        };

        // GPU-driving processes first (in table order), then the heaviest
        // page allocators.
        let gpu_pids: BTreeSet<i32> = threads.keys().map(|(p, _)| *p).collect();
        let mut order: Vec<&ProcessRow> = processes
            .processes
            .iter()
            .filter(|r| gpu_pids.contains(&r.pid) || r.cuda_calls > 0)
            .collect();
        let mut others: Vec<&ProcessRow> = processes
            .processes
            .iter()
            .filter(|r| !gpu_pids.contains(&r.pid) && r.cuda_calls == 0 && r.page_allocs > 0)
            .collect();
        others.sort_by_key(|r| std::cmp::Reverse(r.page_allocs));
        order.extend(others);
        if order.len() > MAX_TRACKS {
            notes.push(format!(
                "The timeline shows {MAX_TRACKS} of {} active processes.",
                order.len()
            ));
            order.truncate(MAX_TRACKS);
        }
        let mut tracks: Vec<ProcessTrack> = order
            .iter()
            .map(|r| ProcessTrack {
                pid: r.pid,
                comm: r.comm.clone(),
                role: r.role,
                threads: Vec::new(),
                page_alloc: pages.get(&r.pid).map(rates).unwrap_or_default(),
            })
            .collect();
        for ((pid, _), t) in threads {
            match tracks.iter_mut().find(|p| p.pid == pid) {
                Some(p) => p.threads.push(t),
                None => tracks.push(ProcessTrack {
                    pid,
                    comm: ds.comm(pid).to_string(),
                    role: Role::Main,
                    threads: vec![t],
                    page_alloc: pages.get(&pid).map(rates).unwrap_or_default(),
                }),
            }
        }

        let cpu = ds
            .snapshots
            .iter()
            .map(|s| CpuPoint(secs(s.ts_ns), s.cpu_pct))
            .collect();
        let gpus = gpu_series(ds);
        let gpu_note = gpu_note(ds, &gpus);

        ReportData {
            generator: format!("ingero {}", env!("CARGO_PKG_VERSION")),
            capture: CaptureInfo {
                source: source.to_string(),
                format: ds.format.clone(),
                start_ns: ds.span.start_ns,
                end_ns: ds.span.end_ns,
                duration_s: ds.span.duration_ns() as f64 / 1e9,
                gpu_model: (!ds.gpu_model.is_empty()).then(|| ds.gpu_model.clone()),
                cpu_cores: (ds.cpu_cores > 0).then_some(ds.cpu_cores),
            },
            window: chains.window.clone(),
            bucket_s,
            ops,
            cpu,
            page_alloc_total: rates(&page_total),
            processes: tracks,
            chains: chains.chains.clone(),
            gpu_idle: chains.gpu_idle.clone(),
            process_table: processes.processes.clone(),
            histograms: histograms_of(ds),
            gpus,
            gpu_note,
            notes,
            flame_html: None,
            comparison: None,
        }
    }

    /// Adds the comparison of this run with the baseline `base`: both
    /// captures explained over `window` (`ingero_tools::compare`), shown at
    /// the top of the page. `new` is the file this report was loaded from.
    pub fn with_baseline(
        mut self,
        base: &TraceDb,
        new: &TraceDb,
        window: WindowChoice,
    ) -> Result<ReportData> {
        self.comparison = Some(compare_dbs(base, new, window)?);
        Ok(self)
    }

    /// CUDA spans carried, over every thread.
    pub fn span_count(&self) -> usize {
        self.processes
            .iter()
            .flat_map(|p| &p.threads)
            .map(|t| t.calls.len())
            .sum()
    }

    /// Off-CPU intervals carried, over every thread.
    pub fn off_cpu_count(&self) -> usize {
        self.processes
            .iter()
            .flat_map(|p| &p.threads)
            .map(|t| t.off_cpu.len())
            .sum()
    }
}

/// The NVML series of every GPU with samples in the window.
fn gpu_series(ds: &Dataset) -> Vec<GpuSeries> {
    let g = &ds.gpu;
    let origin = ds.span.start_ns;
    let win = (ds.window.lo_ns, ds.window.hi_ns);
    let rows = |periods: &[UtilPeriod]| -> Vec<GpuPeriodRow> {
        let rows: Vec<GpuPeriodRow> = clip(periods, win)
            .iter()
            .map(|p| {
                GpuPeriodRow(
                    (p.start_ns - origin) as f64 / 1e9,
                    (p.end_ns - origin) as f64 / 1e9,
                    p.busy * 100.0,
                )
            })
            .collect();
        thin_periods(rows, MAX_GPU_POINTS)
    };
    let in_scope = |pid: i32| {
        ds.focus
            .is_none_or(|f| pid == f || ds.descends_from(pid, f))
    };
    let mut ids: BTreeSet<u32> = g.sm.keys().copied().collect();
    ids.extend(g.process.iter().map(|s| s.gpu));
    ids.extend(g.status.iter().map(|s| s.gpu));
    ids.into_iter()
        .map(|gpu| {
            let dev = g.devices.iter().find(|d| d.gpu == gpu);
            let pids: BTreeSet<i32> = g
                .process
                .iter()
                .filter(|s| s.gpu == gpu && in_scope(s.pid))
                .map(|s| s.pid)
                .collect();
            let processes = pids
                .into_iter()
                .map(|pid| GpuProcessSeries {
                    pid,
                    comm: ds.comm(pid).to_string(),
                    sm: rows(&g.process_periods(pid, gpu)),
                })
                .filter(|p| !p.sm.is_empty())
                .collect();
            let mem_used: Vec<GpuPoint> = g
                .status
                .iter()
                .filter(|s| s.gpu == gpu && s.mem_used_bytes >= 0)
                .filter(|s| s.ts_ns >= win.0 && s.ts_ns <= win.1)
                .map(|s| GpuPoint((s.ts_ns - origin) as f64 / 1e9, s.mem_used_bytes as f64))
                .collect();
            let step = mem_used.len().div_ceil(MAX_GPU_POINTS).max(1);
            GpuSeries {
                gpu,
                name: dev.map(|d| d.name.clone()).unwrap_or_default(),
                mem_total_bytes: dev.map_or(0, |d| d.mem_total_bytes),
                sm: rows(&g.device_periods(gpu)),
                processes,
                mem_used: mem_used.into_iter().step_by(step).collect(),
            }
        })
        .filter(|s| !s.sm.is_empty() || !s.processes.is_empty() || !s.mem_used.is_empty())
        .collect()
}

/// Why the report has no GPU chart, or `None` when it has one.
fn gpu_note(ds: &Dataset, gpus: &[GpuSeries]) -> Option<String> {
    if !gpus.is_empty() {
        return None;
    }
    Some(if ds.gpu.devices.is_empty() {
        "No NVML GPU samples in this file: GPU activity is not measured and GPU busy figures are host-side bounds. A capture on a host with the NVIDIA driver records them.".to_string()
    } else {
        format!(
            "No NVML samples in this window (the capture saw {} GPU(s)): GPU busy figures are host-side bounds here.",
            ds.gpu.devices.len()
        )
    })
}

/// Merges neighbouring periods (time-weighted) until at most `max` remain.
fn thin_periods(rows: Vec<GpuPeriodRow>, max: usize) -> Vec<GpuPeriodRow> {
    if rows.len() <= max || max == 0 {
        return rows;
    }
    let k = rows.len().div_ceil(max);
    rows.chunks(k)
        .filter_map(|c| {
            let (first, last) = (c.first()?, c.last()?);
            let (mut busy, mut len) = (0.0, 0.0);
            for r in c {
                busy += (r.1 - r.0) * r.2;
                len += r.1 - r.0;
            }
            Some(GpuPeriodRow(
                first.0,
                last.1,
                if len > 0.0 { busy / len } else { 0.0 },
            ))
        })
        .collect()
}

/// The `max` items with the largest `key`, back in their original order.
fn keep_longest<T: Copy>(items: &[T], max: usize, key: impl Fn(&T) -> i64) -> Vec<T> {
    if items.len() <= max {
        return items.to_vec();
    }
    let mut idx: Vec<usize> = (0..items.len()).collect();
    idx.sort_by_key(|i| std::cmp::Reverse(key(&items[*i])));
    idx.truncate(max);
    idx.sort_unstable();
    idx.into_iter().map(|i| items[i]).collect()
}
