//! Time-bucketed view of a trace: CUDA activity beside host pressure.

use crate::dataset::Dataset;
use crate::error::{Result, ToolError};
use crate::scope::Scope;
use crate::stats::WindowInfo;
use ingero_store::{AggSource, HostKind, OpClass, TraceDb};
use serde::Serialize;

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
    Ok(Timeline {
        window: WindowInfo::of(ds),
        bucket_ns: width,
        buckets,
        notes,
    })
}

fn round_up(v: i64, unit: i64) -> i64 {
    let unit = unit.max(1);
    ((v + unit - 1) / unit).max(1) * unit
}
