//! Can this machine capture? The checks `ingero check` prints, each with a
//! fix, and the subset `start` enforces before touching the kernel.

use crate::error::CaptureError;
use serde::Serialize;
use std::fs;
use std::path::Path;

const BTF_PATH: &str = "/sys/kernel/btf/vmlinux";
const TRACEFS_DIRS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Fine.
    Ok,
    /// Capture works, with less data or extra setup.
    Warn,
    /// Capture cannot work until this is fixed.
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CheckItem {
    /// What was checked.
    pub name: String,
    /// Result.
    pub status: CheckStatus,
    /// What was found.
    pub detail: String,
    /// How to fix a warning or failure.
    pub fix: Option<String>,
}

/// Every check, in order, and whether capture can work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CheckReport {
    /// Individual checks.
    pub items: Vec<CheckItem>,
    /// False when any check failed.
    pub ready: bool,
}

fn item(name: &str, status: CheckStatus, detail: String, fix: Option<&str>) -> CheckItem {
    CheckItem {
        name: name.into(),
        status,
        detail,
        fix: fix.map(str::to_string),
    }
}

/// Parses "6.18.44-fc" into (6, 18).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// Effective capability mask of this process (from /proc/self/status).
fn effective_caps() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    u64::from_str_radix(hex, 16).ok()
}

fn has_cap(mask: u64, cap: u32) -> bool {
    mask & (1u64 << cap) != 0
}

/// True when the capability mask allows loading and attaching the probes.
pub fn caps_allow_tracing(mask: u64) -> bool {
    has_cap(mask, CAP_SYS_ADMIN) || (has_cap(mask, CAP_BPF) && has_cap(mask, CAP_PERFMON))
}

fn check_kernel() -> Result<String, (String, CaptureError)> {
    let release = crate::sysinfo::kernel_release();
    match kernel_version(&release) {
        Some(v) if v >= (5, 8) => Ok(release),
        _ => Err((
            format!("{release} (need 5.8 or newer)"),
            CaptureError::KernelTooOld { found: release },
        )),
    }
}

fn check_permissions() -> Result<String, (String, CaptureError)> {
    let mask = effective_caps().unwrap_or(0);
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let detail = format!("euid {euid}, effective capabilities {mask:#x}");
    if caps_allow_tracing(mask) {
        Ok(detail)
    } else {
        Err((
            detail.clone(),
            CaptureError::NotPermitted {
                detail: format!("{detail}: CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN needed"),
            },
        ))
    }
}

fn check_btf() -> Result<String, (String, CaptureError)> {
    match fs::metadata(BTF_PATH) {
        Ok(m) if m.len() > 0 => Ok(format!("{BTF_PATH} ({} KiB)", m.len() / 1024)),
        Ok(_) => {
            let d = format!("{BTF_PATH} is empty");
            Err((d.clone(), CaptureError::NoBtf { detail: d }))
        }
        Err(e) => {
            let d = format!("{BTF_PATH}: {e}");
            Err((d.clone(), CaptureError::NoBtf { detail: d }))
        }
    }
}

fn check_tracefs() -> Result<String, (String, CaptureError)> {
    match TRACEFS_DIRS
        .iter()
        .find(|d| Path::new(d).join("events").is_dir())
    {
        Some(d) => Ok(format!("mounted at {d}")),
        None => Err((
            "not mounted at /sys/kernel/tracing".into(),
            CaptureError::TracefsMissing,
        )),
    }
}

/// Fails with the first problem that makes capture impossible.
pub fn require_capture_ready() -> Result<(), CaptureError> {
    check_permissions().map_err(|e| e.1)?;
    check_kernel().map_err(|e| e.1)?;
    check_btf().map_err(|e| e.1)?;
    check_tracefs().map_err(|e| e.1)?;
    Ok(())
}

fn bpffs_mounted() -> bool {
    fs::read_to_string("/proc/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("bpf"))
        })
        .unwrap_or(false)
}

/// Whether NVML loads (GPU activity measured during captures): a warning,
/// never a failure, when it does not.
fn nvml_item() -> CheckItem {
    let explicit = crate::nvml::load::library_from_env();
    match crate::nvml::load::open(explicit.as_deref()) {
        Ok(l) => {
            let gpus = match l.nvml.device_count() {
                Ok(n) => format!("{n} GPU(s)"),
                Err(e) => format!("GPU count unknown ({e})"),
            };
            item(
                "nvml",
                CheckStatus::Ok,
                format!(
                    "{} loads: {gpus}; GPU utilisation is sampled during captures",
                    l.library
                ),
                None,
            )
        }
        Err(e) => item(
            "nvml",
            CheckStatus::Warn,
            format!(
                "NVML is not available, so GPU busy is only a host-side bound from CUDA call \
                 times ({e})"
            ),
            Some(&format!(
                "install the NVIDIA driver, or set {} to the path of libnvidia-ml.so.1",
                crate::nvml::NVML_LIB_ENV
            )),
        ),
    }
}

