//! The GPU sampler thread: loads NVML, records the GPUs, then polls each
//! GPU's state every `status_interval` and drains the driver's sample
//! buffers every `buffer_interval` (and once more at the stop), handing the
//! rows to the capture's writer thread.

use super::buffers::{Buffers, Round};
use super::clock::{capture_ns_to_nvml_us, wall_step_ns};
use super::cost::timed;
use super::device;
use super::load;
use super::pids::TracedPids;
use crate::clock::Clock;
use crate::status::{GpuSamplerStatus, WarningKind};
use crate::thread_cpu::thread_cpu_ns;
use crate::warnings::Warnings;
use crate::writer::WriterMsg;
use ingero_store::GpuSamples;
use nvml_wrapper::{Device, Nvml};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the sampler needs to know.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// NVML library to load instead of searching ([`load::candidates`]).
    pub library: Option<PathBuf>,
    /// Time between polls of the device state.
    pub status_interval: Duration,
    /// Time between reads of the driver's sample buffers (the driver keeps a
    /// limited number of samples, about 1/5 s apart on an H200: a second
    /// loses none).
    pub buffer_interval: Duration,
}

/// Everything the thread shares with the capture.
pub struct SamplerLinks {
    /// Kernel time to epoch time (for the polls and the conversions).
    pub clock: Clock,
    /// Capture start, epoch ns: older driver samples are not read.
    pub started_ns: i64,
    /// To the writer thread.
    pub writer: SyncSender<WriterMsg>,
    /// Where the "NVML unavailable" warning goes.
    pub warnings: Arc<Warnings>,
    /// Processes whose per-process samples are kept.
    pub pids: Arc<TracedPids>,
    /// Counters published for the status.
    pub status: Arc<Mutex<GpuSamplerStatus>>,
}

/// A running sampler.
pub struct GpuSampler {
    stop: Sender<i64>,
    thread: JoinHandle<()>,
}

impl GpuSampler {
    /// Asks the sampler to stop at `stopped_ns` (capture clock): it reads
    /// the driver buffers a last time, keeping samples up to that instant,
    /// and polls no more.
    pub fn request_stop(&self, stopped_ns: i64) {
        let _ = self.stop.send(stopped_ns);
    }

    /// Waits for the sampler to hand its last rows to the writer and shut
    /// NVML down; false when the thread panicked.
    pub fn join(self) -> bool {
        drop(self.stop);
        self.thread.join().is_ok()
    }
}

/// Starts the sampler thread. Loading NVML happens on the thread, so a
/// slow driver initialisation does not delay the capture.
pub fn spawn(cfg: SamplerConfig, links: SamplerLinks) -> std::io::Result<GpuSampler> {
    let (stop, stop_rx) = channel();
    let thread = std::thread::Builder::new()
        .name("ingero-gpu".into())
        .spawn(move || run(cfg, links, stop_rx))?;
    Ok(GpuSampler { stop, thread })
}

/// Copies the counters into the status (called on the sampler thread, so
/// the CPU time read is its own).
fn publish(links: &SamplerLinks, st: &mut GpuSamplerStatus) {
    st.cpu_time_ns = thread_cpu_ns();
    let mut shared = match links.status.lock() {
        Ok(s) => s,
        Err(poisoned) => poisoned.into_inner(),
    };
    *shared = st.clone();
}

/// The next due time after `due`, never in the past.
fn next_due(due: Instant, every: Duration, now: Instant) -> Instant {
    let next = due + every;
    if next > now {
        next
    } else {
        now + every
    }
}

/// NVML could not be used (no driver, library not found, init failed):
/// the capture goes on without GPU measurements, and says so once, with
/// what each attempt met (`reason`) and how to point at the library.
fn warn_nvml_unavailable(warnings: &Warnings, reason: &str) {
    warnings.record(
        WarningKind::NvmlUnavailable,
        None,
        format!(
            "NVML is not available, so GPU activity is not measured (GPU busy will be \
             only a host-side bound from CUDA call times): {reason}; set {} to the path \
             of libnvidia-ml.so.1 if the driver is installed elsewhere",
            load::NVML_LIB_ENV
        ),
    );
}

