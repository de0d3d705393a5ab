//! Compilation stalls: the GPU waits while the job compiles (`torch.compile`
//! tracing and code generation, Triton's JIT and autotuning, TorchScript,
//! CUDA-graph recording).
//!
//! Evidence that identifies it, either of:
//! - Python stack samples of the GPU thread inside compilation frames
//!   (dynamo's frame conversion, AOT autograd, inductor's compiler and code
//!   cache, `triton/compiler`, autotuning benchmarks): their count at the
//!   sampler's rate is the time measured;
//! - compiler processes started by the job (`ptxas`, `cicc`, `nvcc`, `cc1`,
//!   `gcc`, `ld`, ...): their lifetimes bound the time from below.
//!
//! Without either, on-CPU time stays unexplained by this finding, whatever
//! the workload is suspected of.

use super::build::{chain, impact_points};
use super::context::Context;
use super::measured::BusyFigure;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use crate::intervals::{total, union};
use crate::pyframes::PyActivity;

const FIX: &str = "Keep compilation out of the steady loop: warm up on every input shape the job \
will see before timing or serving; stop shape changes from recompiling (pad or bucket inputs to a \
few fixed shapes, or mark the varying dimension dynamic with torch._dynamo.mark_dynamic / \
torch.compile(dynamic=True)); keep the compile caches (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR) \
on local disk and between runs; run TORCH_LOGS=recompiles to see why each recompilation happened.";

/// Command names of compiler and linker processes a compilation starts.
const COMPILERS: &[&str] = &[
    "ptxas",
    "cicc",
    "nvcc",
    "nvlink",
    "fatbinary",
    "cc1",
    "cc1plus",
    "gcc",
    "gcc-real",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "as",
    "ld",
    "ld.lld",
    "collect2",
];

/// Fewest compilation samples that count as evidence.
const MIN_SAMPLES: u64 = 20;

/// Detects GPU idle time spent compiling in the main process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let idle = ctx.main_idle()?;
    let profile = ds.py_profiles.get(&(main, idle.gpu_thread));
    let (compile_samples, all_samples) =
        profile.map_or((0, 0), |p| (p.of(PyActivity::Compile), p.samples));
    let sampled_ns = profile.map_or(0, |p| p.time_of(PyActivity::Compile));
    let frames_say = compile_samples >= MIN_SAMPLES
        && compile_samples as f64 >= 0.05 * all_samples.max(1) as f64;
    // Compiler processes of the job, and the wall time they cover together.
    let mut kids: Vec<(i64, i64, &str)> = ds
        .processes
        .values()
        .filter(|p| {
            p.pid != main && ds.descends_from(p.pid, main) && COMPILERS.contains(&p.comm.as_str())
        })
        .map(|p| {
            (
                p.first_seen_ns,
                p.last_seen_ns.max(p.first_seen_ns),
                p.comm.as_str(),
            )
        })
        .collect();
    kids.sort_unstable();
    let covered = total(&union(
        kids.iter().map(|k| (k.0, k.1)).collect(),
        (i64::MIN, i64::MAX),
    ));
    let kids_say = !kids.is_empty() && covered >= 50_000_000;
    if !frames_say && !kids_say {
        return None;
    }
    let compile_ns = if frames_say {
        sampled_ns.max(covered)
    } else {
        covered
    };
    let mut by_comm: Vec<(&str, usize)> = Vec::new();
    for (_, _, c) in &kids {
        match by_comm.iter_mut().find(|(n, _)| n == c) {
            Some(e) => e.1 += 1,
            None => by_comm.push((c, 1)),
        }
    }
    by_comm.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let kids_text = by_comm
        .iter()
        .map(|(c, n)| format!("{c} x{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let busy = BusyFigure::of_idle(idle);
    let hz = profile.map_or(0.0, |p| 1e9 / p.sample_ns.max(1.0));
    let mut seen = Vec::new();
    if frames_say {
        seen.push(format!(
            "{compile_samples} of {all_samples} Python samples of the GPU thread inside compilation frames (about {} at {hz:.0} samples/s)",
            format::ns(sampled_ns)
        ));
    }
    if !kids.is_empty() {
        seen.push(format!(
            "{} compiler process(es) started by {main} ({kids_text}), running {} in all",
            kids.len(),
            format::ns(covered)
        ));
    }
    let seen = seen.join("; ");
    let summary = format!(
        "GPU idle {} of {} ({}) <- {main} compiling for about {} ({seen}) <- compilation in the job (torch.compile / Triton JIT / autotuning), not GPU work",
        format::pct(idle.idle_share),
        format::ns(idle.span_ns),
        busy.source_label(),
        format::ns(compile_ns)
    );
    let root_cause = format!(
        "Compilation stall: {main} spends about {} compiling while its GPU idles ({seen}); each new shape or graph break compiles again unless it is warmed up or cached.",
        format::ns(compile_ns)
    );
    let mut steps = vec![step(Layer::Gpu, busy.text())];
    if frames_say {
        steps.push(step(
            Layer::Host,
            format!(
                "GPU thread {}: {compile_samples} of its {all_samples} Python samples inside compilation frames",
                idle.gpu_thread
            ),
        ));
    }
    if !kids.is_empty() {
        steps.push(step(
            Layer::System,
            format!(
                "{} compiler process(es) of {main}: {kids_text}; together alive {}",
                kids.len(),
                format::ns(covered)
            ),
        ));
    }
    let mut evidence = vec![
        Evidence::new(
            "compile_time",
            compile_ns as f64,
            Unit::Ns,
            "stack samples and processes",
        ),
        Evidence::new(
            "compile_samples",
            compile_samples as f64,
            Unit::Count,
            "Python stack samples (GPU thread)",
        ),
        Evidence::new(
            "python_samples",
            all_samples as f64,
            Unit::Count,
            "Python stack samples (GPU thread)",
        ),
        Evidence::new(
            "compiler_processes",
            kids.len() as f64,
            Unit::Count,
            "processes table",
        ),
        Evidence::new(
            "compiler_process_time",
            covered as f64,
            Unit::Ns,
            "processes table (union of lifetimes)",
        ),
        Evidence::new(
            "gpu_idle_share",
            idle.idle_share * 100.0,
            Unit::Percent,
            busy.source_label(),
        ),
    ];
    if frames_say {
        evidence.push(Evidence::new(
            "compile_sampled_time",
            sampled_ns as f64,
            Unit::Ns,
            "Python stack samples x sampling period",
        ));
    }
    let share = compile_ns as f64 / idle.span_ns.max(1) as f64;
    let score = 35.0 + if frames_say { 10.0 } else { 0.0 } + impact_points(share);
    let start = ds.window.lo_ns.max(ds.span.start_ns);
    let span = kids
        .first()
        .map(|k| k.0)
        .zip(kids.iter().map(|k| k.1).max())
        .unwrap_or((start, start + idle.span_ns));
    Some(chain(
        ctx,
        Cause::CompileStall,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        Vec::new(),
        vec![main],
        if frames_say {
            (start, start + idle.span_ns)
        } else {
            span
        },
        FIX,
    ))
}
