//! NCCL calls and the place of a process in a distributed job: what a
//! capture records of collectives, communicators and ranks
//! (`nccl_calls`, `nccl_comms`, `processes.rank`), so that captures of the
//! ranks of one job can be merged and compared.

use crate::catalog::{cuda_op, OpClass};
use serde::{Deserialize, Serialize};

/// First catalogue id of the NCCL functions (`cuda_ops.api = 'nccl'`).
pub const FIRST_NCCL_OP: u16 = 201;
/// Last catalogue id reserved for NCCL functions.
pub const LAST_NCCL_OP: u16 = 299;

/// True for a catalogue id of an NCCL function.
pub fn is_nccl_op(op_id: u16) -> bool {
    (FIRST_NCCL_OP..=LAST_NCCL_OP).contains(&op_id)
}

/// One NCCL call as the capture saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclCall {
    /// Entry time, epoch ns.
    pub ts_ns: i64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Catalogue id.
    pub op_id: u16,
    /// Time inside the call.
    pub dur_ns: i64,
    /// Communicator handle in this process (for init and split: the one made).
    pub comm: i64,
    /// Elements (collectives, point-to-point).
    pub count: i64,
    /// `ncclDataType_t`, -1 when none.
    pub datatype: i32,
    /// Bytes per rank: count x element size.
    pub bytes: i64,
    /// `ncclRedOp_t`, -1 when none.
    pub red_op: i32,
    /// Root (broadcast, reduce) or peer (send, recv), -1 when none.
    pub peer: i32,
    /// Stream handle, 0 when none.
    pub stream: i64,
    /// Return code (0 = ncclSuccess).
    pub ret: i64,
    /// Made inside another probed call of the same thread (`ncclBroadcast`
    /// inside `ncclBcast`): the same collective, not numbered again.
    pub nested: bool,
    /// Communicator set-up only: what the new communicator is.
    pub made: Option<CommMade>,
}

/// A communicator a set-up call made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommMade {
    /// Key of its unique id, equal on every rank (0 unknown).
    pub comm_key: i64,
    /// This process's rank in it, -1 unknown.
    pub comm_rank: i32,
    /// Its size, -1 unknown.
    pub nranks: i32,
    /// Parent communicator of a split, 0 otherwise.
    pub parent_comm: i64,
    /// Color of a split (ranks of one color share the new communicator).
    pub color: i32,
}

impl NcclCall {
    /// Class of the call (collective, point-to-point, group, set-up).
    pub fn class(&self) -> OpClass {
        cuda_op(self.op_id).map_or(OpClass::Other, |o| o.class)
    }

    /// True for the calls numbered in order on their communicator
    /// (`nccl_calls.seq`): collectives and point-to-point transfers the
    /// application made (not one NCCL makes inside another).
    pub fn is_sequenced(&self) -> bool {
        !self.nested && matches!(self.class(), OpClass::Collective | OpClass::PointToPoint)
    }
}

/// The key of a communicator split from one of key `parent_key` with
/// `color`: every rank that passes the same color gets the same key.
pub fn split_key(parent_key: i64, color: i32) -> i64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for b in parent_key
        .to_le_bytes()
        .into_iter()
        .chain(color.to_le_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

/// Where a process sits in a distributed job, from its environment
/// (`RANK`, `LOCAL_RANK`, `WORLD_SIZE` as torchrun sets them, or the MPI and
/// Slurm equivalents). -1 where unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobPlace {
    /// Global rank.
    pub rank: i32,
    /// Rank on its node.
    pub local_rank: i32,
    /// Ranks in the job.
    pub world_size: i32,
}

impl JobPlace {
    /// Reads the place from environment variables; `None` when none is set.
    pub fn from_env<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<JobPlace> {
        const RANK: &[&str] = &["RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"];
        const LOCAL: &[&str] = &[
            "LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "MPI_LOCALRANKID",
            "SLURM_LOCALID",
        ];
        const WORLD: &[&str] = &[
            "WORLD_SIZE",
            "OMPI_COMM_WORLD_SIZE",
            "PMI_SIZE",
            "SLURM_NTASKS",
        ];
        let vars: Vec<(&str, &str)> = vars.into_iter().collect();
        let first = |names: &[&str]| -> i32 {
            names
                .iter()
                .find_map(|n| {
                    vars.iter()
                        .find(|(k, _)| k == n)
                        .and_then(|(_, v)| v.trim().parse::<i32>().ok())
                        .filter(|v| *v >= 0)
                })
                .unwrap_or(-1)
        };
        let place = JobPlace {
            rank: first(RANK),
            local_rank: first(LOCAL),
            world_size: first(WORLD),
        };
        (place.rank >= 0 || place.local_rank >= 0 || place.world_size >= 0).then_some(place)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchrun_variables_win_over_the_launchers() {
        let p = JobPlace::from_env([
            ("SLURM_PROCID", "7"),
            ("RANK", "3"),
            ("LOCAL_RANK", "1"),
            ("WORLD_SIZE", "8"),
        ])
        .expect("place");
        assert_eq!((p.rank, p.local_rank, p.world_size), (3, 1, 8));
        assert!(JobPlace::from_env([("HOME", "/root"), ("RANK", "x")]).is_none());
        let mpi = JobPlace::from_env([("OMPI_COMM_WORLD_RANK", "2")]).expect("mpi");
        assert_eq!((mpi.rank, mpi.world_size), (2, -1));
    }

    #[test]
    fn split_keys_depend_on_parent_and_color() {
        assert_eq!(split_key(11, 0), split_key(11, 0));
        assert_ne!(split_key(11, 0), split_key(11, 1));
        assert_ne!(split_key(11, 0), split_key(12, 0));
    }
}
