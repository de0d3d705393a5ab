//! Hot stacks: what the host was doing, by stack samples, with shares of a
//! stated whole.
//!
//! Each sample is put in a category by joining it with its own thread's
//! CUDA calls and scheduler intervals at its instant: a sample inside an
//! outer CUDA call is `in_cuda`; an off-CPU sample (or a Python sample
//! taken while the thread was off the CPU) is `blocked` or `preempted` as
//! its switch record says; any other is `on_cpu` (host compute outside
//! CUDA, the host wait of a GPU thread). Samples weigh time: an on-CPU or
//! Python sample stands for one sampling period (1/hz of its source), an
//! off-CPU sample for the time the thread stayed off; Ingero's call-site
//! stacks weigh one call each.

use crate::error::{Result, ToolError};
use crate::scope::Scope;
use ingero_store::stacks::parse_frames;
use ingero_store::{FrameKind, StackFrame, StackKind, TraceDb};
use rusqlite::params;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What a sample's thread was doing at its instant.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Running on the CPU outside any CUDA call (host compute: the GPU
    /// thread's host wait).
    OnCpu,
    /// Inside an outer CUDA call.
    InCuda,
    /// Off the CPU, waiting (sleep, lock, I/O, a sync that blocks).
    Blocked,
    /// Off the CPU though runnable (another task had the CPU).
    Preempted,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 4] = [
        Category::OnCpu,
        Category::InCuda,
        Category::Blocked,
        Category::Preempted,
    ];

    /// Words for text output.
    pub fn words(self) -> &'static str {
        match self {
            Category::OnCpu => "on-CPU outside CUDA",
            Category::InCuda => "inside CUDA calls",
            Category::Blocked => "blocked",
            Category::Preempted => "preempted",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(s: &str) -> Option<Category> {
        match s {
            "on_cpu" => Some(Category::OnCpu),
            "in_cuda" => Some(Category::InCuda),
            "blocked" => Some(Category::Blocked),
            "preempted" => Some(Category::Preempted),
            _ => None,
        }
    }
}

/// Which samples to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SampleSet {
    /// Python samples (py-spy).
    Python,
    /// Native on-CPU and off-CPU samples together (time-weighted).
    Native,
    /// Native on-CPU samples only.
    OnCpu,
    /// Native off-CPU samples only.
    OffCpu,
    /// Stacks at CUDA call entries (Ingero files).
    CallSite,
}

impl SampleSet {
    fn kinds(self) -> &'static [i64] {
        match self {
            SampleSet::Python => &[3],
            SampleSet::Native => &[1, 2],
            SampleSet::OnCpu => &[1],
            SampleSet::OffCpu => &[2],
            SampleSet::CallSite => &[4],
        }
    }

    fn words(self) -> &'static str {
        match self {
            SampleSet::Python => "Python",
            SampleSet::Native => "native",
            SampleSet::OnCpu => "native on-CPU",
            SampleSet::OffCpu => "native off-CPU",
            SampleSet::CallSite => "CUDA call-site",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(s: &str) -> Option<SampleSet> {
        match s {
            "python" => Some(SampleSet::Python),
            "native" => Some(SampleSet::Native),
            "on_cpu" => Some(SampleSet::OnCpu),
            "off_cpu" => Some(SampleSet::OffCpu),
            "call_site" => Some(SampleSet::CallSite),
            _ => None,
        }
    }
}

/// A question about stacks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StackQuery {
    /// Window and process.
    pub scope: Scope,
    /// Only this thread.
    pub tid: Option<i32>,
    /// Only the GPU-driving thread (the one with most CUDA calls in scope) when no tid is given.
    pub gpu_thread: bool,
    /// Which samples; Python when the scope has any, else native.
    pub set: Option<SampleSet>,
    /// Only samples of this category.
    pub category: Option<Category>,
    /// Hot stacks and frames listed (default 10).
    pub limit: usize,
}

/// How one kind of sample was taken.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SampleSource {
    /// on_cpu, off_cpu, python or call_site.
    pub kind: String,
    /// Rate per second per thread (0 = one per event).
    pub hz: i64,
    /// What the sampler said about itself.
    pub note: String,
}

