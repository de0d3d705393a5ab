//! Measured GPU activity: the driver's utilisation samples (NVML) of the
//! capture, loaded once per scope and turned into busy periods.
//!
//! NVML reports, per device, the percent of each sample period (about 1/6 s)
//! during which at least one kernel ran, and, per process, the same figure
//! for that process alone. Those are the only measured busy figures the
//! trace holds; everything the host side says about GPU work is a bound.

use ingero_store::{GpuDevice, GpuProcessSample, GpuStatus, GpuUtilKind, GpuUtilSample};
use rusqlite::{params, Connection};
use serde::Serialize;
use std::collections::BTreeMap;

/// Samples this far outside the window are read too, so the period that
/// straddles each edge is known.
const EDGE_NS: i64 = 2_000_000_000;

/// Window of one per-process sample when the file holds too few to tell
/// (the driver's averaging window seen on the H200, driver 580).
const PROCESS_WINDOW_NS: i64 = 1_000_000_000;

/// One sample period of a utilisation series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct UtilPeriod {
    /// Start (the previous sample of the series), epoch ns.
    pub start_ns: i64,
    /// End (this sample's driver time stamp), epoch ns.
    pub end_ns: i64,
    /// Busy share of the period, 0-1.
    pub busy: f64,
}

/// Where a process's measured busy figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BusySource {
    /// NVML's per-process samples of this process (`gpu_process_samples`).
    NvmlProcess,
    /// NVML's device samples (`gpu_util_samples`): this process's GPU, with
    /// any other process on it counted too.
    NvmlDevice,
    /// No GPU samples: only a host-side upper bound is known.
    HostBound,
}

/// The GPU rows of one scope.
#[derive(Debug, Clone, Default)]
pub struct GpuActivity {
    /// Devices the capture saw.
    pub devices: Vec<GpuDevice>,
    /// Device SM-utilisation samples per GPU, by time.
    pub sm: BTreeMap<u32, Vec<GpuUtilSample>>,
    /// Device memory-controller samples per GPU, by time.
    pub memory: BTreeMap<u32, Vec<GpuUtilSample>>,
    /// Per-process samples, by (pid, time).
    pub process: Vec<GpuProcessSample>,
    /// Polled device state, by time.
    pub status: Vec<GpuStatus>,
}

