//! The GPU thread blocked off the CPU, named by what its off-CPU stacks
//! show it waited for: the GIL, disk I/O, a sleep, sockets or file
//! descriptors (an idle server waiting for requests), or a lock.
//!
//! Evidence that identifies each: the kernel and user frames recorded at
//! the thread's switch-outs (see `crate::waits`), summed by reason over the
//! thread's loop. Without stack samples, blocked time stays in the idle
//! breakdown as "blocked (I/O, locks, sleep)", unnamed.

use super::build::chain;
use super::context::Context;
use super::measured::busy_over;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use crate::waits::WaitReason;
use std::collections::BTreeMap;

fn cause_of(r: WaitReason) -> Option<Cause> {
    match r {
        WaitReason::Gil => Some(Cause::GilContention),
        WaitReason::Io => Some(Cause::BlockingIo),
        WaitReason::Sleep => Some(Cause::HostSleep),
        WaitReason::Events => Some(Cause::WaitingForWork),
        WaitReason::Lock => Some(Cause::LockWait),
        WaitReason::Other => None,
    }
}

fn fix_of(r: WaitReason) -> &'static str {
    match r {
        WaitReason::Gil => "Another Python thread of the process holds the GIL while the GPU thread waits for it: move that CPU-heavy Python work to another process (multiprocessing, DataLoader workers), into native code that releases the GIL, or reduce the threads competing with the training loop.",
        WaitReason::Io => "Take file I/O off the GPU thread: read ahead in DataLoader workers or a background thread, save checkpoints asynchronously (torch.distributed.checkpoint async_save or a separate thread/process), keep data on faster or local storage, and avoid fsync in the loop.",
        WaitReason::Sleep => "The GPU thread sleeps in the loop: remove the sleep or polling delay (wait on an event, a queue or a CUDA event instead), or do other work while waiting.",
        WaitReason::Events => "The process waits for input on sockets or file descriptors: the GPU idles because no work arrives, not because of a host-side bottleneck. If that is unexpected, look at the producer of the requests; otherwise batch requests or scale the service down.",
        WaitReason::Lock => "The GPU thread waits on a lock or condition held by another thread: find the holder (its stacks in the same window), shorten the critical section, or take that work off the training loop.",
        WaitReason::Other => "",
    }
}

/// Off-CPU share of the GPU idle time at or above which a reason is a finding.
const MIN_SHARE: f64 = 0.2;

/// Detects the main reason the GPU thread blocked, where stacks name it.
pub fn detect(ctx: &Context) -> Vec<CausalChain> {
    let Some(main) = ctx.main else {
        return Vec::new();
    };
    let Some(idle) = ctx.idle.iter().find(|p| p.pid == main) else {
        return Vec::new();
    };
    let tid = idle.gpu_thread;
    let waits: Vec<_> = ctx
        .ds
        .waits
        .iter()
        .filter(|w| w.pid == main && w.tid == tid && w.state != 1)
        .collect();
    if waits.is_empty() || idle.host_wait_ns <= 0 {
        return Vec::new();
    }
    let mut by: BTreeMap<WaitReason, (i64, i64, String, i64, i64)> = BTreeMap::new();
    for w in &waits {
        let e = by
            .entry(w.reason)
            .or_insert((0, 0, w.evidence_frame.clone(), i64::MAX, 0));
        e.0 += w.off_ns;
        e.1 += 1;
        e.3 = e.3.min(w.ts_ns);
        e.4 = e.4.max(w.ts_ns + w.off_ns);
    }
    let total_blocked: i64 = waits.iter().map(|w| w.off_ns).sum();
    let mut out = Vec::new();
    for (reason, (ns, n, frame, lo, hi)) in by {
        let Some(cause) = cause_of(reason) else {
            continue;
        };
        let share = ns as f64 / idle.host_wait_ns as f64;
        if share < MIN_SHARE {
            continue;
        }
        let busy = busy_over(ctx, main, (lo, hi.max(lo + 1)));
        let summary = format!(
            "GPU idle {} of {} <- GPU thread {tid} off-CPU {} in {} waits ({} of the GPU idle time) {} <- stacks at its switch-outs show `{frame}`",
            format::pct(idle.idle_share),
            format::ns(idle.span_ns),
            format::ns(ns),
            format::count(n),
            format::pct(share),
            reason.words()
        );
        let root_cause = format!(
            "Thread {tid} of {main}, which drives the GPU, spends {} off the CPU {} ({} waits, the kernel or user frame `{frame}` in their stacks); meanwhile {}.",
            format::ns(ns),
            reason.words(),
            format::count(n),
            busy.text()
        );
        let steps = vec![
            step(
                Layer::Host,
                format!(
                    "{} off-CPU stacks of thread {tid}: {} of {} blocked time {}",
                    format::count(n),
                    format::ns(ns),
                    format::ns(total_blocked),
                    reason.words()
                ),
            ),
            step(Layer::Gpu, busy.text()),
        ];
        let evidence = vec![
            Evidence::new("blocked_time", ns as f64, Unit::Ns, "off-CPU stack samples"),
            Evidence::new("waits", n as f64, Unit::Count, "off-CPU stack samples"),
            Evidence::new(
                "share_of_idle",
                share * 100.0,
                Unit::Percent,
                "off-CPU stack samples and activity spans",
            ),
            Evidence::new(
                "all_blocked_time",
                total_blocked as f64,
                Unit::Ns,
                "off-CPU stack samples",
            ),
        ];
        out.push(chain(
            ctx,
            cause,
            50.0 + 45.0 * share.min(1.0),
            summary,
            root_cause,
            steps,
            evidence,
            Vec::new(),
            vec![main],
            (lo, hi),
            fix_of(reason),
        ));
    }
    out
}
