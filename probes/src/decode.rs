//! Parses ring-buffer records (layouts in `bpf/ingero_events.h`) into store
//! events and the lifecycle notices the control thread acts on.

use crate::clock::Clock;
use crate::page_runs::PageRun;
use crate::stacks::RawStack;
use ingero_store::{CudaCall, HostEvent, HostKind, StackKind};

const REC_CUDA: u32 = 1;
const REC_HOST: u32 = 2;
const REC_PROC: u32 = 3;
const REC_MAPEXEC: u32 = 4;
const REC_STACK: u32 = 5;
const REC_PAGES: u32 = 6;
const REC_LAUNCH_RUN: u32 = 7;

/// `rec_cuda.flags` bit of a nested call (`REC_CUDA_NESTED`).
pub const REC_CUDA_NESTED: u32 = 1;
/// `rec_cuda.flags` bit of a duration estimated, not measured
/// (`REC_CUDA_DUR_ESTIMATED`, sampled launch timing).
pub const REC_CUDA_DUR_ESTIMATED: u32 = 2;

const CUDA_LEN: usize = 96;
const HOST_LEN: usize = 40;
const PROC_LEN: usize = 48;
const NOTICE_LEN: usize = 16;
const PAGES_LEN: usize = 40;
const LAUNCH_RUN_LEN: usize = 112;
/// Frames in `rec_stack.user` and `rec_stack.kernel` (`STACK_*_FRAMES`).
const STACK_USER_FRAMES: usize = 127;
const STACK_KERNEL_FRAMES: usize = 48;
const STACK_USER_AT: usize = 32;
const STACK_KERNEL_AT: usize = STACK_USER_AT + 8 * STACK_USER_FRAMES;
const STACK_LEN: usize = STACK_KERNEL_AT + 8 * STACK_KERNEL_FRAMES;

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

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes([b[off], b[off + 1]])
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_ne_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_ne_bytes(a)
}

fn need(b: &[u8], tag: u32, len: usize) -> Result<(), DecodeError> {
    if b.len() < len {
        Err(DecodeError::Short { tag, len: b.len() })
    } else {
        Ok(())
    }
}

