//! What `start_trace` is asked to capture, and which processes that means:
//! one process (by pid or by an unambiguous name) with the processes it
//! forks, or every process on the machine when, and only when, the client
//! says so with `all_processes: true`.

use super::CaptureError;
use ingero_probes::gpu_processes::{self, GpuProcess};
use ingero_probes::{procs, Target};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of `start_trace`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct StartTraceArgs {
    /// Process id to trace, with every process it forks (list_gpu_processes
    /// shows the GPU processes and their pids).
    #[schemars(range(min = 1))]
    pub pid: Option<i32>,
    /// The same as `pid`, as a list of exactly one pid (its children are
    /// followed automatically).
    #[serde(default)]
    pub pids: Vec<i32>,
    /// Name of the GPU process to trace, instead of a pid: its command name,
    /// program or script file name (e.g. "train.py"). Refused, with the
    /// candidates listed, when it names more than one unrelated process.
    pub process_name: Option<String>,
    /// Trace every process on the machine. Only when set to true: without
    /// pid, pids or process_name the call is refused.
    #[serde(default)]
    pub all_processes: bool,
    /// How long to capture, e.g. "30s" or "5m"; when absent, until stop_trace,
    /// the traced process exits or the operator's time limit, whichever
    /// comes first.
    pub duration: Option<String>,
    /// File name for the new database, created inside the allowed folder
    /// (default: capture-<unix time>.db).
    pub output: Option<String>,
    /// Kernel ring buffer size, a power of two from "4K" to "1G" (default
    /// "16M"); raise it when a capture reports records dropped in the kernel.
    pub ring_size: Option<String>,
    /// Inside a thread's dense stretches of kernel launches (each entered
    /// under 50 us after the previous one), time one launch in this many
    /// and count the others at entry with the thread's recent mean
    /// launch time, flagged as estimated (aggregates.estimated_count, no raw
    /// row, return codes not seen) and bounded by the thread's next call
    /// (estimated_bounded, estimated_bound_ns): for launch-bound jobs, where
    /// timing every launch costs most. Launches outside dense stretches are
    /// all timed; every launch is still counted. Absent: 16; 0 or 1: every
    /// launch timed (exact durations, for a question about launch times
    /// themselves).
    #[schemars(range(max = 1_000_000))]
    pub launch_sample: Option<u32>,
    /// With every launch timed (launch_sample 0 or 1): keep one kernel launch in this many per
    /// thread as a raw row (plus each thread's first, failed ones and those
    /// of at least 50 us); the others are summed in the kernel with their
    /// measured durations (aggregates and activity exact). Absent: 32; 0 or
    /// 1: one raw row per launch.
    #[schemars(range(max = 1_000_000))]
    pub launch_rows: Option<u32>,
}

/// The processes a capture follows, and how to say so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// For the capture engine.
    pub target: Target,
    /// For the client: "pid 4242 (python train.py) and the processes it forks".
    pub description: String,
}

/// The target `args` ask for. `gpu_processes` lists the GPU processes, read
/// only when a name has to be matched.
pub fn choose(
    args: &StartTraceArgs,
    gpu_processes: impl FnOnce() -> Vec<GpuProcess>,
) -> Result<Chosen, CaptureError> {
    let mut given = Vec::new();
    if args.pid.is_some() {
        given.push("pid");
    }
    if !args.pids.is_empty() {
        given.push("pids");
    }
    if args.process_name.is_some() {
        given.push("process_name");
    }
    if args.all_processes {
        given.push("all_processes");
    }
    match given.as_slice() {
        [] => {
            return Err(CaptureError::BadRequest(
                "say what to trace: pid (list_gpu_processes shows the GPU processes), \
                 process_name, or all_processes: true for every process on the machine"
                    .into(),
            ))
        }
        [_] => {}
        several => {
            return Err(CaptureError::BadRequest(format!(
                "give one of pid, pids, process_name or all_processes, not {}",
                several.join(" and ")
            )))
        }
    }
    if args.all_processes {
        return Ok(Chosen {
            target: Target::AllProcesses,
            description: "every process on the machine".into(),
        });
    }
    let pid = if let Some(name) = &args.process_name {
        gpu_processes::match_name(&gpu_processes(), name)
            .map_err(|e| CaptureError::BadRequest(format!("process_name: {e}")))?
    } else {
        match (args.pid, args.pids.as_slice()) {
            (Some(p), _) | (None, &[p]) => p,
            _ => {
                return Err(CaptureError::BadRequest(
                    "one pid per capture: its children are followed automatically".into(),
                ))
            }
        }
    };
    if pid <= 0 {
        return Err(CaptureError::BadRequest(format!(
            "bad pid {pid}: give a process id from list_gpu_processes"
        )));
    }
    let command = procs::cmdline(pid);
    let description = if command.is_empty() {
        format!("pid {pid} and the processes it forks")
    } else {
        format!("pid {pid} ({command}) and the processes it forks")
    };
    Ok(Chosen {
        target: Target::Pid(pid),
        description,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(args: StartTraceArgs) -> String {
        match choose(&args, Vec::new) {
            Ok(c) => panic!("accepted: {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn nothing_named_is_refused_never_read_as_every_process() {
        let e = refused(StartTraceArgs::default());
        assert!(e.contains("all_processes: true"), "{e}");
        let e = refused(StartTraceArgs {
            duration: Some("6s".into()),
            ..StartTraceArgs::default()
        });
        assert!(e.starts_with("say what to trace"), "{e}");
    }

    #[test]
    fn one_way_of_naming_the_target_at_a_time() {
        let e = refused(StartTraceArgs {
            pid: Some(5),
            all_processes: true,
            ..StartTraceArgs::default()
        });
        assert_eq!(
            e,
            "give one of pid, pids, process_name or all_processes, not pid and all_processes"
        );
        let e = refused(StartTraceArgs {
            pids: vec![1, 2],
            ..StartTraceArgs::default()
        });
        assert!(e.contains("one pid per capture"), "{e}");
    }

    #[test]
    fn explicit_all_processes_and_a_pid_are_taken() {
        let all = choose(
            &StartTraceArgs {
                all_processes: true,
                ..StartTraceArgs::default()
            },
            Vec::new,
        );
        assert_eq!(all.map(|c| c.target).ok(), Some(Target::AllProcesses));
        let me = std::process::id() as i32;
        let one = choose(
            &StartTraceArgs {
                pids: vec![me],
                ..StartTraceArgs::default()
            },
            Vec::new,
        );
        let Ok(one) = one else {
            panic!("a pid was refused");
        };
        assert_eq!(one.target, Target::Pid(me));
        assert!(
            one.description.starts_with(&format!("pid {me} (")),
            "{one:?}"
        );
    }

    #[test]
    fn an_unknown_name_is_refused_as_a_process_name_problem() {
        let e = refused(StartTraceArgs {
            process_name: Some("train.py".into()),
            ..StartTraceArgs::default()
        });
        assert!(
            e.starts_with("process_name: no GPU process is named"),
            "{e}"
        );
    }
}
