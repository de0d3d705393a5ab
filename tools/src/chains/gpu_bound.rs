//! The honest negative: when the host mostly waits on the GPU, the GPU is the
//! bottleneck and host tuning will not help.

use super::context::Context;
use super::{chain, step, CausalChain, Cause, Evidence};
use crate::format;

const FIX: &str = "The host keeps up; speed up the GPU work itself: profile kernels (Nsight \
Compute, torch.profiler), use mixed precision, fuse small kernels (torch.compile, CUDA graphs) and check \
that batch sizes fill the GPU.";

/// Reports a GPU-bound run: synchronisation dominates while the CPU has headroom.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let st = ctx.starvation.as_ref()?;
    let main = ctx.main?;
    let sync_share = st.sync_wait_ns as f64 / st.wall_ns.max(1) as f64;
    let cpu_ok = ctx.sat.samples == 0 || ctx.sat.share() < 0.1;
    if sync_share < 0.5 || !cpu_ok {
        return None;
    }
    let score = 10.0 + 20.0 * sync_share;
    let summary = format!(
        "GPU thread of {main} waits in synchronisation {} of its time with CPU headroom <- GPU-bound",
        format::pct(sync_share)
    );
    let root_cause = format!(
        "Not host starvation: the GPU thread spends {} of its wall time waiting for the GPU to finish, while the CPU is not saturated.",
        format::pct(sync_share)
    );
    Some(chain(
        ctx,
        Cause::GpuBound,
        score,
        summary,
        root_cause,
        vec![step(
            "CUDA",
            format!("{} in synchronisation calls", format::ns(st.sync_wait_ns)),
        )],
        vec![Evidence::new(
            "sync_share_of_wall",
            sync_share * 100.0,
            "percent",
            "raw rows",
        )],
        Vec::new(),
        vec![main],
        (ctx.ds.window.lo_ns, ctx.ds.window.hi_ns),
        FIX,
    ))
}
