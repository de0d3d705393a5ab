//! Writing NCCL calls, communicators and job places through the capture's
//! one [`TraceWriter`]: every NCCL call gets a `nccl_calls` row (never
//! sampled), numbered in order on its communicator, and each communicator
//! made gets a `nccl_comms` row that ranks in other captures can be matched
//! by.

use crate::catalog::OpClass;
use crate::error::Result;
use crate::nccl::{split_key, JobPlace, NcclCall};
use crate::writer::TraceWriter;
use rusqlite::params;
use std::collections::HashMap;

/// What the writer remembers between NCCL calls.
#[derive(Debug, Default)]
pub(crate) struct NcclState {
    /// Next sequence number per (pid, communicator).
    next_seq: HashMap<(i32, i64), i64>,
    /// Keys of the communicators seen, per (pid, communicator).
    keys: HashMap<(i32, i64), i64>,
}

impl TraceWriter {
    /// Stores NCCL calls in one transaction.
    pub fn write_nccl(&mut self, calls: &[NcclCall]) -> Result<()> {
        let session = self.session_id();
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO nccl_calls(session_id, ts_ns, pid, tid, op_id, dur_ns, comm, seq, \
                 count, datatype, bytes, red_op, peer, stream, ret) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?;
            let mut comm = tx.prepare_cached(
                "INSERT OR REPLACE INTO nccl_comms(session_id, pid, comm, comm_key, comm_rank, \
                 nranks, parent_comm, op_id, init_ts_ns, init_dur_ns) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            let mut destroyed = tx.prepare_cached(
                "UPDATE nccl_comms SET destroy_ts_ns = ?4 \
                 WHERE session_id = ?1 AND pid = ?2 AND comm = ?3 AND destroy_ts_ns = 0",
            )?;
            let mut place = tx.prepare_cached(
                "UPDATE processes SET rank = ?3, world_size = ?4 \
                 WHERE session_id = ?1 AND pid = ?2 AND rank = -1",
            )?;
            let state = &mut self.nccl;
            for c in calls {
                let seq = if c.is_sequenced() {
                    let n = state.next_seq.entry((c.pid, c.comm)).or_insert(0);
                    *n += 1;
                    *n - 1
                } else {
                    -1
                };
                insert.execute(params![
                    session, c.ts_ns, c.pid, c.tid, c.op_id, c.dur_ns, c.comm, seq, c.count,
                    c.datatype, c.bytes, c.red_op, c.peer, c.stream, c.ret
                ])?;
                if let Some(m) = c.made.filter(|_| c.comm != 0 && c.ret == 0) {
                    let key = if m.parent_comm != 0 {
                        state
                            .keys
                            .get(&(c.pid, m.parent_comm))
                            .map_or(0, |k| split_key(*k, m.color))
                    } else {
                        m.comm_key
                    };
                    state.keys.insert((c.pid, c.comm), key);
                    state.next_seq.insert((c.pid, c.comm), 0);
                    comm.execute(params![
                        session,
                        c.pid,
                        c.comm,
                        key,
                        m.comm_rank,
                        m.nranks,
                        m.parent_comm,
                        c.op_id,
                        c.ts_ns,
                        c.dur_ns
                    ])?;
                    if m.comm_rank >= 0 && m.nranks >= 1 && m.parent_comm == 0 {
                        place.execute(params![session, c.pid, m.comm_rank, m.nranks])?;
                    }
                } else if c.class() == OpClass::CommSetup && c.made.is_none() {
                    destroyed.execute(params![session, c.pid, c.comm, c.ts_ns + c.dur_ns])?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Records where process `pid` sits in its job (from its environment).
    pub fn set_job_place(&mut self, pid: i32, p: &JobPlace) -> Result<()> {
        self.conn.execute(
            "UPDATE processes SET rank = ?3, local_rank = ?4, world_size = ?5 \
             WHERE session_id = ?1 AND pid = ?2",
            params![self.session_id(), pid, p.rank, p.local_rank, p.world_size],
        )?;
        Ok(())
    }
}
