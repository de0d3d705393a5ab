//! Machine description for the session row and the 1/s system snapshots,
//! read from /proc.

use ingero_store::{SessionInfo, SystemSnapshot};
use std::fs;

fn read(path: &str) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

/// Value of `key` in a `Key: value` file such as /proc/meminfo.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then_some(v.trim())
    })
}

fn kib(text: &str, key: &str) -> Option<i64> {
    field(text, key)?.split_whitespace().next()?.parse().ok()
}

/// Driver version from /proc/driver/nvidia/version, when an NVIDIA driver is loaded.
pub fn gpu_driver() -> Option<String> {
    let text = fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    driver_version_of(&text)
}

/// The driver version in the text of `/proc/driver/nvidia/version`: the first
/// dotted number on its `NVRM version` line. The wording around it differs
/// between the proprietary and the open kernel module ("Kernel Module  535.x",
/// "Open Kernel Module for x86_64  580.x"), so no word position is assumed.
fn driver_version_of(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find(|l| l.starts_with("NVRM") || l.contains("Kernel Module"))?;
    line.split_whitespace()
        .find(|t| {
            t.contains('.')
                && t.split('.').count() >= 2
                && t.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// Model of the first GPU the NVIDIA driver lists.
pub fn gpu_model() -> Option<String> {
    let dir = fs::read_dir("/proc/driver/nvidia/gpus").ok()?;
    let mut entries: Vec<_> = dir.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    entries.iter().find_map(|p| {
        let text = fs::read_to_string(p.join("information")).ok()?;
        field(&text, "Model").map(str::to_string)
    })
}

/// Kernel release, as `uname -r` prints it.
pub fn kernel_release() -> String {
    read("/proc/sys/kernel/osrelease").trim().to_string()
}

/// Session description of this machine (times and targets left to the caller).
pub fn session_info() -> SessionInfo {
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    SessionInfo {
        host: read("/proc/sys/kernel/hostname").trim().to_string(),
        kernel: kernel_release(),
        cpu_model: field(&cpuinfo, "model name").unwrap_or("").to_string(),
        cpu_cores: std::thread::available_parallelism()
            .map(|n| n.get() as i64)
            .unwrap_or(0),
        mem_total_mb: kib(&meminfo, "MemTotal").unwrap_or(0) / 1024,
        gpu_model: gpu_model().unwrap_or_default(),
        gpu_driver: gpu_driver().unwrap_or_default(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        ..SessionInfo::default()
    }
}

/// Samples /proc/stat, /proc/meminfo and /proc/loadavg; CPU use is the busy
/// share since the previous sample.
#[derive(Debug, Default)]
pub struct Sampler {
    prev: Option<(u64, u64)>,
}

fn cpu_times(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 4 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is inside user)
    let total: u64 = v.iter().take(8).sum();
    let idle = v[3] + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

impl Sampler {
    /// Takes one snapshot stamped `ts_ns`.
    pub fn sample(&mut self, ts_ns: i64) -> SystemSnapshot {
        let stat = read("/proc/stat");
        let meminfo = read("/proc/meminfo");
        let loadavg = read("/proc/loadavg");
        let cpu_pct = match (self.prev, cpu_times(&stat)) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                100.0 * (b1.saturating_sub(b0)) as f64 / (t1 - t0) as f64
            }
            _ => 0.0,
        };
        if let Some(now) = cpu_times(&stat) {
            self.prev = Some(now);
        }
        let total = kib(&meminfo, "MemTotal").unwrap_or(0);
        let avail = kib(&meminfo, "MemAvailable").unwrap_or(0);
        let swap = kib(&meminfo, "SwapTotal").unwrap_or(0) - kib(&meminfo, "SwapFree").unwrap_or(0);
        SystemSnapshot {
            ts_ns,
            cpu_pct,
            mem_used_pct: if total > 0 {
                100.0 * (total - avail) as f64 / total as f64
            } else {
                0.0
            },
            mem_avail_mb: avail / 1024,
            swap_used_mb: swap.max(0) / 1024,
            load1: loadavg
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or(0.0),
            procs_running: stat
                .lines()
                .find_map(|l| l.strip_prefix("procs_running "))
                .and_then(|x| x.trim().parse().ok())
                .unwrap_or(-1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_from_both_kernel_modules() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Thu Oct 30 08:52:56 UTC 2025\nGCC version:  gcc version 13.3.0\n";
        assert_eq!(driver_version_of(open).as_deref(), Some("580.159.04"));
        let closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n";
        assert_eq!(driver_version_of(closed).as_deref(), Some("535.104.05"));
        assert_eq!(driver_version_of("GCC version: 13.3\n"), None);
    }

    #[test]
    fn parses_proc_stat_cpu_line() {
        let stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\nprocs_running 3\n";
        assert_eq!(cpu_times(stat), Some((150, 1000)));
    }

    #[test]
    fn samples_this_machine() {
        let mut s = Sampler::default();
        let a = s.sample(1);
        let b = s.sample(2);
        assert!(a.mem_avail_mb > 0 && b.mem_used_pct > 0.0);
        assert!(b.cpu_pct >= 0.0 && b.cpu_pct <= 100.0);
        assert!(session_info().cpu_cores > 0);
    }
}
