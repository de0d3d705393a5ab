/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Stack samples of traced processes: on-CPU samples from a software CPU-clock
 * perf event (one per CPU, at the rate user space chose), and the stack of a
 * CUDA-calling thread at the moment it leaves the CPU (called from
 * on_switch in host.h). Each record carries the user stack (frame pointers,
 * as the kernel walks them) and the kernel stack; a stack that cannot be
 * walked is recorded empty with its error, never dropped.
 */
#ifndef INGERO_STACKS_H
#define INGERO_STACKS_H

#include "common.h"
#include "cuda.h"

/* Set by the loader: 1 = take off-CPU stacks of CUDA-calling threads. */
const volatile u32 cfg_offcpu_stacks = 0;

static __always_inline void emit_stack(void *ctx, u16 kind, u64 id, u64 ts)
{
	struct rec_stack *e = reserve(sizeof(*e));
	if (!e)
		return;
	e->rec = REC_STACK;
	e->kind = kind;
	e->cpu = (u16)bpf_get_smp_processor_id();
	e->pid = (u32)(id >> 32);
	e->tid = (u32)id;
	e->ts = ts;
	e->user_len = (s32)bpf_get_stack(ctx, e->user, sizeof(e->user), BPF_F_USER_STACK);
	e->kernel_len = (s32)bpf_get_stack(ctx, e->kernel, sizeof(e->kernel), 0);
	submit(e);
}

/* Software CPU-clock sample on this CPU: record it when the interrupted
 * task belongs to the traced tree (idle and other processes cost one map
 * lookup). */
SEC("perf_event")
int on_cpu_sample(void *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	if ((u32)id == 0 || !is_tracked((u32)(id >> 32)))
		return 0;
	emit_stack(ctx, STACK_ON_CPU, id, bpf_ktime_get_ns());
	return 0;
}

/* From on_switch: the current (outgoing) thread `id` leaves the CPU at `ts`.
 * Only threads that made a probed CUDA call (they have an entry in `threads`)
 * are walked; user space joins the record with the off-CPU interval of the
 * same thread that starts at the same `ts`. */
static __always_inline void offcpu_stack(void *ctx, u64 id, u64 ts)
{
	if (!cfg_offcpu_stacks)
		return;
	u32 tid = (u32)id;
	if (!bpf_map_lookup_elem(&threads, &tid))
		return;
	emit_stack(ctx, STACK_OFF_CPU, id, ts);
}

#endif
