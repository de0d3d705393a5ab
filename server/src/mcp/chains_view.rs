//! What `get_causal_chains` returns: a headline to read first, then the
//! chain report at the asked `detail`.
//!
//! The first call of an investigation should fit a small context budget
//! (at most about 1,200 tokens) and still answer "how idle, why, ranked":
//! `brief` keeps every process's idle split and every finding's rank, cause
//! and share of the idle time, with the root cause, evidence and fix of the
//! top finding; `full` is the whole report.

use ingero_tools::chains::{CausalChain, ChainReport};
use ingero_tools::compare::Comparison;
use ingero_tools::format::{ns, pct};
use ingero_tools::gpu_activity::BusySource;
use ingero_tools::idle::ProcessIdle;
use ingero_tools::render;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::sync::Arc;

/// How much of the chain report one call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// The headline, each process's idle split, every finding ranked with
    /// its share of the idle time, and the top finding's root cause,
    /// evidence and fix (at most about 1,200 tokens).
    #[default]
    Brief,
    /// Everything: every finding's steps, evidence and fix, the rule checks,
    /// gaps, streams, launch and sync statistics, and the CUDA symptoms.
    Full,
}

/// Answer of `get_causal_chains`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChainsView {
    /// Read this first: how idle the GPU was for the main GPU-driving
    /// process, the largest part of that idle time, and the findings in
    /// rank order with the share of the idle time each explains.
    pub headline: String,
    /// The level of this answer.
    pub detail: Detail,
    /// What this level leaves out, and how to get it.
    pub left_out: Vec<String>,
    /// The report.
    #[serde(flatten)]
    pub report: ChainReport,
    /// How this run compares with the baseline named by `compare_with`
    /// (what `compare_runs` answers); absent when none was named. The tool
    /// adds it after the chain report, which is cached on its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

/// Fields of each `gpu_idle` item that `brief` keeps.
const BRIEF_IDLE: &[&str] = &[
    "pid",
    "comm",
    "gpu_thread",
    "idle_share",
    "span_ns",
    "host_wait_ns",
    "busy_ns",
    "busy_source",
    "busy_is_upper_bound",
    "active_idle_share",
    "active_span_ns",
    "causes",
    "long_gaps",
    "long_gaps_ns",
    "step_period_ns",
];
/// Fields of the top chain that `brief` leaves out.
const BRIEF_TOP_DROPS: &[&str] = &["steps", "affected_ops"];
/// Fields of the other chains that `brief` keeps.
const BRIEF_CHAIN: &[&str] = &[
    "id",
    "cause",
    "severity",
    "score",
    "explained_ns",
    "explained_share",
    "summary",
    "victim_pid",
    "culprit_pids",
    "start_offset_s",
    "end_offset_s",
];
/// Report fields that `brief` leaves out.
const BRIEF_REPORT_DROPS: &[&str] = &["symptoms"];
/// How to get what `brief` leaves out (the last `left_out` item).
const FULL_HINT: &str = "detail \"full\" gives them";
/// Processes `brief` lists.
const BRIEF_PROCESSES: usize = 3;
/// Findings whose summary the brief text gives (the others: one line).
const BRIEF_SUMMARIES: usize = 3;
/// Longest root cause, fix or summary line of the brief text, characters
/// (the rest is marked cut; `detail: "full"` has it whole).
const BRIEF_LINE: usize = 360;
/// Pids a brief finding line names before "and N more".
const BRIEF_PIDS: usize = 4;

impl ChainsView {
    /// The view of `report` at `detail`.
    pub fn new(report: ChainReport, detail: Detail) -> ChainsView {
        let mut left_out = Vec::new();
        if detail == Detail::Brief {
            if report.chains.len() > 1 {
                let which = match report.chains.len() {
                    2 => "finding 2".to_string(),
                    n => format!("findings 2-{n}"),
                };
                left_out.push(format!("{which}: root cause, evidence and fix"));
            }
            left_out.push("steps, rule checks, statistics, CUDA symptoms".to_string());
            if report.gpu_idle.len() > BRIEF_PROCESSES {
                left_out.push(format!(
                    "{} more GPU-driving processes",
                    report.gpu_idle.len() - BRIEF_PROCESSES
                ));
            }
            left_out.push(FULL_HINT.to_string());
        }
        ChainsView {
            headline: headline(&report),
            detail,
            left_out,
            report,
            comparison: None,
        }
    }

