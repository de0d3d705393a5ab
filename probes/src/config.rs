//! What to capture, where to write it.

use ingero_store::RawPolicy;
use std::path::PathBuf;
use std::time::Duration;

/// Which processes to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A running process and every process it forks from now on.
    Pid(i32),
    /// A command ingero starts (held until the probes are in place) and its children.
    Command(Vec<String>),
    /// Every process on the machine except ingero itself.
    AllProcesses,
}

/// Everything `start` needs to know.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    /// Processes to follow.
    pub target: Target,
    /// Stop after this long; `None` runs until stopped (or the target exits).
    pub duration: Option<Duration>,
    /// Trace database to create or extend.
    pub db: PathBuf,
    /// Extra CUDA library files to probe besides the ones discovered.
    pub libraries: Vec<PathBuf>,
    /// Fail at start when no CUDA library is found anywhere.
    pub require_cuda_library: bool,
    /// Which raw rows to keep (aggregates always count everything).
    pub raw: RawPolicy,
    /// Ring buffer size in bytes (power of two, at least one page).
    pub ring_bytes: u32,
    /// How often the ring buffer is drained.
    pub poll_interval: Duration,
    /// How often a batch is committed to the database.
    pub batch_interval: Duration,
    /// Use multi-uprobe links for the CUDA probes when the kernel has them
    /// (fast attach and detach); `false` forces one link per function, the
    /// path older kernels take on their own.
    pub multi_uprobes: bool,
    /// Stop probing the runtime launch functions once every runtime launch
    /// is seen to reach the driver's (see `launch_level`); off, both levels
    /// stay probed for the whole capture.
    pub one_launch_level: bool,
    /// Sample the GPUs through NVML during the capture when the library
    /// loads (when it does not, one warning and the capture goes on).
    pub nvml: bool,
    /// NVML library file to load instead of searching the loader path and
    /// `/usr/local/nvidia/lib64`; `new` takes it from `INGERO_NVML_LIB`.
    pub nvml_library: Option<PathBuf>,
    /// How often each GPU's state is polled (memory used, PCIe throughput,
    /// SM clock, power, clock-event reasons).
    pub gpu_status_interval: Duration,
    /// How often the driver's utilisation sample buffers are read (they
    /// hold a limited number of samples; every second loses none).
    pub gpu_buffer_interval: Duration,
    /// On-CPU stack samples per second and CPU of the traced tree (0 = no
    /// stack sampling at all: no on-CPU, off-CPU or Python stacks).
    pub stack_hz: u32,
    /// With stack sampling on: the stack of every CUDA-calling thread at each
    /// switch-out (where it blocked), joined with its off-CPU time.
    pub offcpu_stacks: bool,
    /// With stack sampling on: Python frames of traced CPython processes at
    /// the same rate (py-spy, from a thread of ingero's own).
    pub python_stacks: bool,
    /// Sampled launch timing ([`DEFAULT_LAUNCH_SAMPLE`] by default): 0 or 1
    /// times every call; N > 1 leaves outer
    /// driver launches untimed only inside a thread's dense stretches
    /// (entered under 50 us after its previous one): one in N of those is
    /// timed, the others are counted in the kernel into runs with the
    /// thread's recent mean launch time (estimated, in the aggregates, no
    /// raw row) and bounded by the thread's next probed call, so they cost
    /// one probe trap and no ring record. Needs uprobe sessions
    /// (Linux 6.13+); without them every launch is timed (folded by launch
    /// rows), with a warning.
    pub launch_sample: u32,
    /// Launch rows, with every launch timed (`launch_sample` 0 or 1): 0 or
    /// 1 sends one record per launch; K > 1 sends an outer driver launch's
    /// own row only for the thread's first, one in K, a failed one, or one
    /// of at least 50 us; the others are summed in the kernel into runs
    /// with their measured durations (aggregates exact, no raw row), so
    /// most launches cost the probe pair and no ring record.
    pub launch_rows: u32,
    /// Call folding (`bpf/call_folds.h`): 0 sends one record (one raw row)
    /// per call; N > 0 keeps, per thread and op, at most N raw rows per
    /// second of the calls that succeeded in less than 50 us (and holds the
    /// launch rows above to the same budget); every failed or slower call
    /// keeps its row; the others are counted in the kernel (count, time,
    /// bytes, extremes exact: aggregates and activity spans, no raw row).
    pub call_rows: u32,
}

/// Default call folding: raw rows per second per thread and op of fast,
/// successful calls. With it a thread adds at most
/// [`BOUND_BYTES_PER_THREAD_S`] to the database per second, whatever its
/// call rate.
pub const DEFAULT_CALL_ROWS: u32 = 8;

