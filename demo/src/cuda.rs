//! Cost model of the CUDA runtime and driver calls the scenarios make: how
//! much host work, driver sleeping and device work each call involves.
//!
//! The figures are typical orders of magnitude for a discrete GPU on PCIe 4;
//! what the demo files show on top of them (stretched calls, waits) comes from
//! the simulation, not from these numbers.

use crate::gpu::{transfer_ns, PINNED_BW, STAGING_BW};
use crate::rng::Rng;
use crate::sim::{CudaSpec, Pages};
use ingero_store::catalog::copy_kind;

/// `cudaMalloc`.
pub const CUDA_MALLOC: u16 = 1;
/// `cudaFree`.
pub const CUDA_FREE: u16 = 2;
/// `cudaLaunchKernel`.
pub const CUDA_LAUNCH_KERNEL: u16 = 3;
/// `cudaStreamSynchronize`.
pub const CUDA_STREAM_SYNC: u16 = 5;
/// `cudaDeviceSynchronize`.
pub const CUDA_DEVICE_SYNC: u16 = 6;
/// `cudaMemcpyAsync`.
pub const CUDA_MEMCPY_ASYNC: u16 = 7;
/// `cuLaunchKernel`.
pub const CU_LAUNCH_KERNEL: u16 = 101;
/// `cuMemAlloc_v2`.
pub const CU_MEM_ALLOC: u16 = 102;
/// `cuMemFree_v2`.
pub const CU_MEM_FREE: u16 = 103;

/// `cudaErrorMemoryAllocation`.
pub const ERR_MEMORY_ALLOCATION: i64 = 2;

/// Stream handle used by the simulated training loops.
pub const STREAM: i64 = 0x7f3a_9c00_4e10;

/// Bytes per 2 MiB huge page (order-9 allocation).
pub const HUGE_PAGE: i64 = 2 * 1024 * 1024;

/// Probability that a launch has to wait briefly in the driver (channel
/// lock held by another thread, push-buffer doorbell). On an idle host that
/// costs tens of microseconds; on a saturated one the thread then queues for
/// a core, which is where launch tails come from.
const LAUNCH_WAIT_P: f64 = 0.06;

/// A kernel launch queuing `gpu_ns` of device work.
pub fn launch(rng: &mut Rng, gpu_ns: i64, driver_probes: bool) -> CudaSpec {
    let mut s = CudaSpec::new(CUDA_LAUNCH_KERNEL);
    if driver_probes {
        s.nested_op_id = CU_LAUNCH_KERNEL;
    }
    s.stream = STREAM;
    s.cpu_ns = rng.skewed(5_500, 2.5);
    if rng.chance(LAUNCH_WAIT_P) {
        s.block_ns = rng.range(8_000, 40_000);
        s.tail_cpu_ns = 1_500;
    }
    s.gpu_ns = gpu_ns;
    s
}

/// First launch of a kernel whose module is loaded lazily: the driver reads
/// and relocates the cubin (host work, page allocations, file I/O) first.
pub fn first_launch(rng: &mut Rng, gpu_ns: i64, driver_probes: bool) -> CudaSpec {
    let mut s = launch(rng, gpu_ns, driver_probes);
    s.cpu_ns = rng.range(8_000_000, 30_000_000);
    s.pages = Pages::new(2, rng.range(8, 24) as u32);
    s.block_ns = rng.range(3_000_000, 10_000_000);
    s.tail_cpu_ns = 20_000;
    s
}

/// Asynchronous host-to-device copy of `bytes` from page-locked memory:
/// the call only queues a DMA.
pub fn upload_pinned(rng: &mut Rng, bytes: i64) -> CudaSpec {
    let mut s = CudaSpec::new(CUDA_MEMCPY_ASYNC);
    s.bytes = bytes;
    s.copy_kind = copy_kind::HOST_TO_DEVICE;
    s.stream = STREAM;
    s.cpu_ns = rng.skewed(7_000, 2.0);
    s.gpu_ns = transfer_ns(bytes, PINNED_BW);
    s
}