    /// The structured result: the full report, or the brief one with the
    /// left-out fields removed.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        let mut v = serde_json::to_value(self)?;
        if self.detail == Detail::Brief {
            if let Value::Object(m) = &mut v {
                brief_in_place(m);
            }
        }
        Ok(v)
    }

    /// The text content: complete enough to answer from at either level.
    pub fn text(&self) -> String {
        let r = &self.report;
        let mut s = format!("{}\n\n", self.headline);
        match self.detail {
            Detail::Full => {
                s.push_str(&render::idle_text(&r.gpu_idle));
                s.push_str("\nCausal chains, ranked\n");
                if r.chains.is_empty() {
                    s.push_str("  none found\n");
                }
                for (i, c) in r.chains.iter().enumerate() {
                    let _ = write!(s, "{}. ", i + 1);
                    s.push_str(render::chain_text(c).trim_start());
                    let _ = writeln!(s, "      {}", explains(r, c));
                    let _ = writeln!(s, "      evidence: {}", evidence_line(c));
                }
            }
            Detail::Brief => {
                s.push_str("GPU idle\n");
                for (i, p) in r.gpu_idle.iter().take(BRIEF_PROCESSES).enumerate() {
                    s.push_str(&idle_lines(p, i == 0));
                }
                let lead = r.gpu_idle.first();
                match lead {
                    Some(p) => {
                        let _ = writeln!(
                            s,
                            "\nCausal chains, ranked (shares of pid {}'s {} GPU idle time in its loop, first to last CUDA call)",
                            p.pid,
                            ns(p.loop_idle_ns())
                        );
                    }
                    None => s.push_str("\nCausal chains, ranked\n"),
                }
                if r.chains.is_empty() {
                    s.push_str("  none found\n");
                }
                for (i, c) in r.chains.iter().enumerate() {
                    let share = match lead {
                        Some(p) if c.victim_pid == Some(p.pid) => {
                            format!(
                                "explains {} ({})",
                                ns(c.explained_ns),
                                pct(c.explained_share)
                            )
                        }
                        _ => explains(r, c),
                    };
                    let share = format!("{share}{}", loop_cost_text(c));
                    if i >= BRIEF_SUMMARIES {
                        let _ = writeln!(
                            s,
                            "{}. [{}] {} ({}): {share}",
                            i + 1,
                            c.severity.label(),
                            finding_name(c),
                            c.id
                        );
                        continue;
                    }
                    let _ = writeln!(
                        s,
                        "{}. [{}] {} ({}): {share}; {}; +{:.1}s..+{:.1}s",
                        i + 1,
                        c.severity.label(),
                        finding_name(c),
                        c.id,
                        pids_text(&c.culprit_pids),
                        c.start_offset_s,
                        c.end_offset_s
                    );
                    if i > 0 {
                        let _ = writeln!(s, "   {}", clip(&c.summary, BRIEF_LINE));
                    } else {
                        let _ = writeln!(s, "   root cause: {}", clip(&c.root_cause, BRIEF_LINE));
                        let _ = writeln!(s, "   evidence: {}", evidence_line(c));
                        let _ = writeln!(s, "   fix: {}", clip(&c.fix, BRIEF_LINE));
                    }
                }
            }
        }
        for n in &r.notes {
            let _ = writeln!(s, "note: {n}");
        }
        if let Some((hint, items)) = self.left_out.split_last() {
            let _ = writeln!(s, "left out ({hint}): {}", items.join("; "));
        }
        s
    }
}

