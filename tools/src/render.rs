//! Plain-text renderings of the analysis results, for the terminal and for
//! the compact text part of MCP tool results.

use crate::chains::{CausalChain, ChainReport};
use crate::events::EventPage;
use crate::explain::Report;
use crate::format::{bytes, count, ns, opt_ns, pct};
use crate::processes::{ProcessBreakdown, Role};
use crate::starvation::StarvationEstimate;
use crate::stats::OpStatsReport;
use crate::timeline::Timeline;
use std::fmt::Write;

/// The whole `explain` report: chains first, then starvation, processes, ops.
pub fn report_text(r: &Report) -> String {
    let mut s = String::new();
    let c = &r.capture;
    let _ = writeln!(
        s,
        "Trace {} ({}), {:.1} s captured{}{}",
        c.path,
        match &c.format {
            ingero_store::DbFormat::Native { version } => format!("ingero schema v{version}"),
            ingero_store::DbFormat::IngeroGo { version } =>
                format!("Ingero {version} database, read-only"),
        },
        c.duration_s,
        c.gpu_model
            .as_deref()
            .map(|g| format!(", GPU {g}"))
            .unwrap_or_default(),
        c.cpu_cores
            .map(|n| format!(", {n} CPUs"))
            .unwrap_or_default(),
    );
    for e in &c.endings {
        if let Some(sentence) = e.sentence() {
            let _ = writeln!(s, "Session {} {sentence}", e.session_id);
        }
    }
    if !r.window.whole_capture {
        let _ = writeln!(
            s,
            "Window: {:.1} s from +{:.1} s",
            r.window.duration_s, r.window.start_offset_s
        );
    }
    s.push('\n');
    s.push_str(&idle_text(&r.chains.gpu_idle));
    s.push('\n');
    s.push_str(&chains_text(&r.chains));
    s.push('\n');
    if let Some(ranks) = &r.ranks {
        s.push_str(&crate::render_ranks::ranks_text(ranks));
        s.push('\n');
    }
    s.push_str(&starvation_text(&r.starvation));
    s.push('\n');
    s.push_str(&processes_text(&r.processes));
    s.push('\n');
    s.push_str(&stats_text(&r.stats));
    if !r.limits.is_empty() {
        s.push_str("\nWhat this file cannot tell\n");
        for l in &r.limits {
            let _ = writeln!(s, "  - {l}");
        }
    }
    s
}

