//! Every stack sample of one thread over a stretch of time, frames parsed:
//! the typed query the code attribution of GPU idle time reads.
//!
//! The idle split says what state the GPU-driving thread was in; these
//! samples say which code it was in meanwhile (on-CPU samples, the off-CPU
//! stack of each switch-out, Python samples, CUDA call sites). Stacks are
//! interned, so each distinct stack is parsed once however often it recurs.

use crate::stacks::{parse_frames, StackFrame, StackKind, StackSample};
use crate::{Result, TraceDb};
use rusqlite::params;
use std::collections::HashMap;
use std::sync::Arc;

/// One sample of the thread with its frames shared between samples of the
/// same stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSample {
    /// When, epoch ns (off-CPU: the switch-out).
    pub ts_ns: i64,
    /// What the sample records.
    pub kind: StackKind,
    /// Off-CPU samples: ns off the CPU (-1: not back at the stop); else 0.
    pub off_cpu_ns: i64,
    /// Off-CPU: 1 preempted, 0 blocked; Python: 1 active, 0 idle; else -1.
    pub state: i64,
    /// The stored stack id (`stacks.id`).
    pub stack_id: i64,
    /// Frames, innermost first (empty when unreadable).
    pub frames: Arc<Vec<StackFrame>>,
}

impl ThreadSample {
    /// The sample as the generic row type, frames copied.
    pub fn to_sample(&self, pid: i32, tid: i32) -> StackSample {
        StackSample {
            ts_ns: self.ts_ns,
            pid,
            tid,
            cpu: -1,
            kind: self.kind,
            off_cpu_ns: self.off_cpu_ns,
            state: self.state,
            frames: self.frames.as_ref().clone(),
        }
    }
}

/// At most this many samples are read for one thread and window: enough
/// for an hour at the default rates, and a bound on memory for any file.
pub const MAX_THREAD_SAMPLES: usize = 2_000_000;

impl TraceDb {
    /// Stack samples of thread `tid` of `pid` that start in `[lo, hi]` or,
    /// for off-CPU samples, reach into it; by time. Files without stack
    /// tables give none.
    pub fn thread_samples(
        &self,
        pid: i32,
        tid: i32,
        lo: i64,
        hi: i64,
    ) -> Result<Vec<ThreadSample>> {
        let conn = self.conn();
        let has = conn
            .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stack_samples'")
            .and_then(|mut s| s.exists([]))
            .map_err(|e| self.classify(e))?;
        if !has {
            return Ok(Vec::new());
        }
        // Off-CPU samples start before the window when the thread left the
        // CPU before it; an hour back is more than any real wait.
        let reach = 3_600_000_000_000i64;
        let mut stmt = conn
            .prepare(
                "SELECT s.ts_ns, s.kind, s.off_cpu_ns, s.state, s.stack_id, st.frames \
                 FROM stack_samples s LEFT JOIN stacks st ON st.id = s.stack_id \
                 WHERE s.tid = ?1 AND s.pid = ?2 AND s.ts_ns >= ?3 AND s.ts_ns <= ?4 \
                 ORDER BY s.ts_ns",
            )
            .map_err(|e| self.classify(e))?;
        let mut rows = stmt
            .query(params![tid, pid, lo.saturating_sub(reach), hi])
            .map_err(|e| self.classify(e))?;
        let mut parsed: HashMap<i64, Arc<Vec<StackFrame>>> = HashMap::new();
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(|e| self.classify(e))? {
            let ts: i64 = r.get(0).map_err(|e| self.classify(e))?;
            let kind = StackKind::from_id(r.get(1).map_err(|e| self.classify(e))?);
            let off: i64 = r.get::<_, Option<i64>>(2).ok().flatten().unwrap_or(0);
            let Some(kind) = kind else { continue };
            let reaches =
                ts >= lo || (kind == StackKind::OffCpu && (off < 0 || ts.saturating_add(off) > lo));
            if !reaches {
                continue;
            }
            let state: i64 = r.get::<_, Option<i64>>(3).ok().flatten().unwrap_or(-1);
            let id: i64 = r.get::<_, Option<i64>>(4).ok().flatten().unwrap_or(0);
            let frames = parsed
                .entry(id)
                .or_insert_with(|| {
                    let text: Option<String> = r.get(5).ok().flatten();
                    Arc::new(text.as_deref().and_then(parse_frames).unwrap_or_default())
                })
                .clone();
            out.push(ThreadSample {
                ts_ns: ts,
                kind,
                off_cpu_ns: off,
                state,
                stack_id: id,
                frames,
            });
            if out.len() >= MAX_THREAD_SAMPLES {
                break;
            }
        }
        Ok(out)
    }
}
