//! Facts every chain detector needs, computed once.

use crate::dataset::{Call, Dataset};
use crate::idle::{idle_of, ProcessIdle};
use crate::processes::{main_processes, role_of, Role};
use crate::starvation::{starvation_of, StarvationEstimate};
use crate::stats::{ops_for, OpStats};
use serde::Serialize;
use std::collections::BTreeMap;

/// CPU share at or above which a system sample counts as saturated.
pub const SATURATED_PCT: f64 = 90.0;

/// A CUDA-side symptom of the main GPU process.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Symptom {
    /// Process id.
    pub pid: i32,
    /// Function.
    pub op: String,
    /// Calls.
    pub count: i64,
    /// Median, ns.
    pub p50_ns: Option<i64>,
    /// 99th percentile, ns.
    pub p99_ns: Option<i64>,
    /// Longest call, ns.
    pub max_ns: i64,
    /// p99 / p50.
    pub tail_ratio: Option<f64>,
    /// Share of the process's CUDA time spent in this function.
    pub share_of_cuda_time: f64,
    /// True when computed from every call.
    pub exact: bool,
}

/// System samples at or above [`SATURATED_PCT`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Saturation {
    /// Samples in the window.
    pub samples: usize,
    /// Of which saturated.
    pub saturated: usize,
    /// Highest CPU share seen.
    pub peak_pct: f64,
    /// Timestamps of saturated samples.
    pub times: Vec<i64>,
}

impl Saturation {
    /// Saturated share of samples (0 when there are none).
    pub fn share(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.saturated as f64 / self.samples as f64
        }
    }

    /// True when `ts` lies within one sample interval after a saturated sample
    /// (or before it: the sample reports the preceding interval).
    pub fn covers(&self, ts: i64, interval_ns: i64) -> bool {
        let i = self.times.partition_point(|t| *t < ts);
        (i < self.times.len() && self.times[i] - ts <= interval_ns)
            || (i > 0 && ts - self.times[i - 1] <= interval_ns)
    }
}

/// Shared inputs of the detectors.
pub struct Context<'a> {
    /// The loaded data.
    pub ds: &'a Dataset,
    /// The GPU-driving process with the most CUDA time.
    pub main: Option<i32>,
    /// Every GPU-driving root process.
    pub mains: Vec<i32>,
    /// Every pid that calls CUDA.
    pub cuda_pids: Vec<i32>,
    /// Op statistics of the main process.
    pub main_ops: Vec<OpStats>,
    /// Symptoms of the main process, most anomalous first.
    pub symptoms: Vec<Symptom>,
    /// Wall-time breakdown of the main process's GPU thread.
    pub starvation: Option<StarvationEstimate>,
    /// Wall-time breakdown of every GPU-driving root process.
    pub starvation_all: Vec<StarvationEstimate>,
    /// GPU-idle breakdown of every GPU-driving process.
    pub idle: Vec<ProcessIdle>,
    /// CPU saturation.
    pub sat: Saturation,
    /// Interval between system samples, ns.
    pub sample_interval_ns: i64,
    /// Role of every known pid.
    pub roles: BTreeMap<i32, Role>,
    /// Caveats found while building.
    pub notes: Vec<String>,
}