/// Runs every check (loading the probes too when permitted), for `ingero check`.
pub fn preflight() -> CheckReport {
    use CheckStatus::{Fail, Ok as Good};
    let mut items = Vec::new();
    let mut push = |name: &str, r: Result<String, (String, CaptureError)>, fix: &str| {
        items.push(match r {
            Ok(d) => item(name, Good, d, None),
            Err((d, _)) => item(name, Fail, d, Some(fix)),
        })
    };
    let kernel_ok = check_kernel();
    let perm_ok = check_permissions();
    let btf_ok = check_btf();
    let can_load = kernel_ok.is_ok() && perm_ok.is_ok() && btf_ok.is_ok();
    push("kernel", kernel_ok, "upgrade to Linux 5.8 or newer");
    push(
        "permissions",
        perm_ok,
        "run as root (sudo ingero ...) or grant CAP_BPF+CAP_PERFMON: sudo setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep $(which ingero)",
    );
    push(
        "btf",
        btf_ok,
        "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y (standard on Ubuntu 20.10+, Debian 11+, RHEL 8.2+)",
    );
    push(
        "tracefs",
        check_tracefs(),
        "mount -t tracefs nodev /sys/kernel/tracing",
    );
    items.push(uprobes_item());
    items.push(bpffs_item());
    if can_load {
        items.push(programs_item());
    }
    items.push(cuda_libraries_item());
    items.push(gpu_driver_item());
    items.push(nvml_item());
    let ready = items.iter().all(|i| i.status != CheckStatus::Fail);
    CheckReport { items, ready }
}

/// Whether the kernel has the uprobe PMU the CUDA probes attach through.
fn uprobes_item() -> CheckItem {
    let uprobe_pmu = Path::new("/sys/bus/event_source/devices/uprobe/type").exists();
    if uprobe_pmu {
        item(
            "uprobes",
            CheckStatus::Ok,
            "uprobe PMU present".into(),
            None,
        )
    } else {
        item(
            "uprobes",
            CheckStatus::Fail,
            "no /sys/bus/event_source/devices/uprobe".into(),
            Some("use a kernel built with CONFIG_UPROBES=y and CONFIG_UPROBE_EVENTS=y"),
        )
    }
}

/// Whether bpffs is mounted: not needed for capture, only a hint for
/// other eBPF tools.
fn bpffs_item() -> CheckItem {
    if bpffs_mounted() {
        item("bpffs", CheckStatus::Ok, "mounted".into(), None)
    } else {
        item(
            "bpffs",
            CheckStatus::Warn,
            "not mounted (not needed for capture; other eBPF tools may want it)".into(),
            Some("mount -t bpf bpf /sys/fs/bpf"),
        )
    }
}

/// Loads every program (nothing attached) to learn whether the kernel
/// verifies them, and which way the CUDA probes would attach.
fn programs_item() -> CheckItem {
    let loaded = crate::loader::Probes::load(crate::loader::LoadOptions {
        trace_all: false,
        self_tgid: std::process::id(),
        ring_bytes: 1 << 16,
        multi_uprobes: true,
        offcpu_stacks: false,
        launch_sample: 0,
        launch_rows: 0,
        call_rows: 0,
    });
    match loaded {
        Ok(p) => item(
            "bpf programs",
            CheckStatus::Ok,
            if p.uses_multi_uprobes() {
                "all programs load and verify; CUDA probes use multi-uprobe links".into()
            } else {
                "all programs load and verify; CUDA probes use one uprobe link per function \
                 (kernel without multi-uprobe links, 6.6+)"
                    .into()
            },
            None,
        ),
        Err(e) => item(
            "bpf programs",
            CheckStatus::Fail,
            e.to_string(),
            Some("check `dmesg` and the kernel's BPF options (CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS)"),
        ),
    }
}

/// The CUDA libraries a capture would probe at its start: in the usual
/// places and in the running processes.
fn cuda_libraries_item() -> CheckItem {
    let mut libs: Vec<String> = crate::discovery::well_known_libraries()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    for pid in crate::procs::all_pids() {
        for l in crate::discovery::libraries_in_maps(pid) {
            let s = l.display().to_string();
            if !libs.contains(&s) {
                libs.push(s);
            }
        }
    }
    if libs.is_empty() {
        item(
            "cuda libraries",
            CheckStatus::Warn,
            "no libcudart/libcuda found in the usual places or in running processes".into(),
            Some("pass --lib /path/to/libcudart.so.N to `ingero trace`; libraries loaded later (e.g. from a Python wheel) are picked up during capture"),
        )
    } else {
        item("cuda libraries", CheckStatus::Ok, libs.join(", "), None)
    }
}

/// Whether an NVIDIA driver is loaded (host events are captured without).
fn gpu_driver_item() -> CheckItem {
    match crate::sysinfo::gpu_driver() {
        Some(v) => item("gpu driver", CheckStatus::Ok, format!("NVIDIA {v}"), None),
        None => item(
            "gpu driver",
            CheckStatus::Warn,
            "/proc/driver/nvidia/version not found (no NVIDIA driver loaded)".into(),
            Some(
                "install the NVIDIA driver to trace real GPU work; host events are captured anyway",
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_versions() {
        assert_eq!(kernel_version("6.18.44-fc-v1045"), Some((6, 18)));
        assert_eq!(kernel_version("5.4.0-150-generic"), Some((5, 4)));
        assert_eq!(kernel_version("garbage"), None);
    }

    #[test]
    fn capability_rules() {
        assert!(caps_allow_tracing(1 << CAP_SYS_ADMIN));
        assert!(caps_allow_tracing((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!caps_allow_tracing(1 << CAP_BPF));
        assert!(!caps_allow_tracing(0));
    }
}
