//! NVML's view of who uses the GPUs: the compute processes of each device
//! and the memory each holds, through the loader the capture's GPU sampler
//! uses (`INGERO_NVML_LIB`, `libnvidia-ml.so.1`, `/usr/local/nvidia/lib64`).

use crate::nvml::load;
use nvml_wrapper::enums::device::UsedGpuMemory;
use serde::Serialize;

/// One compute process on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputeProcess {
    /// Process id as the driver reports it.
    pub pid: i32,
    /// NVML device index.
    pub gpu: u32,
    /// GPU memory it holds there, bytes, when the driver says.
    pub memory_bytes: Option<u64>,
}

/// Whether NVML answered the listing, so a list without GPU memory can say
/// why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct NvmlReport {
    /// The NVML library used, when one loaded.
    pub library: Option<String>,
    /// GPUs NVML reported.
    pub devices: u32,
    /// Why NVML could not be used or a device could not be asked; the list
    /// then comes from the memory maps alone.
    pub error: Option<String>,
}

/// Every compute process on every GPU, with what happened asking.
pub fn compute_processes() -> (NvmlReport, Vec<ComputeProcess>) {
    let loaded = match load::open(load::library_from_env().as_deref()) {
        Ok(l) => l,
        Err(e) => {
            let report = NvmlReport {
                error: Some(format!("NVML unavailable: {e}")),
                ..NvmlReport::default()
            };
            return (report, Vec::new());
        }
    };
    let mut report = NvmlReport {
        library: Some(loaded.library.clone()),
        ..NvmlReport::default()
    };
    let count = match loaded.nvml.device_count() {
        Ok(n) => n,
        Err(e) => {
            report.error = Some(format!("NVML could not count the GPUs: {e}"));
            return (report, Vec::new());
        }
    };
    report.devices = count;
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for gpu in 0..count {
        let listed = loaded
            .nvml
            .device_by_index(gpu)
            .and_then(|d| d.running_compute_processes());
        match listed {
            Ok(procs) => found.extend(procs.into_iter().map(|p| ComputeProcess {
                pid: i32::try_from(p.pid).unwrap_or(-1),
                gpu,
                memory_bytes: match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                },
            })),
            Err(e) => problems.push(format!("GPU {gpu}: {e}")),
        }
    }
    if !problems.is_empty() {
        report.error = Some(format!(
            "NVML could not list the processes of {}",
            problems.join("; ")
        ));
    }
    found.retain(|p| p.pid > 0);
    (report, found)
}