impl<'a> Context<'a> {
    /// Computes the shared facts.
    pub fn build(ds: &'a Dataset) -> Context<'a> {
        let (mains, cuda_pids) = main_processes(ds);
        let main = mains.first().copied();
        let main_ops = main.map(|m| ops_for(ds, Some(m))).unwrap_or_default();
        let mut symptoms: Vec<Symptom> = main_ops
            .iter()
            .map(|o| Symptom {
                pid: main.unwrap_or(0),
                op: o.op.clone(),
                count: o.count,
                p50_ns: o.p50_ns,
                p99_ns: o.p99_ns,
                max_ns: o.max_ns,
                tail_ratio: o.tail_ratio,
                // Of the outer calls' time: nested calls count once, under
                // the call they were made from.
                share_of_cuda_time: o.share_of_cuda_time,
                exact: o.exact,
            })
            .collect();
        symptoms.sort_by(|a, b| anomaly(b).total_cmp(&anomaly(a)));
        let starvation_all = starvation_of(ds);
        let starvation = starvation_all.iter().find(|s| Some(s.pid) == main).cloned();
        let mut sat = Saturation::default();
        for s in &ds.snapshots {
            sat.samples += 1;
            sat.peak_pct = sat.peak_pct.max(s.cpu_pct);
            if s.cpu_pct >= SATURATED_PCT {
                sat.saturated += 1;
                sat.times.push(s.ts_ns);
            }
        }
        let sample_interval_ns = if ds.snapshots.len() >= 2 {
            let first = ds.snapshots[0].ts_ns;
            let last = ds.snapshots[ds.snapshots.len() - 1].ts_ns;
            ((last - first) / (ds.snapshots.len() as i64 - 1)).max(1)
        } else {
            1_000_000_000
        };
        let roles = ds
            .all_pids()
            .into_iter()
            .map(|p| (p, role_of(ds, p, &mains, &cuda_pids).0))
            .collect();
        let mut notes = Vec::new();
        if ds.snapshots.is_empty() {
            notes.push(
                "No system CPU samples in this window: CPU saturation cannot be judged.".into(),
            );
        }
        if ds.lost_events > 0 {
            notes.push(format!(
                "The capture lost {} events: counts are lower bounds.",
                ds.lost_events
            ));
        }
        Context {
            idle: idle_of(ds),
            ds,
            main,
            mains,
            cuda_pids,
            main_ops,
            symptoms,
            starvation,
            starvation_all,
            sat,
            sample_interval_ns,
            roles,
            notes,
        }
    }

    /// Role of a pid.
    pub fn role(&self, pid: i32) -> Role {
        self.roles.get(&pid).copied().unwrap_or(Role::External)
    }

    /// The symptom with the heaviest tail (at least two raw calls).
    pub fn worst_tail(&self) -> Option<&Symptom> {
        self.symptoms
            .iter()
            .find(|s| s.tail_ratio.is_some() && s.count >= 2)
    }

    /// Raw calls of the main process.
    pub fn main_calls(&self) -> impl Iterator<Item = &Call> {
        let main = self.main;
        self.ds.calls.iter().filter(move |c| Some(c.pid) == main)
    }

    /// Median duration of the main process's calls, by op id.
    pub fn p50_by_op(&self) -> BTreeMap<u16, i64> {
        let by_name: BTreeMap<&str, i64> = self
            .main_ops
            .iter()
            .filter_map(|o| o.p50_ns.map(|p| (o.op.as_str(), p)))
            .collect();
        self.ds
            .ops
            .iter()
            .filter_map(|(id, info)| by_name.get(info.name.as_str()).map(|p| (*id, *p)))
            .collect()
    }

    /// Raw calls of the main process that are far slower than their op's
    /// median (at least 10x and at least 100 us more).
    pub fn slow_calls(&self) -> Vec<&Call> {
        let p50 = self.p50_by_op();
        self.main_calls()
            .filter(|c| {
                p50.get(&c.op_id)
                    .is_some_and(|p| c.dur_ns >= 10 * p && c.dur_ns - p >= 100_000)
            })
            .collect()
    }

    /// Time those slow calls spent beyond their op's median, ns.
    pub fn slow_excess_ns(&self, calls: &[&Call]) -> i64 {
        let p50 = self.p50_by_op();
        calls
            .iter()
            .map(|c| (c.dur_ns - p50.get(&c.op_id).copied().unwrap_or(0)).max(0))
            .sum()
    }

    /// Distinct function names of some calls, sorted.
    pub fn op_names<'c>(&self, calls: impl IntoIterator<Item = &'c Call>) -> Vec<String> {
        calls
            .into_iter()
            .map(|c| self.ds.op_name(c.op_id).to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// DataLoader worker processes descended from `pid`, by the process tree.
    pub fn dataloader_workers(&self, pid: i32) -> Vec<i32> {
        self.roles
            .iter()
            .filter(|(p, r)| **r == Role::DataloaderWorker && self.ds.descends_from(**p, pid))
            .map(|(p, _)| *p)
            .collect()
    }

    /// The idle breakdown of the main GPU process.
    pub fn main_idle(&self) -> Option<&ProcessIdle> {
        let main = self.main?;
        self.idle.iter().find(|p| p.pid == main)
    }

    /// Wall time of the main GPU thread (or the window), ns.
    pub fn wall_ns(&self) -> i64 {
        self.starvation
            .as_ref()
            .map_or(self.ds.window.duration_ns(), |s| s.wall_ns)
            .max(1)
    }
}

fn anomaly(s: &Symptom) -> f64 {
    let ratio = s.tail_ratio.unwrap_or(1.0).max(1.0);
    let gap = (s.p99_ns.unwrap_or(0) - s.p50_ns.unwrap_or(0)).max(0) as f64;
    // Heavy tails that also cost real time rank first.
    ratio.ln() * (1.0 + gap / 1e6).ln().max(0.01)
}
