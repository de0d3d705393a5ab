/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Kernel events of traced processes: off-CPU intervals, wakeups, page
 * allocations, and the fork/exec/exit lifecycle that keeps `tracked` current.
 * BTF tracepoints (tp_btf) take the raw tracepoint arguments in ctx[].
 */
#ifndef INGERO_HOST_H
#define INGERO_HOST_H

#include "common.h"
#include "stacks.h"
#include "page_runs.h"

struct offcpu_val {
	u64 ts;     /* switch-out time */
	s64 state;  /* prev_state at switch-out: 0 = preempted, else blocked */
};

/* Threads of traced processes currently off-CPU (tid -> switch-out). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, struct offcpu_val);
} offcpu SEC(".maps");

/* Threads inside an executable mmap (tid -> 1), see on_mmap_enter. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u32);
} mmap_exec SEC(".maps");

static __always_inline void emit_host(u16 kind, u32 pid, u32 tid, u64 ts, u64 dur, s64 arg)
{
	struct rec_host *e = reserve(sizeof(*e));
	if (!e)
		return;
	e->rec = REC_HOST;
	e->kind = kind;
	e->cpu = (u16)bpf_get_smp_processor_id();
	e->pid = pid;
	e->tid = tid;
	e->ts = ts;
	e->dur = dur;
	e->arg = arg;
	submit(e);
}

static __always_inline void emit_proc(u16 kind, u32 pid, u32 tid, s64 arg)
{
	struct rec_proc *e = reserve(sizeof(*e));
	if (!e)
		return;
	e->rec = REC_PROC;
	e->kind = kind;
	e->cpu = (u16)bpf_get_smp_processor_id();
	e->pid = pid;
	e->tid = tid;
	e->ts = bpf_ktime_get_ns();
	e->arg = arg;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	submit(e);
}

/* sched_switch(preempt, prev, next, prev_state): prev is the current task.
 * Switch-out stamps the thread; switch-in emits the whole off-CPU interval. */
SEC("tp_btf/sched_switch")
int on_switch(u64 *ctx)
{
	struct task_struct *next = (struct task_struct *)ctx[2];
	u64 id = bpf_get_current_pid_tgid();
	u32 prev_tid = (u32)id;
	/* Read only where a traced thread is involved: this runs at every
	 * context switch on the host. */
	u64 now = 0;

	end_page_run_of(ctx[1]);
	if (prev_tid != 0 && is_tracked((u32)(id >> 32))) {
		now = bpf_ktime_get_ns();
		struct offcpu_val v = { .ts = now, .state = (s64)(u32)ctx[3] };
		bpf_map_update_elem(&offcpu, &prev_tid, &v, BPF_ANY);
		offcpu_stack(ctx, id, now);
	}

	u32 next_tid = (u32)next->pid;
	if (next_tid == 0)
		return 0;
	struct offcpu_val *out = bpf_map_lookup_elem(&offcpu, &next_tid);
	if (!out)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	emit_host(HK_SWITCH, (u32)next->tgid, next_tid, out->ts, now - out->ts, out->state);
	bpf_map_delete_elem(&offcpu, &next_tid);
	return 0;
}

/* sched_wakeup(p): arg = the waker's process id. */
SEC("tp_btf/sched_wakeup")
int on_wakeup(u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	u32 tgid = (u32)p->tgid;
	if (!is_tracked(tgid))
		return 0;
	u64 waker = bpf_get_current_pid_tgid() >> 32;
	emit_host(HK_WAKEUP, tgid, (u32)p->pid, bpf_ktime_get_ns(), 0, (s64)waker);
	return 0;
}

/* mm_page_alloc(page, order, gfp, migratetype), charged to the current task
 * and counted into this CPU's run (page_runs.h). This runs for every page
 * allocation on the host, so the common case, the next allocation of the
 * thread whose run is open, touches the run alone (and the clock). */
