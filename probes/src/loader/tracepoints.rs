//! The kernel tracepoints every capture attaches (scheduler, memory,
//! process lifecycle) and, where the loader watch cannot be used, the mmap
//! syscall tracepoints that stand in for it.

use super::{attach_err, program, Probes, BTF_TRACEPOINTS, CLASSIC_TRACEPOINTS};
use crate::error::CaptureError;
use crate::status::WarningKind;
use aya::programs::{BtfTracePoint, TracePoint};
use std::path::Path;

impl Probes {
    /// Attaches the scheduler, memory and lifecycle tracepoints (and, where
    /// the loader watch cannot be used, the mmap syscall tracepoints).
    pub fn attach_tracepoints(&mut self) -> Result<(), CaptureError> {
        for (prog, tp) in BTF_TRACEPOINTS {
            let p: &mut BtfTracePoint = program(&mut self.ebpf, prog)?;
            let id = p.attach().map_err(|e| attach_err(tp, e))?;
            let link = p.take_link(id).map_err(|e| attach_err(tp, e))?;
            self.links.push(Box::new(link));
        }
        let unavailable = match &self.multi {
            None => Some("the kernel has no multi-uprobe links".to_string()),
            Some(m) => m.loader_watch_unavailable().map(str::to_string),
        };
        if let Some(why) = unavailable {
            self.watch_mmap_syscalls(&why)?;
        }
        Ok(())
    }

    /// Attaches the mmap syscall tracepoints (once), the loader watch's
    /// fallback, and says so in the capture's warnings.
    pub(super) fn watch_mmap_syscalls(&mut self, why: &str) -> Result<(), CaptureError> {
        if self.mmap_syscalls {
            return Ok(());
        }
        self.warnings.record(
            WarningKind::MmapWatchOnSyscallTracepoints,
            None,
            format!(
                "libraries loaded during the capture are watched through the mmap syscall \
                 tracepoints ({why}): while the capture runs, every system call on this host \
                 takes the kernel's traced path"
            ),
        );
        for (prog, cat, name) in CLASSIC_TRACEPOINTS {
            let p: &mut TracePoint = program(&mut self.ebpf, prog)?;
            let id = p.attach(cat, name).map_err(|e| {
                if !Path::new("/sys/kernel/tracing/events").exists()
                    && !Path::new("/sys/kernel/debug/tracing/events").exists()
                {
                    CaptureError::TracefsMissing
                } else {
                    attach_err(&format!("{cat}:{name}"), e)
                }
            })?;
            let link = p
                .take_link(id)
                .map_err(|e| attach_err(&format!("{cat}:{name}"), e))?;
            self.links.push(Box::new(link));
        }
        self.mmap_syscalls = true;
        Ok(())
    }
}
