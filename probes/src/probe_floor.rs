//! Do-nothing probe pairs on chosen functions of a library: the floor that
//! capture cost is measured against.
//!
//! A traced call pays for the kernel's breakpoint trap at entry, the return
//! hijack, and the work of ingero's programs. Attaching programs that return
//! at once to the same functions, the same way (one multi-uprobe link per
//! direction, scoped to one process), isolates the first two: the capture's
//! cost minus this floor is what ingero's own kernel and user-space work
//! adds. Used by the capture-cost bench and the `probe_floor` example.

use crate::elf::function_offsets;
use crate::multi_uprobe::{MultiUprobes, ProbePoint};
use std::os::fd::OwnedFd;
use std::path::Path;

/// Why the floor probes could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum ProbeFloorError {
    /// The library could not be read, or lacks a requested function.
    #[error("{library}: {reason}")]
    Symbols {
        /// The library file.
        library: String,
        /// What went wrong.
        reason: String,
    },
    /// Loading or linking the programs failed (needs root and kernel 6.6+).
    #[error("floor probes: {0}")]
    Probe(String),
}

/// Which traps the floor probes set on each function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorProbes {
    /// Entry and return, as a capture links them today.
    Pair,
    /// Entry only: the floor of a design that skips the return probe.
    Entry,
    /// Entry of a uprobe session whose program declines the return: the
    /// floor of sampled launch timing's untimed launches.
    Session,
}

/// Attached do-nothing probes; dropping the value detaches them.
pub struct ProbeFloor {
    _links: Vec<OwnedFd>,
    _programs: MultiUprobes,
}

impl ProbeFloor {
    /// Probes `functions` in `library` (entry and return, or entry only, per
    /// `probes`), in process `pid` only (or every process mapping the file,
    /// with `None`).
    pub fn attach(
        library: &Path,
        functions: &[&str],
        pid: Option<u32>,
        probes: FloorProbes,
    ) -> Result<ProbeFloor, ProbeFloorError> {
        let symbols = |reason: String| ProbeFloorError::Symbols {
            library: library.display().to_string(),
            reason,
        };
        let offsets = function_offsets(library, functions).map_err(symbols)?;
        let mut points = Vec::with_capacity(functions.len());
        for (i, name) in functions.iter().enumerate() {
            let offset = offsets
                .get(*name)
                .ok_or_else(|| symbols(format!("no function `{name}`")))?;
            points.push(ProbePoint {
                offset: *offset,
                op_id: i as u64,
            });
        }
        let programs = MultiUprobes::empty().map_err(|e| ProbeFloorError::Probe(e.to_string()))?;
        let probe_err =
            |e: crate::multi_uprobe::MultiUprobeError| ProbeFloorError::Probe(e.to_string());
        let links = match probes {
            FloorProbes::Pair => programs
                .attach(library, &points, pid)
                .map_err(probe_err)?
                .into(),
            FloorProbes::Entry => vec![programs
                .attach_entry(library, &points, pid)
                .map_err(probe_err)?],
            FloorProbes::Session => vec![programs
                .attach_session(library, &points, pid)
                .map_err(probe_err)?],
        };
        Ok(ProbeFloor {
            _links: links,
            _programs: programs,
        })
    }
}
