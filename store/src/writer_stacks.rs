//! Writing stack samples ([`crate::stacks`]) through the capture's one
//! [`TraceWriter`]: stacks interned by id, samples kept per the raw-row
//! policy per second, thread and kind, every sample counted in
//! `stack_counts`.

use crate::error::Result;
use crate::schema::AGGREGATE_BUCKET_NS;
use crate::stacks::{fnv1a64, frames_json, StackKind, StackSample, OFF_CPU_UNKNOWN};
use crate::writer::{RawPolicy, TraceWriter};
use rusqlite::params;
use std::collections::{HashMap, HashSet};

/// The writer's memory of stacks and per-second sample budgets.
#[derive(Debug, Default)]
pub(crate) struct StackState {
    /// Stack ids already in the file.
    known: HashSet<i64>,
    /// Per (thread, kind): the second being filled and the samples kept in it.
    kept: HashMap<(i32, i64), (i64, u32)>,
}

/// Totals of one `stack_counts` row.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    count: i64,
    stored: i64,
    sum_off_cpu_ns: i64,
}

impl StackState {
    /// Whether `s` is stored as a raw row under `policy`: every sample with
    /// [`RawPolicy::All`]; otherwise the first `per_second` of each second,
    /// thread and kind, plus every off-CPU sample at least
    /// `always_keep_ns` long or still off at the stop (long blocks are never
    /// sampled away).
    fn keep(&mut self, policy: RawPolicy, s: &StackSample, bucket: i64) -> bool {
        let RawPolicy::Sampled {
            per_second,
            always_keep_ns,
        } = policy
        else {
            return true;
        };
        let tail = s.kind == StackKind::OffCpu
            && (s.off_cpu_ns >= always_keep_ns || s.off_cpu_ns == OFF_CPU_UNKNOWN);
        let slot = self.kept.entry((s.tid, s.kind.id())).or_insert((bucket, 0));
        if bucket > slot.0 {
            *slot = (bucket, 0);
        } else if bucket < slot.0 {
            return tail;
        }
        if tail {
            return true;
        }
        if slot.1 < per_second {
            slot.1 += 1;
            true
        } else {
            false
        }
    }
}

impl TraceWriter {
    /// Stores a batch of stack samples in one transaction: each new stack
    /// once in `stacks`, the samples the raw-row policy keeps in
    /// `stack_samples`, and every sample in `stack_counts`.
    pub fn write_stacks(&mut self, samples: &[StackSample]) -> Result<()> {
        let session = self.session_id();
        let policy = self.raw_policy();
        let mut counts: HashMap<(i64, i32, i32, i64), Counts> = HashMap::new();
        let mut rows = Vec::with_capacity(samples.len());
        let mut new_stacks: Vec<(i64, usize, String)> = Vec::new();
        for s in samples {
            let bucket = s.ts_ns.div_euclid(AGGREGATE_BUCKET_NS) * AGGREGATE_BUCKET_NS;
            let keep = self.stacks.keep(policy, s, bucket);
            let c = counts
                .entry((bucket, s.pid, s.tid, s.kind.id()))
                .or_default();
            c.count += 1;
            if s.kind == StackKind::OffCpu {
                c.sum_off_cpu_ns += s.off_cpu_ns.max(0);
            }
            if !keep {
                continue;
            }
            c.stored += 1;
            let json = frames_json(&s.frames);
            let id = fnv1a64(json.as_bytes());
            if self.stacks.known.insert(id) {
                new_stacks.push((id, s.frames.len(), json));
            }
            rows.push((s, id));
        }
        let tx = self.conn.transaction()?;
        {
            let mut stack = tx.prepare_cached(
                "INSERT OR IGNORE INTO stacks(id, depth, frames) VALUES (?1, ?2, ?3)",
            )?;
            for (id, depth, json) in &new_stacks {
                stack.execute(params![id, *depth as i64, json])?;
            }
            let mut sample = tx.prepare_cached(
                "INSERT INTO stack_samples(session_id, ts_ns, pid, tid, kind, off_cpu_ns, state, \
                 cpu, stack_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for (s, id) in &rows {
                sample.execute(params![
                    session,
                    s.ts_ns,
                    s.pid,
                    s.tid,
                    s.kind.id(),
                    s.off_cpu_ns,
                    s.state,
                    s.cpu,
                    id
                ])?;
            }
            let mut count = tx.prepare_cached(
                "INSERT INTO stack_counts(session_id, bucket_ns, pid, tid, kind, count, stored, \
                 sum_off_cpu_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                 ON CONFLICT(session_id, bucket_ns, pid, tid, kind) DO UPDATE SET \
                 count = count + excluded.count, stored = stored + excluded.stored, \
                 sum_off_cpu_ns = sum_off_cpu_ns + excluded.sum_off_cpu_ns",
            )?;
            for ((bucket, pid, tid, kind), c) in &counts {
                count.execute(params![
                    session,
                    bucket,
                    pid,
                    tid,
                    kind,
                    c.count,
                    c.stored,
                    c.sum_off_cpu_ns
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Records how samples of `kind` were taken in this session: `hz` per
    /// second per thread (0 = one per event), and what the sampler said.
    pub fn write_stack_source(&mut self, kind: StackKind, hz: i64, note: &str) -> Result<()> {
        let session = self.session_id();
        self.conn.execute(
            "INSERT INTO stack_sources(session_id, kind, hz, note) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(session_id, kind) DO UPDATE SET hz = excluded.hz, note = excluded.note",
            params![session, kind.id(), hz, note],
        )?;
        Ok(())
    }
}
