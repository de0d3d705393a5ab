/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Call folding: every CUDA call (copies, memsets, synchronisations, event
 * calls, allocations and frees, graph calls, queries, and the kernel
 * launches that launch runs do not take: runtime launches and the driver
 * launches nested in them, while both levels are probed) is counted in the
 * kernel instead of sent one by one,
 * unless it keeps its row. A call keeps its row (one rec_cuda, one raw row)
 * when it failed, when it lasted at least CALL_KEEP_NS, or when its
 * thread's row budget for its op still has room this second
 * (cfg_call_rows rows per second per thread and budget slot). The others
 * are summed per thread into fold slots, one per (function, nesting,
 * stream), with their exact count, summed duration and bytes, shortest and
 * longest, first entry and last return, and sent as rec_call_fold records
 * when the thread's folds are flushed: before a kept slow or failed call
 * (so the work before it comes first), after a gap of FOLD_GAP_NS in the
 * thread's calls, when the oldest fold is FOLD_AGE_NS old, when a new key
 * finds every slot taken, when the thread exits, or read at the stop.
 *
 * So a thread's records, and its rows in the database, grow with time and
 * not with its call rate: at most cfg_call_rows rows per second and budget
 * slot for fast successful calls, and about 1 / FOLD_AGE_NS flushes per
 * second of FOLD_SLOTS records at most, besides the gap flushes (a gap of
 * 1 ms between calls: at most 1,000 per second whatever the rate).
 * Included by cuda.h.
 */
#ifndef INGERO_CALL_FOLDS_H
#define INGERO_CALL_FOLDS_H

/* Fold keys one thread can hold at once before a new one flushes them all:
 * enough for a runtime call and the driver call it makes, for four
 * functions at once (copy, sync, event record, event query). */
#define FOLD_SLOTS 8
/* Row budgets per thread: an op uses slot op % BUDGET_SLOTS (ops sharing a
 * slot share its budget). */
#define BUDGET_SLOTS 16
/* A call this long always keeps its row: the launches' threshold
 * (LAUNCH_SLOW_NS), so every call a reader would call slow is a row. */
#define CALL_KEEP_NS 50000ULL
/* A gap after which the thread's folds are sent: the activity spans' burst
 * gap, so no fold spans an idle stretch. */
#define FOLD_GAP_NS 1000000ULL
/* The oldest fold of a thread is sent once it is this old, so counts reach
 * the database (and the live table) within a fraction of a second. */
#define FOLD_AGE_NS 200000000ULL
/* Length of a row budget's window. */
#define BUDGET_WINDOW_NS 1000000000ULL

/* Calls of one function, nesting and stream of a thread, counted in the
 * kernel and not yet sent (n == 0: the slot is free). */
struct call_fold {
	u64 first_ts; /* first member's entry */
	u64 last_ts;  /* last member's entry */
	u64 last_end; /* last member's return */
	u64 stream;
	u64 dur_sum;
	u64 bytes;
	u32 dur_min;  /* members are shorter than CALL_KEEP_NS: 32 bits hold them */
	u32 dur_max;
	u32 n;
	u16 op;
	u16 nested;   /* 1: made inside another probed call of the thread */
	u64 threads;  /* kernel launches: grid x block summed (saturating) */
	u32 small;    /* kernel launches of 1..SMALL_LAUNCH_THREADS threads */
	u32 pad;
};

/* Raw rows kept this window for the ops of one budget slot. */
struct row_budget {
	u64 since;    /* window start, 0 before the first */
	u32 kept;
	u32 pad;
};

/* Rows kept per second per thread and budget slot of fast successful
 * calls (set by the loader); 0 turns call folding off: every call sends
 * its record, and launch runs are sent at the thread's next call, as
 * before. */
const volatile u32 cfg_call_rows = 0;

/* True when calls are folded and launch rows are held to the budget. */
static __always_inline int folding_calls(void)
{
	return cfg_call_rows > 0;
}

/* Whether a fast successful call of `op` may keep its row now: its budget
 * slot has room this window (the window restarts a second after it began). */
static __always_inline int budget_allows(struct row_budget *budget, u32 op, u64 now)
{
	struct row_budget *b = &budget[op & (BUDGET_SLOTS - 1)];
	if (b->since == 0 || now - b->since >= BUDGET_WINDOW_NS) {
		b->since = now;
		b->kept = 0;
	}
	if (b->kept >= cfg_call_rows)
		return 0;
	b->kept += 1;
	return 1;
}

/* Sends one fold slot of thread `tid` and frees it. */
static __always_inline void send_fold(struct call_fold *f, u32 pid, u32 tid)
{
	if (f->n == 0)
		return;
	struct rec_call_fold *e = reserve(sizeof(*e));
	if (e) {
		e->rec = REC_CALL_FOLD;
		e->op = f->op;
		e->cpu = (u16)bpf_get_smp_processor_id();
		e->pid = pid;
		e->tid = tid;
		e->ts = f->first_ts;
		e->last_ts = f->last_ts;
		e->last_end = f->last_end;
		e->stream = f->stream;
		e->dur_sum = f->dur_sum;
		e->bytes = f->bytes;
		e->dur_min = f->dur_min;
		e->dur_max = f->dur_max;
		e->count = f->n;
		e->nested = f->nested;
		e->threads = f->threads;
		e->small = f->small;
		e->pad = 0;
		submit(e);
	}
	f->n = 0;
}

/* Adds a call (entry `ts`, lasting `dur`, `bytes`) to the fold slot `f`,
 * free or holding the same key. */
static __always_inline void fold_into(struct call_fold *f, u32 op, u32 nested, u64 stream,
				      u64 ts, u64 dur, u64 bytes, u64 threads, u32 small)
{
	if (f->n == 0) {
		f->first_ts = ts;
		f->op = (u16)op;
		f->nested = (u16)nested;
		f->stream = stream;
		f->dur_sum = 0;
		f->bytes = 0;
		f->dur_min = ~0U;
		f->dur_max = 0;
		f->threads = 0;
		f->small = 0;
	}
	f->threads = f->threads + threads < f->threads ? ~0ULL : f->threads + threads;
	f->small += small;
	u32 d = (u32)dur;
	f->n += 1;
	f->last_ts = ts;
	f->last_end = ts + dur;
	f->dur_sum += dur;
	f->bytes += bytes;
	if (d < f->dur_min)
		f->dur_min = d;
	if (d > f->dur_max)
		f->dur_max = d;
}

#endif