/// The output schema: the view, with the readable companions declared, and
/// the fields `brief` may leave out not required.
pub fn output_schema() -> Arc<JsonObject> {
    let mut schema = (*super::readable::output_schema::<ChainsView>()).clone();
    let mut optional: Vec<&str> = BRIEF_REPORT_DROPS.to_vec();
    optional.extend(BRIEF_TOP_DROPS);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut() {
            let Some(req) = def.get_mut("required").and_then(Value::as_array_mut) else {
                continue;
            };
            let is_idle = req.iter().any(|k| k == "busy_source");
            let is_chain = req.iter().any(|k| k == "explained_share");
            let is_causes = req.iter().any(|k| k == "host_compute_ns");
            req.retain(|k| {
                let k = k.as_str().unwrap_or("");
                !(is_causes
                    || (is_idle && !BRIEF_IDLE.contains(&k))
                    || (is_chain && !BRIEF_CHAIN.contains(&k)))
            });
        }
    }
    if let Some(req) = schema.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|k| !optional.contains(&k.as_str().unwrap_or("")));
    }
    Arc::new(schema)
}

/// Removes what `brief` leaves out from the serialised view.
fn brief_in_place(m: &mut Map<String, Value>) {
    for k in BRIEF_REPORT_DROPS {
        m.remove(*k);
    }
    if let Some(Value::Array(procs)) = m.get_mut("gpu_idle") {
        procs.truncate(BRIEF_PROCESSES);
        for p in procs.iter_mut().filter_map(Value::as_object_mut) {
            p.retain(|k, _| BRIEF_IDLE.contains(&k.as_str()));
            if let Some(Value::Object(causes)) = p.get_mut("causes") {
                causes.retain(|_, v| v.as_i64() != Some(0));
            }
        }
    }
    if let Some(Value::Array(chains)) = m.get_mut("chains") {
        for (i, c) in chains
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .enumerate()
        {
            if i == 0 {
                c.retain(|k, _| !BRIEF_TOP_DROPS.contains(&k.as_str()));
            } else {
                c.retain(|k, _| BRIEF_CHAIN.contains(&k.as_str()));
            }
        }
    }
}

/// The first thing to read: idle share, its largest part, ranked findings.
pub fn headline(r: &ChainReport) -> String {
    let Some(p) = r.gpu_idle.first() else {
        return "No GPU-driving process in this window: no CUDA activity to explain.".into();
    };
    let mut s = format!(
        "pid {} ({}): GPU idle {}{} of its {} lifetime in the window ({} from its first to its last CUDA call){}.",
        p.pid,
        p.comm,
        if p.busy_is_upper_bound { "at least " } else { "" },
        pct(p.idle_share),
        ns(p.span_ns),
        pct(p.active_idle_share),
        source_said(p)
    );
    let parts = p.causes.labelled();
    if let Some((label, v)) = parts.iter().filter(|(_, v)| *v > 0).max_by_key(|(_, v)| *v) {
        let _ = write!(
            s,
            " Largest part of the {} idle time: {label}, {} ({}).",
            ns(p.host_wait_ns),
            ns(*v),
            pct(*v as f64 / p.host_wait_ns.max(1) as f64)
        );
    }
    match r.chains.first() {
        None => s.push_str(" No finding."),
        Some(top) => {
            let _ = write!(
                s,
                " {} finding(s) below, ranked by the idle time they explain; the first is {}.",
                r.chains.len(),
                finding_name(top)
            );
        }
    }
    s
}

/// For a finding that ranks by the loop time it costs rather than idle time
/// it explains, that cost (empty otherwise).
fn loop_cost_text(c: &CausalChain) -> String {
    c.loop_cost_beyond_idle()
        .map(|cost| {
            format!(
                ", and costs the loop {} of its own time (ranked by that)",
                ns(cost)
            )
        })
        .unwrap_or_default()
}

/// A finding's name as a reader quotes it: the cause, and for a finding
/// named by its code the idle part it explains (`idle_code
/// (off_cpu_blocked)`), which the bare cause name does not say.
fn finding_name(c: &CausalChain) -> String {
    match &c.part {
        Some(part) => format!("{} ({part})", c.cause.name()),
        None => c.cause.name().to_string(),
    }
}