fn run(cfg: SamplerConfig, links: SamplerLinks, stop: Receiver<i64>) {
    let mut st = GpuSamplerStatus::default();
    let t0 = Instant::now();
    let loaded = load::open(cfg.library.as_deref());
    st.add_call(t0.elapsed().as_nanos() as u64);
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            warn_nvml_unavailable(&links.warnings, &e.to_string());
            publish(&links, &mut st);
            return;
        }
    };
    st.library = Some(loaded.library.clone());
    let count = match timed(&mut st, || loaded.nvml.device_count()) {
        Ok(n) => n,
        Err(e) => {
            warn_nvml_unavailable(
                &links.warnings,
                &format!("{}: cannot count the GPUs: {e}", loaded.library),
            );
            st.library = None;
            publish(&links, &mut st);
            return;
        }
    };
    sample(&loaded.nvml, count, &cfg, &links, &stop, &mut st);
    let t0 = Instant::now();
    drop(loaded);
    st.add_call(t0.elapsed().as_nanos() as u64);
    publish(&links, &mut st);
}

fn sample(
    nvml: &Nvml,
    count: u32,
    cfg: &SamplerConfig,
    links: &SamplerLinks,
    stop: &Receiver<i64>,
    st: &mut GpuSamplerStatus,
) {
    let mut devices: Vec<(u32, Device)> = Vec::new();
    for i in 0..count {
        match timed(st, || nvml.device_by_index(i)) {
            Ok(d) => devices.push((i, d)),
            Err(e) => {
                st.errors += 1;
                tracing::debug!(gpu = i, error = %e, "NVML has no handle for this GPU");
            }
        }
    }
    st.devices = devices.len() as u32;
    let rows = devices
        .iter()
        .map(|(i, d)| device::identity(d, *i, st))
        .collect();
    let _ = links.writer.send(WriterMsg::GpuDevices(rows));
    let from_us = capture_ns_to_nvml_us(links.started_ns, wall_step_ns(&links.clock));
    let mut buffers: Vec<Buffers> = devices
        .iter()
        .map(|(i, _)| Buffers::new(*i, from_us))
        .collect();
    publish(links, st);
    let start = Instant::now();
    let mut next_status = start;
    let mut next_buffers = start + cfg.buffer_interval;
    let mut status_round: u64 = 0;
    loop {
        let wait = next_status
            .min(next_buffers)
            .saturating_duration_since(Instant::now());
        let stop_at = match stop.recv_timeout(wait) {
            Ok(ts) => Some(ts),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(links.clock.now_epoch()),
        };
        let mut batch = GpuSamples::default();
        let now = Instant::now();
        if stop_at.is_none() && now >= next_status {
            let ts = links.clock.now_epoch();
            let with_pcie = status_round.is_multiple_of(device::PCIE_POLL_EVERY);
            status_round += 1;
            for (i, d) in &devices {
                batch.status.push(device::poll(d, *i, ts, with_pcie, st));
            }
            next_status = next_due(next_status, cfg.status_interval, now);
        }
        if stop_at.is_some() || now >= next_buffers {
            let step_ns = wall_step_ns(&links.clock);
            let round = Round {
                until_us: stop_at.map_or(u64::MAX, |ts| capture_ns_to_nvml_us(ts, step_ns)),
                step_ns,
            };
            for ((_, d), b) in devices.iter().zip(buffers.iter_mut()) {
                b.read(d, round, &links.pids, st, &mut batch);
            }
            next_buffers = next_due(next_buffers, cfg.buffer_interval, now);
        }
        publish(links, st);
        if !batch.is_empty() && links.writer.send(WriterMsg::GpuSamples(batch)).is_err() {
            return;
        }
        if stop_at.is_some() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_keep_their_period_and_never_pile_up() {
        let t = Instant::now();
        let every = Duration::from_millis(200);
        assert_eq!(next_due(t, every, t), t + every);
        // A slow round: the next one is a full period after it ends.
        let late = t + Duration::from_millis(500);
        assert_eq!(next_due(t, every, late), late + every);
    }
}