/// Weight of one category among the samples read.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CategoryShare {
    /// The category.
    pub category: Category,
    /// Samples in it.
    pub samples: u64,
    /// Time they stand for, ns.
    pub time_ns: i64,
    /// Share of the time of every sample read (0-1).
    pub share: f64,
}

/// One distinct stack and its weight.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HotStack {
    /// Stack id (decimal string of the stored 64-bit id).
    pub stack_id: String,
    /// Samples of this stack.
    pub samples: u64,
    /// Time they stand for, ns.
    pub time_ns: i64,
    /// Share of the whole (0-1).
    pub share: f64,
    /// Frames, innermost first.
    pub frames: Vec<StackFrame>,
}

/// One function and its weight.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FrameShare {
    /// `module:function` (`fetch.py:<listcomp>`, `libc.so.6:memcpy`).
    pub frame: String,
    /// Python: source file and line of the hottest sample, else empty.
    pub location: String,
    /// Share of the whole where it is the innermost frame of its kind (0-1).
    pub self_share: f64,
    /// Share of the whole where it is anywhere on the stack (0-1).
    pub total_share: f64,
    /// Samples with it innermost.
    pub self_samples: u64,
    /// Samples with it anywhere.
    pub total_samples: u64,
}

/// Answer of [`hot_stacks`].
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StackReport {
    /// What every share is a share of, in words.
    pub whole: String,
    /// The samples read.
    pub set: SampleSet,
    /// Thread the report is about, when one.
    pub tid: Option<i32>,
    /// Category filter, when one.
    pub category: Option<Category>,
    /// Samples in the whole.
    pub samples: u64,
    /// Time they stand for, ns.
    pub time_ns: i64,
    /// Samples taken in the window for the same kinds, pid and thread, stored or not
    /// (stack_counts); more than samples when the raw-row policy kept a part.
    pub taken: u64,
    /// The whole split by category (before the category filter).
    pub categories: Vec<CategoryShare>,
    /// The heaviest stacks.
    pub stacks: Vec<HotStack>,
    /// The heaviest Python functions (by self share, then total).
    pub top_python: Vec<FrameShare>,
    /// The heaviest native functions (user space, by self share, then total).
    pub top_native: Vec<FrameShare>,
    /// One sentence: the heaviest innermost frame and its share of the whole.
    pub headline: Option<String>,
    /// How each kind was sampled.
    pub sources: Vec<SampleSource>,
    /// What the data cannot say.
    pub notes: Vec<String>,
}

/// One stored sample, categorised and weighed.
struct Sample {
    stack_id: i64,
    category: Category,
    weight_ns: i64,
}

/// Intervals of one thread, sorted by start: (start, end, value).
type Spans = Vec<(i64, i64, i64)>;

fn inside(spans: &Spans, ts: i64) -> Option<i64> {
    let i = spans.partition_point(|s| s.0 <= ts);
    let s = spans.get(i.checked_sub(1)?)?;
    (ts <= s.1).then_some(s.2)
}

