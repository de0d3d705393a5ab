/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Maps, configuration and the process-tree filter shared by every program.
 */
#ifndef INGERO_COMMON_H
#define INGERO_COMMON_H

#include "ingero_bpf.h"
#include "ingero_events.h"

/* Set by the loader before load (read-only data, folded by the verifier). */
const volatile u32 cfg_trace_all = 0;  /* 1: every process except ingero */
const volatile u32 cfg_self_tgid = 0;  /* ingero's own process, never traced */

/* Records for user space; size set by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} events SEC(".maps");

/* Processes being traced (tgid -> 1). Seeded by user space, grown by fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u32);
} tracked SEC(".maps");

/* paused[0] != 0: record nothing (set at stop, before the slow detach). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} paused SEC(".maps");

/* Records dropped in the kernel, per CPU and per cause (LOSS_*). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOSS_SLOTS);
	__type(key, u32);
	__type(value, u64);
} losses SEC(".maps");

static __always_inline void count_loss(u32 slot)
{
	u64 *n = bpf_map_lookup_elem(&losses, &slot);
	if (n)
		*n += 1;
}

/* True once the capture has stopped: nothing more is recorded. */
static __always_inline int is_paused(void)
{
	u32 zero = 0;
	u32 *stop = bpf_map_lookup_elem(&paused, &zero);
	return stop && *stop;
}

/* True when events of process `tgid` should be recorded. */
static __always_inline int is_tracked(u32 tgid)
{
	if (is_paused())
		return 0;
	if (cfg_trace_all)
		return tgid != 0 && tgid != cfg_self_tgid;
	return bpf_map_lookup_elem(&tracked, &tgid) != 0;
}

/* Reserves a ring-buffer record, counting the loss when the buffer is full. */
static __always_inline void *reserve(u64 size)
{
	void *p = bpf_ringbuf_reserve(&events, size, 0);
	if (!p)
		count_loss(LOSS_RINGBUF);
	return p;
}

/* Submits without waking the reader: user space polls on a timer. */
static __always_inline void submit(void *p)
{
	bpf_ringbuf_submit(p, BPF_RB_NO_WAKEUP);
}

/* Tells user space that process `pid` may have mapped new code (a library):
 * it reads the process's memory map again. */
static __always_inline void notice_mapped_code(u32 pid)
{
	struct rec_notice *e = reserve(sizeof(*e));
	if (!e)
		return;
	e->rec = REC_MAPEXEC;
	e->pid = pid;
	e->ts = bpf_ktime_get_ns();
	submit(e);
}

#endif
