//! Loading the embedded BPF object: every program verified by the kernel,
//! nothing attached yet. What the kernel cannot do (multi-uprobe links,
//! uprobe sessions) is found here and becomes a warning and a fallback.

use super::{
    attach_err, load_err, load_uprobe, map_fds, program, LoadOptions, Probes, BTF_TRACEPOINTS,
    CLASSIC_TRACEPOINTS, OBJECT, STACK_SAMPLER,
};
use crate::error::CaptureError;
use crate::multi_uprobe::MultiUprobes;
use crate::phase_timer::PhaseTimer;
use crate::status::WarningKind;
use crate::warnings::Warnings;
use aya::maps::Array;
use aya::programs::{BtfTracePoint, PerfEvent, TracePoint};
use aya::{Btf, Ebpf, EbpfLoader};
use ingero_store::catalog::CUDA_OPS;
use std::collections::HashSet;
use std::sync::Arc;

impl Probes {
    /// Loads every program into the kernel (nothing attached yet).
    pub fn load(opts: LoadOptions) -> Result<Probes, CaptureError> {
        let timer = PhaseTimer::start("program load");
        let (mut ebpf, btf) = load_object(&opts, &timer)?;
        verify_tracepoint_programs(&mut ebpf, &btf)?;
        timer.mark("tracepoint and sampler programs verified");
        let warnings = Arc::new(Warnings::default());
        let multi = if opts.multi_uprobes {
            load_multi_uprobes(&opts, &ebpf, &btf, &warnings)
        } else {
            None
        };
        timer.mark("multi-uprobe programs verified");
        // The one-link-per-function programs are verified up front only
        // where they are the way every library is probed; otherwise a
        // library whose multi-uprobe links fail loads them then.
        if multi.is_none() {
            verify_per_function_programs(&mut ebpf)?;
            timer.mark("per-function uprobe programs verified");
        }
        let launch_sessions = launch_sessions_usable(&opts, multi.as_ref(), &warnings);
        let paused = ebpf
            .take_map("paused")
            .ok_or_else(|| load_err("no paused map"))
            .and_then(|m| Array::try_from(m).map_err(load_err))?;
        Ok(Probes {
            ebpf,
            attached: HashSet::new(),
            libraries: Vec::new(),
            links: Vec::new(),
            runtime_launch: Vec::new(),
            paused: Some(paused),
            multi,
            warnings,
            launch_sessions,
            loaders: HashSet::new(),
            mmap_syscalls: false,
        })
    }
}

/// Relocates the object against the kernel, with the load-time knobs set
/// in its globals, and creates its maps; returns it with the kernel's BTF.
fn load_object(opts: &LoadOptions, timer: &PhaseTimer) -> Result<(Ebpf, Btf), CaptureError> {
    // The loader parses the kernel's BTF for itself; ours (tracepoint
    // programs, kernel functions of the multi-uprobe programs) is parsed
    // at the same time on another thread.
    let ours = std::thread::spawn(Btf::from_sys_fs);
    let mut loader = EbpfLoader::new();
    let btf = ours
        .join()
        .map_err(|_| CaptureError::NoBtf {
            detail: "the thread reading it panicked".into(),
        })?
        .map_err(|e| CaptureError::NoBtf {
            detail: e.to_string(),
        })?;
    timer.mark("kernel BTF parsed");
    let trace_all: u32 = u32::from(opts.trace_all);
    let offcpu_stacks: u32 = u32::from(opts.offcpu_stacks);
    loader
        .override_global("cfg_trace_all", &trace_all, true)
        .override_global("cfg_offcpu_stacks", &offcpu_stacks, true)
        .override_global("cfg_self_tgid", &opts.self_tgid, true)
        .override_global("cfg_launch_rows", &opts.launch_rows, true)
        .override_global("cfg_call_rows", &opts.call_rows, true)
        .map_max_entries("events", opts.ring_bytes);
    let ebpf = loader
        .load(OBJECT)
        .map_err(|e| attach_err("BPF object", e))?;
    timer.mark("object relocated, maps created");
    Ok((ebpf, btf))
}

/// Verifies the tracepoint programs and the stack sampling program, which
/// every capture attaches.
fn verify_tracepoint_programs(ebpf: &mut Ebpf, btf: &Btf) -> Result<(), CaptureError> {
    for (prog, tp) in BTF_TRACEPOINTS {
        let p: &mut BtfTracePoint = program(ebpf, prog)?;
        p.load(tp, btf).map_err(|e| attach_err(prog, e))?;
    }
    for (prog, _, _) in CLASSIC_TRACEPOINTS {
        let p: &mut TracePoint = program(ebpf, prog)?;
        p.load().map_err(|e| attach_err(prog, e))?;
    }
    let sampler: &mut PerfEvent = program(ebpf, STACK_SAMPLER)?;
    sampler.load().map_err(|e| attach_err(STACK_SAMPLER, e))?;
    Ok(())
}

/// Loads the multi-uprobe programs, sharing the object's maps; where the
/// kernel has no multi-uprobe links, says so and returns `None` (every
/// library is then probed with one link per function).
fn load_multi_uprobes(
    opts: &LoadOptions,
    ebpf: &Ebpf,
    btf: &Btf,
    warnings: &Warnings,
) -> Option<MultiUprobes> {
    let globals = [
        ("cfg_trace_all", u32::from(opts.trace_all)),
        ("cfg_self_tgid", opts.self_tgid),
        ("cfg_launch_sample", opts.launch_sample),
        ("cfg_launch_rows", opts.launch_rows),
        ("cfg_call_rows", opts.call_rows),
    ];
    match MultiUprobes::load(&map_fds(ebpf), &globals, btf) {
        Ok(m) => Some(m),
        Err(e) => {
            warnings.record(
                WarningKind::MultiUprobeUnavailable,
                None,
                format!(
                    "multi-uprobe links unavailable ({e}); probing with one uprobe link \
                     per function, slower to attach and to stop (Linux 6.6+ has them)"
                ),
            );
            None
        }
    }
}

/// Verifies the one-link-per-function uprobe programs of every traced
/// function the object has.
fn verify_per_function_programs(ebpf: &mut Ebpf) -> Result<(), CaptureError> {
    for op in CUDA_OPS {
        for prefix in ["e_", "r_"] {
            let name = format!("{prefix}{}", op.name);
            if ebpf.program(&name).is_some() {
                load_uprobe(ebpf, &name)?;
            }
        }
    }
    Ok(())
}

/// Whether driver launches go to the session program (sampled launch
/// timing): asked for, and the kernel has uprobe sessions; when it was
/// asked for and cannot be, says why (every launch is then timed).
fn launch_sessions_usable(
    opts: &LoadOptions,
    multi: Option<&MultiUprobes>,
    warnings: &Warnings,
) -> bool {
    let sampling = opts.launch_sample > 1;
    match (multi, sampling) {
        (_, false) => false,
        (Some(m), true) => match m.session_unavailable() {
            None => true,
            Some(why) => {
                warnings.record(
                    WarningKind::LaunchSamplingUnavailable,
                    None,
                    format!(
                        "sampled launch timing unavailable ({why}); every launch is timed \
                         (two probe traps per launch)"
                    ),
                );
                false
            }
        },
        (None, true) => {
            warnings.record(
                WarningKind::LaunchSamplingUnavailable,
                None,
                "sampled launch timing needs multi-uprobe links; every launch is timed \
                 (two probe traps per launch)"
                    .to_string(),
            );
            false
        }
    }
}