fn comm(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// A run of page allocations (`struct rec_pages`) as one host row, built
/// the way the runs read at the stop are ([`PageRun::to_event`]).
fn page_run(b: &[u8], clock: &Clock) -> HostEvent {
    let start = u64_at(b, 16);
    PageRun {
        pid: u32_at(b, 8),
        tid: u32_at(b, 12),
        start,
        last: start.saturating_add(u64_at(b, 24)),
        count: u32_at(b, 32).max(1),
        pages: u32_at(b, 36),
        order: u32::from(u16_at(b, 4)),
        unstamped: 0,
        task: 0,
        tick: 0,
    }
    .to_event(clock, i32::from(u16_at(b, 6)))
}

/// Decodes one record; `clock` turns kernel stamps into epoch ns.
pub fn decode(b: &[u8], clock: &Clock) -> Result<Record, DecodeError> {
    need(b, 0, 4)?;
    let tag = u32_at(b, 0);
    match tag {
        REC_CUDA => {
            need(b, tag, CUDA_LEN)?;
            let call = CudaCall {
                op_id: u16_at(b, 4),
                pid: u32_at(b, 8) as i32,
                tid: u32_at(b, 12) as i32,
                ts_ns: clock.to_epoch(u64_at(b, 16)),
                dur_ns: u64_at(b, 24) as i64,
                bytes: u64_at(b, 32) as i64,
                copy_kind: u64_at(b, 40) as i64,
                stream: u64_at(b, 48) as i64,
                ret: u64_at(b, 56) as i64,
                grid: [u32_at(b, 64), u32_at(b, 68), u32_at(b, 72)],
                block: [u32_at(b, 76), u32_at(b, 80), u32_at(b, 84)],
                shared_mem: u32_at(b, 88),
                nested: u32_at(b, 92) & REC_CUDA_NESTED != 0,
                dur_estimated: u32_at(b, 92) & REC_CUDA_DUR_ESTIMATED != 0,
            };
            if ingero_store::nccl::is_nccl_op(call.op_id) {
                let (call, nccl) = crate::nccl_record::split(&call);
                return Ok(Record::Nccl(call, nccl));
            }
            Ok(Record::Cuda(call))
        }
        REC_LAUNCH_RUN => {
            need(b, tag, LAUNCH_RUN_LEN)?;
            // The record carries the thread's run as the table holds it.
            let run = crate::open_calls::RunVal {
                first_ts: u64_at(b, 16),
                last_ts: u64_at(b, 24),
                last_end: u64_at(b, 72),
                stream: u64_at(b, 40),
                threads: u64_at(b, 48),
                dur_sum: u64_at(b, 80),
                dur_min: u64_at(b, 88),
                dur_max: u64_at(b, 96),
                n: u32_at(b, 56),
                small: u32_at(b, 60),
                op: u32::from(u16_at(b, 4)),
                timed: u32_at(b, 64),
                bound_sum: u64_at(b, 104),
                bounded: u32_at(b, 68),
                // A record's last member was bounded at the flush, or never.
                last_open: 0,
            };
            Ok(Record::LaunchRun(run.to_launch_run(
                u32_at(b, 8) as i32,
                u32_at(b, 12) as i32,
                u64_at(b, 32),
                clock,
            )))
        }
        REC_HOST | REC_PROC => {
            need(b, tag, if tag == REC_HOST { HOST_LEN } else { PROC_LEN })?;
            let kind_id = u16_at(b, 4);
            let kind =
                HostKind::from_id(kind_id as i64).ok_or(DecodeError::Unknown(kind_id as u32))?;
            let cpu = u16_at(b, 6) as i32;
            let pid = u32_at(b, 8) as i32;
            let tid = u32_at(b, 12) as i32;
            let ts_ns = clock.to_epoch(u64_at(b, 16));
            if tag == REC_HOST {
                let raw_arg = u64_at(b, 32) as i64;
                // The kernel side reports prev_state for switches (0 = still
                // runnable); the store wants 1 = preempted, 0 = blocked.
                let arg = if kind == HostKind::SchedSwitch {
                    (raw_arg == 0) as i64
                } else {
                    raw_arg
                };
                Ok(Record::Host(HostEvent {
                    ts_ns,
                    pid,
                    tid,
                    kind,
                    dur_ns: u64_at(b, 24) as i64,
                    arg,
                    cpu,
                    count: 1,
                    bytes: if kind == HostKind::PageAlloc {
                        4096i64 << arg.clamp(0, 20)
                    } else {
                        0
                    },
                }))
            } else {
                let ev = HostEvent {
                    ts_ns,
                    pid,
                    tid,
                    kind,
                    dur_ns: 0,
                    arg: u64_at(b, 24) as i64,
                    cpu,
                    count: 1,
                    bytes: 0,
                };
                Ok(Record::Proc(ev, comm(&b[32..48])))
            }
        }
        REC_PAGES => {
            need(b, tag, PAGES_LEN)?;
            Ok(Record::Host(page_run(b, clock)))
        }
        REC_STACK => {
            need(b, tag, STACK_LEN)?;
            let kind = match u16_at(b, 4) {
                1 => StackKind::OnCpu,
                2 => StackKind::OffCpu,
                k => return Err(DecodeError::Unknown(u32::from(k))),
            };
            let user_len = u32_at(b, 24) as i32;
            let kernel_len = u32_at(b, 28) as i32;
            let frames = |at: usize, len: i32, max: usize| -> Vec<u64> {
                let n = (len.max(0) as usize / 8).min(max);
                (0..n)
                    .map(|i| u64_at(b, at + 8 * i))
                    .filter(|a| *a != 0)
                    .collect()
            };
            Ok(Record::Stack(RawStack {
                kind,
                pid: u32_at(b, 8) as i32,
                tid: u32_at(b, 12) as i32,
                cpu: i32::from(u16_at(b, 6)),
                ts_ns: clock.to_epoch(u64_at(b, 16)),
                user: frames(STACK_USER_AT, user_len, STACK_USER_FRAMES),
                kernel: frames(STACK_KERNEL_AT, kernel_len, STACK_KERNEL_FRAMES),
                user_error: user_len.min(0),
                off_cpu_ns: 0,
                state: -1,
            }))
        }
        REC_MAPEXEC => {
            need(b, tag, NOTICE_LEN)?;
            Ok(Record::MapExec {
                pid: u32_at(b, 4) as i32,
                ts_ns: clock.to_epoch(u64_at(b, 8)),
            })
        }
        other => Err(DecodeError::Unknown(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
