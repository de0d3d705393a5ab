//! On-CPU stack sampling: a CPU-clock perf event per CPU running the
//! sampling program.

use super::{attach_err, program, Probes, STACK_SAMPLER};
use crate::error::CaptureError;
use aya::programs::perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent};
use aya::programs::PerfEvent;

impl Probes {
    /// Starts on-CPU stack sampling: one software CPU-clock perf event per
    /// online CPU at `hz` samples per second, each running the sampling
    /// program (which keeps only the traced tree). Returns the number of
    /// CPUs sampled.
    pub fn attach_stack_sampler(&mut self, hz: u32) -> Result<usize, CaptureError> {
        let cpus = aya::util::online_cpus()
            .map_err(|(what, e)| attach_err(&format!("online CPUs ({what})"), e))?;
        let p: &mut PerfEvent = program(&mut self.ebpf, STACK_SAMPLER)?;
        for cpu in &cpus {
            let what = || format!("CPU-clock sampling on CPU {cpu}");
            let id = p
                .attach(
                    PerfEventConfig::Software(SoftwareEvent::CpuClock),
                    PerfEventScope::AllProcessesOneCpu { cpu: *cpu },
                    SamplePolicy::Frequency(u64::from(hz)),
                    false,
                )
                .map_err(|e| attach_err(&what(), e))?;
            let link = p.take_link(id).map_err(|e| attach_err(&what(), e))?;
            self.links.push(Box::new(link));
        }
        Ok(cpus.len())
    }
}
