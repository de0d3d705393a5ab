//! One GPU as the recorder sees it: its identity (read once) and its
//! polled state (memory in use, PCIe throughput, SM clock, power, clock
//! event reasons), each field -1 where the GPU cannot report it.

use super::answer::field;
use super::cost::timed;
use crate::status::GpuSamplerStatus;
use ingero_store::{GpuDevice, GpuStatus};
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter};
use nvml_wrapper::Device;

/// Reads the `gpu_devices` row of `dev` (empty text, 0 bytes where NVML
/// does not say).
pub fn identity(dev: &Device, gpu: u32, status: &mut GpuSamplerStatus) -> GpuDevice {
    let name = timed(status, || dev.name()).unwrap_or_default();
    let uuid = timed(status, || dev.uuid()).unwrap_or_default();
    let pci_bus_id = timed(status, || dev.pci_info())
        .map(|p| p.bus_id)
        .unwrap_or_default();
    let mem_total_bytes = timed(status, || dev.memory_info())
        .map(|m| i64::try_from(m.total).unwrap_or(i64::MAX))
        .unwrap_or(0);
    GpuDevice {
        gpu,
        name,
        uuid,
        pci_bus_id,
        mem_total_bytes,
    }
}

/// A status poll reads the PCIe throughput counters only once in this
/// many: each of the two queries waits about 20 ms in the driver (it
/// samples the link), which at every 200 ms poll kept the sampler thread
/// busy a fifth of the time; the other polls store them as not available.
pub const PCIE_POLL_EVERY: u64 = 10;

/// Polls the state of `dev` now (`ts_ns`, capture clock), with the PCIe
/// throughput counters when `with_pcie` (see [`PCIE_POLL_EVERY`]).
pub fn poll(
    dev: &Device,
    gpu: u32,
    ts_ns: i64,
    with_pcie: bool,
    status: &mut GpuSamplerStatus,
) -> GpuStatus {
    let mem = timed(status, || dev.memory_info().map(|m| m.used));
    let pcie = |counter: PcieUtilCounter, status: &mut GpuSamplerStatus| {
        if with_pcie {
            timed(status, || dev.pcie_throughput(counter).map(u64::from))
        } else {
            Err(nvml_wrapper::error::NvmlError::NotFound)
        }
    };
    let rx = pcie(PcieUtilCounter::Receive, status);
    let tx = pcie(PcieUtilCounter::Send, status);
    let clock = timed(status, || dev.clock_info(Clock::SM).map(u64::from));
    let power = timed(status, || dev.power_usage().map(u64::from));
    let reasons = timed(status, || dev.current_throttle_reasons().map(|r| r.bits()));
    status.status_polls += 1;
    GpuStatus {
        ts_ns,
        gpu,
        mem_used_bytes: field(status, gpu, "memory used", mem),
        pcie_rx_kbps: field(status, gpu, "pcie rx", rx),
        pcie_tx_kbps: field(status, gpu, "pcie tx", tx),
        sm_clock_mhz: field(status, gpu, "sm clock", clock),
        power_mw: field(status, gpu, "power", power),
        throttle_reasons: field(status, gpu, "clock event reasons", reasons),
    }
}
