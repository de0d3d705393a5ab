//! Probing one CUDA library file: every traced function it defines, with
//! multi-uprobe links where the kernel has them (one per direction, with
//! links of their own for the runtime's launch functions and, under
//! sampled launch timing, session links for the driver's), else one uprobe
//! link per function.

use super::{attach_err, covered, load_uprobe, program, Probes};
use crate::error::CaptureError;
use crate::launch_level::{DRIVER_LAUNCH_OPS, RUNTIME_LAUNCH_OPS};
use crate::multi_uprobe::{MultiUprobeError, MultiUprobes, ProbePoint};
use crate::status::WarningKind;
use aya::programs::uprobe::{UProbeAttachLocation, UProbeScope};
use aya::programs::UProbe;
use ingero_store::catalog::{CudaApi, CudaOpSpec, CUDA_OPS};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Which family of functions a library file provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryKind {
    /// libcudart: runtime API.
    Runtime,
    /// libcuda: driver API.
    Driver,
    /// libnccl: collectives between ranks.
    Nccl,
    /// Unknown name (given by the user): try every function.
    Any,
}

impl LibraryKind {
    /// Guesses the family from the file name.
    pub fn of(path: &Path) -> LibraryKind {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("libcudart.so") {
            LibraryKind::Runtime
        } else if name.starts_with("libcuda.so") {
            LibraryKind::Driver
        } else if name.starts_with("libnccl.so") {
            LibraryKind::Nccl
        } else {
            LibraryKind::Any
        }
    }

    fn covers(self, api: CudaApi) -> bool {
        match self {
            LibraryKind::Runtime => api == CudaApi::Runtime,
            LibraryKind::Driver => api == CudaApi::Driver,
            LibraryKind::Nccl => api == CudaApi::Nccl,
            LibraryKind::Any => true,
        }
    }
}

/// Result of attaching one library file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachOutcome {
    /// Newly probed: this many functions.
    Attached(usize),
    /// The same file (device, inode) is probed already.
    AlreadyAttached,
}

