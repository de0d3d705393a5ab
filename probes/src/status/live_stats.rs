//! Running totals the poller updates per drained batch, from which the
//! status view's per-function percentiles and counts are read.

use super::{HostStatus, LossBreakdown, OpStatus};
use crate::histogram::Histogram;
use ingero_store::catalog::{cuda_op, HostKind};
use ingero_store::{CudaCall, HostEvent};
use std::collections::BTreeMap;

#[derive(Debug, Default)]
struct OpAcc {
    hist: Histogram,
    total_ns: u64,
    bytes: u64,
    errors: u64,
    estimated: u64,
}

/// Running totals, updated by the poller once per drained batch.
#[derive(Debug, Default)]
pub struct LiveStats {
    ops: BTreeMap<u16, OpAcc>,
    host: BTreeMap<u8, (u64, u64)>,
    pub(crate) cuda: u64,
    pub(crate) hosts: u64,
    pub(crate) losses: LossBreakdown,
    pub(crate) unfinished: u64,
    pub(crate) processes: u64,
}

impl LiveStats {
    /// Counts one CUDA call.
    pub fn add_cuda(&mut self, c: &CudaCall) {
        let acc = self.ops.entry(c.op_id).or_default();
        let dur = c.dur_ns.max(0) as u64;
        acc.hist.record(dur);
        acc.total_ns += dur;
        acc.bytes += c.bytes.max(0) as u64;
        if ingero_store::catalog::unfinished::is_unfinished(c.ret) {
            self.unfinished += 1;
        } else if c.ret != 0 {
            acc.errors += 1;
        }
        self.cuda += 1;
    }

    /// Counts a run of launches counted in the kernel: the histogram gets
    /// its shortest and longest timed launch as they are and every other
    /// launch at the run's mean.
    pub fn add_run(&mut self, r: &ingero_store::LaunchRun) {
        let acc = self.ops.entry(r.op_id).or_default();
        let n = r.count.max(1) as u64;
        let mut rest = n;
        if r.timed >= 2 {
            acc.hist.record(r.timed_min_ns.max(0) as u64);
            acc.hist.record(r.timed_max_ns.max(0) as u64);
            rest -= 2;
        }
        let mean = r.mean_dur_ns().max(0) as u64;
        for _ in 0..rest {
            acc.hist.record(mean);
        }
        acc.total_ns += r.total_dur_ns().max(0) as u64;
        acc.estimated += r.untimed().max(0) as u64;
        self.cuda += n;
    }

    /// Counts a fold of calls counted in the kernel: the histogram gets its
    /// shortest and longest call as they are and every other call at the
    /// fold's mean.
    pub fn add_fold(&mut self, f: &ingero_store::CallFold) {
        let acc = self.ops.entry(f.op_id).or_default();
        let n = f.count.max(1) as u64;
        let mut rest = n;
        if n >= 2 {
            acc.hist.record(f.min_dur_ns.max(0) as u64);
            acc.hist.record(f.max_dur_ns.max(0) as u64);
            rest -= 2;
        }
        let mean = (f.dur_ns.max(0) as u64) / n;
        acc.hist.record_n(mean, rest);
        acc.total_ns += f.dur_ns.max(0) as u64;
        acc.bytes += f.bytes.max(0) as u64;
        self.cuda += n;
    }

    /// Counts one host event.
    pub fn add_host(&mut self, h: &HostEvent) {
        let e = self.host.entry(h.kind.id()).or_default();
        e.0 += 1;
        e.1 += h.dur_ns.max(0) as u64;
        self.hosts += 1;
    }

    /// Per-op view, busiest first.
    pub fn ops(&self) -> Vec<OpStatus> {
        let mut v: Vec<OpStatus> = self
            .ops
            .iter()
            .map(|(id, a)| OpStatus {
                name: cuda_op(*id)
                    .map(|o| o.name.to_string())
                    .unwrap_or_else(|| format!("op{id}")),
                count: a.hist.count(),
                p50_ns: a.hist.quantile(0.50),
                p95_ns: a.hist.quantile(0.95),
                p99_ns: a.hist.quantile(0.99),
                max_ns: a.hist.max(),
                total_ns: a.total_ns,
                bytes: a.bytes,
                errors: a.errors,
                estimated: a.estimated,
            })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
        v
    }

    /// Per-kind host view in kind order.
    pub fn host(&self) -> Vec<HostStatus> {
        self.host
            .iter()
            .map(|(id, (count, total))| HostStatus {
                kind: HostKind::from_id(*id as i64)
                    .map(|k| k.name().to_string())
                    .unwrap_or_else(|| format!("kind{id}")),
                count: *count,
                total_ns: *total,
            })
            .collect()
    }

    /// All losses so far.
    pub fn drops(&self) -> u64 {
        self.losses.total()
    }
}
