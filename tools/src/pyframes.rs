//! What a thread's Python stack samples say it was doing.
//!
//! A Python sample is the thread's whole interpreter stack at one instant.
//! Some activities leave an unmistakable frame anywhere in that stack: a
//! DataLoader fetch runs under `torch/utils/data/`, a `torch.compile`
//! compilation under dynamo's frame conversion or inductor's compiler,
//! Triton's JIT under `triton/compiler/`, a module import under the
//! interpreter's import machinery. Counting samples by such frames gives a
//! finding its evidence (how many of the thread's samples, at which rate),
//! and the innermost frames of the rest say where any other Python time
//! went, without naming a mechanism the frames do not show.

use ingero_store::stacks::parse_frames;
use ingero_store::{FrameKind, StackFrame, StackKind};
use rusqlite::{params, Connection};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// What one Python sample shows its thread doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PyActivity {
    /// Compiling: `torch.compile` (dynamo frame conversion, AOT autograd,
    /// inductor), Triton's JIT and autotuning benchmarks, TorchScript,
    /// CUDA-graph recording.
    Compile,
    /// Importing a module (the interpreter's import machinery).
    Import,
    /// Fetching or collating in a DataLoader (`torch/utils/data`).
    Loader,
    /// Anything else.
    Other,
}

/// Source files whose presence anywhere in a stack means the thread is
/// compiling, not running compiled code (the runtime wrappers such as
/// dynamo's `eval_frame.py` are left out on purpose: every call of a
/// compiled model passes through them).
const COMPILE_FILES: &[&str] = &[
    "torch/_dynamo/convert_frame.py",
    "torch/_dynamo/symbolic_convert.py",
    "torch/_functorch/aot_autograd.py",
    "torch/_inductor/compile_fx.py",
    "torch/_inductor/codecache.py",
    "torch/_inductor/async_compile.py",
    "torch/_inductor/select_algorithm.py",
    "triton/compiler/",
    "torch/jit/frontend.py",
    "torch/jit/_script.py",
];

/// The activity one stack (innermost frame first) shows.
pub fn classify(frames: &[StackFrame]) -> PyActivity {
    let py = || frames.iter().filter(|f| f.kind == FrameKind::Python);
    // A compiler's module body running is its import, not a compilation.
    let compiling = py().filter(|f| f.function != "<module>").any(|f| {
        COMPILE_FILES.iter().any(|c| f.file.contains(c))
            || (f.file.contains("triton/runtime/autotuner.py") && f.function.contains("bench"))
            || (f.file.contains("torch/_inductor/cudagraph_trees.py")
                && f.function.contains("record"))
    });
    let importing = py().any(|f| f.file.starts_with("<frozen importlib"));
    // An import inside a call of a compiled function (under dynamo's
    // wrapper) is the first call loading the compiler: compile time.
    let first_compiled_call =
        importing && py().any(|f| f.file.contains("torch/_dynamo/eval_frame.py"));
    if compiling || first_compiled_call {
        PyActivity::Compile
    } else if importing {
        PyActivity::Import
    } else if py().any(|f| f.file.contains("torch/utils/data/")) {
        PyActivity::Loader
    } else {
        PyActivity::Other
    }
}

/// One Python function and how many samples had it innermost.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PyFunction {
    /// Function (qualified name as the sampler reports it).
    pub function: String,
    /// Its source file, shortened to the part after `site-packages/`.
    pub file: String,
    /// Samples with this function innermost.
    pub samples: u64,
}

/// One stored Python sample of a thread, reduced to what the profiles use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PySample {
    /// When it was taken, epoch ns.
    pub ts_ns: i64,
    /// What its stack shows.
    pub activity: PyActivity,
    /// Running or runnable in the sampler's judgement.
    pub active: bool,
    /// Index of its innermost Python function in [`PyProfile::functions`].
    pub leaf: Option<u32>,
}

/// Python samples of one thread in the window, by activity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PyProfile {
    /// Samples stored (every state).
    pub samples: u64,
    /// Of which the sampler saw the thread running or runnable.
    pub active: u64,
    /// Samples per activity, every state (a compilation also waits on its
    /// compiler processes).
    pub by_activity: BTreeMap<&'static str, u64>,
    /// Running samples per activity.
    pub active_by_activity: BTreeMap<&'static str, u64>,
    /// Wall time one stored sample stands for, ns (the sampler's period,
    /// scaled up where the capture kept only some of its samples).
    pub sample_ns: f64,
    /// The innermost functions of the running samples outside imports and
    /// compilation, most frequent first (at most five).
    pub top_functions: Vec<PyFunction>,
    /// Every sample, in time order (for profiles of a part of the window).
    pub timeline: Vec<PySample>,
    /// Innermost functions (function, short file) the samples point at,
    /// one table shared by every thread's profile.
    pub functions: Arc<[(String, String)]>,
}

impl PyProfile {
    /// Samples of `a`, every state.
    pub fn of(&self, a: PyActivity) -> u64 {
        self.by_activity.get(activity_name(a)).copied().unwrap_or(0)
    }