SEC("tp_btf/mm_page_alloc")
int on_page_alloc(u64 *ctx)
{
	if (ctx[0] == 0)
		return 0;
	u32 zero = 0;
	struct page_run *run = bpf_map_lookup_elem(&page_runs, &zero);
	if (!run)
		return 0;
	u64 task = bpf_get_current_task();
	u32 order = (u32)ctx[1] > 20 ? 20 : (u32)ctx[1];
	if (join_page_run(run, task, order))
		return 0;
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = (u32)(id >> 32);
	if (!is_tracked(tgid))
		return 0;
	start_page_run(run, task, tgid, (u32)id, bpf_ktime_get_ns(), order);
	return 0;
}

/* sched_process_fork(parent, child): a new process of a traced parent is
 * traced too. New threads (same tgid) need nothing. */
SEC("tp_btf/sched_process_fork")
int on_fork(u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	u32 child_pid = (u32)child->pid;
	if (child_pid != (u32)child->tgid)
		return 0;
	u32 ptgid = (u32)parent->tgid;
	if (!is_tracked(ptgid))
		return 0;
	if (!cfg_trace_all) {
		u32 one = 1;
		bpf_map_update_elem(&tracked, &child_pid, &one, BPF_ANY);
	}
	emit_proc(HK_FORK, ptgid, (u32)parent->pid, (s64)child_pid);
	return 0;
}

/* sched_process_exec(p, old_pid, bprm): runs after the new image is set up. */
SEC("tp_btf/sched_process_exec")
int on_exec(u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	u32 tgid = (u32)p->tgid;
	if (!is_tracked(tgid))
		return 0;
	emit_proc(HK_EXEC, tgid, (u32)p->pid, 0);
	return 0;
}

/* sched_process_exit(p, group_dead): every thread passes here and ends the
 * CUDA calls it was inside; the process is reported (and forgotten) when its
 * last thread goes. arg = exit status,
 * or 128 + signal for a process killed by a signal. */
SEC("tp_btf/sched_process_exit")
int on_exit(u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	u32 tid = (u32)p->pid;
	u32 tgid = (u32)p->tgid;
	bpf_map_delete_elem(&offcpu, &tid);
	end_page_run_of(ctx[0]);
	if (!is_tracked(tgid))
		return 0;
	end_open_calls(tgid, tid);
	if (!(u8)ctx[1])
		return 0;
	s64 code = (s64)p->exit_code;
	s64 status = (code & 0x7f) ? 128 + (code & 0x7f) : (code >> 8) & 0xff;
	emit_proc(HK_EXIT, tgid, tid, status);
	if (!cfg_trace_all)
		bpf_map_delete_elem(&tracked, &tgid);
	return 0;
}

/* Classic syscall tracepoint records (layout from events/syscalls/.../format). */
struct sys_enter_ctx {
	u64 common;
	s32 nr;
	u32 pad;
	u64 args[6];
};

struct sys_exit_ctx {
	u64 common;
	s32 nr;
	u32 pad;
	s64 ret;
};

#define PROT_EXEC 0x4

/* Fallback of the loader watch (loader_state in cuda_multi.bpf.c), for
 * kernels without multi-uprobe links: mmap(addr, len, prot, flags, fd, off)
 * with PROT_EXEC and a file: a library is being mapped. Mark the thread; the
 * exit side reports it once mapped. While any syscall tracepoint is
 * attached, every system call on the host takes the kernel's traced path. */
SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap_enter(struct sys_enter_ctx *ctx)
{
	if (!(ctx->args[2] & PROT_EXEC) || (s64)ctx->args[4] < 0)
		return 0;
	u64 id = bpf_get_current_pid_tgid();
	if (!is_tracked((u32)(id >> 32)))
		return 0;
	u32 tid = (u32)id, one = 1;
	bpf_map_update_elem(&mmap_exec, &tid, &one, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_exit(struct sys_exit_ctx *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	if (!bpf_map_lookup_elem(&mmap_exec, &tid))
		return 0;
	bpf_map_delete_elem(&mmap_exec, &tid);
	if (ctx->ret >= 0)
		notice_mapped_code((u32)(id >> 32));
	return 0;
}

#endif
