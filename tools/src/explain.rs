//! The full report behind `ingero explain`: chains, starvation, processes and
//! op statistics from one load of the data.

use crate::chains::{chains_with_starvation, ChainReport};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::processes::{per_process_in, ProcessBreakdown};
use crate::scope::Scope;
use crate::starvation::StarvationEstimate;
use crate::stats::{op_stats_of, OpStatsReport, WindowInfo};
use ingero_store::{DbFormat, TraceDb};
use serde::Serialize;

/// What was recorded, and by whom.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CaptureSummary {
    /// Database file.
    pub path: String,
    /// Writer of the file.
    pub format: DbFormat,
    /// Capture sessions in the file.
    pub sessions: i64,
    /// GPU model, when recorded.
    pub gpu_model: Option<String>,
    /// CPU count of the host, when recorded.
    pub cpu_cores: Option<i64>,
    /// Capture start, epoch ns, as a decimal string (exact).
    #[serde(with = "ingero_store::epoch_ns")]
    #[schemars(with = "ingero_store::epoch_ns::EpochNsText")]
    pub start_ns: i64,
    /// Capture end, epoch ns, as a decimal string (exact).
    #[serde(with = "ingero_store::epoch_ns")]
    #[schemars(with = "ingero_store::epoch_ns::EpochNsText")]
    pub end_ns: i64,
    /// Capture length, ns (the end's offset from the start).
    pub duration_ns: i64,
    /// Capture length in seconds.
    pub duration_s: f64,
    /// Raw CUDA call rows in the file.
    pub raw_cuda_rows: i64,
    /// Raw host event rows in the file.
    pub raw_host_rows: i64,
    /// How each session ended: its stop time and the reason the capture
    /// recorded (empty reason: the file does not say).
    pub endings: Vec<ingero_store::SessionEnding>,
}

/// Everything `explain` knows about a window of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The recording.
    pub capture: CaptureSummary,
    /// The window analysed.
    pub window: WindowInfo,
    /// Causal chains, strongest first.
    pub chains: ChainReport,
    /// Where each GPU-driving thread's time went.
    pub starvation: Vec<StarvationEstimate>,
    /// Per-process breakdown.
    pub processes: ProcessBreakdown,
    /// Per-op statistics.
    pub stats: OpStatsReport,
    /// Ranks of a distributed job: clocks, arrivals at collectives,
    /// stragglers (absent when the file has no NCCL communicator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<crate::ranks::RankReport>,
    /// What the data cannot support, so nobody invents it.
    pub limits: Vec<String>,
}

/// Builds the report for `scope`.
pub fn explain(db: &TraceDb, scope: &Scope) -> Result<Report> {
    let ds = Dataset::load(db, scope)?;
    let conn = db.conn();
    let q = |e| db.classify(e);
    let sessions: i64 = conn
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .map_err(q)?;
    // Native files count their raw rows in the aggregates (no table scan);
    // foreign files are small and their totals do not say, so count directly.
    let (cuda_sql, host_sql) = match db.format() {
        DbFormat::Native { .. } => (
            "SELECT COALESCE(SUM(stored), 0) FROM aggregates WHERE source = 1",
            "SELECT COALESCE(SUM(stored), 0) FROM aggregates WHERE source = 2",
        ),
        DbFormat::IngeroGo { .. } => (
            "SELECT COUNT(*) FROM cuda_calls",
            "SELECT COUNT(*) FROM host_events",
        ),
    };
    let raw_cuda_rows: i64 = conn.query_row(cuda_sql, [], |r| r.get(0)).map_err(q)?;
    let raw_host_rows: i64 = conn.query_row(host_sql, [], |r| r.get(0)).map_err(q)?;
    let endings = ingero_store::endings::session_endings(conn).map_err(q)?;
    let span = db.span();
    let capture = CaptureSummary {
        path: db.path().display().to_string(),
        format: db.format().clone(),
        sessions,
        gpu_model: (!ds.gpu_model.is_empty()).then(|| ds.gpu_model.clone()),
        cpu_cores: (ds.cpu_cores > 0).then_some(ds.cpu_cores),
        start_ns: span.start_ns,
        end_ns: span.end_ns,
        duration_ns: span.duration_ns(),
        duration_s: span.duration_ns() as f64 / 1e9,
        raw_cuda_rows,
        raw_host_rows,
        endings,
    };
    // The chains are computed from the loaded data alone: on another thread,
    // beside the breakdown, which still reads the database on this one.
    let ((chains, starvation), processes, stats) = std::thread::scope(|s| {
        let chains = s.spawn(|| chains_with_starvation(&ds));
        let processes = per_process_in(db, &ds);
        let stats = op_stats_of(&ds);
        let chains = chains
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (chains, processes, stats)
    });
    let processes = processes?;
    let limits = limits_of(&ds, &processes, &stats, &capture);
    let ranks = crate::ranks::rank_report(db, &ds)?;
    let ranks = (!ranks.is_empty()).then_some(ranks);
    Ok(Report {
        capture,
        window: WindowInfo::of(&ds),
        chains,
        starvation,
        processes,
        stats,
        ranks,
        limits,
    })
}