/// GPU-idle breakdown per GPU-driving process.
pub fn idle_text(list: &[crate::idle::ProcessIdle]) -> String {
    let mut s = String::from("GPU idle\n");
    if list.is_empty() {
        s.push_str("  no CUDA activity in this window\n");
    }
    for p in list {
        let c = &p.causes;
        let source = match p.busy_source {
            crate::gpu_activity::BusySource::NvmlProcess => "measured, NVML per-process samples",
            crate::gpu_activity::BusySource::NvmlDevice => "measured, NVML device samples",
            crate::gpu_activity::BusySource::HostBound => {
                "not measured: no GPU samples, host-side upper bound"
            }
        };
        let bound = if p.busy_is_upper_bound {
            "at least "
        } else {
            ""
        };
        let busy_word = if p.busy_is_upper_bound {
            "busy at most"
        } else {
            "busy"
        };
        let _ = writeln!(
            s,
            "  pid {} {}: GPU idle {bound}{} of {} ({busy_word} {}, {source}; inside CUDA calls {})",
            p.pid,
            p.comm,
            pct(p.idle_share),
            ns(p.span_ns),
            ns(p.busy_ns),
            ns(p.api_ns),
        );
        if !p.others_on_gpu.is_empty() {
            let _ = writeln!(
                s,
                "      the device samples also count other processes on GPU {}: {:?}",
                p.gpu.unwrap_or(0),
                p.others_on_gpu
            );
        }
        let _ = writeln!(
            s,
            "      while the GPU idled ({}), GPU thread {} was:",
            ns(p.host_wait_ns),
            p.gpu_thread
        );
        for (label, v) in c.labelled().iter().filter(|(_, v)| *v > 0) {
            let _ = writeln!(
                s,
                "      {label:<40} {:>10} ({} of the idle time)",
                ns(*v),
                pct(*v as f64 / p.host_wait_ns.max(1) as f64)
            );
            // The code behind the part, from the thread's stacks inside it.
            let shown = p
                .code
                .iter()
                .find(|pc| pc.part == *label && (*v as f64) >= 0.01 * p.host_wait_ns as f64);
            for cs in shown.iter().flat_map(|pc| pc.code.iter().take(2)) {
                let _ = writeln!(
                    s,
                    "          {} of it in {}",
                    pct(cs.share_of_part),
                    cs.text
                );
            }
        }
        let _ = writeln!(
            s,
            "      in the loop (first to last CUDA call): {} idle, the whole the findings' shares are of",
            ns(p.loop_idle_ns())
        );
        let _ = writeln!(
            s,
            "      gaps >= 500 ms: {} ({}, {}); chunks under 50% busy: {}/{}; launches {} ({:.1}/s, {}, {} per sync); graph launches {}; syncs {}; sync copies {}; pageable async copies {}",
            p.long_gaps,
            ns(p.long_gaps_ns),
            p.utilization.basis,
            p.utilization.low_chunks,
            p.utilization.chunks,
            count(p.launches.launches),
            p.launches.launches_per_s,
            if p.launches.mean_threads_per_launch.is_some() {
                format!(
                    "{} of them with at most 65,536 threads",
                    count(p.launches.small_launches)
                )
            } else {
                "launch geometry not recorded".to_string()
            },
            p.launches
                .launches_per_sync
                .map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}")),
            count(p.launches.graph_launches),
            p.sync.syncs,
            p.sync.sync_copies,
            p.sync.pageable_async_copies
        );
        if let Some(ps) = &p.per_step {
            let notable = ps.notable();
            let _ = writeln!(
                s,
                "      per step ({} steps of {}): {:.1} launches, {:.1} syncs{}",
                ps.steps,
                ns(ps.period_ns),
                ps.launches,
                ps.syncs,
                if notable.is_empty() {
                    String::new()
                } else {
                    format!(", {}", notable.join(", "))
                }
            );
        }
        for b in &p.basis {
            let _ = writeln!(s, "      basis: {b}");
        }
    }
    s
}

/// What `get_causal_chains` says: the GPU-idle breakdown, then the chains.
pub fn chain_report_text(r: &ChainReport) -> String {
    format!("{}\n{}", idle_text(&r.gpu_idle), chains_text(r))
}