    /// Running samples of `a`.
    pub fn active_of(&self, a: PyActivity) -> u64 {
        self.active_by_activity
            .get(activity_name(a))
            .copied()
            .unwrap_or(0)
    }

    /// Wall time the samples of `a` stand for, ns.
    pub fn time_of(&self, a: PyActivity) -> i64 {
        (self.of(a) as f64 * self.sample_ns) as i64
    }

    /// What the running samples show, as shares of them: imports and
    /// compilation where present, then the innermost functions of the rest.
    pub fn describe(&self) -> String {
        let whole = self.active.max(1) as f64;
        let pct = |n: u64| crate::format::pct(n as f64 / whole);
        let mut parts = Vec::new();
        for (a, what) in [
            (PyActivity::Import, "importing modules"),
            (PyActivity::Compile, "compiling"),
        ] {
            let n = self.active_of(a);
            if n > 0 && n as f64 >= 0.05 * whole {
                parts.push(format!("{what} {}", pct(n)));
            }
        }
        let top: Vec<String> = self
            .top_functions
            .iter()
            .take(3)
            .map(|f| format!("{} ({}) {}", f.function, f.file, pct(f.samples)))
            .collect();
        if !top.is_empty() {
            parts.push(format!("innermost {}", top.join(", ")));
        }
        format!("{} running samples: {}", self.active, parts.join("; "))
    }

    /// The same thread's profile over `[lo, hi]` only.
    pub fn within(&self, lo: i64, hi: i64) -> PyProfile {
        let a = self.timeline.partition_point(|s| s.ts_ns < lo);
        let b = self.timeline.partition_point(|s| s.ts_ns <= hi);
        summarise(
            self.timeline[a..b.max(a)].to_vec(),
            Arc::clone(&self.functions),
            self.sample_ns,
        )
    }
}

/// Counts a thread's samples into its profile.
fn summarise(
    timeline: Vec<PySample>,
    functions: Arc<[(String, String)]>,
    sample_ns: f64,
) -> PyProfile {
    let mut p = PyProfile {
        sample_ns,
        ..PyProfile::default()
    };
    let mut leaves: HashMap<u32, u64> = HashMap::new();
    for s in &timeline {
        let name = activity_name(s.activity);
        p.samples += 1;
        *p.by_activity.entry(name).or_default() += 1;
        if s.active {
            p.active += 1;
            *p.active_by_activity.entry(name).or_default() += 1;
            if matches!(s.activity, PyActivity::Loader | PyActivity::Other) {
                if let Some(l) = s.leaf {
                    *leaves.entry(l).or_default() += 1;
                }
            }
        }
    }
    let mut top: Vec<PyFunction> = leaves
        .into_iter()
        .filter_map(|(l, samples)| {
            functions
                .get(l as usize)
                .map(|(function, file)| PyFunction {
                    function: function.clone(),
                    file: file.clone(),
                    samples,
                })
        })
        .collect();
    top.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
    top.truncate(5);
    p.top_functions = top;
    p.timeline = timeline;
    p.functions = functions;
    p
}

/// Stable name of an activity.
pub fn activity_name(a: PyActivity) -> &'static str {
    match a {
        PyActivity::Compile => "compile",
        PyActivity::Import => "import",
        PyActivity::Loader => "loader",
        PyActivity::Other => "other",
    }
}

fn short_file(file: &str) -> String {
    file.rsplit_once("site-packages/")
        .map_or(file, |(_, rest)| rest)
        .to_string()
}

