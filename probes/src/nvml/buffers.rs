//! Draining one GPU's driver sample buffers: GPU and memory utilisation
//! (nvmlDeviceGetSamples) and per-process utilisation
//! (nvmlDeviceGetProcessUtilization), each from its own [`Cursor`] so no
//! sample is read twice, converted to the capture clock.

use super::answer::Answer;
use super::clock::nvml_us_to_capture_ns;
use super::cost::timed;
use super::cursor::Cursor;
use super::pids::TracedPids;
use crate::status::GpuSamplerStatus;
use ingero_store::{GpuProcessSample, GpuSamples, GpuUtilKind, GpuUtilSample};
use nvml_wrapper::enum_wrappers::device::Sampling;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Device;

/// Where each buffer of one GPU was last read, and which ones it lacks.
#[derive(Debug)]
pub struct Buffers {
    gpu: u32,
    sm: Series,
    mem: Series,
    process: Series,
}

#[derive(Debug)]
struct Series {
    cursor: Cursor,
    supported: bool,
}

impl Series {
    fn new(from_us: u64) -> Series {
        Series {
            cursor: Cursor::new(from_us),
            supported: true,
        }
    }
}

/// What a round's bounds are: read up to `until_us` (driver µs), convert
/// with `step_ns` (see [`super::clock::wall_step_ns`]).
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// Newest driver timestamp wanted (the stop time in the last round).
    pub until_us: u64,
    /// Wall clock step to take off.
    pub step_ns: i64,
}

fn value_of(v: &SampleValue) -> i64 {
    match *v {
        SampleValue::F64(f) => f.round() as i64,
        SampleValue::U32(u) => i64::from(u),
        SampleValue::U64(u) => i64::try_from(u).unwrap_or(i64::MAX),
        SampleValue::I64(i) => i,
    }
}

impl Buffers {
    /// Buffers of `gpu`, read from `from_us` (the capture start) on.
    pub fn new(gpu: u32, from_us: u64) -> Buffers {
        Buffers {
            gpu,
            sm: Series::new(from_us),
            mem: Series::new(from_us),
            process: Series::new(from_us),
        }
    }

    /// Reads what the driver holds since the last read into `out`;
    /// per-process samples only of the processes `pids` keeps.
    pub fn read(
        &mut self,
        dev: &Device,
        round: Round,
        pids: &TracedPids,
        status: &mut GpuSamplerStatus,
        out: &mut GpuSamples,
    ) {
        for kind in [GpuUtilKind::Sm, GpuUtilKind::Memory] {
            self.read_util(dev, kind, round, status, out);
        }
        self.read_processes(dev, round, pids, status, out);
    }

    fn read_util(
        &mut self,
        dev: &Device,
        kind: GpuUtilKind,
        round: Round,
        status: &mut GpuSamplerStatus,
        out: &mut GpuSamples,
    ) {
        let (series, sampling, what) = match kind {
            GpuUtilKind::Sm => (
                &mut self.sm,
                Sampling::GpuUtilization,
                "gpu utilisation samples",
            ),
            GpuUtilKind::Memory => (
                &mut self.mem,
                Sampling::MemoryUtilization,
                "memory utilisation samples",
            ),
        };
        if !series.supported {
            return;
        }
        let since = series.cursor.last_seen();
        let answer = timed(status, || dev.samples(sampling, since));
        let Some(samples) = usable(answer, self.gpu, what, &mut series.supported, status) else {
            return;
        };
        let fresh = series
            .cursor
            .take_new(samples, round.until_us, |s| s.timestamp, |_| ());
        status.util_samples += fresh.len() as u64;
        out.util.extend(fresh.iter().map(|s| GpuUtilSample {
            ts_ns: nvml_us_to_capture_ns(s.timestamp, round.step_ns),
            gpu: self.gpu,
            kind,
            value: value_of(&s.value),
        }));
    }

    fn read_processes(
        &mut self,
        dev: &Device,
        round: Round,
        pids: &TracedPids,
        status: &mut GpuSamplerStatus,
        out: &mut GpuSamples,
    ) {
        let series = &mut self.process;
        if !series.supported {
            return;
        }
        let since = series.cursor.last_seen();
        let answer = timed(status, || dev.process_utilization_stats(since));
        let what = "process utilisation samples";
        let Some(samples) = usable(answer, self.gpu, what, &mut series.supported, status) else {
            return;
        };
        let fresh = series
            .cursor
            .take_new(samples, round.until_us, |s| s.timestamp, |s| s.pid);
        for s in fresh {
            let pid = i32::try_from(s.pid).unwrap_or(-1);
            if !pids.keeps(pid) {
                status.process_samples_ignored += 1;
                continue;
            }
            status.process_samples += 1;
            out.process.push(GpuProcessSample {
                ts_ns: nvml_us_to_capture_ns(s.timestamp, round.step_ns),
                gpu: self.gpu,
                pid,
                sm_pct: i64::from(s.sm_util),
                mem_pct: i64::from(s.mem_util),
            });
        }
    }
}

/// The samples of an answer; `None` when there are none to take. A series
/// the GPU does not support is not asked again; the buffer changing size
/// between NVML's count and read calls is retried next round (the cursor
/// has not moved, so nothing is lost).
fn usable<T>(
    answer: Result<Vec<T>, NvmlError>,
    gpu: u32,
    what: &str,
    supported: &mut bool,
    status: &mut GpuSamplerStatus,
) -> Option<Vec<T>> {
    match Answer::from(answer) {
        Answer::Value(v) => Some(v),
        Answer::Nothing | Answer::Failed(NvmlError::InsufficientSize(_)) => None,
        Answer::Unsupported => {
            *supported = false;
            status.note_unsupported(gpu, what);
            None
        }
        Answer::Failed(e) => {
            status.errors += 1;
            tracing::debug!(gpu, what, error = %e, "NVML sample read failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_values_of_every_type_become_integers() {
        assert_eq!(value_of(&SampleValue::U32(98)), 98);
        assert_eq!(value_of(&SampleValue::U64(7)), 7);
        assert_eq!(value_of(&SampleValue::I64(-3)), -3);
        assert_eq!(value_of(&SampleValue::F64(41.6)), 42);
    }

    #[test]
    fn an_unsupported_series_is_not_asked_again() {
        let mut s = GpuSamplerStatus::default();
        let mut supported = true;
        let r: Option<Vec<u8>> =
            usable(Err(NvmlError::NotSupported), 0, "x", &mut supported, &mut s);
        assert!(r.is_none());
        assert!(!supported);
        let mut supported = true;
        let r: Option<Vec<u8>> = usable(
            Err(NvmlError::InsufficientSize(None)),
            0,
            "x",
            &mut supported,
            &mut s,
        );
        assert!(r.is_none() && supported);
        assert_eq!(s.errors, 0);
    }
}
