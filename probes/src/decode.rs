//! Parses ring-buffer records (layouts in `bpf/ingero_events.h`, mirrored
//! by [`crate::records`]) into store events and the lifecycle notices the
//! control thread acts on.

use crate::clock::Clock;
use crate::open_calls::RunVal;
use crate::page_runs::PageRun;
use crate::records::{
    FoldVal, RecCallFold, RecCuda, RecHost, RecLaunchRun, RecNotice, RecPages, RecProc, RecStack,
    REC_CALL_FOLD, REC_CUDA, REC_HOST, REC_LAUNCH_RUN, REC_MAPEXEC, REC_PAGES, REC_PROC, REC_STACK,
    STACK_OFF_CPU, STACK_ON_CPU,
};
use bytemuck::Pod;
use ingero_store::{CudaCall, HostEvent, HostKind, StackKind};

// The `rec_cuda.flags` bits, still reachable where callers first found them.
pub use crate::records::{REC_CUDA_DUR_ESTIMATED, REC_CUDA_NESTED};

/// One decoded ring-buffer record.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A completed CUDA call.
    Cuda(CudaCall),
    /// A completed NCCL call: as stored with the CUDA calls, and its detail.
    Nccl(CudaCall, ingero_store::NcclCall),
    /// A switch, wakeup or page allocation.
    Host(HostEvent),
    /// A fork, exec or exit, with the command name of the task.
    Proc(HostEvent, String),
    /// Launches of one thread counted in the kernel.
    LaunchRun(ingero_store::LaunchRun),
    /// Other calls of one thread counted in the kernel (call folding).
    CallFold(ingero_store::CallFold),
    /// A stack sample (on-CPU, or a CUDA thread leaving the CPU).
    Stack(RawStack),
    /// A traced process mapped executable code (a library may have appeared).
    MapExec {
        /// Process that mapped it.
        pid: i32,
        /// When, epoch ns.
        ts_ns: i64,
    },
}

/// A stack sample as the kernel took it: addresses, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawStack {
    /// On-CPU or off-CPU.
    pub kind: StackKind,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// CPU.
    pub cpu: i32,
    /// Epoch ns (off-CPU: the switch-out).
    pub ts_ns: i64,
    /// User-space return addresses (empty when the stack could not be walked).
    pub user: Vec<u64>,
    /// Kernel addresses (empty when the sample was taken in user mode).
    pub kernel: Vec<u64>,
    /// Negative errno of a user stack that could not be walked, else 0.
    pub user_error: i32,
    /// Off-CPU: how long the thread stayed off, filled by the join.
    pub off_cpu_ns: i64,
    /// Off-CPU: 1 preempted, 0 blocked (as the switch record says); else -1.
    pub state: i64,
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than its type requires.
    Short {
        /// Record type tag.
        tag: u32,
        /// Bytes available.
        len: usize,
    },
    /// Unknown type tag or host kind.
    Unknown(u32),
}

/// The record `T` at the start of `b`, copied out whatever the alignment of
/// `b`; bytes past `T` are ignored (a newer kernel side may append fields).
fn read<T: Pod>(b: &[u8], tag: u32) -> Result<T, DecodeError> {
    let short = DecodeError::Short { tag, len: b.len() };
    let body = b.get(..std::mem::size_of::<T>()).ok_or(short.clone())?;
    bytemuck::try_pod_read_unaligned(body).map_err(|_| short)
}