impl GpuActivity {
    /// Reads the GPU tables for `[lo_ns, hi_ns]` (plus the straddling periods).
    pub fn load(conn: &Connection, lo_ns: i64, hi_ns: i64) -> rusqlite::Result<GpuActivity> {
        let (lo, hi) = (lo_ns.saturating_sub(EDGE_NS), hi_ns.saturating_add(EDGE_NS));
        let mut out = GpuActivity::default();
        let mut stmt = conn.prepare(
            "SELECT DISTINCT gpu, name, uuid, pci_bus_id, mem_total_bytes FROM gpu_devices ORDER BY gpu",
        )?;
        out.devices = stmt
            .query_map([], |r| {
                Ok(GpuDevice {
                    gpu: r.get(0)?,
                    name: r.get(1)?,
                    uuid: r.get(2)?,
                    pci_bus_id: r.get(3)?,
                    mem_total_bytes: r.get(4)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        out.devices.dedup_by_key(|d| d.gpu);
        let mut stmt = conn.prepare(
            "SELECT ts_ns, gpu, kind, value FROM gpu_util_samples \
             WHERE ts_ns BETWEEN ?1 AND ?2 ORDER BY gpu, kind, ts_ns",
        )?;
        let mut rows = stmt.query(params![lo, hi])?;
        while let Some(r) = rows.next()? {
            let Some(kind) = GpuUtilKind::from_id(r.get(2)?) else {
                continue;
            };
            let s = GpuUtilSample {
                ts_ns: r.get(0)?,
                gpu: r.get(1)?,
                kind,
                value: r.get::<_, i64>(3)?.clamp(0, 100),
            };
            let series = match kind {
                GpuUtilKind::Sm => &mut out.sm,
                GpuUtilKind::Memory => &mut out.memory,
            };
            let v = series.entry(s.gpu).or_default();
            // Two sessions in one file may repeat a driver sample.
            if v.last().is_none_or(|l| l.ts_ns < s.ts_ns) {
                v.push(s);
            }
        }
        let mut stmt = conn.prepare(
            "SELECT ts_ns, gpu, pid, sm_pct, mem_pct FROM gpu_process_samples \
             WHERE ts_ns BETWEEN ?1 AND ?2 ORDER BY pid, ts_ns",
        )?;
        out.process = stmt
            .query_map(params![lo, hi], |r| {
                Ok(GpuProcessSample {
                    ts_ns: r.get(0)?,
                    gpu: r.get(1)?,
                    pid: r.get(2)?,
                    sm_pct: r.get::<_, i64>(3)?.clamp(0, 100),
                    mem_pct: r.get::<_, i64>(4)?.clamp(0, 100),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut stmt = conn.prepare(
            "SELECT ts_ns, gpu, mem_used_bytes, pcie_rx_kbps, pcie_tx_kbps, sm_clock_mhz, power_mw, \
             throttle_reasons FROM gpu_status WHERE ts_ns BETWEEN ?1 AND ?2 ORDER BY ts_ns, gpu",
        )?;
        out.status = stmt
            .query_map(params![lo_ns, hi_ns], |r| {
                Ok(GpuStatus {
                    ts_ns: r.get(0)?,
                    gpu: r.get(1)?,
                    mem_used_bytes: r.get(2)?,
                    pcie_rx_kbps: r.get(3)?,
                    pcie_tx_kbps: r.get(4)?,
                    sm_clock_mhz: r.get(5)?,
                    power_mw: r.get(6)?,
                    throttle_reasons: r.get(7)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(out)
    }

    /// True when the capture holds no utilisation samples at all.
    pub fn is_empty(&self) -> bool {
        self.sm.values().all(Vec::is_empty) && self.process.is_empty()
    }

    /// Sample periods of a series: each sample covers the time since the
    /// previous one; the first covers the median period before it.
    fn periods_of(ts_and_busy: &[(i64, f64)]) -> Vec<UtilPeriod> {
        let mut gaps: Vec<i64> = ts_and_busy.windows(2).map(|w| w[1].0 - w[0].0).collect();
        gaps.sort_unstable();
        let first = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
        let mut prev: Option<i64> = None;
        ts_and_busy
            .iter()
            .map(|&(ts, busy)| {
                let start = prev.unwrap_or(ts - first);
                prev = Some(ts);
                UtilPeriod {
                    start_ns: start,
                    end_ns: ts,
                    busy,
                }
            })
            .filter(|p| p.end_ns > p.start_ns)
            .collect()
    }

    /// Device SM-utilisation periods of `gpu`.
    pub fn device_periods(&self, gpu: u32) -> Vec<UtilPeriod> {
        let pts: Vec<(i64, f64)> = self
            .sm
            .get(&gpu)
            .map(|v| {
                v.iter()
                    .map(|s| (s.ts_ns, s.value as f64 / 100.0))
                    .collect()
            })
            .unwrap_or_default();
        Self::periods_of(&pts)
    }

    /// GPUs on which `pid` has per-process samples.
    pub fn gpus_of(&self, pid: i32) -> Vec<u32> {
        let mut g: Vec<u32> = self.process_rows(pid).iter().map(|s| s.gpu).collect();
        g.sort_unstable();
        g.dedup();
        g
    }

    fn process_rows(&self, pid: i32) -> &[GpuProcessSample] {
        let a = self.process.partition_point(|s| s.pid < pid);
        let b = self.process.partition_point(|s| s.pid <= pid);
        &self.process[a..b]
    }

    /// Per-process SM periods of `pid` on `gpu`.
    ///
    /// The driver answers `nvmlDeviceGetProcessUtilization` with at most one
    /// sample per process and query, averaged over the driver's own window
    /// (about 1 s on the H200 with driver 580: a GPU-bound loop reads 98-99%
    /// there while device samples come every 1/6 s). So a sample covers the
    /// time since the previous query that returned samples on this GPU (the
    /// previous distinct time stamp of any process), at most one typical
    /// window (the median distance between those time stamps) before it.
    /// A process missing from a query's answer had no GPU activity then:
    /// the holes between its periods, and the sampled time before its first
    /// and after its last one, are periods of 0% (the sampled time is where
    /// device samples exist, else the span of the process answers).
    pub fn process_periods(&self, pid: i32, gpu: u32) -> Vec<UtilPeriod> {
        let mut grid: Vec<i64> = self
            .process
            .iter()
            .filter(|s| s.gpu == gpu)
            .map(|s| s.ts_ns)
            .collect();
        grid.sort_unstable();
        grid.dedup();
        let mut gaps: Vec<i64> = grid.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_unstable();
        let window = gaps
            .get(gaps.len() / 2)
            .copied()
            .unwrap_or(PROCESS_WINDOW_NS);
        let mut own: Vec<UtilPeriod> = Vec::new();
        for s in self.process_rows(pid).iter().filter(|s| s.gpu == gpu) {
            let before = grid.partition_point(|&t| t < s.ts_ns);
            let prev = before.checked_sub(1).map(|i| grid[i]);
            let floor = own.last().map_or(i64::MIN, |p| p.end_ns);
            let start = prev
                .map_or(s.ts_ns - window, |p| p.max(s.ts_ns - window))
                .max(floor);
            if s.ts_ns > start {
                own.push(UtilPeriod {
                    start_ns: start,
                    end_ns: s.ts_ns,
                    busy: s.sm_pct as f64 / 100.0,
                });
            }
        }
        let device = self.device_periods(gpu);
        let sampled = match (device.first(), device.last(), grid.first(), grid.last()) {
            (Some(a), Some(b), _, _) => Some((a.start_ns, b.end_ns)),
            (None, None, Some(&a), Some(&b)) => Some((a - window, b)),
            _ => None,
        };
        let Some((lo, hi)) = sampled else {
            return own;
        };
        let mut out = Vec::with_capacity(own.len() * 2 + 1);
        let mut at = lo;
        for p in own {
            if p.start_ns > at {
                out.push(UtilPeriod {
                    start_ns: at,
                    end_ns: p.start_ns,
                    busy: 0.0,
                });
            }
            at = at.max(p.end_ns);
            out.push(p);
        }
        if hi > at {
            out.push(UtilPeriod {
                start_ns: at,
                end_ns: hi,
                busy: 0.0,
            });
        }
        out
    }

    /// Pids with per-process samples on `gpu` that were busy at some point
    /// in `[lo, hi]`, other than `pid`.
    pub fn other_busy_pids(&self, gpu: u32, pid: i32, lo: i64, hi: i64) -> Vec<i32> {
        let mut v: Vec<i32> = self
            .process
            .iter()
            .filter(|s| {
                s.gpu == gpu && s.pid != pid && s.sm_pct > 0 && s.ts_ns >= lo && s.ts_ns <= hi
            })
            .map(|s| s.pid)
            .collect();
        v.dedup();
        v
    }
}

/// Measured busy time of one process over a span.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredBusy {
    /// Which samples.
    pub source: BusySource,
    /// The device they belong to.
    pub gpu: u32,
    /// Sample periods clipped to the span.
    pub periods: Vec<UtilPeriod>,
    /// Busy time, ns: sum of period length x busy share.
    pub busy_ns: i64,
    /// Part of the span the periods cover, ns.
    pub covered_ns: i64,
    /// Other processes that kept the same GPU busy (device samples count them).
    pub others_on_gpu: Vec<i32>,
}

impl GpuActivity {
    /// What the samples say about `pid` over `span`, `None` without samples.
    /// `single_gpu_pids`: the CUDA processes of the capture, to tell whether
    /// device samples belong to this process alone.
    pub fn measured_busy(&self, pid: i32, span: (i64, i64)) -> Option<MeasuredBusy> {
        let own = self.gpus_of(pid);
        let (source, gpu, raw) = if let Some(&gpu) = own.first() {
            (BusySource::NvmlProcess, gpu, self.process_periods(pid, gpu))
        } else if self.sm.len() == 1 {
            let gpu = *self.sm.keys().next()?;
            (BusySource::NvmlDevice, gpu, self.device_periods(gpu))
        } else {
            return None;
        };
        let periods = clip(&raw, span);
        if periods.is_empty() {
            return None;
        }
        let covered_ns = periods.iter().map(|p| p.end_ns - p.start_ns).sum();
        let busy_ns = periods
            .iter()
            .map(|p| ((p.end_ns - p.start_ns) as f64 * p.busy).round() as i64)
            .sum();
        let others_on_gpu = if source == BusySource::NvmlDevice {
            self.other_busy_pids(gpu, pid, span.0, span.1)
        } else {
            Vec::new()
        };
        Some(MeasuredBusy {
            source,
            gpu,
            periods,
            busy_ns,
            covered_ns,
            others_on_gpu,
        })
    }
}

/// Periods clipped to `span`, empty ones dropped.
pub fn clip(periods: &[UtilPeriod], span: (i64, i64)) -> Vec<UtilPeriod> {
    periods
        .iter()
        .filter_map(|p| {
            let (a, b) = (p.start_ns.max(span.0), p.end_ns.min(span.1));
            (b > a).then_some(UtilPeriod {
                start_ns: a,
                end_ns: b,
                busy: p.busy,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ts: i64, v: i64) -> GpuUtilSample {
        GpuUtilSample {
            ts_ns: ts,
            gpu: 0,
            kind: GpuUtilKind::Sm,
            value: v,
        }
    }

    #[test]
    fn periods_run_from_the_previous_sample() {
        let mut g = GpuActivity::default();
        g.sm.insert(0, vec![sample(100, 50), sample(300, 100), sample(500, 0)]);
        let p = g.device_periods(0);
        assert_eq!(
            p.iter().map(|p| (p.start_ns, p.end_ns)).collect::<Vec<_>>(),
            vec![(-100, 100), (100, 300), (300, 500)]
        );
        let m = g.measured_busy(7, (0, 400)).expect("device samples");
        assert_eq!(m.source, BusySource::NvmlDevice);
        assert_eq!(m.covered_ns, 400);
        // 100 ns at 50%, 200 at 100%, 100 at 0%.
        assert_eq!(m.busy_ns, 250);
    }

    fn proc(ts: i64, pid: i32, sm: i64) -> GpuProcessSample {
        GpuProcessSample {
            ts_ns: ts,
            gpu: 0,
            pid,
            sm_pct: sm,
            mem_pct: 0,
        }
    }

    #[test]
    fn a_process_sample_covers_the_time_since_the_previous_answer() {
        let mut g = GpuActivity::default();
        // Device samples every 100 ns from 0 to 1000; per-process answers
        // every 300 ns, pid 7 in the second and third only.
        g.sm.insert(0, (1..=10).map(|i| sample(i * 100, 90)).collect());
        g.process = vec![proc(300, 8, 10), proc(600, 7, 50), proc(900, 7, 100)];
        g.process.sort_by_key(|s| (s.pid, s.ts_ns));
        let p = g.process_periods(7, 0);
        let spans: Vec<_> = p.iter().map(|p| (p.start_ns, p.end_ns, p.busy)).collect();
        assert_eq!(
            spans,
            vec![
                (0, 300, 0.0),
                (300, 600, 0.5),
                (600, 900, 1.0),
                (900, 1000, 0.0)
            ]
        );
        let m = g.measured_busy(7, (0, 1000)).expect("process samples");
        assert_eq!(m.source, BusySource::NvmlProcess);
        assert_eq!(m.covered_ns, 1000);
        assert_eq!(m.busy_ns, 150 + 300);
    }

    #[test]
    fn a_lone_answer_covers_at_most_one_window() {
        // Answers at 1 s and 3 s: the median distance (2 s) is the window,
        // so pid 7's answer at 3 s covers (1 s, 3 s]; with no device samples
        // the sampled time is (1 s - window, 3 s].
        let mut g = GpuActivity {
            process: vec![proc(1_000_000_000, 8, 10), proc(3_000_000_000, 7, 40)],
            ..Default::default()
        };
        g.process.sort_by_key(|s| (s.pid, s.ts_ns));
        let p = g.process_periods(7, 0);
        let spans: Vec<_> = p.iter().map(|p| (p.start_ns, p.end_ns, p.busy)).collect();
        assert_eq!(
            spans,
            vec![
                (-1_000_000_000, 1_000_000_000, 0.0),
                (1_000_000_000, 3_000_000_000, 0.4)
            ]
        );
    }
}
