//! Runs a built simulation and streams what it records into a trace database.
//!
//! The file is written under a temporary name next to the target and moved
//! into place only when complete, so an interrupted run never leaves a
//! half-written database under the requested name.

use crate::error::DemoError;
use crate::host::{EPOCH_NS, SEC};
use crate::nvml;
use crate::scenarios::Built;
use ingero_store::{Event, RawPolicy, TraceWriter};
use std::path::{Path, PathBuf};

/// Events accumulated before one write transaction.
const BATCH_EVENTS: usize = 250_000;

/// When the capture stops.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    /// At the scenario's end time.
    AtEnd,
    /// Once this many events have been written.
    AfterEvents(u64),
}

/// What was written, for callers that report or check it.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoSummary {
    /// Scenario name (`"large"` for [`crate::generate_large`]).
    pub scenario: String,
    /// The database file.
    pub path: PathBuf,
    /// Rows in `cuda_calls`.
    pub cuda_calls: u64,
    /// Rows in `host_events`.
    pub host_events: u64,
    /// Rows in `processes`.
    pub processes: u64,
    /// Rows in `system_snapshots`.
    pub snapshots: u64,
    /// Simulated capture length, ns.
    pub duration_ns: i64,
    /// Share of the capture the simulated GPU was busy, 0-100.
    pub gpu_busy_pct: f64,
    /// Size of the finished file, bytes.
    pub file_bytes: u64,
}

impl DemoSummary {
    /// All raw events written (CUDA calls plus host events).
    pub fn events(&self) -> u64 {
        self.cuda_calls + self.host_events
    }
}

/// Removes the temporary file (and its journal) unless the write completed.
struct PartialFile {
    path: PathBuf,
    keep: bool,
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if !self.keep {
            for p in with_journals(&self.path) {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

fn with_journals(path: &Path) -> [PathBuf; 3] {
    [
        path.to_path_buf(),
        with_suffix(path, "-wal"),
        with_suffix(path, "-shm"),
    ]
}

fn remove_if_present(path: &Path) -> Result<(), DemoError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(DemoError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Checks that `path` may be written, honouring `overwrite`.
pub(crate) fn check_target(path: &Path, overwrite: bool) -> Result<(), DemoError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(DemoError::BadOption(format!(
            "{} is a directory; give a file path for the database",
            path.display()
        ))),
        Ok(_) if !overwrite => Err(DemoError::Exists(path.to_path_buf())),
        _ => Ok(()),
    }
}

/// Runs `built` and writes it to `path` (which [`check_target`] approved).
pub(crate) fn write(
    mut built: Built,
    label: &str,
    path: &Path,
    stop: Stop,
) -> Result<DemoSummary, DemoError> {
    let tmp = with_suffix(path, ".partial");
    for p in with_journals(&tmp) {
        remove_if_present(&p)?;
    }
    let mut guard = PartialFile {
        path: tmp.clone(),
        keep: false,
    };
    let mut writer = TraceWriter::create(&tmp, &built.session, RawPolicy::All)?;
    let mut counts = Counts::default();
    let sim = &mut built.sim;
    let mut t = EPOCH_NS;
    let end_ns = loop {
        let limit = match stop {
            Stop::AtEnd => built.end_ns,
            Stop::AfterEvents(_) => i64::MAX,
        };
        t = (t + SEC).min(limit);
        sim.run_until(t);
        let reached = match stop {
            Stop::AtEnd => t >= built.end_ns,
            Stop::AfterEvents(n) => counts.events() + sim.pending_events() as u64 >= n,
        };
        if reached {
            sim.close();
        }
        if reached || sim.pending_events() >= BATCH_EVENTS {
            let mut events = sim.take_events();
            events.sort_by_key(Event::ts_ns);
            if let Stop::AfterEvents(n) = stop {
                let room = n.saturating_sub(counts.events()) as usize;
                events.truncate(room);
            }
            counts.add(&events);
            writer.write_batch(&events)?;
        }
        for snap in sim.take_snapshots() {
            writer.write_snapshot(&snap)?;
            counts.snapshots += 1;
        }
        if reached {
            break t;
        }
    };
    let starts = sim.process_starts();
    for p in &mut built.processes {
        p.first_seen_ns = starts.get(&p.pid).copied().unwrap_or(EPOCH_NS);
        p.last_seen_ns = end_ns;
        writer.upsert_process(p)?;
    }
    writer.write_gpu_devices(&nvml::devices(&built.session.gpu_model))?;
    writer.write_gpu_samples(&nvml::samples(sim.gpu_busy(), EPOCH_NS, end_ns))?;
    let duration_ns = end_ns - EPOCH_NS;
    let gpu_busy_pct = (sim.gpu_busy_ns() as f64 / duration_ns.max(1) as f64 * 100.0).min(100.0);
    writer.finish(end_ns)?;
    for p in with_journals(path).iter().skip(1) {
        remove_if_present(p)?;
    }
    std::fs::rename(&tmp, path).map_err(|source| DemoError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    guard.keep = true;
    let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(DemoSummary {
        scenario: label.to_string(),
        path: path.to_path_buf(),
        cuda_calls: counts.cuda,
        host_events: counts.host,
        processes: built.processes.len() as u64,
        snapshots: counts.snapshots,
        duration_ns,
        gpu_busy_pct: (gpu_busy_pct * 10.0).round() / 10.0,
        file_bytes,
    })
}

#[derive(Debug, Default)]
struct Counts {
    cuda: u64,
    host: u64,
    snapshots: u64,
}

impl Counts {
    fn events(&self) -> u64 {
        self.cuda + self.host
    }

    fn add(&mut self, events: &[Event]) {
        for e in events {
            match e {
                Event::Cuda(_) | Event::LaunchRun(_) | Event::CallFold(_) => self.cuda += 1,
                Event::Host(_) => self.host += 1,
            }
        }
    }
}