/// "Asynchronous" host-to-device copy of `bytes` from pageable memory: the
/// driver stages the buffer through its bounce buffer on the calling thread
/// (faulting in the source pages as it goes) and returns only once the DMA is done.
pub fn upload_pageable(rng: &mut Rng, bytes: i64) -> CudaSpec {
    let mut s = CudaSpec::new(CUDA_MEMCPY_ASYNC);
    s.bytes = bytes;
    s.copy_kind = copy_kind::HOST_TO_DEVICE;
    s.stream = STREAM;
    s.cpu_ns = rng.jitter(transfer_ns(bytes, STAGING_BW), 0.08);
    s.pages = Pages::new(9, (bytes / HUGE_PAGE).max(1) as u32);
    s.gpu_ns = transfer_ns(bytes, PINNED_BW);
    s.wait_gpu = true;
    s.tail_cpu_ns = 3_000;
    s
}

/// `cudaStreamSynchronize` on the training stream.
pub fn stream_sync() -> CudaSpec {
    let mut s = CudaSpec::new(CUDA_STREAM_SYNC);
    s.stream = STREAM;
    s.cpu_ns = 1_800;
    s.wait_gpu = true;
    s.tail_cpu_ns = 1_200;
    s
}

/// `cudaDeviceSynchronize`.
pub fn device_sync() -> CudaSpec {
    let mut s = CudaSpec::new(CUDA_DEVICE_SYNC);
    s.cpu_ns = 2_000;
    s.wait_gpu = true;
    s.tail_cpu_ns = 1_200;
    s
}

/// `cudaMalloc` of `bytes` with `cpu_ns` of driver work and `block_ns` of
/// sleeping in the kernel driver; `ret` is the return code.
pub fn malloc(bytes: i64, cpu_ns: i64, block_ns: i64, ret: i64, driver_probes: bool) -> CudaSpec {
    let mut s = CudaSpec::new(CUDA_MALLOC);
    if driver_probes {
        s.nested_op_id = CU_MEM_ALLOC;
    }
    s.bytes = bytes;
    s.cpu_ns = cpu_ns;
    s.block_ns = block_ns;
    if block_ns > 0 {
        s.tail_cpu_ns = 2_000;
    }
    s.ret = ret;
    s
}

/// `cudaFree`, which waits for the device to drain before releasing memory.
pub fn free(bytes: i64, cpu_ns: i64, block_ns: i64, driver_probes: bool) -> CudaSpec {
    let mut s = CudaSpec::new(CUDA_FREE);
    if driver_probes {
        s.nested_op_id = CU_MEM_FREE;
    }
    s.bytes = bytes;
    s.cpu_ns = cpu_ns;
    s.block_ns = block_ns;
    s.wait_gpu = true;
    s.tail_cpu_ns = 1_000;
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ingero_store::catalog::cuda_op_by_name;

    #[test]
    fn ids_match_the_catalogue() {
        for (name, id) in [
            ("cudaMalloc", CUDA_MALLOC),
            ("cudaFree", CUDA_FREE),
            ("cudaLaunchKernel", CUDA_LAUNCH_KERNEL),
            ("cudaStreamSynchronize", CUDA_STREAM_SYNC),
            ("cudaDeviceSynchronize", CUDA_DEVICE_SYNC),
            ("cudaMemcpyAsync", CUDA_MEMCPY_ASYNC),
            ("cuLaunchKernel", CU_LAUNCH_KERNEL),
            ("cuMemAlloc_v2", CU_MEM_ALLOC),
            ("cuMemFree_v2", CU_MEM_FREE),
        ] {
            assert_eq!(cuda_op_by_name(name).map(|o| o.id), Some(id), "{name}");
        }
    }
}
