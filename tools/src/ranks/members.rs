//! The NCCL collectives of one capture file, per communicator member: which
//! process holds which communicator (and so which rank of which job), and
//! the collective calls it made on it in order, each with the moment the
//! host saw it complete.

use crate::error::Result;
use ingero_store::TraceDb;
use std::collections::BTreeMap;

/// One collective call on a communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collective {
    /// Order on the communicator (`nccl_calls.seq`).
    pub seq: i64,
    /// Catalogue id.
    pub op_id: u16,
    /// Elements.
    pub count: i64,
    /// Entry: when this rank arrived, epoch ns.
    pub arrive_ns: i64,
    /// Time inside the call.
    pub dur_ns: i64,
    /// When the host saw the collective complete. The call that waited for
    /// it is the collective itself when the thread blocked inside it (a
    /// blocking collective), else the first synchronize of the thread after
    /// the call returned and before its next collective (NCCL's usual
    /// asynchronous collective); completion is the thread's last wake-up
    /// inside that call (when the kernel made it runnable again, so time
    /// spent waiting for a CPU afterwards does not count), else that call's
    /// return, else the collective's own return.
    pub done_ns: i64,
    /// Calling thread.
    pub tid: i32,
}

/// One process's membership in one communicator, with its collectives.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Session of the row.
    pub session_id: i64,
    /// Process id (as in the file).
    pub pid: i32,
    /// Communicator handle in that process.
    pub comm: i64,
    /// Key equal on every rank of the communicator.
    pub key: i64,
    /// Rank in the communicator, -1 unknown.
    pub comm_rank: i32,
    /// Size of the communicator, -1 unknown.
    pub nranks: i32,
    /// Global rank of the process (`processes.rank`), -1 unknown.
    pub rank: i32,
    /// Node of the process (`processes.node`, else the session's host).
    pub node: String,
    /// Its collectives, by `seq`.
    pub calls: Vec<Collective>,
}

impl Member {
    /// A name for reports: `rank 1 (node-b, pid 42)`.
    pub fn label(&self) -> String {
        let rank = if self.rank >= 0 {
            self.rank
        } else {
            self.comm_rank
        };
        let who = if rank >= 0 {
            format!("rank {rank}")
        } else {
            "rank ?".to_string()
        };
        if self.node.is_empty() {
            format!("{who} (pid {})", self.pid)
        } else {
            format!("{who} ({}, pid {})", self.node, self.pid)
        }
    }
}

