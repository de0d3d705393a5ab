/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Records the kernel programs put in the ring buffer, mirrored field for field
 * in probes/src/records/events.rs; the build fails until the two agree.
 */
#ifndef INGERO_EVENTS_H
#define INGERO_EVENTS_H

/* First u32 of every record. */
#define REC_CUDA 1   /* struct rec_cuda: one completed CUDA call */
#define REC_HOST 2   /* struct rec_host: switch, wakeup, page allocation */
#define REC_PROC 3   /* struct rec_proc: fork, exec, exit (carries comm) */
#define REC_MAPEXEC 4 /* struct rec_notice: a tracked process mapped code */
#define REC_STACK 5  /* struct rec_stack: a user + kernel stack sample */
#define REC_PAGES 6  /* struct rec_pages: a run of page allocations (page_runs.h) */
#define REC_LAUNCH_RUN 7 /* struct rec_launch_run: untimed launches of one thread (cuda.h) */
#define REC_CALL_FOLD 8 /* struct rec_call_fold: other calls of one thread counted in the kernel (call_folds.h) */

/* Host kinds, same numbers as the store's HostKind. */
#define HK_SWITCH 1
#define HK_WAKEUP 2
#define HK_PAGE_ALLOC 3
#define HK_FORK 4
#define HK_EXEC 5
#define HK_EXIT 6

/* Slots of the per-CPU loss counter array. */
#define LOSS_RINGBUF 0   /* ring buffer full: record dropped */
#define LOSS_CALL_MAP 1  /* entry table full: call not timed */
#define LOSS_UNFINISHED 2 /* thread exited inside a call: no return seen */
#define LOSS_SLOTS 4

struct rec_cuda {
	u32 rec;
	u16 op;
	u16 cpu;
	u32 pid;
	u32 tid;
	u64 ts;      /* entry, CLOCK_MONOTONIC ns */
	u64 dur;     /* return - entry */
	u64 size;    /* bytes argument, 0 when none */
	s64 kind;    /* cudaMemcpyKind, -1 when none */
	u64 stream;  /* stream handle, 0 when none */
	s64 ret;     /* return code, or RET_* below when the call never returned */
	u32 grid[3];    /* kernel launches: grid in blocks (x, y, z), else 0 */
	u32 block[3];   /* kernel launches: block in threads (x, y, z), else 0 */
	u32 shared_mem; /* kernel launches: dynamic shared memory, bytes per block */
	u32 flags;      /* REC_CUDA_* bits below */
};

/*
 * NCCL calls (op 201+) use the rec_cuda fields as follows: size = bytes per
 * rank (count x element size; comm init: a 64-bit key of the ncclUniqueId,
 * equal on every rank; split: the parent communicator); kind = element
 * count; stream = stream (0 for calls without one); grid[0] | grid[1] << 32
 * = communicator handle (init and split: the one made); grid[2] =
 * ncclDataType_t; block[0] = ncclRedOp_t (init: nranks; split: color);
 * block[1] = root or peer rank (init: rank; split: key); 0xffffffff where
 * the call has none.
 */

/* rec_cuda.flags: the call was entered while another probed CUDA call of the
 * same thread was in flight (the driver half of a runtime call). */
#define REC_CUDA_NESTED 1
/* rec_cuda.flags: dur was not measured. Under sampled launch timing
 * (cfg_launch_sample > 1) a driver launch that is not timed is recorded at
 * its entry, with dur set to the thread's recent mean of timed launches. */
#define REC_CUDA_DUR_ESTIMATED 2

/* rec_cuda.ret of a call whose thread exited before it returned (dur runs to
 * the exit). User space uses -2 for calls still open when capture stops. */
#define RET_THREAD_EXITED (-1)

struct rec_host {
	u32 rec;
	u16 kind;
	u16 cpu;
	u32 pid;
	u32 tid;
	u64 ts;
	u64 dur;
	s64 arg;
};

