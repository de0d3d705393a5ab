//! The first half of a capture's start: everything that must be in place
//! before a launched command may run. The programs are loaded, the CUDA
//! libraries and the tracepoints probed, the session opened in the
//! database and the command's pid put in the kernel's filter; an error on
//! the way kills the command, which never ran.

use super::held::HeldUntilReady;
use crate::clock::{self, Clock};
use crate::config::{CaptureConfig, Target};
use crate::control::KernelTables;
use crate::db_prep::DbPrep;
use crate::discovery;
use crate::error::CaptureError;
use crate::launch::HeldChild;
use crate::loader::{LoadOptions, Probes, TrackedMap};
use crate::phase_timer::PhaseTimer;
use crate::status::{StackStatus, WarningKind};
use crate::warnings::Warnings;
use crate::{preflight, procs, sysinfo};
use aya::maps::{MapData, RingBuf};
use ingero_store::{SessionInfo, TraceWriter};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What the first half hands to the second.
pub(super) struct Attached {
    /// The loaded programs, attached.
    pub(super) probes: Probes,
    /// The kernel tables the control thread reads.
    pub(super) tables: KernelTables,
    /// The ring buffer, for the poller.
    pub(super) ring: RingBuf<MapData>,
    /// The launched command, still at its gate.
    pub(super) child: Option<HeldChild>,
    /// Processes found at the start (a pid target's tree, or every process).
    pub(super) scan: Vec<i32>,
    /// Libraries that could not be probed (not retried).
    pub(super) failed_libs: HashSet<PathBuf>,
    /// The stack samplers' counters, with the rate and CPUs filled in.
    pub(super) stack_status: Arc<Mutex<StackStatus>>,
    /// The session, open in the database.
    pub(super) session: TraceWriter,
    /// Kernel to epoch time.
    pub(super) clock: Clock,
    /// Session start, epoch ns.
    pub(super) started_ns: i64,
    /// Whether every process is traced.
    pub(super) trace_all: bool,
}

/// Runs the first half of the start.
pub(super) fn attach(config: &CaptureConfig, timer: &PhaseTimer) -> Result<Attached, CaptureError> {
    preflight::require_capture_ready()?;
    timer.mark("preflight");
    check_request(config)?;
    let trace_all = config.target == Target::AllProcesses;
    let clock = Clock::measure();
    let db_prep = DbPrep::start(&config.db)?;
    let mut probes = Probes::load(load_options(config, trace_all))?;
    timer.mark("programs loaded and verified");
    let mut tracked = probes.take_tracked()?;
    let (tables, ring) = take_tables(&mut probes)?;
    // The launched command waits at the gate until the filter knows it; it
    // exists from here on (its pid scopes the probes), and any error before
    // it is handed on kills it.
    let held = HeldUntilReady::spawn(&config.target)?;
    let scan = processes_at_start(&config.target);
    let scopes = probe_scopes(trace_all, &scan, held.pid());
    attach_configured_libraries(&mut probes, &config.libraries, &scopes)?;
    let candidates = candidate_libraries(&scan);
    note_injected_skew(&probes.warnings());
    let failed_libs = attach_found_libraries(&mut probes, candidates, &scopes);
    if config.require_cuda_library && probes.libraries().is_empty() {
        return Err(CaptureError::NoCudaLibrary {
            searched: discovery::searched_description(),
        });
    }
    timer.mark("libraries probed");
    probes.attach_tracepoints()?;
    timer.mark("tracepoints attached");
    let stack_status = start_stack_sampling(&mut probes, config.stack_hz, timer);
    let info = session_info(config, clock.now_epoch(), held.pid());
    timer.mark("session facts read");
    let session = open_session(db_prep, &info, config)?;
    track_targets(&mut tracked, held.pid(), &config.target, &scan)?;
    Ok(Attached {
        probes,
        tables,
        ring,
        child: held.into_child(),
        scan,
        failed_libs,
        stack_status,
        session,
        clock,
        started_ns: info.started_ns,
        trace_all,
    })
}