fn sources(db: &TraceDb) -> Result<Vec<SampleSource>> {
    let mut stmt = db
        .conn()
        .prepare("SELECT kind, MAX(hz), GROUP_CONCAT(note, ' | ') FROM stack_sources GROUP BY kind ORDER BY kind")?;
    let rows = stmt
        .query_map([], |r| {
            Ok(SampleSource {
                kind: StackKind::from_id(r.get(0)?)
                    .map(|k| k.as_str().to_string())
                    .unwrap_or_else(|| "unknown".into()),
                hz: r.get(1)?,
                note: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The thread with the most outer CUDA calls in the window (and process).
pub fn gpu_thread(db: &TraceDb, scope: &Scope) -> Result<Option<i32>> {
    let w = db.resolve(&scope.window);
    let tid = db.conn().query_row(
        "SELECT tid FROM cuda_calls WHERE ts_ns BETWEEN ?1 AND ?2 AND (?3 IS NULL OR pid = ?3) \
         AND nested <> 1 GROUP BY tid ORDER BY COUNT(*) DESC LIMIT 1",
        params![w.lo_ns, w.hi_ns, scope.pid],
        |r| r.get::<_, i32>(0),
    );
    match tid {
        Ok(t) => Ok(Some(t)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The default sample set of a scope: Python where it has Python samples.
fn default_set(db: &TraceDb, lo: i64, hi: i64, pid: Option<i32>) -> Result<SampleSet> {
    let python: bool = db.conn().query_row(
        "SELECT EXISTS(SELECT 1 FROM stack_samples WHERE kind = 3 AND ts_ns BETWEEN ?1 AND ?2 \
         AND (?3 IS NULL OR pid = ?3))",
        params![lo, hi, pid],
        |r| r.get(0),
    )?;
    if python {
        return Ok(SampleSet::Python);
    }
    let call_site_only: bool = db.conn().query_row(
        "SELECT EXISTS(SELECT 1 FROM stack_samples WHERE kind = 4) \
         AND NOT EXISTS(SELECT 1 FROM stack_samples WHERE kind IN (1, 2))",
        [],
        |r| r.get(0),
    )?;
    Ok(if call_site_only {
        SampleSet::CallSite
    } else {
        SampleSet::Native
    })
}

/// Reads, categorises and weighs the samples of `q`.
fn load(
    db: &TraceDb,
    q: &StackQuery,
    set: SampleSet,
    tid: Option<i32>,
    hz: &HashMap<i64, i64>,
) -> Result<Vec<Sample>> {
    let w = db.resolve(&q.scope.window);
    let kinds = set.kinds();
    let list = kinds
        .iter()
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut stmt = db.conn().prepare(&format!(
        "SELECT ts_ns, tid, kind, off_cpu_ns, state, stack_id FROM stack_samples \
         WHERE kind IN ({list}) AND ts_ns BETWEEN ?1 AND ?2 AND (?3 IS NULL OR pid = ?3) \
         AND (?4 IS NULL OR tid = ?4) ORDER BY ts_ns"
    ))?;
    let raw = stmt
        .query_map(params![w.lo_ns, w.hi_ns, q.scope.pid, tid], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i32>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut tids: Vec<i32> = raw.iter().map(|r| r.1).collect();
    tids.sort_unstable();
    tids.dedup();
    let mut calls: HashMap<i32, Spans> = HashMap::new();
    let mut off: HashMap<i32, Spans> = HashMap::new();
    let needs_joins = set != SampleSet::CallSite;
    if needs_joins {
        let mut c = db.conn().prepare_cached(
            "SELECT ts_ns, ts_ns + dur_ns FROM cuda_calls WHERE tid = ?1 AND nested <> 1 \
             AND ts_ns <= ?3 AND ts_ns + dur_ns >= ?2 ORDER BY ts_ns",
        )?;
        let mut h = db.conn().prepare_cached(
            "SELECT ts_ns, ts_ns + dur_ns, arg FROM host_events WHERE tid = ?1 AND kind = 1 \
             AND ts_ns <= ?3 AND ts_ns + dur_ns >= ?2 ORDER BY ts_ns",
        )?;
        for t in &tids {
            let spans = c
                .query_map(params![t, w.lo_ns, w.hi_ns], |r| {
                    Ok((r.get(0)?, r.get(1)?, 0))
                })?
                .collect::<rusqlite::Result<Spans>>()?;
            calls.insert(*t, spans);
            let spans = h
                .query_map(params![t, w.lo_ns, w.hi_ns], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<rusqlite::Result<Spans>>()?;
            off.insert(*t, spans);
        }
    }
    let period = |kind: i64| -> i64 {
        let hz = hz.get(&kind).copied().filter(|h| *h > 0).unwrap_or(99);
        1_000_000_000 / hz
    };
    let empty = Spans::new();
    let out = raw
        .into_iter()
        .map(|(ts, t, kind, off_ns, state, stack_id)| {
            let offs = off.get(&t).unwrap_or(&empty);
            let category = match kind {
                2 => {
                    if state == 1 {
                        Category::Preempted
                    } else {
                        Category::Blocked
                    }
                }
                4 => Category::InCuda,
                _ => {
                    if let Some(arg) = inside(offs, ts) {
                        if arg == 1 {
                            Category::Preempted
                        } else {
                            Category::Blocked
                        }
                    } else if inside(calls.get(&t).unwrap_or(&empty), ts).is_some() {
                        Category::InCuda
                    } else if kind == 3 && state == 0 && offs.is_empty() {
                        Category::Blocked
                    } else {
                        Category::OnCpu
                    }
                }
            };
            let weight_ns = match kind {
                2 => off_ns.max(0),
                4 => 1,
                k => period(k),
            };
            Sample {
                stack_id,
                category,
                weight_ns,
            }
        })
        .collect();
    Ok(out)
}

fn share(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        (part as f64 / whole as f64).clamp(0.0, 1.0)
    }
}

/// Per-frame accumulator.
#[derive(Default)]
struct Acc {
    self_ns: i64,
    total_ns: i64,
    self_n: u64,
    total_n: u64,
    location: String,
    best_self: i64,
}

fn frame_label(f: &StackFrame) -> String {
    f.label()
}

/// The innermost frame of `kind` on `frames` (user-space native for
/// [`FrameKind::Native`]).
fn innermost(frames: &[StackFrame], kind: FrameKind) -> Option<&StackFrame> {
    frames.iter().find(|f| f.kind == kind)
}

fn top_frames(
    stacks: &[(i64, u64, i64)],
    frames: &HashMap<i64, Vec<StackFrame>>,
    kind: FrameKind,
    whole_ns: i64,
    limit: usize,
) -> Vec<FrameShare> {
    let mut acc: HashMap<String, Acc> = HashMap::new();
    for (id, n, ns) in stacks {
        let Some(fr) = frames.get(id) else { continue };
        if let Some(leaf) = innermost(fr, kind) {
            let a = acc.entry(frame_label(leaf)).or_default();
            a.self_ns += ns;
            a.self_n += n;
            if *ns > a.best_self && kind == FrameKind::Python {
                a.best_self = *ns;
                a.location = format!("{}:{}", leaf.file, leaf.line);
            }
        }
        let mut seen: Vec<String> = Vec::new();
        for f in fr.iter().filter(|f| f.kind == kind) {
            let l = frame_label(f);
            if seen.contains(&l) {
                continue;
            }
            let a = acc.entry(l.clone()).or_default();
            a.total_ns += ns;
            a.total_n += n;
            if a.location.is_empty() && kind == FrameKind::Python {
                a.location = format!("{}:{}", f.file, f.line);
            }
            seen.push(l);
        }
    }
    let mut v: Vec<FrameShare> = acc
        .into_iter()
        .map(|(frame, a)| FrameShare {
            frame,
            location: a.location,
            self_share: share(a.self_ns, whole_ns),
            total_share: share(a.total_ns, whole_ns),
            self_samples: a.self_n,
            total_samples: a.total_n,
        })
        .collect();
    v.sort_by(|a, b| {
        b.self_share
            .total_cmp(&a.self_share)
            .then(b.total_share.total_cmp(&a.total_share))
            .then(a.frame.cmp(&b.frame))
    });
    v.truncate(limit);
    v
}

/// Reads the frames of the stacks `ids`.
fn stack_frames(db: &TraceDb, ids: &[i64]) -> Result<HashMap<i64, Vec<StackFrame>>> {
    let mut stmt = db
        .conn()
        .prepare_cached("SELECT frames FROM stacks WHERE id = ?1")?;
    let mut out = HashMap::new();
    for id in ids {
        let text: Option<String> = match stmt.query_row([id], |r| r.get(0)) {
            Ok(t) => Some(t),
            Err(rusqlite::Error::QueryReturnedNoRows) => None,
            Err(e) => return Err(e.into()),
        };
        let frames = text.as_deref().and_then(parse_frames).unwrap_or_default();
        out.insert(*id, frames);
    }
    Ok(out)
}

/// Weighted stacks of a query: (stack id, samples, time), heaviest first,
/// with the report's framing. Shared by [`hot_stacks`] and [`folded`].
struct Weighed {
    set: SampleSet,
    tid: Option<i32>,
    all: Vec<Sample>,
    stacks: Vec<(i64, u64, i64)>,
    whole_ns: i64,
    whole_n: u64,
}

fn weigh(db: &TraceDb, q: &StackQuery) -> Result<Weighed> {
    let w = db.resolve(&q.scope.window);
    let set = match q.set {
        Some(s) => s,
        None => default_set(db, w.lo_ns, w.hi_ns, q.scope.pid)?,
    };
    let tid = match (q.tid, q.gpu_thread) {
        (Some(t), _) => Some(t),
        (None, true) => gpu_thread(db, &q.scope)?,
        (None, false) => None,
    };
    let mut hz: HashMap<i64, i64> = HashMap::new();
    {
        let mut stmt = db
            .conn()
            .prepare("SELECT kind, MAX(hz) FROM stack_sources GROUP BY kind")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?;
        for r in rows {
            let (k, h) = r?;
            hz.insert(k, h);
        }
    }
    let all = load(db, q, set, tid, &hz)?;
    let mut by_stack: HashMap<i64, (u64, i64)> = HashMap::new();
    let mut whole_ns = 0;
    let mut whole_n = 0;
    for s in all
        .iter()
        .filter(|s| q.category.is_none_or(|c| c == s.category))
    {
        let e = by_stack.entry(s.stack_id).or_default();
        e.0 += 1;
        e.1 += s.weight_ns;
        whole_ns += s.weight_ns;
        whole_n += 1;
    }
    let mut stacks: Vec<(i64, u64, i64)> = by_stack
        .into_iter()
        .map(|(id, (n, ns))| (id, n, ns))
        .collect();
    stacks.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
    Ok(Weighed {
        set,
        tid,
        all,
        stacks,
        whole_ns,
        whole_n,
    })
}

fn whole_words(
    set: SampleSet,
    category: Option<Category>,
    tid: Option<i32>,
    pid: Option<i32>,
) -> String {
    let mut s = String::new();
    if let Some(c) = category {
        s.push_str(c.words());
        s.push(' ');
    }
    s.push_str(set.words());
    s.push_str(" samples");
    match (tid, pid) {
        (Some(t), _) => s.push_str(&format!(" of thread {t}")),
        (None, Some(p)) => s.push_str(&format!(" of process {p}")),
        (None, None) => s.push_str(" of every traced thread"),
    }
    s
}

/// Hot stacks, categories and top frames of the samples `q` selects.
pub fn hot_stacks(db: &TraceDb, q: &StackQuery) -> Result<StackReport> {
    if q.limit > 1000 {
        return Err(ToolError::BadArgument("limit must be at most 1000".into()));
    }
    let limit = if q.limit == 0 { 10 } else { q.limit };
    let wd = weigh(db, q)?;
    let w = db.resolve(&q.scope.window);
    let total_all: i64 = wd.all.iter().map(|s| s.weight_ns).sum();
    let categories = Category::ALL
        .iter()
        .map(|c| {
            let (n, ns) = wd
                .all
                .iter()
                .filter(|s| s.category == *c)
                .fold((0u64, 0i64), |(n, ns), s| (n + 1, ns + s.weight_ns));
            CategoryShare {
                category: *c,
                samples: n,
                time_ns: ns,
                share: share(ns, total_all),
            }
        })
        .filter(|c| c.samples > 0)
        .collect();
    let ids: Vec<i64> = wd.stacks.iter().map(|s| s.0).collect();
    let frames = stack_frames(db, &ids)?;
    let stacks = wd
        .stacks
        .iter()
        .take(limit)
        .map(|(id, n, ns)| HotStack {
            stack_id: id.to_string(),
            samples: *n,
            time_ns: *ns,
            share: share(*ns, wd.whole_ns),
            frames: frames.get(id).cloned().unwrap_or_default(),
        })
        .collect();
    let top_python = top_frames(&wd.stacks, &frames, FrameKind::Python, wd.whole_ns, limit);
    let top_native = top_frames(&wd.stacks, &frames, FrameKind::Native, wd.whole_ns, limit);
    let whole = whole_words(wd.set, q.category, wd.tid, q.scope.pid);
    let lead = if wd.set == SampleSet::Python {
        top_python.first()
    } else {
        top_native.first()
    };
    let headline = lead.filter(|f| f.self_samples > 0).map(|f| {
        let at = if f.location.is_empty() {
            String::new()
        } else {
            format!(" ({})", f.location)
        };
        format!("{:.0}% of {whole} in {}{at}", f.self_share * 100.0, f.frame)
    });
    let list = wd
        .set
        .kinds()
        .iter()
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let taken: i64 = db.conn().query_row(
        &format!(
            "SELECT COALESCE(SUM(count), 0) FROM stack_counts WHERE kind IN ({list}) \
             AND bucket_ns BETWEEN ?1 - ?4 + 1 AND ?2 AND (?3 IS NULL OR pid = ?3) \
             AND (?5 IS NULL OR tid = ?5)"
        ),
        params![
            w.lo_ns,
            w.hi_ns,
            q.scope.pid,
            db.aggregate_bucket_ns(),
            wd.tid
        ],
        |r| r.get(0),
    )?;
    let mut notes = Vec::new();
    if wd.whole_n == 0 {
        notes.push(format!(
            "no {} in the window (record with `ingero trace --stack-hz 99`)",
            whole
        ));
    }
    if (taken as u64) > wd.all.len() as u64 {
        notes.push(format!(
            "{} of {} samples taken were stored (raw-row policy); shares are of the stored ones",
            wd.all.len(),
            taken
        ));
    }
    if wd.set == SampleSet::CallSite {
        notes.push(
            "call-site stacks are taken at CUDA call entries: they say where calls come from, \
             not where host time goes"
                .into(),
        );
    }
    Ok(StackReport {
        whole,
        set: wd.set,
        tid: wd.tid,
        category: q.category,
        samples: wd.whole_n,
        time_ns: wd.whole_ns,
        taken: taken.max(0) as u64,
        categories,
        stacks,
        top_python,
        top_native,
        headline,
        sources: sources(db)?,
        notes,
    })
}

/// Folded stacks (`root;...;leaf weight`, one line per distinct stack) for
/// flamegraph.pl, speedscope and inferno: the samples of `q`, weighed in
/// microseconds of the time they stand for (on-CPU/Python: sampling
/// periods, off-CPU: time off the CPU; call sites: calls).
pub fn folded(db: &TraceDb, q: &StackQuery) -> Result<String> {
    let wd = weigh(db, q)?;
    let ids: Vec<i64> = wd.stacks.iter().map(|s| s.0).collect();
    let frames = stack_frames(db, &ids)?;
    // Stacks that differ only in what a label leaves out (Python line
    // numbers, native offsets) fold into one line.
    let mut merged: Vec<(String, i64)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (id, _, ns) in &wd.stacks {
        let Some(fr) = frames.get(id) else { continue };
        let path: Vec<String> = fr
            .iter()
            .rev()
            .map(|f| frame_label(f).replace([';', '\n'], "_").replace(' ', "_"))
            .collect();
        let path = if path.is_empty() {
            "[unknown]".to_string()
        } else {
            path.join(";")
        };
        match index.get(&path) {
            Some(i) => merged[*i].1 += ns,
            None => {
                index.insert(path.clone(), merged.len());
                merged.push((path, *ns));
            }
        }
    }
    merged.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = String::new();
    for (path, ns) in merged {
        let weight = if wd.set == SampleSet::CallSite {
            ns
        } else {
            (ns / 1_000).max(1)
        };
        out.push_str(&format!("{path} {weight}\n"));
    }
    Ok(out)
}

/// Folded stacks of `q` as (root-first labels, weight) pairs, for the
/// report's flame graph.
pub fn folded_pairs(db: &TraceDb, q: &StackQuery) -> Result<Vec<(Vec<String>, u64)>> {
    let text = folded(db, q)?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let (path, w) = l.rsplit_once(' ')?;
            Some((
                path.split(';').map(str::to_string).collect(),
                w.parse().ok()?,
            ))
        })
        .collect())
}