/// Every communicator member of the file with a known key, with its
/// collective calls.
pub fn members(db: &TraceDb) -> Result<Vec<Member>> {
    let conn = db.conn();
    let q = |e| db.classify(e);
    let mut out = Vec::new();
    {
        let mut stmt = conn
            .prepare(
                "SELECT m.session_id, m.pid, m.comm, m.comm_key, m.comm_rank, m.nranks, \
                 COALESCE(p.rank, -1), COALESCE(NULLIF(p.node, ''), NULLIF(m.node, ''), s.host, '') \
                 FROM nccl_comms m \
                 LEFT JOIN processes p ON p.session_id = m.session_id AND p.pid = m.pid \
                 LEFT JOIN sessions s ON s.id = m.session_id \
                 WHERE m.comm_key != 0 ORDER BY m.session_id, m.pid, m.init_ts_ns",
            )
            .map_err(q)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Member {
                    session_id: r.get(0)?,
                    pid: r.get(1)?,
                    comm: r.get(2)?,
                    key: r.get(3)?,
                    comm_rank: r.get(4)?,
                    nranks: r.get(5)?,
                    rank: r.get(6)?,
                    node: r.get(7)?,
                    calls: Vec::new(),
                })
            })
            .map_err(q)?;
        for m in rows {
            out.push(m.map_err(q)?);
        }
    }
    let mut calls = conn
        .prepare(
            "SELECT n.seq, n.op_id, n.count, n.ts_ns, n.dur_ns, n.tid FROM nccl_calls n \
             JOIN cuda_ops o ON o.id = n.op_id \
             WHERE n.session_id = ?1 AND n.pid = ?2 AND n.comm = ?3 AND o.class = 'collective' \
             AND n.seq >= 0 ORDER BY n.seq",
        )
        .map_err(q)?;
    let mut syncs = conn
        .prepare(
            "SELECT c.tid, c.ts_ns, c.ts_ns + c.dur_ns FROM cuda_calls c \
             JOIN cuda_ops o ON o.id = c.op_id \
             WHERE c.session_id = ?1 AND c.pid = ?2 AND o.class = 'sync' AND c.nested != 1 \
             ORDER BY c.tid, c.ts_ns",
        )
        .map_err(q)?;
    let mut wakeups = conn
        .prepare(
            "SELECT tid, ts_ns, ts_ns FROM host_events \
             WHERE session_id = ?1 AND pid = ?2 AND kind = 2 ORDER BY tid, ts_ns",
        )
        .map_err(q)?;
    let mut cache: BTreeMap<(i64, i32), (PerThread, PerThread)> = BTreeMap::new();
    for m in &mut out {
        let rows = calls
            .query_map(rusqlite::params![m.session_id, m.pid, m.comm], |r| {
                Ok(Collective {
                    seq: r.get(0)?,
                    op_id: r.get(1)?,
                    count: r.get(2)?,
                    arrive_ns: r.get(3)?,
                    dur_ns: r.get(4)?,
                    done_ns: 0,
                    tid: r.get(5)?,
                })
            })
            .map_err(q)?;
        for c in rows {
            m.calls.push(c.map_err(q)?);
        }
        if let std::collections::btree_map::Entry::Vacant(slot) = cache.entry((m.session_id, m.pid))
        {
            slot.insert((
                per_thread(&mut syncs, m.session_id, m.pid).map_err(q)?,
                per_thread(&mut wakeups, m.session_id, m.pid).map_err(q)?,
            ));
        }
        let (syncs_by_tid, wakes_by_tid) = &cache[&(m.session_id, m.pid)];
        let empty = Vec::new();
        let n = m.calls.len();
        for i in 0..n {
            let c = m.calls[i];
            let end = c.arrive_ns + c.dur_ns;
            let next = m.calls.get(i + 1).map_or(i64::MAX, |x| x.arrive_ns);
            let syncs = syncs_by_tid.get(&c.tid).unwrap_or(&empty);
            let wakes = wakes_by_tid.get(&c.tid).unwrap_or(&empty);
            let woke_in = |a: i64, b: i64| {
                let upto = wakes.partition_point(|(w, _)| *w <= b);
                wakes[..upto].last().map(|(w, _)| *w).filter(|w| *w > a)
            };
            let first = syncs.partition_point(|(ts, _)| *ts < end);
            let sync = syncs.get(first).filter(|(ts, _)| *ts < next);
            m.calls[i].done_ns = woke_in(c.arrive_ns, end)
                .or_else(|| sync.map(|(a, b)| woke_in(*a, *b).unwrap_or(*b)))
                .unwrap_or(end);
        }
    }
    Ok(out)
}

/// Intervals per thread, `(start, end)` in time order (synchronize calls;
/// wake-ups as instants).
type PerThread = BTreeMap<i32, Vec<(i64, i64)>>;

fn per_thread(
    stmt: &mut rusqlite::Statement<'_>,
    session_id: i64,
    pid: i32,
) -> rusqlite::Result<PerThread> {
    let mut out = PerThread::new();
    let rows = stmt.query_map(rusqlite::params![session_id, pid], |r| {
        Ok((
            r.get::<_, i32>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    for row in rows {
        let (tid, a, b) = row?;
        out.entry(tid).or_default().push((a, b));
    }
    Ok(out)
}

/// Pairs of collectives two members made as one: the same `seq` with the
/// same function and element count (a mismatch means the sequences are not
/// the same collectives, and is counted, not paired).
pub fn paired<'a>(a: &'a Member, b: &'a Member) -> (Vec<(&'a Collective, &'a Collective)>, usize) {
    let by_seq: BTreeMap<i64, &Collective> = b.calls.iter().map(|c| (c.seq, c)).collect();
    let mut pairs = Vec::new();
    let mut mismatched = 0;
    for x in &a.calls {
        if let Some(y) = by_seq.get(&x.seq) {
            if x.op_id == y.op_id && x.count == y.count {
                pairs.push((x, *y));
            } else {
                mismatched += 1;
            }
        }
    }
    (pairs, mismatched)
}