/// Refuses what cannot work before anything is loaded: a pid that does not
/// exist, an empty command, a ring buffer size the kernel would refuse.
fn check_request(config: &CaptureConfig) -> Result<(), CaptureError> {
    match &config.target {
        Target::Pid(p) if !procs::exists(*p) => return Err(CaptureError::NoSuchProcess(*p)),
        Target::Command(argv) if argv.is_empty() => return Err(CaptureError::EmptyCommand),
        _ => {}
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    if !config.ring_bytes.is_power_of_two() || u64::from(config.ring_bytes) < page {
        return Err(CaptureError::BadRingSize(config.ring_bytes.into()));
    }
    Ok(())
}

/// How the programs are loaded for this capture.
fn load_options(config: &CaptureConfig, trace_all: bool) -> LoadOptions {
    LoadOptions {
        trace_all,
        self_tgid: std::process::id(),
        ring_bytes: config.ring_bytes,
        multi_uprobes: config.multi_uprobes,
        offcpu_stacks: config.stack_hz > 0 && config.offcpu_stacks,
        launch_sample: config.launch_sample,
        launch_rows: config.launch_rows,
        call_rows: config.call_rows,
    }
}

/// Takes the kernel maps user space owns from the loaded object: the
/// tables the control thread reads and the ring buffer the poller drains.
fn take_tables(probes: &mut Probes) -> Result<(KernelTables, RingBuf<MapData>), CaptureError> {
    let losses = probes.take_losses()?;
    let open_calls = probes.take_open_calls()?;
    let page_runs = probes.take_page_runs()?;
    let launch_levels = probes.take_launch_levels()?;
    let ring = probes.take_ring()?;
    let tables = KernelTables {
        losses,
        open_calls,
        page_runs,
        launch_levels,
    };
    Ok((tables, ring))
}

/// The processes already running that the capture follows: a pid target's
/// tree, or every process; none for a launched command (not forked yet
/// when its own pid is all there is to follow).
fn processes_at_start(target: &Target) -> Vec<i32> {
    match target {
        Target::Pid(p) => procs::tree(*p),
        Target::Command(_) => Vec::new(),
        Target::AllProcesses => procs::all_pids(),
    }
}

/// The processes each library's probes live in. Probes live in the traced
/// processes only, so no other process on the host traps on them; a
/// process the tree starts later gets its own when it maps code (see
/// `control`). Every process (`None`) when all are traced.
fn probe_scopes(trace_all: bool, scan: &[i32], held: Option<i32>) -> Vec<Option<i32>> {
    if trace_all {
        vec![None]
    } else {
        scan.iter().copied().chain(held).map(Some).collect()
    }
}

/// Probes the libraries the user named: one that cannot be probed fails
/// the start.
fn attach_configured_libraries(
    probes: &mut Probes,
    libraries: &[PathBuf],
    scopes: &[Option<i32>],
) -> Result<(), CaptureError> {
    for lib in libraries {
        for scope in scopes {
            probes.attach_library(lib, *scope)?;
        }
    }
    Ok(())
}

/// The CUDA libraries to try besides the named ones: those in well-known
/// places and those the processes at the start have mapped.
fn candidate_libraries(scan: &[i32]) -> Vec<PathBuf> {
    let mut candidates = discovery::well_known_libraries();
    for pid in scan {
        candidates.extend(discovery::libraries_in_maps(*pid));
    }
    candidates
}

/// Says, as a warning, that a test of merged captures shifted every time
/// (the file's times are then not this host's clock).
fn note_injected_skew(warnings: &Warnings) {
    let skew = clock::injected_skew_ns();
    if skew != 0 {
        warnings.record(
            WarningKind::ClockSkewInjected,
            None,
            format!(
                "{} = {skew}: every time in this capture is shifted by {skew} ns",
                clock::SKEW_ENV
            ),
        );
    }
}

/// Probes the libraries discovery found: one that cannot be probed is a
/// warning, not a failure, and is not tried again.
fn attach_found_libraries(
    probes: &mut Probes,
    candidates: Vec<PathBuf>,
    scopes: &[Option<i32>],
) -> HashSet<PathBuf> {
    let warnings = probes.warnings();
    let mut failed_libs = HashSet::new();
    for lib in candidates {
        for scope in scopes {
            if let Err(e) = probes.attach_library(&lib, *scope) {
                warnings.library_not_probed(&lib, &e);
                failed_libs.insert(lib.clone());
                break;
            }
        }
    }
    failed_libs
}

/// Attaches the on-CPU stack sampler when stacks are asked for; a host
/// without CPU-clock perf events gets a warning and no on-CPU stacks.
fn start_stack_sampling(
    probes: &mut Probes,
    stack_hz: u32,
    timer: &PhaseTimer,
) -> Arc<Mutex<StackStatus>> {
    let stack_status = Arc::new(Mutex::new(StackStatus {
        hz: stack_hz,
        ..StackStatus::default()
    }));
    if stack_hz > 0 {
        match probes.attach_stack_sampler(stack_hz) {
            Ok(cpus) => {
                if let Ok(mut s) = stack_status.lock() {
                    s.cpus = cpus as u32;
                }
            }
            Err(e) => probes.warnings().record(
                WarningKind::StackSamplingUnavailable,
                None,
                format!("on-CPU stack sampling could not start ({e}); no on-CPU stacks"),
            ),
        }
        timer.mark("stack sampler attached");
    }
    stack_status
}

/// The session's row: the host's facts, the start, and what is traced.
fn session_info(config: &CaptureConfig, started_ns: i64, held: Option<i32>) -> SessionInfo {
    let mut info = sysinfo::session_info();
    info.started_ns = started_ns;
    if let Target::Command(argv) = &config.target {
        info.command = argv.join(" ");
    }
    if let Target::Pid(p) = &config.target {
        info.target_pids = vec![*p];
    }
    if let Some(pid) = held {
        info.target_pids = vec![pid];
    }
    info
}

/// Opens the session in the prepared database, with the launch-row
/// threshold recorded when launches are folded or sampled.
fn open_session(
    db_prep: DbPrep,
    info: &SessionInfo,
    config: &CaptureConfig,
) -> Result<TraceWriter, CaptureError> {
    let mut session = db_prep.finish()?.start_session(info, config.raw)?;
    // Both keep every timed launch of at least the threshold as a row
    // and stand the shorter rows for the other launches.
    if config.folds_launches() || config.launch_sample > 1 {
        session.set_meta(
            ingero_store::schema::META_LAUNCH_ROW_KEEP_NS,
            &ingero_store::schema::LAUNCH_ROW_KEEP_NS.to_string(),
        )?;
    }
    // Folded calls: every call of at least the threshold is a row.
    if config.call_rows > 0 {
        session.set_meta(
            ingero_store::schema::META_CALL_ROW_KEEP_NS,
            &ingero_store::schema::CALL_ROW_KEEP_NS.to_string(),
        )?;
    }
    Ok(session)
}

/// Puts the targets in the kernel's pid filter: the launched command, or
/// a pid target's tree (every process passes when all are traced).
fn track_targets(
    tracked: &mut TrackedMap,
    held: Option<i32>,
    target: &Target,
    scan: &[i32],
) -> Result<(), CaptureError> {
    match (held, target) {
        (Some(pid), _) => tracked.insert(pid)?,
        (None, Target::Pid(_)) => {
            for pid in scan {
                tracked.insert(*pid)?;
            }
        }
        _ => {}
    }
    Ok(())
}
