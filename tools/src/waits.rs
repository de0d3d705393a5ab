//! What a CUDA-calling thread waited for when it left the CPU, read from
//! the off-CPU stack recorded at each switch-out.
//!
//! The switch record says how long a thread was away and whether it was
//! preempted; the kernel and user frames of that moment say why it blocked:
//! the kernel's sleep path (`do_nanosleep`), its I/O wait (`io_schedule`,
//! page-cache and block-layer waits), a poll or accept on file descriptors
//! (waiting for requests), the interpreter re-taking the GIL
//! (`PyEval_RestoreThread`, `take_gil`), or another futex (a lock or a
//! condition). Stacks that show none of these stay unclassified.

use ingero_store::stacks::StackKind;
use rusqlite::{params, Connection};
use serde::Serialize;

/// Why a thread blocked, from its off-CPU stack.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// The Python interpreter waiting to take the GIL back.
    Gil,
    /// Disk or page-cache I/O.
    Io,
    /// A timed sleep.
    Sleep,
    /// Waiting on sockets or file descriptors (poll, select, epoll, accept,
    /// a socket read).
    Events,
    /// Another futex wait: a lock or a condition variable.
    Lock,
    /// None of the above in the stack.
    Other,
}

impl WaitReason {
    /// Words for findings.
    pub fn words(self) -> &'static str {
        match self {
            WaitReason::Gil => "waiting to take the Python GIL",
            WaitReason::Io => "waiting on disk or page-cache I/O",
            WaitReason::Sleep => "sleeping (a timed sleep)",
            WaitReason::Events => "waiting on sockets or file descriptors (poll/accept/read)",
            WaitReason::Lock => "waiting on a lock or condition (futex)",
            WaitReason::Other => "blocked, reason not in the stack",
        }
    }
}

/// One off-CPU stretch of a CUDA-calling thread with its stack's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct OffCpuWait {
    /// Switch-out time, epoch ns.
    pub ts_ns: i64,
    /// Process.
    pub pid: i32,
    /// Thread.
    pub tid: i32,
    /// Time off the CPU, ns (0 when it had not come back at the stop).
    pub off_ns: i64,
    /// 1 preempted, 0 blocked, -1 unknown.
    pub state: i64,
    /// What the stack shows it waited for.
    pub reason: WaitReason,
    /// The frame that decided it (kernel or user function name).
    pub evidence_frame: String,
}

/// Kernel and user functions that identify each reason, checked in order.
const RULES: &[(WaitReason, &[&str])] = &[
    (
        WaitReason::Gil,
        &[
            "take_gil",
            "PyEval_RestoreThread",
            "PyEval_AcquireThread",
            "drop_gil",
        ],
    ),
    (
        WaitReason::Io,
        &[
            "io_schedule",
            "folio_wait",
            "wait_on_page",
            "blk_mq_",
            "submit_bio_wait",
            "file_write_and_wait",
            "jbd2_",
            "nfs_",
        ],
    ),
    (
        WaitReason::Sleep,
        &["do_nanosleep", "hrtimer_nanosleep", "clock_nanosleep"],
    ),
    (
        WaitReason::Events,
        &[
            "do_sys_poll",
            "do_select",
            "ep_poll",
            "inet_csk_accept",
            "sk_wait_data",
            "unix_stream_read",
            "schedule_hrtimeout_range",
            "pipe_read",
        ],
    ),
    (WaitReason::Lock, &["futex_wait", "futex_do_wait"]),
];

/// The reason and deciding frame of a stack (frames JSON as stored).
pub fn classify(frames_json: &str) -> (WaitReason, String) {
    let names: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(frames_json)
        .map(|v| {
            v.iter()
                .filter_map(|f| {
                    f.get("function")
                        .and_then(|x| x.as_str())
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    for (reason, keys) in RULES {
        if let Some(hit) = names.iter().find(|n| keys.iter().any(|k| n.contains(k))) {
            return (*reason, hit.clone());
        }
    }
    (WaitReason::Other, String::new())
}

/// Off-CPU stack samples in `[lo, hi]` (of `pid` when not 0), classified.
/// Files without stack tables give none.
pub fn load(conn: &Connection, lo: i64, hi: i64, pid: i32) -> rusqlite::Result<Vec<OffCpuWait>> {
    let mut stmt = conn.prepare(
        "SELECT s.ts_ns, s.pid, s.tid, s.off_cpu_ns, s.state, st.frames FROM stack_samples s \
         JOIN stacks st ON st.id = s.stack_id \
         WHERE s.kind = ?1 AND s.ts_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR s.pid = ?4) ORDER BY s.ts_ns",
    )?;
    let mut cache: std::collections::HashMap<String, (WaitReason, String)> = Default::default();
    let mut out = Vec::new();
    let mut rows = stmt.query(params![StackKind::OffCpu.id(), lo, hi, pid])?;
    while let Some(r) = rows.next()? {
        let frames: String = r.get(5)?;
        let (reason, frame) = cache
            .entry(frames)
            .or_insert_with_key(|f| classify(f))
            .clone();
        out.push(OffCpuWait {
            ts_ns: r.get(0)?,
            pid: r.get(1)?,
            tid: r.get(2)?,
            off_ns: r.get::<_, i64>(3)?.max(0),
            state: r.get(4)?,
            reason,
            evidence_frame: frame,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> String {
        let v: Vec<serde_json::Value> = names
            .iter()
            .map(|n| serde_json::json!({"kind": "kernel", "function": n}))
            .collect();
        serde_json::Value::Array(v).to_string()
    }

    #[test]
    fn stacks_say_what_the_thread_waited_for() {
        let gil = frames(&[
            "schedule",
            "futex_do_wait",
            "pthread_cond_timedwait",
            "PyEval_RestoreThread",
        ]);
        assert_eq!(classify(&gil).0, WaitReason::Gil);
        assert_eq!(
            classify(&frames(&["schedule", "io_schedule", "folio_wait_bit"])).0,
            WaitReason::Io
        );
        assert_eq!(
            classify(&frames(&["schedule", "do_nanosleep"])).0,
            WaitReason::Sleep
        );
        assert_eq!(
            classify(&frames(&[
                "schedule",
                "schedule_hrtimeout_range",
                "do_sys_poll"
            ]))
            .0,
            WaitReason::Events
        );
        assert_eq!(
            classify(&frames(&["schedule", "futex_wait"])).0,
            WaitReason::Lock
        );
        assert_eq!(classify(&frames(&["schedule"])).0, WaitReason::Other);
        assert_eq!(classify("not json").0, WaitReason::Other);
    }
}