fn limits_of(
    ds: &Dataset,
    processes: &ProcessBreakdown,
    stats: &OpStatsReport,
    capture: &CaptureSummary,
) -> Vec<String> {
    let mut out = Vec::new();
    if capture.gpu_model.is_none() {
        out.push("GPU model not recorded.".to_string());
    }
    let sampled: Vec<String> = stats
        .ops
        .iter()
        .filter(|o| !o.exact)
        .map(|o| format!("{} ({} of {})", o.op, o.raw_rows, o.count))
        .collect();
    if !sampled.is_empty() {
        out.push(format!(
            "Percentiles are from sampled raw rows for: {}. Counts, means and maxima cover every call.",
            sampled.join(", ")
        ));
    }
    let counts_only: Vec<String> = processes
        .processes
        .iter()
        .filter(|p| p.context_switches > 0 && p.context_switch_raw_rows == 0)
        .map(|p| p.pid.to_string())
        .collect();
    if !counts_only.is_empty() {
        out.push(format!(
            "Processes {} have context-switch and page-allocation totals only (no raw rows): their \
             individual switches and the exact moments they preempted the GPU thread are not in the file.",
            counts_only.join(", ")
        ));
    }
    if ds.snapshots.is_empty() {
        out.push("No system samples: CPU and memory use are unknown.".to_string());
    }
    if ds.bucket_ns > 1_000_000_000 {
        out.push(format!(
            "Totals are per {} s bucket: finer time correlation uses raw rows only.",
            ds.bucket_ns / 1_000_000_000
        ));
    }
    if ds.lost_events > 0 {
        out.push(format!(
            "{} events were lost during capture.",
            ds.lost_events
        ));
    }
    if !ds.open_sessions.is_empty() {
        let ids: Vec<String> = ds.open_sessions.iter().map(i64::to_string).collect();
        out.push(format!(
            "Session {} has no stop time: it is still being recorded, or the recorder was killed before it finished (the events of its last fraction of a second may be missing).",
            ids.join(", ")
        ));
    }
    for e in &capture.endings {
        if let (Some(sentence), true) = (e.sentence(), e.stop_reason.starts_with("writer failed")) {
            out.push(format!(
                "Session {} {sentence}: the capture stopped there, and what the traced processes did afterwards is not in the file.",
                e.session_id
            ));
        }
    }
    if ds.unfinished_calls > 0 {
        out.push(format!(
            "{} CUDA calls never returned inside the capture (their thread exited, or they were still running at the stop): their durations are lower bounds.",
            ds.unfinished_calls
        ));
    }
    out
}

/// Convenience for tests and callers holding a path: open and explain.
pub fn explain_path(path: &std::path::Path, scope: &Scope) -> Result<Report> {
    let db = TraceDb::open(path)?;
    explain(&db, scope)
}
