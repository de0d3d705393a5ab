//! Measured GPU activity: the rows of the schema-2 GPU tables
//! (`gpu_devices`, `gpu_util_samples`, `gpu_process_samples`, `gpu_status`)
//! as the capture hands them to the writer.
//!
//! They exist so that GPU idleness is read from the driver's own counters
//! (NVML) instead of being inferred from when the host called CUDA. Every
//! timestamp is on the capture clock (epoch ns), like the CUDA and host
//! events, so the two sides can be lined up row by row.

use serde::{Deserialize, Serialize};

/// Value stored in a numeric GPU field the device cannot report (NVML
/// answered "not supported", or the query failed).
pub const NOT_AVAILABLE: i64 = -1;

/// Which driver sample series a [`GpuUtilSample`] belongs to: the
/// `gpu_util_samples.kind` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuUtilKind {
    /// Percent of the sample period in which one or more kernels ran
    /// (NVML_GPU_UTILIZATION_SAMPLES).
    Sm,
    /// Percent of the sample period in which device memory was read or
    /// written (NVML_MEMORY_UTILIZATION_SAMPLES).
    Memory,
}

impl GpuUtilKind {
    /// Number stored in `gpu_util_samples.kind`.
    pub fn id(self) -> i64 {
        match self {
            GpuUtilKind::Sm => 1,
            GpuUtilKind::Memory => 2,
        }
    }

    /// Inverse of [`GpuUtilKind::id`].
    pub fn from_id(id: i64) -> Option<GpuUtilKind> {
        match id {
            1 => Some(GpuUtilKind::Sm),
            2 => Some(GpuUtilKind::Memory),
            _ => None,
        }
    }
}

/// A GPU seen during a capture: one `gpu_devices` row, so a sample's `gpu`
/// index can be named (model, UUID, PCI slot) and its memory figures put in
/// proportion.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GpuDevice {
    /// NVML device index (the `gpu` column of every other GPU table).
    pub gpu: u32,
    /// Product name, e.g. "NVIDIA H200"; empty when NVML did not say.
    pub name: String,
    /// Stable device UUID ("GPU-..."); empty when NVML did not say.
    pub uuid: String,
    /// PCI bus id ("00000000:19:00.0"); empty when NVML did not say.
    pub pci_bus_id: String,
    /// Installed device memory in bytes, 0 when unknown.
    pub mem_total_bytes: i64,
}

/// One driver sample of a device's utilisation: how busy it was over the
/// driver's sample period ending at `ts_ns` (a `gpu_util_samples` row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuUtilSample {
    /// End of the sample period, epoch ns on the capture clock.
    pub ts_ns: i64,
    /// NVML device index.
    pub gpu: u32,
    /// Which series.
    pub kind: GpuUtilKind,
    /// Utilisation in percent (0-100).
    pub value: i64,
}

/// One driver sample of one process's share of a device (a
/// `gpu_process_samples` row): which process kept the GPU busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcessSample {
    /// End of the sample period, epoch ns on the capture clock.
    pub ts_ns: i64,
    /// NVML device index.
    pub gpu: u32,
    /// Process id, in the same PID namespace as the traced processes.
    pub pid: i32,
    /// SM utilisation of this process, percent.
    pub sm_pct: i64,
    /// Memory-controller utilisation of this process, percent.
    pub mem_pct: i64,
}

/// Device state polled by the recorder (a `gpu_status` row): what limits
/// the GPU at that moment (copies over PCIe, clocks held down, power).
/// Each field is [`NOT_AVAILABLE`] where the device cannot report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuStatus {
    /// When the recorder asked, epoch ns on the capture clock.
    pub ts_ns: i64,
    /// NVML device index.
    pub gpu: u32,
    /// Device memory in use, bytes.
    pub mem_used_bytes: i64,
    /// PCIe receive throughput (host to device), KB/s.
    pub pcie_rx_kbps: i64,
    /// PCIe transmit throughput (device to host), KB/s.
    pub pcie_tx_kbps: i64,
    /// Current SM clock, MHz.
    pub sm_clock_mhz: i64,
    /// Power draw, milliwatts.
    pub power_mw: i64,
    /// Current clock-event (throttle) reasons, the `nvmlClocksEventReasons`
    /// bit mask.
    pub throttle_reasons: i64,
}

impl GpuStatus {
    /// A row for `gpu` at `ts_ns` with every field not available, to be
    /// filled in by what the device answers.
    pub fn unknown(ts_ns: i64, gpu: u32) -> GpuStatus {
        GpuStatus {
            ts_ns,
            gpu,
            mem_used_bytes: NOT_AVAILABLE,
            pcie_rx_kbps: NOT_AVAILABLE,
            pcie_tx_kbps: NOT_AVAILABLE,
            sm_clock_mhz: NOT_AVAILABLE,
            power_mw: NOT_AVAILABLE,
            throttle_reasons: NOT_AVAILABLE,
        }
    }
}

/// GPU rows collected in one round of the sampler, written in one
/// transaction by [`crate::TraceWriter::write_gpu_samples`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSamples {
    /// Device utilisation samples.
    pub util: Vec<GpuUtilSample>,
    /// Per-process utilisation samples.
    pub process: Vec<GpuProcessSample>,
    /// Polled device state.
    pub status: Vec<GpuStatus>,
}

impl GpuSamples {
    /// Rows held, all tables together.
    pub fn len(&self) -> usize {
        self.util.len() + self.process.len() + self.status.len()
    }

    /// True when there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_ids() {
        for k in [GpuUtilKind::Sm, GpuUtilKind::Memory] {
            assert_eq!(GpuUtilKind::from_id(k.id()), Some(k));
        }
        assert_eq!(GpuUtilKind::Sm.id(), 1);
        assert_eq!(GpuUtilKind::Memory.id(), 2);
        assert_eq!(GpuUtilKind::from_id(0), None);
    }

    #[test]
    fn an_unknown_status_is_not_available_everywhere() {
        let s = GpuStatus::unknown(5, 1);
        assert_eq!((s.ts_ns, s.gpu), (5, 1));
        for v in [
            s.mem_used_bytes,
            s.pcie_rx_kbps,
            s.pcie_tx_kbps,
            s.sm_clock_mhz,
            s.power_mw,
            s.throttle_reasons,
        ] {
            assert_eq!(v, NOT_AVAILABLE);
        }
    }
}