/// The Python profile of every sampled thread in `[lo, hi]` (of `pid` when
/// not 0), keyed by `(pid, tid)`. Each distinct stack is parsed once.
pub fn load(
    conn: &Connection,
    lo: i64,
    hi: i64,
    pid: i32,
) -> rusqlite::Result<BTreeMap<(i32, i32), PyProfile>> {
    let kind = StackKind::Python.id();
    let hz: i64 = conn
        .query_row(
            "SELECT COALESCE(MAX(hz), 0) FROM stack_sources WHERE kind = ?1",
            params![kind],
            |r| r.get(0),
        )
        .unwrap_or(0);
    let period_ns = 1e9 / (if hz > 0 { hz } else { 99 }) as f64;
    // Samples taken per stored one, per thread (stack_counts counts them all).
    let mut scale: HashMap<(i32, i32), f64> = HashMap::new();
    let mut stmt = conn.prepare(
        "SELECT pid, tid, SUM(count), SUM(stored) FROM stack_counts \
         WHERE kind = ?1 AND bucket_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR pid = ?4) \
         GROUP BY pid, tid",
    )?;
    let rows = stmt.query_map(params![kind, lo - 1_000_000_000, hi, pid], |r| {
        Ok((
            (r.get::<_, i32>(0)?, r.get::<_, i32>(1)?),
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (key, count, stored) = row?;
        if stored > 0 && count >= stored {
            scale.insert(key, count as f64 / stored as f64);
        }
    }
    // Each distinct stack once: its activity and innermost function.
    let mut stacks: HashMap<i64, (PyActivity, Option<u32>)> = HashMap::new();
    let mut functions: Vec<(String, String)> = Vec::new();
    let mut index: HashMap<(String, String), u32> = HashMap::new();
    let mut stmt = conn.prepare(
        "SELECT DISTINCT st.id, st.frames FROM stack_samples s JOIN stacks st ON st.id = s.stack_id \
         WHERE s.kind = ?1 AND s.ts_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR s.pid = ?4)",
    )?;
    let rows = stmt.query_map(params![kind, lo, hi, pid], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })?;
    for row in rows {
        let (id, text) = row?;
        let frames = parse_frames(&text).unwrap_or_default();
        let leaf = frames
            .iter()
            .find(|f| f.kind == FrameKind::Python)
            .map(|f| {
                let key = (f.function.clone(), short_file(&f.file));
                *index.entry(key.clone()).or_insert_with(|| {
                    functions.push(key);
                    (functions.len() - 1) as u32
                })
            });
        stacks.insert(id, (classify(&frames), leaf));
    }
    let mut stmt = conn.prepare(
        "SELECT pid, tid, ts_ns, state = 1, stack_id FROM stack_samples \
         WHERE kind = ?1 AND ts_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR pid = ?4) ORDER BY ts_ns",
    )?;
    let rows = stmt.query_map(params![kind, lo, hi, pid], |r| {
        Ok((
            (r.get::<_, i32>(0)?, r.get::<_, i32>(1)?),
            r.get::<_, i64>(2)?,
            r.get::<_, bool>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    let mut timelines: BTreeMap<(i32, i32), Vec<PySample>> = BTreeMap::new();
    for row in rows {
        let (key, ts_ns, active, stack_id) = row?;
        let (activity, leaf) = stacks
            .get(&stack_id)
            .copied()
            .unwrap_or((PyActivity::Other, None));
        timelines.entry(key).or_default().push(PySample {
            ts_ns,
            activity,
            active,
            leaf,
        });
    }
    let functions: Arc<[(String, String)]> = functions.into();
    Ok(timelines
        .into_iter()
        .map(|(key, t)| {
            let sample_ns = period_ns * scale.get(&key).copied().unwrap_or(1.0);
            (key, summarise(t, Arc::clone(&functions), sample_ns))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(file: &str, function: &str) -> StackFrame {
        StackFrame {
            kind: FrameKind::Python,
            module: String::new(),
            function: function.to_string(),
            offset: 0,
            file: file.to_string(),
            line: 1,
        }
    }

    #[test]
    fn frames_name_the_activity_only_where_they_show_it() {
        let sp = "/venv/lib/python3.12/site-packages/";
        let compiling = [
            py(
                &format!("{sp}torch/_inductor/graph.py"),
                "GraphLowering.run",
            ),
            py(&format!("{sp}torch/_dynamo/convert_frame.py"), "_compile"),
            py(&format!("{sp}torch/_dynamo/eval_frame.py"), "_fn"),
        ];
        assert_eq!(classify(&compiling), PyActivity::Compile);
        // Running compiled code passes through eval_frame: not a compilation.
        let running = [
            py(
                &format!("{sp}torch/_inductor/runtime/triton_heuristics.py"),
                "run",
            ),
            py(&format!("{sp}torch/_dynamo/eval_frame.py"), "_fn"),
            py("train.py", "step"),
        ];
        assert_eq!(classify(&running), PyActivity::Other);
        let autotune = [py(&format!("{sp}triton/runtime/autotuner.py"), "_bench")];
        assert_eq!(classify(&autotune), PyActivity::Compile);
        let tuned_call = [py(&format!("{sp}triton/runtime/autotuner.py"), "run")];
        assert_eq!(classify(&tuned_call), PyActivity::Other);
        let import = [
            py("<frozen importlib._bootstrap>", "_find_and_load"),
            py("train.py", "<module>"),
        ];
        assert_eq!(classify(&import), PyActivity::Import);
        // Importing the compiler is not compiling.
        let import_compiler = [
            py(&format!("{sp}torch/_dynamo/convert_frame.py"), "<module>"),
            py("<frozen importlib._bootstrap>", "_find_and_load"),
            py(&format!("{sp}torch/optim/sgd.py"), "SGD.__init__"),
        ];
        assert_eq!(classify(&import_compiler), PyActivity::Import);
        // The first call of a compiled function loading the compiler is.
        let first_call = [
            py(&format!("{sp}torch/_inductor/compile_fx.py"), "<module>"),
            py("<frozen importlib._bootstrap>", "_find_and_load"),
            py(
                &format!("{sp}torch/_dynamo/eval_frame.py"),
                "compile_wrapper",
            ),
            py("train.py", "step"),
        ];
        assert_eq!(classify(&first_call), PyActivity::Compile);
        let fetch = [
            py(&format!("{sp}torch/utils/data/_utils/fetch.py"), "fetch"),
            py("train.py", "main"),
        ];
        assert_eq!(classify(&fetch), PyActivity::Loader);
        assert_eq!(classify(&[]), PyActivity::Other);
    }
}