/// Causal chains, strongest first.
pub fn chains_text(r: &ChainReport) -> String {
    let mut s = String::from("Causal chains\n");
    if r.chains.is_empty() {
        s.push_str("  none found\n");
    }
    for c in &r.chains {
        s.push_str(&chain_text(c));
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// One chain with its steps, evidence and fix.
pub fn chain_text(c: &CausalChain) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  [{}] {} ({}, explains {} of the loop's idle time{}, evidence strength {:.0}/100, +{:.1}s..+{:.1}s)",
        c.severity.label(),
        c.summary,
        c.cause.name(),
        crate::format::pct(c.explained_share),
        c.loop_cost_beyond_idle()
            .map(|cost| format!(" and costs it {} of its own time", crate::format::ns(cost)))
            .unwrap_or_default(),
        c.score,
        c.start_offset_s,
        c.end_offset_s
    );
    for st in &c.steps {
        let _ = writeln!(s, "      [{:<6}] {}", st.layer, st.detail);
    }
    let _ = writeln!(s, "      root cause: {}", c.root_cause);
    let _ = writeln!(s, "      fix: {}", c.fix);
    s
}

/// GPU-starvation estimates.
pub fn starvation_text(list: &[StarvationEstimate]) -> String {
    let mut s = String::from("GPU starvation (GPU-driving thread's wall time)\n");
    if list.is_empty() {
        s.push_str("  no GPU-driving thread in this window\n");
    }
    for e in list {
        let _ = writeln!(
            s,
            "  pid {} {} thread {}: {} wall; in CUDA calls {} ({}), off-CPU {} ({}), host-side work {} -> GPU fed by this thread at most {} of the time",
            e.pid,
            e.comm,
            e.gpu_thread,
            ns(e.wall_ns),
            ns(e.cuda_api_ns),
            pct(e.cuda_api_share),
            ns(e.off_cpu_ns),
            pct(e.off_cpu_share),
            ns(e.host_compute_ns),
            pct(e.cuda_api_share),
        );
        let _ = writeln!(s, "      basis: {}", e.basis);
    }
    s
}

/// Per-process table: CUDA use, switches, and off-CPU time per thread (the
/// GPU thread on the row, the other threads below it).
pub fn processes_text(b: &ProcessBreakdown) -> String {
    let mut s = String::from("Per process\n");
    let _ = writeln!(
        s,
        "  {:>7} {:>7} {:<16} {:<17} {:>9} {:>10} {:>10} {:>9} {:>11} {:>11} {:>5}",
        "pid",
        "ppid",
        "comm",
        "role",
        "cuda",
        "cuda time",
        "switches",
        "gpu tid",
        "its off-CPU",
        "page allocs",
        "forks"
    );
    for p in &b.processes {
        let role = match p.role {
            Role::Main => "main",
            Role::GpuChild => "gpu child",
            Role::DataloaderWorker => "dataloader worker",
            Role::PinMemory => "pin memory",
            Role::Child => "child",
            Role::External => "external",
        };
        let (gpu_tid, gpu_off) = match &p.gpu_thread {
            Some(t) => (t.tid.to_string(), ns(t.off_cpu_ns)),
            None => ("-".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            s,
            "  {:>7} {:>7} {:<16} {:<17} {:>9} {:>10} {:>10} {:>9} {:>11} {:>11} {:>5}",
            p.pid,
            p.ppid,
            truncate(&p.comm, 16),
            role,
            count(p.cuda_calls),
            ns(p.cuda_time_ns),
            count(p.context_switches),
            gpu_tid,
            gpu_off,
            count(p.page_allocs),
            p.forks
        );
        let thread_line = |t: &crate::processes::ThreadRow| {
            format!(
                "tid {}: off-CPU {} of {} ({}), {} switches in its lifetime, longest {}",
                t.tid,
                ns(t.off_cpu_ns),
                ns(t.lifetime_ns),
                pct(t.off_cpu_share),
                count(t.switches),
                ns(t.off_cpu_max_ns)
            )
        };
        if let Some(t) = &p.gpu_thread {
            let _ = writeln!(
                s,
                "          GPU thread {}; {} CUDA calls {}, {} inside them",
                thread_line(t),
                count(t.cuda_calls),
                if t.cuda_calls_from_spans {
                    "(from its activity spans: the recorder folded calls)"
                } else {
                    "kept as raw rows"
                },
                ns(t.cuda_time_ns)
            );
        }
        for t in &p.threads {
            let _ = writeln!(s, "          thread {}", thread_line(t));
        }
        if p.threads_not_listed > 0 {
            let _ = writeln!(
                s,
                "          and {} more threads",
                count(p.threads_not_listed)
            );
        }
        if p.gpu_thread.is_some() || !p.threads.is_empty() {
            let _ = writeln!(s, "          threads: {}", p.threads_basis);
        }
        for o in p
            .ops
            .iter()
            .filter(|o| o.class == ingero_store::OpClass::Copy)
        {
            let _ = writeln!(
                s,
                "          {}: {} calls, mean {}, max {}, {}",
                o.op,
                count(o.count),
                ns(o.mean_ns as i64),
                ns(o.max_ns),
                bytes(o.total_bytes)
            );
        }
    }
    for n in &b.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// Per-op table and host totals.
pub fn stats_text(r: &OpStatsReport) -> String {
    let mut s = String::from("CUDA calls\n");
    let _ = writeln!(
        s,
        "  {:<24} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}  basis",
        "op", "count", "total", "mean", "p50", "p95", "p99", "max", "p99/p50"
    );
    for o in &r.ops {
        let _ = writeln!(
            s,
            "  {:<24} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}  {}",
            truncate(&o.op, 24),
            count(o.count),
            ns(o.total_ns),
            ns(o.mean_ns as i64),
            opt_ns(o.p50_ns),
            opt_ns(o.p95_ns),
            opt_ns(o.p99_ns),
            ns(o.max_ns),
            o.tail_ratio
                .map_or_else(|| "n/a".into(), |t| format!("{t:.1}x")),
            if o.exact {
                "exact".to_string()
            } else {
                format!("sampled {}/{}", o.raw_rows, o.count)
            }
        );
    }
    let _ = writeln!(s, "  time inside CUDA calls: {}", ns(r.cuda_api_time_ns));
    if !r.host.is_empty() {
        s.push_str("Host events\n");
    }
    for h in &r.host {
        let extra = if h.total_bytes > 0 {
            format!(", {}", bytes(h.total_bytes))
        } else if h.total_dur_ns > 0 {
            format!(", {} total, max {}", ns(h.total_dur_ns), ns(h.max_dur_ns))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {:<16} {:>11}{extra} ({} raw rows)",
            h.event,
            count(h.count),
            count(h.raw_rows)
        );
    }
    if r.lost_events > 0 {
        let _ = writeln!(s, "  lost events: {}", count(r.lost_events));
    }
    if r.unfinished_calls > 0 {
        let _ = writeln!(
            s,
            "  unfinished CUDA calls: {} (never returned inside the capture; durations are lower bounds)",
            count(r.unfinished_calls)
        );
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// Timeline as one line per bucket.
pub fn timeline_text(t: &Timeline) -> String {
    let mut s = format!("Timeline ({} s buckets)\n", t.bucket_ns as f64 / 1e9);
    let _ = writeln!(
        s,
        "  {:>8} {:>6} {:>9} {:>10} {:>10} {:>11} {:>6}  slowest",
        "+s", "cpu%", "cuda", "cuda time", "switches", "page allocs", "forks"
    );
    for b in &t.buckets {
        let _ = writeln!(
            s,
            "  {:>8.1} {:>6} {:>9} {:>10} {:>10} {:>11} {:>6}  {}",
            b.offset_s,
            b.cpu_pct.map_or_else(|| "-".into(), |c| format!("{c:.0}")),
            count(b.cuda_calls),
            ns(b.cuda_time_ns),
            count(b.context_switches),
            count(b.page_allocs),
            b.forks,
            match (&b.slowest_op, b.slowest_call_ns) {
                (Some(op), Some(d)) => format!("{op} {}", ns(d)),
                _ => String::new(),
            }
        );
    }
    for n in &t.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// A page of events.
pub fn events_text(p: &EventPage) -> String {
    let mut s = format!("{} matching events, showing {}\n", p.total, p.rows.len());
    for r in &p.rows {
        let _ = writeln!(
            s,
            "  +{:>10.6}s {:>7}/{:<7} {:<5} {:<24} {:>10} {}{}",
            r.offset_s,
            r.pid,
            r.tid,
            r.source,
            r.name,
            ns(r.dur_ns),
            if r.bytes > 0 {
                bytes(r.bytes)
            } else {
                String::new()
            },
            if r.detail.is_empty() {
                String::new()
            } else {
                format!(" {}", r.detail)
            }
        );
    }
    if let Some(n) = p.next_offset {
        let _ = writeln!(s, "  next page: offset {n}");
    }
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "~"
    }
}