fn comm(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Decodes one record; `clock` turns kernel stamps into epoch ns.
pub fn decode(b: &[u8], clock: &Clock) -> Result<Record, DecodeError> {
    let tag: u32 = read(b, 0)?;
    match tag {
        REC_CUDA => Ok(cuda(&read(b, tag)?, clock)),
        REC_LAUNCH_RUN => Ok(launch_run(&read(b, tag)?, clock)),
        REC_CALL_FOLD => Ok(call_fold(&read(b, tag)?, clock)),
        REC_HOST => host(&read(b, tag)?, clock),
        REC_PROC => proc(&read(b, tag)?, clock),
        REC_PAGES => Ok(Record::Host(page_run(&read(b, tag)?, clock))),
        REC_STACK => stack(&read(b, tag)?, clock),
        REC_MAPEXEC => {
            let r: RecNotice = read(b, tag)?;
            Ok(Record::MapExec {
                pid: r.pid as i32,
                ts_ns: clock.to_epoch(r.ts),
            })
        }
        other => Err(DecodeError::Unknown(other)),
    }
}

fn cuda(r: &RecCuda, clock: &Clock) -> Record {
    let call = CudaCall {
        op_id: r.op,
        pid: r.pid as i32,
        tid: r.tid as i32,
        ts_ns: clock.to_epoch(r.ts),
        dur_ns: r.dur as i64,
        bytes: r.size as i64,
        copy_kind: r.kind,
        stream: r.stream as i64,
        ret: r.ret,
        grid: r.grid,
        block: r.block,
        shared_mem: r.shared_mem,
        nested: r.flags & REC_CUDA_NESTED != 0,
        dur_estimated: r.flags & REC_CUDA_DUR_ESTIMATED != 0,
    };
    if ingero_store::nccl::is_nccl_op(call.op_id) {
        let (call, nccl) = crate::nccl_record::split(&call);
        return Record::Nccl(call, nccl);
    }
    Record::Cuda(call)
}

fn launch_run(r: &RecLaunchRun, clock: &Clock) -> Record {
    // The record carries the thread's run as the table holds it.
    let run = RunVal {
        first_ts: r.ts,
        last_ts: r.last_ts,
        last_end: r.last_end,
        stream: r.stream,
        threads: r.threads,
        dur_sum: r.dur_sum,
        dur_min: r.dur_min,
        dur_max: r.dur_max,
        n: r.count,
        small: r.small,
        op: u32::from(r.op),
        timed: r.timed,
        bound_sum: r.bound_sum,
        bounded: r.bounded,
        // A record's last member was bounded at the flush, or never.
        last_open: 0,
    };
    Record::LaunchRun(run.to_launch_run(r.pid as i32, r.tid as i32, r.est_ns, clock))
}

fn call_fold(r: &RecCallFold, clock: &Clock) -> Record {
    // The record carries the thread's fold slot as the table holds it.
    let fold = FoldVal {
        first_ts: r.ts,
        last_ts: r.last_ts,
        last_end: r.last_end,
        stream: r.stream,
        dur_sum: r.dur_sum,
        bytes: r.bytes,
        dur_min: r.dur_min,
        dur_max: r.dur_max,
        n: r.count,
        op: r.op,
        nested: u16::from(r.nested != 0),
        threads: r.threads,
        small: r.small,
        pad: 0,
    };
    Record::CallFold(fold.to_call_fold(r.pid as i32, r.tid as i32, clock))
}

fn host_kind(id: u16) -> Result<HostKind, DecodeError> {
    HostKind::from_id(i64::from(id)).ok_or(DecodeError::Unknown(u32::from(id)))
}

fn host(r: &RecHost, clock: &Clock) -> Result<Record, DecodeError> {
    let kind = host_kind(r.kind)?;
    // The kernel side reports prev_state for switches (0 = still
    // runnable); the store wants 1 = preempted, 0 = blocked.
    let arg = if kind == HostKind::SchedSwitch {
        (r.arg == 0) as i64
    } else {
        r.arg
    };
    Ok(Record::Host(HostEvent {
        ts_ns: clock.to_epoch(r.ts),
        pid: r.pid as i32,
        tid: r.tid as i32,
        kind,
        dur_ns: r.dur as i64,
        arg,
        cpu: i32::from(r.cpu),
        count: 1,
        bytes: if kind == HostKind::PageAlloc {
            4096i64 << arg.clamp(0, 20)
        } else {
            0
        },
    }))
}

fn proc(r: &RecProc, clock: &Clock) -> Result<Record, DecodeError> {
    let ev = HostEvent {
        ts_ns: clock.to_epoch(r.ts),
        pid: r.pid as i32,
        tid: r.tid as i32,
        kind: host_kind(r.kind)?,
        dur_ns: 0,
        arg: r.arg,
        cpu: i32::from(r.cpu),
        count: 1,
        bytes: 0,
    };
    Ok(Record::Proc(ev, comm(&r.comm)))
}

/// A run of page allocations (`struct rec_pages`) as one host row, built
/// the way the runs read at the stop are ([`PageRun::to_event`]).
fn page_run(r: &RecPages, clock: &Clock) -> HostEvent {
    PageRun {
        pid: r.pid,
        tid: r.tid,
        start: r.ts,
        last: r.ts.saturating_add(r.dur),
        count: r.count.max(1),
        pages: r.pages,
        order: u32::from(r.order),
        unstamped: 0,
        task: 0,
        tick: 0,
    }
    .to_event(clock, i32::from(r.cpu))
}

fn stack(r: &RecStack, clock: &Clock) -> Result<Record, DecodeError> {
    let kind = match r.kind {
        STACK_ON_CPU => StackKind::OnCpu,
        STACK_OFF_CPU => StackKind::OffCpu,
        k => return Err(DecodeError::Unknown(u32::from(k))),
    };
    let frames = |all: &[u64], len: i32| -> Vec<u64> {
        let n = (len.max(0) as usize / 8).min(all.len());
        all[..n].iter().copied().filter(|a| *a != 0).collect()
    };
    Ok(Record::Stack(RawStack {
        kind,
        pid: r.pid as i32,
        tid: r.tid as i32,
        cpu: i32::from(r.cpu),
        ts_ns: clock.to_epoch(r.ts),
        user: frames(&r.user, r.user_len),
        kernel: frames(&r.kernel, r.kernel_len),
        user_error: r.user_len.min(0),
        off_cpu_ns: 0,
        state: -1,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{HK_EXIT, HK_PAGE_ALLOC, HK_SWITCH, HK_WAKEUP, STACK_USER_FRAMES};
    use bytemuck::{bytes_of, Zeroable};

    const PAGES_LEN: usize = std::mem::size_of::<RecPages>();
    const STACK_LEN: usize = std::mem::size_of::<RecStack>();

    fn cuda_bytes() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&REC_CUDA.to_ne_bytes());
        b.extend_from_slice(&7u16.to_ne_bytes());
        b.extend_from_slice(&1u16.to_ne_bytes());
        b.extend_from_slice(&100u32.to_ne_bytes());
        b.extend_from_slice(&101u32.to_ne_bytes());
        b.extend_from_slice(&1_000u64.to_ne_bytes());
        b.extend_from_slice(&500u64.to_ne_bytes());
        b.extend_from_slice(&4096u64.to_ne_bytes());
        b.extend_from_slice(&1u64.to_ne_bytes());
        b.extend_from_slice(&0x5157u64.to_ne_bytes());
        b.extend_from_slice(&(-3i64).to_ne_bytes());
        for d in [4u32, 2, 1, 128, 1, 1, 1024, REC_CUDA_NESTED] {
            b.extend_from_slice(&d.to_ne_bytes());
        }
        b
    }

    #[test]
    fn decodes_a_cuda_record() {
        let clock = Clock::measure();
        let Ok(Record::Cuda(c)) = decode(&cuda_bytes(), &clock) else {
            panic!("not a cuda record");
        };
        assert_eq!((c.op_id, c.pid, c.tid), (7, 100, 101));
        assert_eq!(
            (c.dur_ns, c.bytes, c.copy_kind, c.stream, c.ret),
            (500, 4096, 1, 0x5157, -3)
        );
        assert_eq!(c.ts_ns, clock.to_epoch(1_000));
        assert_eq!(
            (c.grid, c.block, c.shared_mem),
            ([4, 2, 1], [128, 1, 1], 1024)
        );
        assert!(c.nested);
        assert_eq!(c.threads(), 1024);
    }

    #[test]
    fn decodes_a_page_allocation_run_as_one_row_of_many() {
        let clock = Clock::measure();
        let mut b = vec![0u8; PAGES_LEN];
        b[0..4].copy_from_slice(&REC_PAGES.to_ne_bytes());
        b[4..6].copy_from_slice(&9u16.to_ne_bytes());
        b[6..8].copy_from_slice(&1u16.to_ne_bytes());
        b[8..12].copy_from_slice(&70u32.to_ne_bytes());
        b[12..16].copy_from_slice(&71u32.to_ne_bytes());
        b[16..24].copy_from_slice(&2_000u64.to_ne_bytes());
        b[24..32].copy_from_slice(&900_000u64.to_ne_bytes());
        b[32..36].copy_from_slice(&300u32.to_ne_bytes());
        b[36..40].copy_from_slice(&811u32.to_ne_bytes());
        let Ok(Record::Host(h)) = decode(&b, &clock) else {
            panic!("not a host record");
        };
        assert_eq!(
            (h.kind, h.pid, h.tid, h.cpu),
            (HostKind::PageAlloc, 70, 71, 1)
        );
        assert_eq!(
            (h.count, h.bytes, h.arg, h.dur_ns),
            (300, 811 * 4096, 9, 900_000)
        );
        assert_eq!(h.ts_ns, clock.to_epoch(2_000));
        assert!(decode(&b[..36], &clock).is_err());
    }

    #[test]
    fn decodes_a_stack_record_and_an_unwalkable_one() {
        let clock = Clock::measure();
        let mut b = vec![0u8; STACK_LEN];
        b[0..4].copy_from_slice(&REC_STACK.to_ne_bytes());
        b[4..6].copy_from_slice(&2u16.to_ne_bytes());
        b[6..8].copy_from_slice(&3u16.to_ne_bytes());
        b[8..12].copy_from_slice(&40u32.to_ne_bytes());
        b[12..16].copy_from_slice(&41u32.to_ne_bytes());
        b[16..24].copy_from_slice(&5_000u64.to_ne_bytes());
        b[24..28].copy_from_slice(&16i32.to_ne_bytes());
        b[28..32].copy_from_slice(&(-14i32).to_ne_bytes());
        b[32..40].copy_from_slice(&0x401000u64.to_ne_bytes());
        b[40..48].copy_from_slice(&0x401200u64.to_ne_bytes());
        let Ok(Record::Stack(s)) = decode(&b, &clock) else {
            panic!("not a stack record");
        };
        assert_eq!(
            (s.kind, s.pid, s.tid, s.cpu),
            (StackKind::OffCpu, 40, 41, 3)
        );
        assert_eq!(s.user, vec![0x401000, 0x401200]);
        assert!(s.kernel.is_empty());
        assert_eq!(s.ts_ns, clock.to_epoch(5_000));
        b[24..28].copy_from_slice(&(-14i32).to_ne_bytes());
        let Ok(Record::Stack(s)) = decode(&b, &clock) else {
            panic!("not a stack record");
        };
        assert!(s.user.is_empty());
        assert_eq!(s.user_error, -14);
        assert!(decode(&b[..100], &clock).is_err());
    }

    #[test]
    fn rejects_short_and_unknown_records() {
        let clock = Clock::measure();
        let b = cuda_bytes();
        assert!(matches!(
            decode(&b[..20], &clock),
            Err(DecodeError::Short { .. })
        ));
        // A record of the layout before launch geometry is refused whole.
        assert_eq!(
            decode(&b[..64], &clock),
            Err(DecodeError::Short {
                tag: REC_CUDA,
                len: 64
            })
        );
        assert_eq!(
            decode(&9u32.to_ne_bytes(), &clock),
            Err(DecodeError::Unknown(9))
        );
        assert!(decode(&[1, 0], &clock).is_err());
    }

    /// Decodes `bytes` placed one byte into a buffer, so the record is not
    /// aligned as the ring buffer would align it.
    fn decode_unaligned(bytes: &[u8], clock: &Clock) -> Result<Record, DecodeError> {
        let mut buf = vec![0u8; bytes.len() + 1];
        buf[1..].copy_from_slice(bytes);
        decode(&buf[1..], clock)
    }

    fn a_cuda() -> RecCuda {
        RecCuda {
            rec: REC_CUDA,
            op: 7,
            cpu: 3,
            pid: 100,
            tid: 101,
            ts: 1_000,
            dur: 500,
            size: 4096,
            kind: 2,
            stream: 0x5157,
            ret: -3,
            grid: [4, 2, 1],
            block: [128, 1, 1],
            shared_mem: 1024,
            flags: REC_CUDA_NESTED | REC_CUDA_DUR_ESTIMATED,
        }
    }

    #[test]
    fn a_cuda_struct_round_trips() {
        let clock = Clock::measure();
        let r = a_cuda();
        let Ok(Record::Cuda(c)) = decode_unaligned(bytes_of(&r), &clock) else {
            panic!("not a cuda record");
        };
        assert_eq!(
            (c.op_id, c.pid, c.tid, c.ts_ns),
            (7, 100, 101, clock.to_epoch(1_000))
        );
        assert_eq!(
            (c.dur_ns, c.bytes, c.copy_kind, c.stream, c.ret),
            (500, 4096, 2, 0x5157, -3)
        );
        assert_eq!((c.grid, c.block, c.shared_mem), (r.grid, r.block, 1024));
        assert!(c.nested && c.dur_estimated);
        // The hand-built bytes of the first test are the same layout.
        let Ok(from_bytes) = bytemuck::try_pod_read_unaligned::<RecCuda>(&cuda_bytes()) else {
            panic!("cuda_bytes is not one rec_cuda");
        };
        assert_eq!(
            (from_bytes.op, from_bytes.ret, from_bytes.flags),
            (7, -3, REC_CUDA_NESTED)
        );
    }

    #[test]
    fn an_nccl_call_round_trips_as_nccl() {
        let clock = Clock::measure();
        let r = RecCuda {
            op: 201,
            kind: 1024,
            grid: [0xdead_beef, 0x7f, 7],
            block: [0, u32::MAX, 0],
            flags: 0,
            ..a_cuda()
        };
        let Ok(Record::Nccl(c, n)) = decode(bytes_of(&r), &clock) else {
            panic!("not an nccl record");
        };
        assert_eq!((c.op_id, c.copy_kind, c.grid), (201, -1, [0; 3]));
        assert_eq!(
            (n.comm, n.count, n.datatype, n.peer),
            (0x7f_dead_beef, 1024, 7, -1)
        );
    }

    #[test]
    fn host_and_proc_structs_round_trip() {
        let clock = Clock::measure();
        let switch = RecHost {
            rec: REC_HOST,
            kind: HK_SWITCH,
            cpu: 2,
            pid: 50,
            tid: 51,
            ts: 9_000,
            dur: 1_500,
            arg: 0,
        };
        let Ok(Record::Host(h)) = decode_unaligned(bytes_of(&switch), &clock) else {
            panic!("not a host record");
        };
        assert_eq!(
            (h.kind, h.pid, h.tid, h.cpu),
            (HostKind::SchedSwitch, 50, 51, 2)
        );
        assert_eq!((h.dur_ns, h.arg, h.bytes, h.count), (1_500, 1, 0, 1));
        assert_eq!(h.ts_ns, clock.to_epoch(9_000));
        let alloc = RecHost {
            kind: HK_PAGE_ALLOC,
            arg: 2,
            ..switch
        };
        let Ok(Record::Host(h)) = decode(bytes_of(&alloc), &clock) else {
            panic!("not a host record");
        };
        assert_eq!((h.kind, h.arg, h.bytes), (HostKind::PageAlloc, 2, 4 * 4096));

        let mut comm = [0u8; 16];
        comm[..6].copy_from_slice(b"python");
        let exit = RecProc {
            rec: REC_PROC,
            kind: HK_EXIT,
            cpu: 1,
            pid: 60,
            tid: 60,
            ts: 7_000,
            arg: 137,
            comm,
        };
        let Ok(Record::Proc(p, name)) = decode_unaligned(bytes_of(&exit), &clock) else {
            panic!("not a proc record");
        };
        assert_eq!((p.kind, p.pid, p.arg, p.cpu), (HostKind::Exit, 60, 137, 1));
        assert_eq!(p.ts_ns, clock.to_epoch(7_000));
        assert_eq!(name, "python");
        let full = RecProc {
            comm: *b"sixteen-bytes-xx",
            ..exit
        };
        let Ok(Record::Proc(_, name)) = decode(bytes_of(&full), &clock) else {
            panic!("not a proc record");
        };
        assert_eq!(name, "sixteen-bytes-xx");
    }

    #[test]
    fn call_fold_struct_round_trips() {
        let clock = Clock::measure();
        let r = RecCallFold {
            rec: REC_CALL_FOLD,
            op: 104,
            cpu: 1,
            pid: 80,
            tid: 81,
            ts: 10_000,
            last_ts: 20_000,
            last_end: 20_500,
            stream: 0x77,
            dur_sum: 9_000,
            bytes: 12 * 256,
            dur_min: 500,
            dur_max: 1_500,
            count: 12,
            nested: 1,
            threads: 0,
            small: 0,
            pad: 0,
        };
        let Ok(Record::CallFold(f)) = decode_unaligned(bytes_of(&r), &clock) else {
            panic!("not a call fold");
        };
        assert_eq!(
            (f.pid, f.tid, f.op_id, f.count, f.nested),
            (80, 81, 104, 12, true)
        );
        assert_eq!(
            (f.ts_ns, f.last_ts_ns, f.last_end_ns),
            (
                clock.to_epoch(10_000),
                clock.to_epoch(20_000),
                clock.to_epoch(20_500)
            )
        );
        assert_eq!((f.stream, f.dur_ns, f.bytes), (0x77, 9_000, 3_072));
        assert_eq!((f.min_dur_ns, f.max_dur_ns), (500, 1_500));
    }

    #[test]
    fn launch_run_struct_round_trips() {
        let clock = Clock::measure();
        let r = RecLaunchRun {
            rec: REC_LAUNCH_RUN,
            op: 5,
            cpu: 0,
            pid: 80,
            tid: 81,
            ts: 10_000,
            last_ts: 20_000,
            est_ns: 4_000,
            stream: 0x77,
            threads: 1 << 20,
            count: 12,
            small: 9,
            timed: 3,
            bounded: 4,
            last_end: 21_000,
            dur_sum: 9_000,
            dur_min: 2_000,
            dur_max: 4_000,
            bound_sum: 100_000,
        };
        let Ok(Record::LaunchRun(l)) = decode_unaligned(bytes_of(&r), &clock) else {
            panic!("not a launch run");
        };
        assert_eq!((l.pid, l.tid, l.op_id, l.count), (80, 81, 5, 12));
        assert_eq!(
            (l.ts_ns, l.last_ts_ns),
            (clock.to_epoch(10_000), clock.to_epoch(20_000))
        );
        assert_eq!((l.est_ns, l.stream, l.threads), (4_000, 0x77, 1 << 20));
        assert_eq!((l.small, l.timed, l.bounded), (9, 3, 4));
        assert_eq!(
            (l.timed_dur_ns, l.timed_min_ns, l.timed_max_ns, l.bound_ns),
            (9_000, 2_000, 4_000, 100_000)
        );
        // No timed launch: the kernel's ~0 minimum is not a minimum.
        let untimed = RecLaunchRun {
            timed: 0,
            dur_min: u64::MAX,
            ..r
        };
        let Ok(Record::LaunchRun(l)) = decode(bytes_of(&untimed), &clock) else {
            panic!("not a launch run");
        };
        assert_eq!(l.timed_min_ns, 0);
    }

    #[test]
    fn pages_stack_and_notice_structs_round_trip() {
        let clock = Clock::measure();
        let pages = RecPages {
            rec: REC_PAGES,
            order: 3,
            cpu: 5,
            pid: 90,
            tid: 91,
            ts: 4_000,
            dur: 900,
            count: 0,
            pages: 8,
        };
        let Ok(Record::Host(h)) = decode_unaligned(bytes_of(&pages), &clock) else {
            panic!("not a host record");
        };
        // A zero count is read as one allocation.
        assert_eq!(
            (h.kind, h.cpu, h.arg, h.count),
            (HostKind::PageAlloc, 5, 3, 1)
        );
        assert_eq!((h.bytes, h.dur_ns, h.pid, h.tid), (8 * 4096, 900, 90, 91));
        assert_eq!(h.ts_ns, clock.to_epoch(4_000));

        let mut s = RecStack::zeroed();
        s.rec = REC_STACK;
        s.kind = STACK_ON_CPU;
        s.pid = 40;
        s.tid = 42;
        s.ts = 3_000;
        s.user = [0x1000; STACK_USER_FRAMES];
        s.user_len = i32::MAX;
        s.kernel[0] = 0xffff_0001;
        s.kernel[1] = 0;
        s.kernel[2] = 0xffff_0003;
        s.kernel_len = 24;
        let Ok(Record::Stack(st)) = decode_unaligned(bytes_of(&s), &clock) else {
            panic!("not a stack record");
        };
        assert_eq!((st.kind, st.pid, st.tid), (StackKind::OnCpu, 40, 42));
        // A length past the room is cut to it; zero frames are skipped.
        assert_eq!(st.user.len(), STACK_USER_FRAMES);
        assert_eq!(st.kernel, vec![0xffff_0001, 0xffff_0003]);
        assert_eq!(st.user_error, 0);
        s.kind = 9;
        assert_eq!(decode(bytes_of(&s), &clock), Err(DecodeError::Unknown(9)));

        let notice = RecNotice {
            rec: REC_MAPEXEC,
            pid: 33,
            ts: 8_000,
        };
        assert_eq!(
            decode_unaligned(bytes_of(&notice), &clock),
            Ok(Record::MapExec {
                pid: 33,
                ts_ns: clock.to_epoch(8_000)
            })
        );
    }

    /// Every record kind, as bytes.
    fn every_record() -> Vec<Vec<u8>> {
        let mut stack = RecStack::zeroed();
        stack.rec = REC_STACK;
        stack.kind = STACK_OFF_CPU;
        let host = RecHost {
            rec: REC_HOST,
            kind: HK_WAKEUP,
            ..RecHost::zeroed()
        };
        let proc = RecProc {
            rec: REC_PROC,
            kind: HK_EXIT,
            ..RecProc::zeroed()
        };
        vec![
            bytes_of(&a_cuda()).to_vec(),
            bytes_of(&host).to_vec(),
            bytes_of(&proc).to_vec(),
            bytes_of(&RecNotice {
                rec: REC_MAPEXEC,
                ..RecNotice::zeroed()
            })
            .to_vec(),
            bytes_of(&stack).to_vec(),
            bytes_of(&RecPages {
                rec: REC_PAGES,
                ..RecPages::zeroed()
            })
            .to_vec(),
            bytes_of(&RecLaunchRun {
                rec: REC_LAUNCH_RUN,
                ..RecLaunchRun::zeroed()
            })
            .to_vec(),
        ]
    }

    #[test]
    fn every_truncated_record_is_short_never_a_panic() {
        let clock = Clock::measure();
        for full in every_record() {
            assert!(decode(&full, &clock).is_ok(), "{full:?}");
            let tag = u32::from_ne_bytes([full[0], full[1], full[2], full[3]]);
            for len in 0..full.len() {
                let want = DecodeError::Short {
                    tag: if len < 4 { 0 } else { tag },
                    len,
                };
                assert_eq!(decode(&full[..len], &clock), Err(want.clone()));
                assert_eq!(decode_unaligned(&full[..len], &clock), Err(want.clone()));
            }
        }
    }

    #[test]
    fn bytes_past_a_record_are_ignored() {
        let clock = Clock::measure();
        for full in every_record() {
            let mut longer = full.clone();
            longer.extend_from_slice(&[0xa5; 12]);
            assert_eq!(decode(&longer, &clock), decode(&full, &clock));
        }
    }

    #[test]
    fn host_kind_numbers_are_the_stores() {
        for (id, kind) in [
            (HK_SWITCH, HostKind::SchedSwitch),
            (HK_WAKEUP, HostKind::SchedWakeup),
            (HK_PAGE_ALLOC, HostKind::PageAlloc),
            (crate::records::HK_FORK, HostKind::Fork),
            (crate::records::HK_EXEC, HostKind::Exec),
            (HK_EXIT, HostKind::Exit),
        ] {
            assert_eq!(HostKind::from_id(i64::from(id)), Some(kind));
        }
        assert_eq!(
            crate::records::RET_THREAD_EXITED,
            ingero_store::catalog::unfinished::THREAD_EXITED
        );
    }
}