/// The stated bound of the default capture: bytes per second that the CUDA
/// calls of one traced thread which succeed in under 50 us add to the
/// database, at any call rate (README "Capture size"; `tests/fold_bound.rs`
/// holds 1M-call loops of every op class to it). Its parts at worst: 16
/// budget slots x 8 sampled raw rows (about 14 KB), one aggregate row per
/// op and second, one activity span per burst (a burst ends at a 1 ms gap:
/// at most 1,000 per second, about 60 KB). Failed calls, and calls of 50 us
/// or more (at most 20,000 per second and thread), keep one row each on
/// top of it.
pub const BOUND_BYTES_PER_THREAD_S: u64 = 128 * 1024;

/// Default launch rows: one outer launch in this many keeps its raw row.
pub const DEFAULT_LAUNCH_ROWS: u32 = 32;

/// Default sampled launch timing: inside a thread's dense stretches of
/// launches, one in this many is timed and the others cost one probe trap
/// each (the untimed ones are counted exactly and bounded by the thread's
/// next call). Launch-bound loops are where a tracer costs most: on an H100,
/// a loop of tiny kernels paid 1.2 us per launch with every launch timed,
/// 0.85 us with this (the entry trap alone: 0.63 us).
pub const DEFAULT_LAUNCH_SAMPLE: u32 = 16;

/// Default on-CPU sampling rate (`ingero trace --stack-hz`): 99 per second,
/// off the round 100 so sampling does not beat with periodic work.
pub const DEFAULT_STACK_HZ: u32 = 99;

impl CaptureConfig {
    /// Defaults for everything but the target and the database path.
    pub fn new(target: Target, db: impl Into<PathBuf>) -> CaptureConfig {
        CaptureConfig {
            target,
            duration: None,
            db: db.into(),
            libraries: Vec::new(),
            require_cuda_library: false,
            raw: RawPolicy::All,
            ring_bytes: 16 << 20,
            poll_interval: Duration::from_millis(20),
            batch_interval: Duration::from_millis(200),
            multi_uprobes: true,
            one_launch_level: true,
            nvml: true,
            nvml_library: crate::nvml::load::library_from_env(),
            gpu_status_interval: Duration::from_millis(200),
            gpu_buffer_interval: Duration::from_secs(1),
            stack_hz: DEFAULT_STACK_HZ,
            offcpu_stacks: true,
            python_stacks: true,
            launch_sample: DEFAULT_LAUNCH_SAMPLE,
            launch_rows: DEFAULT_LAUNCH_ROWS,
            call_rows: DEFAULT_CALL_ROWS,
        }
    }

    /// True when timed outer launches are summed in the kernel instead of
    /// each sending its row (`folding_launches()` in `bpf/cuda.h`): launch
    /// rows on, every launch timed.
    pub fn folds_launches(&self) -> bool {
        self.launch_sample <= 1 && self.launch_rows > 1
    }
}

/// Parses a ring buffer size: bytes with an optional K, M or G suffix
/// (powers of 1024), a power of two from 4K to 1G. Shared by the CLI and the
/// MCP server so both accept the same spellings.
pub fn parse_ring_size(text: &str) -> Result<u32, String> {
    let t = text.trim().trim_end_matches(['i', 'I', 'b', 'B']);
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size: use bytes or K/M/G, e.g. 4K or 64M"))?;
    let bytes = n
        .checked_shl(shift)
        .filter(|b| b >> shift == n)
        .ok_or_else(|| format!("{text} is too large"))?;
    if !bytes.is_power_of_two() || !(4096..=1 << 30).contains(&bytes) {
        return Err(format!(
            "{text} is not usable: give a power of two from 4K to 1G"
        ));
    }
    Ok(bytes as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes_are_powers_of_two_with_units() {
        assert_eq!(parse_ring_size("4K"), Ok(4096));
        assert_eq!(parse_ring_size("16M"), Ok(16 << 20));
        assert_eq!(parse_ring_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_ring_size("1g"), Ok(1 << 30));
        assert_eq!(parse_ring_size("65536"), Ok(65536));
        for bad in [
            "",
            "3K",
            "2K",
            "2G",
            "abc",
            "-4K",
            "99999999999999999999G",
            "4KK",
        ] {
            assert!(parse_ring_size(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn the_kernel_keeps_every_launch_row_over_the_threshold_analysis_assumes() {
        let header = include_str!("../bpf/cuda.h");
        let wanted = format!(
            "#define LAUNCH_SLOW_NS {}ULL",
            ingero_store::schema::LAUNCH_ROW_KEEP_NS
        );
        assert!(header.contains(&wanted), "cuda.h lacks {wanted:?}");
    }
}
