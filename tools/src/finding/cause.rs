//! The host-side mechanism a finding blames, with its stable name.

use serde::Serialize;

/// The host-side mechanism a chain blames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The GPU idles while its feeding thread prepares input on the CPU
    /// (per-sample DataLoader fetch and collate).
    HostInputPipeline,
    /// The training job's own DataLoader workers saturate the CPU and preempt the GPU thread.
    DataloaderWorkerContention,
    /// Processes outside the job saturate the CPU and preempt the GPU thread.
    CpuContention,
    /// Bursts of kernel page allocations coincide with slow CUDA calls.
    PageAllocStorm,
    /// Many processes forked at once (worker start-up) coincide with slow CUDA calls.
    WorkerForkStorm,
    /// The host ran short of memory (high use, swapping).
    MemoryPressure,
    /// Host-to-device copies from pageable memory run at a fraction of pinned bandwidth.
    PageableMemcpy,
    /// Device allocations periodically take far longer than usual (allocator cache misses).
    AllocationSpike,
    /// The first CUDA calls (context creation, module loading) dominate the run.
    ColdStart,
    /// The host mostly waits on the GPU: the GPU is the bottleneck, not the host.
    GpuBound,
    /// The GPU thread works on the CPU outside CUDA while the GPU idles, and
    /// the capture holds no evidence of what that work is.
    HostCompute,
    /// The GPU thread blocks waiting on its DataLoader workers, which are
    /// too few or too slow for it.
    SlowWorkers,
    /// Device memory is allocated and freed in the loop, step after step.
    AllocatorChurn,
    /// The loop issues many tiny kernels and the host's launch path, not
    /// the GPU, sets the pace.
    LaunchBound,
    /// One long off-CPU stretch of the GPU thread while the loop runs.
    LongBlock,
    /// The GPU thread waits to take the Python GIL (stacks show it).
    GilContention,
    /// The GPU thread waits on disk or page-cache I/O (stacks show it).
    BlockingIo,
    /// The GPU thread sleeps in its loop (stacks show it).
    HostSleep,
    /// The process waits for input on sockets or file descriptors: no work
    /// arrives (stacks show it). A negative: no host-side bottleneck.
    WaitingForWork,
    /// The GPU thread waits on a lock or condition (stacks show a futex).
    LockWait,
    /// Every step reads a scalar back from the GPU and waits for it.
    SyncInLoop,
    /// The job compiles (torch.compile, Triton JIT or autotuning) while the
    /// GPU waits: compilation frames in its stacks, compiler processes.
    CompileStall,
    /// GPU idle time no mechanism's evidence covers, named by the code the
    /// GPU thread was in meanwhile (its stacks inside exactly that time).
    IdleCode,
}

impl Cause {
    /// Stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Cause::HostInputPipeline => "host_input_pipeline",
            Cause::DataloaderWorkerContention => "dataloader_worker_contention",
            Cause::CpuContention => "cpu_contention",
            Cause::PageAllocStorm => "page_alloc_storm",
            Cause::WorkerForkStorm => "worker_fork_storm",
            Cause::MemoryPressure => "memory_pressure",
            Cause::PageableMemcpy => "pageable_memcpy",
            Cause::AllocationSpike => "allocation_spike",
            Cause::ColdStart => "cold_start",
            Cause::GpuBound => "gpu_bound",
            Cause::HostCompute => "host_compute",
            Cause::SlowWorkers => "slow_workers",
            Cause::AllocatorChurn => "allocator_churn",
            Cause::LaunchBound => "launch_bound",
            Cause::LongBlock => "long_block",
            Cause::GilContention => "gil_contention",
            Cause::BlockingIo => "blocking_io",
            Cause::HostSleep => "host_sleep",
            Cause::WaitingForWork => "waiting_for_work",
            Cause::LockWait => "lock_wait",
            Cause::SyncInLoop => "sync_in_loop",
            Cause::CompileStall => "compile_stall",
            Cause::IdleCode => "idle_code",
        }
    }
}
