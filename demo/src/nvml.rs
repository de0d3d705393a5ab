//! What NVML would have reported for the simulated device.
//!
//! A capture on a host with the NVIDIA driver stores the driver's samples
//! (store's `gpu_*` tables), and the analysis takes GPU busy from them. The
//! simulated engine knows exactly when it ran, so a demo file carries the
//! samples a driver would give: device SM utilisation per 1/6 s period
//! (percent of the period with work running) and per-process samples once
//! a second (percent of that second with the process's work running; a
//! process with none is absent, as NVML leaves it out).

use crate::gpu::Busy;
use ingero_store::{GpuDevice, GpuProcessSample, GpuSamples, GpuUtilKind, GpuUtilSample};

/// Device sample period (the H200's driver samples about every 1/6 s).
const DEVICE_PERIOD_NS: i64 = 166_666_667;
/// Per-process answer period (one query a second, averaged by the driver).
const PROCESS_PERIOD_NS: i64 = 1_000_000_000;

/// The one simulated device.
pub fn devices(name: &str) -> Vec<GpuDevice> {
    vec![GpuDevice {
        gpu: 0,
        name: name.to_string(),
        uuid: "GPU-00000000-demo-0000-0000-000000000000".into(),
        pci_bus_id: "00000000:00:00.0".into(),
        mem_total_bytes: 80 << 30,
    }]
}

/// Busy time of the stretches (filtered by `pid` when given) inside
/// `[lo, hi)`; `from` is the index of the first stretch that can overlap,
/// advanced for the next call.
fn busy_in(busy: &[Busy], from: &mut usize, lo: i64, hi: i64, pid: Option<i32>) -> i64 {
    while *from < busy.len() && busy[*from].end_ns <= lo {
        *from += 1;
    }
    let mut total = 0;
    for b in &busy[*from..] {
        if b.start_ns >= hi {
            break;
        }
        if pid.is_none_or(|p| p == b.pid) {
            total += b.end_ns.min(hi) - b.start_ns.max(lo);
        }
    }
    total
}

fn pct(part: i64, whole: i64) -> i64 {
    ((part as f64 / whole.max(1) as f64) * 100.0)
        .round()
        .clamp(0.0, 100.0) as i64
}

/// Samples over `[start, end]`: each device sample stamped at the end of
/// its period, each per-process answer at the end of its second.
pub fn samples(busy: &[Busy], start_ns: i64, end_ns: i64) -> GpuSamples {
    let mut out = GpuSamples::default();
    let mut from = 0;
    let mut t = start_ns;
    while t + DEVICE_PERIOD_NS <= end_ns {
        let v = pct(
            busy_in(busy, &mut from, t, t + DEVICE_PERIOD_NS, None),
            DEVICE_PERIOD_NS,
        );
        out.util.push(GpuUtilSample {
            ts_ns: t + DEVICE_PERIOD_NS,
            gpu: 0,
            kind: GpuUtilKind::Sm,
            value: v,
        });
        t += DEVICE_PERIOD_NS;
    }
    let mut pids: Vec<i32> = busy.iter().map(|b| b.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let mut from = 0;
        let mut t = start_ns;
        while t < end_ns {
            let hi = (t + PROCESS_PERIOD_NS).min(end_ns);
            let b = busy_in(busy, &mut from, t, hi, Some(pid));
            if b > 0 {
                out.process.push(GpuProcessSample {
                    ts_ns: hi,
                    gpu: 0,
                    pid,
                    sm_pct: pct(b, hi - t),
                    mem_pct: 0,
                });
            }
            t = hi;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_the_busy_share_of_their_period() {
        let s = 1_000_000_000;
        // pid 7 busy the first half of second 0 and all of second 2.
        let busy = [
            Busy {
                start_ns: 0,
                end_ns: s / 2,
                pid: 7,
            },
            Busy {
                start_ns: 2 * s,
                end_ns: 3 * s,
                pid: 7,
            },
        ];
        let g = samples(&busy, 0, 3 * s);
        let per: Vec<(i64, i64)> = g.process.iter().map(|p| (p.ts_ns, p.sm_pct)).collect();
        assert_eq!(per, vec![(s, 50), (3 * s, 100)]);
        assert_eq!(g.util.len(), 17);
        assert_eq!(g.util[0].value, 100);
        assert_eq!(g.util[6].value, 0);
        assert!(g.util.iter().all(|u| u.value <= 100));
    }
}
