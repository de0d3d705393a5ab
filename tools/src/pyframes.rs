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
    let compiling = py().any(|f| {
        COMPILE_FILES.iter().any(|c| f.file.contains(c))
            || (f.file.contains("triton/runtime/autotuner.py") && f.function.contains("bench"))
            || (f.file.contains("torch/_inductor/cudagraph_trees.py")
                && f.function.contains("record"))
    });
    if compiling {
        PyActivity::Compile
    } else if py().any(|f| f.file.starts_with("<frozen importlib")) {
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
    let mut stmt = conn.prepare(
        "SELECT s.pid, s.tid, s.stack_id, s.state = 1, COUNT(*), st.frames \
         FROM stack_samples s JOIN stacks st ON st.id = s.stack_id \
         WHERE s.kind = ?1 AND s.ts_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR s.pid = ?4) \
         GROUP BY s.pid, s.tid, s.stack_id, s.state = 1",
    )?;
    let rows = stmt.query_map(params![kind, lo, hi, pid], |r| {
        Ok((
            (r.get::<_, i32>(0)?, r.get::<_, i32>(1)?),
            r.get::<_, i64>(2)?,
            r.get::<_, bool>(3)?,
            r.get::<_, i64>(4)?.max(0) as u64,
            r.get::<_, String>(5)?,
        ))
    })?;
    let mut parsed: HashMap<i64, (PyActivity, Option<(String, String)>)> = HashMap::new();
    let mut leaves: BTreeMap<(i32, i32), HashMap<(String, String), u64>> = BTreeMap::new();
    let mut out: BTreeMap<(i32, i32), PyProfile> = BTreeMap::new();
    for row in rows {
        let (key, stack_id, active, n, text) = row?;
        let (activity, leaf) = parsed
            .entry(stack_id)
            .or_insert_with(|| {
                let frames = parse_frames(&text).unwrap_or_default();
                let leaf = frames
                    .iter()
                    .find(|f| f.kind == FrameKind::Python)
                    .map(|f| (f.function.clone(), short_file(&f.file)));
                (classify(&frames), leaf)
            })
            .clone();
        let p = out.entry(key).or_default();
        let name = activity_name(activity);
        p.samples += n;
        *p.by_activity.entry(name).or_default() += n;
        if active {
            p.active += n;
            *p.active_by_activity.entry(name).or_default() += n;
            if matches!(activity, PyActivity::Loader | PyActivity::Other) {
                if let Some(l) = leaf {
                    *leaves.entry(key).or_default().entry(l).or_default() += n;
                }
            }
        }
    }
    for (key, p) in out.iter_mut() {
        p.sample_ns = period_ns * scale.get(key).copied().unwrap_or(1.0);
        if let Some(l) = leaves.remove(key) {
            let mut v: Vec<PyFunction> = l
                .into_iter()
                .map(|((function, file), samples)| PyFunction {
                    function,
                    file,
                    samples,
                })
                .collect();
            v.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
            v.truncate(5);
            p.top_functions = v;
        }
    }
    Ok(out)
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
        let fetch = [
            py(&format!("{sp}torch/utils/data/_utils/fetch.py"), "fetch"),
            py("train.py", "main"),
        ];
        assert_eq!(classify(&fetch), PyActivity::Loader);
        assert_eq!(classify(&[]), PyActivity::Other);
    }
}