/// `text` cut at a word boundary before `max` characters, the cut marked.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    let cut = head.rfind(' ').unwrap_or(head.len());
    format!("{} [cut]", head[..cut].trim_end_matches([',', ';', ':']))
}

/// The pids of a finding, the first few named.
fn pids_text(pids: &[i32]) -> String {
    let named: Vec<String> = pids
        .iter()
        .take(BRIEF_PIDS)
        .map(|p| p.to_string())
        .collect();
    match pids.len() {
        0 => "no pid".to_string(),
        n if n > BRIEF_PIDS => format!("pids {} and {} more", named.join(", "), n - BRIEF_PIDS),
        _ => format!("pids {}", named.join(", ")),
    }
}

/// How the busy figure was obtained, said after the idle share.
fn source_said(p: &ProcessIdle) -> &'static str {
    match p.busy_source {
        BusySource::NvmlProcess => "; measured by NVML per-process samples",
        BusySource::NvmlDevice => "; measured by NVML device samples",
        BusySource::HostBound => "; host-side bound, no GPU samples",
    }
}

/// Parts of the idle time under this share are summed, not listed, in the
/// brief text.
const SMALL_PART: f64 = 0.01;

/// Two lines per process: the idle share, then the split of the idle time.
/// The headline's process (`lead`) is not given its idle share again.
fn idle_lines(p: &ProcessIdle, lead: bool) -> String {
    let whole = p.host_wait_ns.max(1) as f64;
    let all = p.causes.labelled();
    let (big, small): (Vec<_>, Vec<_>) = all
        .iter()
        .filter(|(_, v)| *v > 0)
        .partition(|(_, v)| *v as f64 / whole >= SMALL_PART);
    let mut parts: Vec<String> = big
        .iter()
        .map(|(label, v)| format!("{label} {} ({})", ns(*v), pct(*v as f64 / whole)))
        .collect();
    if !small.is_empty() {
        let sum: i64 = small.iter().map(|(_, v)| *v).sum();
        parts.push(format!(
            "{} smaller part{} {} ({})",
            small.len(),
            if small.len() == 1 { "" } else { "s" },
            ns(sum),
            pct(sum as f64 / whole)
        ));
    }
    let split = format!(
        "      while the GPU idled ({}), GPU thread {} was: {}\n",
        ns(p.host_wait_ns),
        p.gpu_thread,
        parts.join(", ")
    );
    if lead {
        return format!(
            "  pid {} {} (as in the first line): busy {}{}\n{split}",
            p.pid,
            p.comm,
            if p.busy_is_upper_bound {
                "at most "
            } else {
                ""
            },
            ns(p.busy_ns)
        );
    }
    format!(
        "  pid {} {}: GPU idle {}{} of {} ({} from the first to the last CUDA call); busy {}{}{}\n{split}",
        p.pid,
        p.comm,
        if p.busy_is_upper_bound { "at least " } else { "" },
        pct(p.idle_share),
        ns(p.span_ns),
        pct(p.active_idle_share),
        if p.busy_is_upper_bound { "at most " } else { "" },
        ns(p.busy_ns),
        source_said(p),
    )
}

/// "explains X (Y% of pid N's Z GPU idle time)".
fn explains(r: &ChainReport, c: &CausalChain) -> String {
    let whole = c
        .victim_pid
        .and_then(|pid| r.gpu_idle.iter().find(|p| p.pid == pid));
    match whole {
        Some(p) => format!(
            "explains {} ({} of pid {}'s {} GPU idle time in its loop, first to last CUDA call)",
            ns(c.explained_ns),
            pct(c.explained_share),
            p.pid,
            ns(p.loop_idle_ns())
        ),
        None => format!(
            "explains {} ({} of the GPU idle time in the loop)",
            ns(c.explained_ns),
            pct(c.explained_share)
        ),
    }
}

/// Every evidence item of a chain, readable, on one line.
fn evidence_line(c: &CausalChain) -> String {
    let items: Vec<String> = c
        .evidence
        .iter()
        .map(|e| format!("{} {}", e.label, e.unit.readable(e.value)))
        .collect();
    items.join("; ")
}
