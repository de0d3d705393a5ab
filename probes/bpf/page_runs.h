/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Page allocations, coalesced in the kernel. A process touching fresh memory
 * allocates hundreds of thousands of pages a second; one ring-buffer record
 * each would fill the buffer and push out the CUDA calls it exists to
 * explain. Each CPU keeps one open run instead: consecutive allocations of
 * one thread, at most PAGE_RUN_NS long, counted (allocations and 4 KiB
 * pages) and sent as one record when the run ends: another thread allocates
 * on the CPU, the thread leaves the CPU, or the run is PAGE_RUN_NS old. User
 * space reads the runs still open after the probes are detached, so every
 * allocation counted reaches the store.
 *
 * The clock is the costliest step of a join (about half of the program on
 * the build machine), so a run is stamped at its first allocation, then at
 * every PAGE_RUN_STAMP_EVERY-th one and at any allocation in a later kernel
 * tick than the last stamp. Counts and pages stay exact; a run's end (and so
 * its duration) is its latest stamp, early by at most
 * PAGE_RUN_STAMP_EVERY - 1 allocations made within one tick; the 1 ms limit
 * is checked at the stamps.
 */
#ifndef INGERO_PAGE_RUNS_H
#define INGERO_PAGE_RUNS_H

#include "common.h"

/* Longest span one run covers (1 ms): the time resolution of page rows. */
#define PAGE_RUN_NS 1000000ULL
/* A run's allocations are stamped with the clock one in this many (and at
 * each new kernel tick). */
#define PAGE_RUN_STAMP_EVERY 8

/* One CPU's open run; count == 0 when none (layout: probes/src/records/tables.rs). */
struct page_run {
	u32 pid;
	u32 tid;
	u64 start;  /* first allocation, CLOCK_MONOTONIC ns */
	u64 last;   /* latest allocation */
	u32 count;  /* allocations */
	u32 pages;  /* 4 KiB pages: sum of 1 << order */
	u32 order;  /* largest order seen */
	u32 unstamped; /* allocations since the latest stamp */
	u64 task;   /* the thread's task_struct address: the join test */
	u64 tick;   /* the kernel's tick count (jiffies) at the latest stamp */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct page_run);
} page_runs SEC(".maps");

/* Sends the run as one record and empties it. A full ring buffer loses the
 * record (counted once in LOSS_RINGBUF, like any other). */
static __always_inline void flush_page_run(struct page_run *run)
{
	if (!run->count)
		return;
	struct rec_pages *e = reserve(sizeof(*e));
	if (e) {
		e->rec = REC_PAGES;
		e->order = (u16)run->order;
		e->cpu = (u16)bpf_get_smp_processor_id();
		e->pid = run->pid;
		e->tid = run->tid;
		e->ts = run->start;
		e->dur = run->last - run->start;
		e->count = run->count;
		e->pages = run->pages;
		submit(e);
	}
	run->count = 0;
}

/* Starts this CPU's run with one allocation of 2^order pages (order at
 * most 20) by thread `task` (`tgid`/`tid`) at `now` (the open run, if any,
 * sent first). */
static __always_inline void start_page_run(struct page_run *run, u64 task, u32 tgid,
					   u32 tid, u64 now, u32 order)
{
	flush_page_run(run);
	run->task = task;
	run->pid = tgid;
	run->tid = tid;
	run->start = now;
	run->last = now;
	run->count = 1;
	run->pages = 1U << order;
	run->order = order;
	run->unstamped = 0;
	run->tick = bpf_jiffies64();
}

/*
 * One allocation of 2^order pages (order at most 20) by the current thread,
 * `task` (its task_struct address: the test reads nothing of the task).
 * Returns 1 when it joined the thread's open run on this CPU: that thread
 * was found traced when its run began, and a run never outlives the
 * thread's stay on the CPU (end_page_run_of), so neither the traced-process
 * lookup nor the pause flag is read, and the clock only at a stamp (see the
 * top of this file); in page-fault-heavy code nearly every allocation takes
 * this path. Returns 0 when there is no such run, or when a stamp finds the
 * run PAGE_RUN_NS old: the caller then checks the pause flag and whether
 * the thread is traced, and starts a new run (sending this one).
 */
static __always_inline int join_page_run(struct page_run *run, u64 task, u32 order)
{
	if (!run->count || run->task != task)
		return 0;
	u64 tick = bpf_jiffies64();
	if (run->unstamped + 1 >= PAGE_RUN_STAMP_EVERY || tick != run->tick) {
		u64 now = bpf_ktime_get_ns();
		if (now - run->start >= PAGE_RUN_NS)
			return 0;
		run->last = now;
		run->tick = tick;
		run->unstamped = 0;
	} else {
		run->unstamped += 1;
	}
	run->count += 1;
	run->pages += 1U << order;
	if (order > run->order)
		run->order = order;
	return 1;
}

/* Ends this CPU's run when its thread, `task`, leaves the CPU. Called at
 * every switch, traced or not, paused or not: a run's joins read neither
 * flag, so only its thread's departure (or its age) may end it. */
static __always_inline void end_page_run_of(u64 task)
{
	u32 zero = 0;
	struct page_run *run = bpf_map_lookup_elem(&page_runs, &zero);
	if (run && run->count && run->task == task)
		flush_page_run(run);
}

#endif
