//! The NCCL meaning of a CUDA call record: the kernel side reuses the
//! `rec_cuda` layout for NCCL calls (`bpf/ingero_events.h` says which field
//! holds what), and this splits one into the plain call every analysis reads
//! and the NCCL detail (`nccl_calls`).

use ingero_store::catalog::{cuda_op, OpClass};
use ingero_store::nccl::{CommMade, NcclCall};
use ingero_store::CudaCall;

/// `0xffffffff`: the call has no such argument.
const NONE: u32 = u32::MAX;

fn opt(v: u32) -> i32 {
    if v == NONE {
        -1
    } else {
        v as i32
    }
}

fn comm_of(grid: &[u32; 3]) -> i64 {
    (u64::from(grid[0]) | u64::from(grid[1]) << 32) as i64
}

/// Splits the raw record `raw` of an NCCL function into the call as stored
/// in `cuda_calls` (bytes for transfers, no copy kind or geometry) and its
/// NCCL detail.
pub fn split(raw: &CudaCall) -> (CudaCall, NcclCall) {
    let class = cuda_op(raw.op_id).map_or(OpClass::Other, |o| o.class);
    let setup = class == OpClass::CommSetup;
    let transfer = matches!(class, OpClass::Collective | OpClass::PointToPoint);
    let made = (setup && raw.op_id <= 214).then(|| {
        let split = raw.op_id == 214;
        CommMade {
            comm_key: if split { 0 } else { raw.bytes },
            comm_rank: if split { -1 } else { opt(raw.block[1]) },
            nranks: if split { -1 } else { opt(raw.block[0]) },
            parent_comm: if split { raw.bytes } else { 0 },
            color: if split { opt(raw.block[0]) } else { -1 },
        }
    });
    let nccl = NcclCall {
        ts_ns: raw.ts_ns,
        pid: raw.pid,
        tid: raw.tid,
        op_id: raw.op_id,
        dur_ns: raw.dur_ns,
        comm: comm_of(&raw.grid),
        count: if transfer { raw.copy_kind } else { 0 },
        datatype: if transfer { raw.grid[2] as i32 } else { -1 },
        bytes: if transfer { raw.bytes } else { 0 },
        red_op: if transfer { opt(raw.block[0]) } else { -1 },
        peer: if transfer { opt(raw.block[1]) } else { -1 },
        stream: raw.stream,
        ret: raw.ret,
        nested: raw.nested,
        made,
    };
    let call = CudaCall {
        bytes: nccl.bytes,
        copy_kind: -1,
        grid: [0; 3],
        block: [0; 3],
        shared_mem: 0,
        ..*raw
    };
    (call, nccl)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(op_id: u16) -> CudaCall {
        CudaCall {
            ts_ns: 10,
            pid: 1,
            tid: 2,
            op_id,
            dur_ns: 5,
            bytes: 4096,
            copy_kind: 1024,
            stream: 0x1234,
            ret: 0,
            grid: [0xdead_beef, 0x7f, 7],
            block: [0, NONE, 0],
            shared_mem: 0,
            nested: false,
            dur_estimated: false,
        }
    }

    #[test]
    fn an_all_reduce_keeps_its_size_and_communicator() {
        let (call, n) = split(&raw(201));
        assert_eq!((call.bytes, call.copy_kind, call.grid), (4096, -1, [0; 3]));
        assert_eq!(n.comm, 0x7f_dead_beef);
        assert_eq!((n.count, n.datatype, n.red_op, n.peer), (1024, 7, 0, -1));
        assert!(n.made.is_none());
    }

    #[test]
    fn an_init_says_rank_size_and_key() {
        let mut r = raw(210);
        r.bytes = 99;
        r.block = [4, 3, 0];
        let (call, n) = split(&r);
        assert_eq!(call.bytes, 0);
        let m = n.made.expect("made");
        assert_eq!((m.comm_key, m.comm_rank, m.nranks), (99, 3, 4));
        assert_eq!(n.bytes, 0);
    }
}