/// A traced function a library defines, and its offset in the file.
type ProbedFunction = (&'static CudaOpSpec, u64);

/// The multi-uprobe links of one library.
struct MultiLinks {
    /// Return and entry links of the functions probed together.
    common: [OwnedFd; 2],
    /// The runtime launch functions' own (return, entry) links.
    runtime_launch: Option<[OwnedFd; 2]>,
    /// The driver launch functions' session links (sampled launch timing).
    sessions: Vec<OwnedFd>,
}

impl Probes {
    /// Probes every known CUDA function the library at `path` defines, in
    /// process `pid` only (its forks that do not exec are filtered out in
    /// the kernel), or with `None` in every process that maps it. `path`
    /// may point into another mount namespace through `/proc/PID/root`.
    pub fn attach_library(
        &mut self,
        path: &Path,
        pid: Option<i32>,
    ) -> Result<AttachOutcome, CaptureError> {
        let pid = pid.and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0);
        let meta = std::fs::metadata(path).map_err(|e| unusable(path, e.to_string()))?;
        let key = (meta.dev(), meta.ino(), pid.unwrap_or(0));
        if covered(&self.attached, key) {
            return Ok(AttachOutcome::AlreadyAttached);
        }
        let kind = LibraryKind::of(path);
        let ops = probed_functions(path, kind)?;
        let linked = self
            .multi
            .as_ref()
            .map(|multi| self.link_multi(multi, path, kind, &ops, pid));
        let attached_multi = match linked {
            Some(Ok(links)) => {
                self.keep_multi_links(links);
                true
            }
            Some(Err(e)) => {
                self.warnings.record(
                    WarningKind::PerFunctionFallback,
                    Some(path),
                    format!(
                        "{}: multi-uprobe links failed ({e}); probing it with one uprobe link \
                         per function, slower to attach and to stop",
                        path.display()
                    ),
                );
                false
            }
            None => false,
        };
        if !attached_multi {
            self.attach_per_function(path, &ops)?;
        }
        self.attached.insert(if attached_multi {
            key
        } else {
            (key.0, key.1, 0)
        });
        if !self.libraries.iter().any(|l| l == path) {
            self.libraries.push(path.to_path_buf());
        }
        Ok(AttachOutcome::Attached(ops.len()))
    }

    /// Links the functions `ops` of `path` through multi-uprobe links: the
    /// runtime's launch functions get links of their own (they can go
    /// later), and under sampled launch timing the driver's launch
    /// functions go to the session program.
    fn link_multi(
        &self,
        multi: &MultiUprobes,
        path: &Path,
        kind: LibraryKind,
        ops: &[ProbedFunction],
        pid: Option<u32>,
    ) -> Result<MultiLinks, MultiUprobeError> {
        let points: Vec<ProbePoint> = ops
            .iter()
            .map(|(o, offset)| ProbePoint {
                offset: *offset,
                op_id: u64::from(o.id),
            })
            .collect();
        let (launch, rest): (Vec<ProbePoint>, Vec<ProbePoint>) =
            points.into_iter().partition(|p| {
                kind == LibraryKind::Runtime && RUNTIME_LAUNCH_OPS.contains(&(p.op_id as u32))
            });
        // If the session link fails, the driver's launch functions are
        // probed like the rest (every launch timed).
        let (sessions, rest): (Vec<ProbePoint>, Vec<ProbePoint>) = rest
            .into_iter()
            .partition(|p| self.launch_sessions && DRIVER_LAUNCH_OPS.contains(&(p.op_id as u32)));
        let common = multi.attach(path, &rest, pid)?;
        let runtime_launch = if launch.is_empty() {
            None
        } else {
            Some(multi.attach(path, &launch, pid)?)
        };
        let sessions = self.attach_launch_sessions(multi, path, &sessions, pid)?;
        Ok(MultiLinks {
            common,
            runtime_launch,
            sessions,
        })
    }

    /// Keeps a library's multi-uprobe links for the life of the probes
    /// (the runtime launch ones apart, so they can go early).
    fn keep_multi_links(&mut self, links: MultiLinks) {
        self.links
            .extend(links.common.map(|l| Box::new(l) as Box<dyn Send>));
        self.links.extend(
            links
                .sessions
                .into_iter()
                .map(|l| Box::new(l) as Box<dyn Send>),
        );
        if let Some([ret, enter]) = links.runtime_launch {
            self.runtime_launch.push([Some(ret), Some(enter)]);
        }
    }

    /// Probes the functions `ops` of `path` with one uprobe link each way
    /// per function: where the kernel has no multi-uprobe links, or they
    /// failed on this library.
    fn attach_per_function(
        &mut self,
        path: &Path,
        ops: &[ProbedFunction],
    ) -> Result<(), CaptureError> {
        for (op, offset) in ops {
            // Return probe first, as for the multi links.
            for prefix in ["r_", "e_"] {
                let name = format!("{prefix}{}", op.name);
                load_uprobe(&mut self.ebpf, &name)?;
                let p: &mut UProbe = program(&mut self.ebpf, &name)?;
                let what = || format!("{} in {}", op.name, path.display());
                let id = p
                    .attach(
                        UProbeAttachLocation::AbsoluteOffset(*offset),
                        path,
                        // A perf-event uprobe bound to a pid follows one
                        // thread, not the process: these stay global.
                        UProbeScope::AllProcesses,
                    )
                    .map_err(|e| attach_err(&what(), e))?;
                let link = p.take_link(id).map_err(|e| attach_err(&what(), e))?;
                self.links.push(Box::new(link));
            }
        }
        Ok(())
    }

    /// Links the driver launch functions `points` of `path` to the session
    /// program (sampled launch timing); when that link fails, says so and
    /// probes them with an ordinary pair instead (every launch timed).
    fn attach_launch_sessions(
        &self,
        multi: &MultiUprobes,
        path: &Path,
        points: &[ProbePoint],
        pid: Option<u32>,
    ) -> Result<Vec<OwnedFd>, MultiUprobeError> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        match multi.attach_session(path, points, pid) {
            Ok(link) => Ok(vec![link]),
            Err(e) => {
                self.warnings.record(
                    WarningKind::LaunchSamplingUnavailable,
                    Some(path),
                    format!(
                        "{}: launch session link failed ({e}); every launch is timed",
                        path.display()
                    ),
                );
                Ok(multi.attach(path, points, pid)?.into())
            }
        }
    }
}

/// The library at `path` cannot be probed, for `detail`.
fn unusable(path: &Path, detail: String) -> CaptureError {
    CaptureError::LibraryNotUsable {
        path: path.to_path_buf(),
        detail,
    }
}

/// The traced functions of `kind` the library at `path` defines, with
/// their offsets; a library that defines none cannot be probed.
fn probed_functions(path: &Path, kind: LibraryKind) -> Result<Vec<ProbedFunction>, CaptureError> {
    let wanted: Vec<&str> = CUDA_OPS
        .iter()
        .filter(|o| kind.covers(o.api))
        .map(|o| o.name)
        .collect();
    let offsets =
        crate::elf::function_offsets(path, &wanted).map_err(|detail| unusable(path, detail))?;
    if offsets.is_empty() {
        return Err(unusable(
            path,
            "it defines none of the CUDA functions ingero traces".into(),
        ));
    }
    Ok(CUDA_OPS
        .iter()
        .filter(|o| kind.covers(o.api))
        .filter_map(|o| offsets.get(o.name).map(|&off| (o, off)))
        .collect())
}