/* Consecutive page allocations of one thread on one CPU (page_runs.h). */
struct rec_pages {
	u32 rec;
	u16 order;   /* largest order in the run */
	u16 cpu;
	u32 pid;
	u32 tid;
	u64 ts;      /* first allocation */
	u64 dur;     /* last - first */
	u32 count;   /* allocations */
	u32 pages;   /* 4 KiB pages */
};
/* Consecutive outer driver launches of one thread counted in the kernel:
 * same function and stream, each entered less than LAUNCH_RUN_GAP_NS after
 * the previous one ended. Under sampled launch timing (cfg_launch_sample > 1)
 * they are untimed: each lasts the thread's estimate (est_ns). Under launch
 * rows (cfg_launch_rows > 1) they are timed launches whose rows were not
 * kept: `timed` of them, lasting dur_sum in all. */
struct rec_launch_run {
	u32 rec;
	u16 op;
	u16 cpu;
	u32 pid;
	u32 tid;
	u64 ts;      /* first launch's entry */
	u64 last_ts; /* last launch's entry */
	u64 est_ns;  /* the thread's mean timed launch duration at the flush */
	u64 stream;
	u64 threads; /* grid x block summed over the launches (saturating) */
	u32 count;   /* launches */
	u32 small;   /* of which with 1..65,536 threads */
	u32 timed;   /* of which timed (the rest last est_ns each) */
	u32 bounded; /* untimed ones proven shorter than 50 us (cuda.h bound_last) */
	u64 last_end; /* last launch's return (its entry when untimed) */
	u64 dur_sum;  /* summed durations of the timed ones */
	u64 dur_min;  /* shortest timed one (~0 when none) */
	u64 dur_max;  /* longest timed one */
	u64 bound_sum; /* summed bounds of the bounded untimed ones */
};

/* Calls of one function, nesting and stream of a thread counted in the
 * kernel instead of sent one by one (call_folds.h): every one succeeded
 * and lasted less than 50 us; their count, summed duration and bytes are
 * exact. */
struct rec_call_fold {
	u32 rec;
	u16 op;
	u16 cpu;
	u32 pid;
	u32 tid;
	u64 ts;       /* first call's entry */
	u64 last_ts;  /* last call's entry */
	u64 last_end; /* last call's return */
	u64 stream;
	u64 dur_sum;  /* summed durations */
	u64 bytes;    /* summed bytes arguments */
	u32 dur_min;  /* shortest */
	u32 dur_max;  /* longest */
	u32 count;    /* calls */
	u32 nested;   /* 1: made inside another probed call of the thread */
	u64 threads;  /* kernel launches: grid x block summed (saturating) */
	u32 small;    /* kernel launches of 1..65,536 threads */
	u32 pad;
};

struct rec_proc {
	u32 rec;
	u16 kind;
	u16 cpu;
	u32 pid;
	u32 tid;
	u64 ts;
	s64 arg;
	char comm[16];
};

/* rec_stack.kind */
#define STACK_ON_CPU 1  /* CPU-clock sample of a running thread */
#define STACK_OFF_CPU 2 /* a CUDA-calling thread leaving the CPU */

/* Frames kept per stack: the kernel's default perf_event_max_stack (127)
 * for user stacks, and enough kernel frames for a scheduler path. */
#define STACK_USER_FRAMES 127
#define STACK_KERNEL_FRAMES 48

struct rec_stack {
	u32 rec;
	u16 kind;        /* STACK_* */
	u16 cpu;
	u32 pid;
	u32 tid;
	u64 ts;          /* CLOCK_MONOTONIC ns (off-CPU: the switch-out time) */
	s32 user_len;    /* bytes of user[] filled, or a negative errno */
	s32 kernel_len;  /* bytes of kernel[] filled, or a negative errno */
	u64 user[STACK_USER_FRAMES];     /* leaf first */
	u64 kernel[STACK_KERNEL_FRAMES]; /* leaf first */
};

struct rec_notice {
	u32 rec;
	u32 pid;
	u64 ts;
};

#endif
