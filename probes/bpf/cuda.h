/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Entry/return probe pairs on CUDA runtime and driver functions. The entry
 * program stamps the time and keeps the interesting arguments per thread and
 * call (sizes, copy kind, stream, launch geometry, whether the call is
 * nested in another) in the thread's table of open calls; the return
 * program emits one rec_cuda with the duration.
 */
#ifndef INGERO_CUDA_H
#define INGERO_CUDA_H

#include "common.h"
#include "launch_geometry.h"
#include "nccl_args.h"
#include "call_folds.h"

struct call_val {
	u64 ts;
	u64 size;
	s64 kind;
	u64 stream;
	u32 pid;     /* thread group, so open calls can be reported at stop */
	u32 flags;   /* REC_CUDA_* (ingero_events.h) */
	u32 grid[3];
	u32 block[3];
	u32 shared_mem;
	u32 op;      /* catalogue id of the function */
};

/* Probed calls one thread can be inside at once: a runtime call and the
 * driver call it makes are two; deeper nesting is counted as LOSS_CALL_MAP. */
#define CALL_SLOTS 4

/* Launches of one thread counted in the kernel and not yet sent: untimed
 * ones (sampled launch timing, counted at entry) or timed ones whose row is
 * not kept (launch rows, folded at their return with their exact duration).
 * Sent as one rec_launch_run when the thread makes any other probed call (a
 * kept launch among them), when the function, the stream or a gap of more
 * than LAUNCH_RUN_GAP_NS breaks the run, when the thread exits, or read from
 * the table at the stop. */
struct launch_run {
	u64 first_ts;
	u64 last_ts;  /* last launch's entry */
	u64 last_end; /* last launch's return (timed members), else its entry */
	u64 stream;
	u64 threads;
	u64 dur_sum;  /* summed durations of the timed members */
	u64 dur_min;
	u64 dur_max;
	u32 n;        /* launches, timed or not */
	u32 small;
	u32 op;
	u32 timed;    /* of which timed (folded at their return) */
	u64 bound_sum; /* summed bounds of the bounded untimed members */
	u32 bounded;  /* untimed members proven shorter than LAUNCH_SLOW_NS */
	u32 last_open; /* 1 while the last member is untimed and not yet bounded */
};

/* A gap after which an untimed launch starts a new run: the activity spans'
 * burst gap (store/src/activity.rs), so a run never spans an idle stretch. */
#define LAUNCH_RUN_GAP_NS 1000000ULL
/* A launch of at most this many threads is small (schema.rs SMALL_LAUNCH_THREADS). */
#define SMALL_LAUNCH_THREADS 65536ULL

/* The probed calls a thread is inside, innermost last. */
struct thread_calls {
	u32 depth;    /* slots in use, 0..CALL_SLOTS */
	u32 launches; /* outer driver launches seen under sampled timing or launch rows */
	u64 est_ns;   /* recent mean duration of its timed outer driver launches */
	u64 last_launch; /* entry of its last outer driver launch (sampled timing) */
	u32 learn;    /* 1 while its open outer launch is a dense-stretch sample */
	u32 pad;
	struct launch_run run;
	struct call_val slot[CALL_SLOTS];
	u64 fold_since; /* first entry among its pending folds, 0 when none */
	u64 fold_end;   /* latest return among them */
	struct call_fold fold[FOLD_SLOTS];
	struct row_budget budget[BUDGET_SLOTS];
};

/* Sampled launch timing (set by the loader): 0 or 1 = every call timed;
 * N > 1 = inside a thread's dense stretches of outer driver launches, time
 * one in N (the others are counted at entry into runs, each with an
 * estimated duration and a proven bound: rec_launch_run); every launch
 * outside them is timed (launch_enter_sampled). */
const volatile u32 cfg_launch_sample = 0;

/* Launch rows (set by the loader), with every launch timed
 * (cfg_launch_sample <= 1): 0 or 1 = one rec_cuda per launch; K > 1 = an
 * outer driver launch sends its own rec_cuda only when it is kept (the
 * thread's first, one in K, failed, or at least LAUNCH_SLOW_NS long);
 * the others are folded at their return, exact duration and all, into the
 * thread's run (rec_launch_run). */
const volatile u32 cfg_launch_rows = 0;
/* A launch this long always keeps its row: ten times a typical launch on
 * an idle queue, far below a launch blocked on a full queue or a lock.
 * Under sampled timing, the gap below which launches form a dense stretch. */
#define LAUNCH_SLOW_NS 50000ULL

/* True when timed outer driver launches are folded into runs. */
static __always_inline int folding_launches(void)
{
	return cfg_launch_sample <= 1 && cfg_launch_rows > 1;
}

/*
 * Calls in flight, per thread (tid -> its open calls). A thread's entry is
 * made at its first probed call and changed in place from then on, so a
 * call costs one lookup at entry and one at return, with no insertion or
 * deletion (each takes a bucket lock and a free-list operation); the entry
 * goes when the thread exits. Only the thread itself writes its entry. A
 * call entered while the depth is above zero is nested (REC_CUDA_NESTED):
 * the driver call a runtime call makes for the application, so that
 * analysis can count one logical call once (rule: store/src/nesting.rs).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, u32);
	__type(value, struct thread_calls);
} threads SEC(".maps");

/* One all-zero thread table, never written: what a thread's entry starts
 * from (a thread_calls is too large to build on the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct thread_calls);
} empty_thread SEC(".maps");

/*
 * Launches by level, per CPU: [0] runtime launches entered (cudaLaunchKernel
 * and its variants), [1] driver launches entered inside a runtime launch
 * (cuLaunchKernel and its variants, as the runtime makes them; not those an
 * NCCL call makes). When every
 * runtime launch reaches a driver launch, user space stops probing the
 * runtime side: the driver probe sees each launch once, with its geometry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, u32);
	__type(value, u64);
} launch_levels SEC(".maps");

/* A runtime-API kernel launch (cudaLaunchKernel and its variants). */
static __always_inline int is_runtime_launch(u32 op)
{
	return op == 3 || (op >= 15 && op <= 19);
}

static __always_inline void count_launch_level(u32 op, u32 parent_op)
{
	u32 slot;
	if (is_runtime_launch(op))
		slot = 0;
	else if (is_runtime_launch(parent_op) && (op == 101 || (op >= 113 && op <= 117)))
		slot = 1;
	else
		return;
	u64 *n = bpf_map_lookup_elem(&launch_levels, &slot);
	if (n)
		*n += 1;
}

/* Integer argument n (1-based) at function entry, System V x86-64 ABI. */
static __always_inline u64 reg_arg(struct ingero_regs *r, int n)
{
	switch (n) {
	case 1: return r->di;
	case 2: return r->si;
	case 3: return r->dx;
	case 4: return r->cx;
	case 5: return r->r8;
	case 6: return r->r9;
	default: break;
	}
	/* Arguments 7+ are on the stack above the return address. */
	u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)(r->sp + 8 * (u64)(n - 6)));
	return v;
}

#define ARG(n) reg_arg(ctx, (n))
#define NONE 0

/* Emits one rec_cuda for the call `v` of thread `tid`, lasting `dur`. */
static __always_inline void emit_call(u32 op, u32 pid, u32 tid,
				      struct call_val *v, u64 dur, s64 ret)
{
	struct rec_cuda *e = reserve(sizeof(*e));
	if (!e)
		return;
	e->rec = REC_CUDA;
	e->op = (u16)op;
	e->cpu = (u16)bpf_get_smp_processor_id();
	e->pid = pid;
	e->tid = tid;
	e->ts = v->ts;
	e->dur = dur;
	e->size = v->size;
	e->kind = v->kind;
	e->stream = v->stream;
	e->ret = ret;
	e->grid[0] = v->grid[0];
	e->grid[1] = v->grid[1];
	e->grid[2] = v->grid[2];
	e->block[0] = v->block[0];
	e->block[1] = v->block[1];
	e->block[2] = v->block[2];
	e->shared_mem = v->shared_mem;
	e->flags = v->flags;
	submit(e);
}

/*
 * Bounds the run's last member if it is untimed: a thread cannot make its
 * next probed call (entered at `now`) before the launch returned, so the
 * launch lasted at most now - its entry. Below LAUNCH_SLOW_NS the launch is
 * proven fast and the bound is summed; otherwise (or when `now` is 0: no
 * next call seen) it may have been slow, and stays counted as unbounded.
 */
static __always_inline void bound_last(struct launch_run *r, u64 now)
{
	if (!r->last_open)
		return;
	r->last_open = 0;
	if (now < r->last_ts)
		return;
	u64 b = now - r->last_ts;
	if (b < LAUNCH_SLOW_NS) {
		r->bounded += 1;
		r->bound_sum += b;
	}
}

/* Sends thread `tid`'s pending run of launches counted in the kernel, if
 * any, its last untimed member bounded by `now` (0: unknown). */
static __always_inline void flush_run(struct thread_calls *t, u32 pid, u32 tid, u64 now)
{
	if (t->run.n == 0)
		return;
	bound_last(&t->run, now);
	struct rec_launch_run *e = reserve(sizeof(*e));
	if (e) {
		e->rec = REC_LAUNCH_RUN;
		e->op = (u16)t->run.op;
		e->cpu = (u16)bpf_get_smp_processor_id();
		e->pid = pid;
		e->tid = tid;
		e->ts = t->run.first_ts;
		e->last_ts = t->run.last_ts;
		e->est_ns = t->est_ns;
		e->stream = t->run.stream;
		e->threads = t->run.threads;
		e->count = t->run.n;
		e->small = t->run.small;
		e->timed = t->run.timed;
		e->last_end = t->run.last_end;
		e->dur_sum = t->run.dur_sum;
		e->dur_min = t->run.dur_min;
		e->dur_max = t->run.dur_max;
		e->bounded = t->run.bounded;
		e->bound_sum = t->run.bound_sum;
		submit(e);
	}
	t->run.n = 0;
}

/* n x d for a 32-bit factor d, saturating: exact while n < 2^32 (no
 * division, which the BPF back end would turn into a 128-bit libcall). */
static __always_inline u64 mul_dim(u64 n, u32 d)
{
	if (d == 1 || n == 0)
		return n;
	if (n >= (1ULL << 32))
		return d == 0 ? 0 : ~0ULL;
	return n * d;
}

/* Threads a launch starts (grid x block), saturating; 0 when unknown. */
static __always_inline u64 launch_threads(struct call_val *v)
{
	u64 n = 1;
	for (int i = 0; i < 3; i++)
		n = mul_dim(n, v->block[i]);
	for (int i = 0; i < 3; i++)
		n = mul_dim(n, v->grid[i]);
	return n;
}

/* Adds a launch entered at `entry` to the thread's run: untimed (`end` ==
 * `entry`, `timed` 0) or timed, returning at `end`. A gap of more than
 * LAUNCH_RUN_GAP_NS since the previous launch's end starts a new run. */
static __always_inline void add_to_run(struct thread_calls *t, u32 pid, u32 tid, u32 op,
				       struct call_val *v, u64 entry, u64 end, int timed)
{
	struct launch_run *r = &t->run;
	if (r->n)
		bound_last(r, entry);
	if (r->n && (r->op != op || r->stream != v->stream ||
		     entry > r->last_end + LAUNCH_RUN_GAP_NS))
		flush_run(t, pid, tid, entry);
	if (r->n == 0) {
		r->first_ts = entry;
		r->op = op;
		r->stream = v->stream;
		r->threads = 0;
		r->small = 0;
		r->timed = 0;
		r->dur_sum = 0;
		r->dur_min = ~0ULL;
		r->dur_max = 0;
		r->bound_sum = 0;
		r->bounded = 0;
		r->last_open = 0;
	}
	u64 th = launch_threads(v);
	r->n += 1;
	r->last_ts = entry;
	r->last_end = end;
	r->threads = r->threads + th < r->threads ? ~0ULL : r->threads + th;
	if (th > 0 && th <= SMALL_LAUNCH_THREADS)
		r->small += 1;
	r->last_open = !timed;
	if (timed) {
		u64 dur = end - entry;
		r->timed += 1;
		r->dur_sum += dur;
		if (dur < r->dur_min)
			r->dur_min = dur;
		if (dur > r->dur_max)
			r->dur_max = dur;
	}
}

/* A driver-API kernel launch (cuLaunchKernel and its variants). */
static __always_inline int is_driver_launch(u32 op)
{
	return op == 101 || (op >= 113 && op <= 117);
}

/* Folds a timed outer launch into the thread's estimate: a moving mean
 * with weight 1/8 on the newest, so it follows a change within tens of
 * timed launches. */
static __always_inline void learn_launch_time(struct thread_calls *t, u64 dur)
{
	if (t->est_ns == 0) {
		t->est_ns = dur ? dur : 1;
		return;
	}
	u64 est = t->est_ns;
	if (dur >= est)
		est += (dur - est) / 8;
	else
		est -= (est - dur) / 8;
	t->est_ns = est ? est : 1;
}

/* Whether a timed outer driver launch sends its own row under launch rows
 * (cfg_launch_rows = K > 1): its thread's first, one in K after it, one
 * that failed, or one of at least LAUNCH_SLOW_NS. */
static __always_inline int launch_row_kept(struct thread_calls *t, u64 dur, s64 ret)
{
	u32 n = t->launches;
	t->launches = n + 1;
	return n % cfg_launch_rows == 0 || ret != 0 || dur >= LAUNCH_SLOW_NS;
}

/* Whether a call of `op` may be folded (call_folds.h): a CUDA call (an
 * outer driver launch under launch rows or sampled timing goes to the
 * thread's launch run before this is asked; NCCL calls are never sampled). */
static __always_inline int foldable(u32 op)
{
	return op < 200;
}

/* Sends every pending fold of thread `tid` and its launch run, its last
 * untimed launch bounded by `now` (0: unknown). */
static __always_inline void flush_thread(struct thread_calls *t, u32 pid, u32 tid, u64 now)
{
	flush_run(t, pid, tid, now);
	for (int k = 0; k < FOLD_SLOTS; k++)
		send_fold(&t->fold[k], pid, tid);
	t->fold_since = 0;
	t->fold_end = 0;
}

/* True when the thread's pending folds and launch run are due at `now`:
 * after a gap of FOLD_GAP_NS since the latest of them returned, or once the
 * oldest is FOLD_AGE_NS old. */
static __always_inline int thread_due(struct thread_calls *t, u64 now)
{
	u64 since = t->fold_since;
	u64 end = t->fold_end;
	if (t->run.n) {
		if (since == 0 || t->run.first_ts < since)
			since = t->run.first_ts;
		if (t->run.last_end > end)
			end = t->run.last_end;
	}
	if (since == 0)
		return 0;
	return now > end + FOLD_GAP_NS || now - since >= FOLD_AGE_NS;
}

/* The fold slot of thread `t` holding key (op, nested, stream), else a
 * free one, else -1 (every slot holds another key). */
static __always_inline int fold_slot(struct thread_calls *t, u32 op, u32 nested, u64 stream)
{
	int free_slot = -1;
	for (int k = 0; k < FOLD_SLOTS; k++) {
		struct call_fold *f = &t->fold[k];
		if (f->n && f->op == op && f->nested == nested && f->stream == stream)
			return k;
		if (!f->n && free_slot < 0)
			free_slot = k;
	}
	return free_slot;
}

/* Whether a call is nested, as its fold key says it. */
static __always_inline u32 nested_of(struct call_val *v)
{
	return (v->flags & REC_CUDA_NESTED) ? 1 : 0;
}

/* Folds the returned call `v` (lasting `dur`) into its thread's slot of
 * its key, or a free one; with none free (the caller sent the thread's
 * folds first, so this happens only if it did not), slot 0. */
static __always_inline void fold_call(struct thread_calls *t, u32 op, struct call_val *v, u64 dur)
{
	u32 nested = nested_of(v);
	int k = fold_slot(t, op, nested, v->stream);
	if (k < 0)
		k = 0;
	u64 th = launch_threads(v);
	u32 small = th > 0 && th <= SMALL_LAUNCH_THREADS;
	fold_into(&t->fold[k & (FOLD_SLOTS - 1)], op, nested, v->stream, v->ts, dur, v->size, th,
		  small);
	if (t->fold_since == 0 || v->ts < t->fold_since)
		t->fold_since = v->ts;
	if (v->ts + dur > t->fold_end)
		t->fold_end = v->ts + dur;
}

/* What the return of a call does with it. */
#define EXIT_EMIT 0       /* send its row */
#define EXIT_FOLD 1       /* fold it into the thread's fold slot (call_folds.h) */
#define EXIT_TO_RUN 2     /* fold it, timed, into the thread's launch run */

static __always_inline int call_exit(struct ingero_regs *ctx, u32 op)
{
	/* A call returning after the stop stays in the table, where user space
	 * reads it as open at the stop, however long the detach takes. */
	if (is_paused())
		return 0;
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	u32 pid = (u32)(id >> 32);
	struct thread_calls *t = bpf_map_lookup_elem(&threads, &tid);
	if (!t)
		return 0;
	u32 depth = t->depth;
	/* The innermost open call of this function. Calls opened inside it
	 * that are still open missed their return (the probe was not there
	 * yet): they go with it. */
	int found = -1;
	for (int k = CALL_SLOTS - 1; k >= 0; k--) {
		if ((u32)k < depth && t->slot[k].op == op) {
			found = k;
			break;
		}
	}
	if (found < 0)
		return 0;
	/* The verifier needs the index bounded; the compiler knows it is. */
	u32 i = (u32)found;
	asm volatile("" : "+r"(i));
	i &= CALL_SLOTS - 1;
	struct call_val *v = &t->slot[i];
	u64 now = bpf_ktime_get_ns();
	u64 dur = now - v->ts;
	s64 ret = (s64)(s32)ctx->ax;
	t->depth = i;
	int action = EXIT_EMIT;
	int flush = 0;
	if (i == 0 && is_driver_launch(op) &&
	    (folding_launches() || (folding_calls() && cfg_launch_sample > 1))) {
		/* An outer driver launch under launch rows or sampled timing. */
		int slow = ret != 0 || dur >= LAUNCH_SLOW_NS;
		int keep = folding_launches() ? launch_row_kept(t, dur, ret) : 1;
		if (keep && !slow && folding_calls())
			keep = budget_allows(t->budget, op, now);
		if (cfg_launch_sample > 1 && t->learn) {
			t->learn = 0;
			learn_launch_time(t, dur);
		}
		if (!keep)
			action = EXIT_TO_RUN;
		else if (!folding_calls())
			/* Launches folded before this one go first, in order. */
			flush_run(t, pid, tid, v->ts);
		else
			flush = slow;
	} else if (folding_calls() && foldable(op)) {
		int slow = ret != 0 || dur >= CALL_KEEP_NS;
		if (!slow && !budget_allows(t->budget, op, now)) {
			action = EXIT_FOLD;
			/* A new key with every slot taken: the thread's folds go. */
			flush = fold_slot(t, op, nested_of(v), v->stream) < 0;
		} else {
			/* What the thread did before a slow or failed call goes first. */
			flush = slow;
		}
	}
	if (flush)
		flush_thread(t, pid, tid, v->ts);
	if (action == EXIT_TO_RUN) {
		add_to_run(t, pid, tid, op, v, v->ts, now, 1);
		return 0;
	}
	if (action == EXIT_FOLD) {
		fold_call(t, op, v, dur);
		return 0;
	}
	if (nccl_makes_comm(op))
		nccl_read_new_comm(v->grid, &v->stream);
	emit_call(op, pid, tid, v, dur, ret);
	if (cfg_launch_sample > 1 && i == 0 && is_driver_launch(op) && t->learn) {
		t->learn = 0;
		learn_launch_time(t, dur);
	}
	return 0;
}

/* The table of thread `tid`, made at its first probed call. */
static __always_inline struct thread_calls *thread_calls_of(u32 tid)
{
	struct thread_calls *t = bpf_map_lookup_elem(&threads, &tid);
	if (t)
		return t;
	u32 zero = 0;
	struct thread_calls *fresh = bpf_map_lookup_elem(&empty_thread, &zero);
	if (!fresh) {
		count_loss(LOSS_CALL_MAP);
		return 0;
	}
	bpf_map_update_elem(&threads, &tid, fresh, BPF_NOEXIST);
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t)
		count_loss(LOSS_CALL_MAP);
	return t;
}

/*
 * Opens call `op` on thread table `t` with entry record `v`, stamping
 * its start and whether it is nested. The same function still open in this
 * thread means its return was missed (a call entered before the return
 * probe was attached): it is dropped with whatever was opened inside it.
 */
static __always_inline void open_call(struct thread_calls *t, u64 id, u32 op,
				      struct call_val *v)
{
	u32 depth = t->depth;
	u64 now = bpf_ktime_get_ns();
	if (folding_calls()) {
		/* The run's last untimed launch returned before this call; the
		 * thread's folds go after a gap or once old (call_folds.h). */
		bound_last(&t->run, now);
		if (thread_due(t, now))
			flush_thread(t, (u32)(id >> 32), (u32)id, now);
	} else if (!(depth == 0 && is_driver_launch(op) && folding_launches())) {
		/* Launches counted before this call go first, in order; an outer
		 * driver launch that may be folded decides at its return. */
		flush_run(t, (u32)(id >> 32), (u32)id, now);
	}
	for (int i = 0; i < CALL_SLOTS; i++) {
		if ((u32)i < depth && t->slot[i].op == op) {
			depth = (u32)i;
			break;
		}
	}
	v->ts = now;
	v->pid = (u32)(id >> 32);
	v->op = op;
	v->flags = depth > 0 ? REC_CUDA_NESTED : 0;
	count_launch_level(op, depth > 0 ? t->slot[(depth - 1) & (CALL_SLOTS - 1)].op : 0);
	if (depth >= CALL_SLOTS) {
		count_loss(LOSS_CALL_MAP);
		return;
	}
	/* The compiler knows depth < CALL_SLOTS here and would drop the mask
	 * the verifier needs to bound the index: hide the value from it. */
	u32 at = depth;
	asm volatile("" : "+r"(at));
	t->slot[at & (CALL_SLOTS - 1)] = *v;
	t->depth = depth + 1;
}

/* Opens call `op` of the current thread (see open_call). */
static __always_inline void call_enter(u64 id, u32 op, struct call_val *v)
{
	struct thread_calls *t = thread_calls_of((u32)id);
	if (t)
		open_call(t, id, op, v);
}

/*
 * Entry of a driver launch under sampled timing. Returns 0 when the launch
 * is timed (opened like any call; its return is wanted), 1 when it is not:
 * then it is counted into the thread's run of untimed launches (sent as one
 * rec_launch_run, each with the thread's estimate as its duration and,
 * once the thread's next probed call enters, a proven bound), and its
 * return is not wanted.
 *
 * Only launches inside a dense stretch go untimed: entered less than
 * LAUNCH_SLOW_NS after the thread's previous outer launch, which therefore
 * lasted less than that. Timed: every nested launch (inside a runtime
 * launch, before the runtime probe goes), every launch outside a dense
 * stretch (the first after a pause, each of a run of slow ones), and one
 * in cfg_launch_sample of the dense ones, the sample the estimate learns
 * from (so a slow launch never inflates the estimate of the fast ones).
 */
static __always_inline int launch_enter_sampled(u64 id, u32 op, struct call_val *v)
{
	u32 tid = (u32)id;
	struct thread_calls *t = thread_calls_of(tid);
	if (!t)
		return 1;
	if (t->depth > 0 || cfg_launch_sample <= 1) {
		open_call(t, id, op, v);
		return 0;
	}
	u64 now = bpf_ktime_get_ns();
	u64 prev = t->last_launch;
	t->last_launch = now;
	int dense = prev != 0 && now > prev && now - prev < LAUNCH_SLOW_NS;
	u32 n = t->launches;
	if (dense)
		t->launches = n + 1;
	if (!dense || t->est_ns == 0 || n % cfg_launch_sample == 0) {
		t->learn = dense;
		open_call(t, id, op, v);
		return 0;
	}
	if (folding_calls() && thread_due(t, now))
		flush_thread(t, (u32)(id >> 32), tid, now);
	add_to_run(t, (u32)(id >> 32), tid, op, v, now, now, 0);
	return 1;
}

/* The entry record of a call: its arguments, read per the CUDA_FUNCTIONS
 * row (SIZE, KIND, STREAM expressions over ARG(n), GEOM a G_* family:
 * a launch family of launch_geometry.h, or an NCCL one of nccl_args.h,
 * which gives the size and count itself). */
#define CALL_VAL(v, SIZE, KIND, STREAM, GEOM)                                  \
	(v).size = (SIZE);                                                     \
	(v).kind = (KIND);                                                     \
	(v).stream = (STREAM);                                                 \
	if ((GEOM) >= G_NCCL_REDUCE_ALL) {                                     \
		(v).size = nccl_bytes(ctx, (GEOM));                            \
		read_nccl(ctx, (GEOM), (v).grid, (v).block, &(v).kind,        \
			  &(v).stream);                                        \
	} else {                                                               \
		read_launch(ctx, (GEOM),                                       \
			    (struct launch_out){ (v).grid, (v).block,           \
						 &(v).shared_mem, &(v).stream });\
	}

/*
 * One probe pair per function: OP_ID is the catalogue id, SIZE/KIND/STREAM are
 * expressions over ARG(n) (evaluated only for traced processes), GEOM says
 * how a launch passes its geometry. These are the fallback for kernels
 * without multi-uprobe links (cuda_multi.bpf.c). Each program has its own
 * section: the loader copies a section's line info once per program in it,
 * which for one shared section of some 200 programs took tens of
 * milliseconds of every capture's start.
 */
#define CUDA_PROBE(name, OP_ID, SIZE, KIND, STREAM, GEOM)                      \
	SEC("uprobe/" #name) int e_##name(struct ingero_regs *ctx)            \
	{                                                                     \
		u64 id = bpf_get_current_pid_tgid();                          \
		if (!is_tracked((u32)(id >> 32)))                             \
			return 0;                                             \
		struct call_val v = {};                                       \
		CALL_VAL(v, SIZE, KIND, STREAM, GEOM);                        \
		call_enter(id, (OP_ID), &v);                                  \
		return 0;                                                     \
	}                                                                     \
	SEC("uretprobe/" #name) int r_##name(struct ingero_regs *ctx)         \
	{                                                                     \
		return call_exit(ctx, (OP_ID));                                  \
	}

/* cudaMemcpyKind values */
#define K_NONE (-1)
#define K_HTOD 1
#define K_DTOH 2
#define K_DTOD 3
#define K_DEFAULT 4

/*
 * Every probed function, once: name, catalogue id (store/src/catalog.rs;
 * probes/tests/catalog.rs checks the two agree), then SIZE, KIND, STREAM
 * and GEOM. Runtime API (libcudart) first, then the driver (libcuda), then
 * NCCL (libnccl). Launches take their stream from read_launch
 * (launch_geometry.h) and NCCL calls everything from read_nccl
 * (nccl_args.h), so their STREAM is NONE here. Peer copies are device to
 * device.
 */
#define CUDA_FUNCTIONS(X) \
	X(cudaMalloc, 1, ARG(2), K_NONE, NONE, G_NONE) \
	X(cudaFree, 2, NONE, K_NONE, NONE, G_NONE) \
	X(cudaLaunchKernel, 3, NONE, K_NONE, NONE, G_RT_LAUNCH) \
	X(cudaMemcpy, 4, ARG(3), (s64)ARG(4), NONE, G_NONE) \
	X(cudaStreamSynchronize, 5, NONE, K_NONE, ARG(1), G_NONE) \
	X(cudaDeviceSynchronize, 6, NONE, K_NONE, NONE, G_NONE) \
	X(cudaMemcpyAsync, 7, ARG(3), (s64)ARG(4), ARG(5), G_NONE) \
	X(cudaMallocHost, 8, ARG(2), K_NONE, NONE, G_NONE) \
	X(cudaHostAlloc, 9, ARG(2), K_NONE, NONE, G_NONE) \
	X(cudaEventSynchronize, 10, NONE, K_NONE, NONE, G_NONE) \
	X(cudaMallocManaged, 11, ARG(2), K_NONE, NONE, G_NONE) \
	X(cudaFreeHost, 12, NONE, K_NONE, NONE, G_NONE) \
	X(cudaMemsetAsync, 13, ARG(3), K_NONE, ARG(4), G_NONE) \
	X(cudaMemset, 14, ARG(3), K_NONE, NONE, G_NONE) \
	X(cudaLaunchKernel_ptsz, 15, NONE, K_NONE, NONE, G_RT_LAUNCH) \
	X(cudaLaunchKernelExC, 16, NONE, K_NONE, NONE, G_RT_CONFIG) \
	X(cudaLaunchKernelExC_ptsz, 17, NONE, K_NONE, NONE, G_RT_CONFIG) \
	X(cudaLaunchCooperativeKernel, 18, NONE, K_NONE, NONE, G_RT_LAUNCH) \
	X(cudaLaunchCooperativeKernel_ptsz, 19, NONE, K_NONE, NONE, G_RT_LAUNCH) \
	X(cudaGraphLaunch, 20, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaGraphLaunch_ptsz, 21, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaGraphUpload, 22, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaGraphUpload_ptsz, 23, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaGraphInstantiate, 24, NONE, K_NONE, NONE, G_NONE) \
	X(cudaGraphInstantiateWithFlags, 25, NONE, K_NONE, NONE, G_NONE) \
	X(cudaGraphInstantiateWithParams, 26, NONE, K_NONE, NONE, G_NONE) \
	X(cudaGraphInstantiateWithParams_ptsz, 27, NONE, K_NONE, NONE, G_NONE) \
	X(cudaMallocAsync, 28, ARG(2), K_NONE, ARG(3), G_NONE) \
	X(cudaMallocAsync_ptsz, 29, ARG(2), K_NONE, ARG(3), G_NONE) \
	X(cudaMallocFromPoolAsync, 30, ARG(2), K_NONE, ARG(4), G_NONE) \
	X(cudaMallocFromPoolAsync_ptsz, 31, ARG(2), K_NONE, ARG(4), G_NONE) \
	X(cudaFreeAsync, 32, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaFreeAsync_ptsz, 33, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaEventRecord, 34, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaEventRecord_ptsz, 35, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaEventRecordWithFlags, 36, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaEventRecordWithFlags_ptsz, 37, NONE, K_NONE, ARG(2), G_NONE) \
	X(cudaEventQuery, 38, NONE, K_NONE, NONE, G_NONE) \
	X(cudaStreamQuery, 39, NONE, K_NONE, ARG(1), G_NONE) \
	X(cudaStreamQuery_ptsz, 40, NONE, K_NONE, ARG(1), G_NONE) \
	X(cudaStreamWaitEvent, 41, NONE, K_NONE, ARG(1), G_NONE) \
	X(cudaStreamWaitEvent_ptsz, 42, NONE, K_NONE, ARG(1), G_NONE) \
	X(cudaStreamSynchronize_ptsz, 43, NONE, K_NONE, ARG(1), G_NONE) \
	X(cudaMemcpy_ptds, 44, ARG(3), (s64)ARG(4), NONE, G_NONE) \
	X(cudaMemcpyAsync_ptsz, 45, ARG(3), (s64)ARG(4), ARG(5), G_NONE) \
	X(cudaMemcpyPeer, 46, ARG(5), K_DTOD, NONE, G_NONE) \
	X(cudaMemcpyPeerAsync, 47, ARG(5), K_DTOD, ARG(6), G_NONE) \
	X(cudaMemset_ptds, 48, ARG(3), K_NONE, NONE, G_NONE) \
	X(cudaMemsetAsync_ptsz, 49, ARG(3), K_NONE, ARG(4), G_NONE) \
	X(cuLaunchKernel, 101, NONE, K_NONE, NONE, G_DRV_LAUNCH) \
	X(cuMemAlloc_v2, 102, ARG(2), K_NONE, NONE, G_NONE) \
	X(cuMemFree_v2, 103, NONE, K_NONE, NONE, G_NONE) \
	X(cuMemcpyHtoDAsync_v2, 104, ARG(3), K_HTOD, ARG(4), G_NONE) \
	X(cuMemcpyDtoHAsync_v2, 105, ARG(3), K_DTOH, ARG(4), G_NONE) \
	X(cuStreamSynchronize, 106, NONE, K_NONE, ARG(1), G_NONE) \
	X(cuCtxSynchronize, 107, NONE, K_NONE, NONE, G_NONE) \
	X(cuMemcpy, 108, ARG(3), K_DEFAULT, NONE, G_NONE) \
	X(cuMemcpyAsync, 109, ARG(3), K_DEFAULT, ARG(4), G_NONE) \
	X(cuMemAllocManaged, 110, ARG(2), K_NONE, NONE, G_NONE) \
	X(cuMemcpyHtoD_v2, 111, ARG(3), K_HTOD, NONE, G_NONE) \
	X(cuMemcpyDtoH_v2, 112, ARG(3), K_DTOH, NONE, G_NONE) \
	X(cuLaunchKernel_ptsz, 113, NONE, K_NONE, NONE, G_DRV_LAUNCH) \
	X(cuLaunchKernelEx, 114, NONE, K_NONE, NONE, G_DRV_CONFIG) \
	X(cuLaunchKernelEx_ptsz, 115, NONE, K_NONE, NONE, G_DRV_CONFIG) \
	X(cuLaunchCooperativeKernel, 116, NONE, K_NONE, NONE, G_DRV_LAUNCH) \
	X(cuLaunchCooperativeKernel_ptsz, 117, NONE, K_NONE, NONE, G_DRV_LAUNCH) \
	X(cuGraphLaunch, 118, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuGraphLaunch_ptsz, 119, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuGraphUpload, 120, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuGraphUpload_ptsz, 121, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuGraphInstantiateWithFlags, 122, NONE, K_NONE, NONE, G_NONE) \
	X(cuGraphInstantiateWithParams, 123, NONE, K_NONE, NONE, G_NONE) \
	X(cuGraphInstantiateWithParams_ptsz, 124, NONE, K_NONE, NONE, G_NONE) \
	X(cuMemAllocAsync, 125, ARG(2), K_NONE, ARG(3), G_NONE) \
	X(cuMemAllocAsync_ptsz, 126, ARG(2), K_NONE, ARG(3), G_NONE) \
	X(cuMemAllocFromPoolAsync, 127, ARG(2), K_NONE, ARG(4), G_NONE) \
	X(cuMemAllocFromPoolAsync_ptsz, 128, ARG(2), K_NONE, ARG(4), G_NONE) \
	X(cuMemFreeAsync, 129, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuMemFreeAsync_ptsz, 130, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuEventRecord, 131, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuEventRecord_ptsz, 132, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuEventRecordWithFlags, 133, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuEventRecordWithFlags_ptsz, 134, NONE, K_NONE, ARG(2), G_NONE) \
	X(cuEventSynchronize, 135, NONE, K_NONE, NONE, G_NONE) \
	X(cuEventQuery, 136, NONE, K_NONE, NONE, G_NONE) \
	X(cuStreamQuery, 137, NONE, K_NONE, ARG(1), G_NONE) \
	X(cuStreamQuery_ptsz, 138, NONE, K_NONE, ARG(1), G_NONE) \
	X(cuStreamWaitEvent, 139, NONE, K_NONE, ARG(1), G_NONE) \
	X(cuStreamWaitEvent_ptsz, 140, NONE, K_NONE, ARG(1), G_NONE) \
	X(cuStreamSynchronize_ptsz, 141, NONE, K_NONE, ARG(1), G_NONE) \
	X(cuCtxSynchronize_v2, 142, NONE, K_NONE, NONE, G_NONE) \
	X(cuMemcpy_ptds, 143, ARG(3), K_DEFAULT, NONE, G_NONE) \
	X(cuMemcpyAsync_ptsz, 144, ARG(3), K_DEFAULT, ARG(4), G_NONE) \
	X(cuMemcpyHtoD_v2_ptds, 145, ARG(3), K_HTOD, NONE, G_NONE) \
	X(cuMemcpyDtoH_v2_ptds, 146, ARG(3), K_DTOH, NONE, G_NONE) \
	X(cuMemcpyHtoDAsync_v2_ptsz, 147, ARG(3), K_HTOD, ARG(4), G_NONE) \
	X(cuMemcpyDtoHAsync_v2_ptsz, 148, ARG(3), K_DTOH, ARG(4), G_NONE) \
	X(cuMemcpyDtoD_v2, 149, ARG(3), K_DTOD, NONE, G_NONE) \
	X(cuMemcpyDtoD_v2_ptds, 150, ARG(3), K_DTOD, NONE, G_NONE) \
	X(cuMemcpyDtoDAsync_v2, 151, ARG(3), K_DTOD, ARG(4), G_NONE) \
	X(cuMemcpyDtoDAsync_v2_ptsz, 152, ARG(3), K_DTOD, ARG(4), G_NONE) \
	X(cuMemcpyPeer, 153, ARG(5), K_DTOD, NONE, G_NONE) \
	X(cuMemcpyPeer_ptds, 154, ARG(5), K_DTOD, NONE, G_NONE) \
	X(cuMemcpyPeerAsync, 155, ARG(5), K_DTOD, ARG(6), G_NONE) \
	X(cuMemcpyPeerAsync_ptsz, 156, ARG(5), K_DTOD, ARG(6), G_NONE) \
	X(ncclAllReduce, 201, NONE, K_NONE, NONE, G_NCCL_REDUCE_ALL) \
	X(ncclBroadcast, 202, NONE, K_NONE, NONE, G_NCCL_BROADCAST) \
	X(ncclReduce, 203, NONE, K_NONE, NONE, G_NCCL_REDUCE) \
	X(ncclAllGather, 204, NONE, K_NONE, NONE, G_NCCL_ALL_GATHER) \
	X(ncclReduceScatter, 205, NONE, K_NONE, NONE, G_NCCL_REDUCE_ALL) \
	X(ncclSend, 206, NONE, K_NONE, NONE, G_NCCL_PEER) \
	X(ncclRecv, 207, NONE, K_NONE, NONE, G_NCCL_PEER) \
	X(ncclGroupStart, 208, NONE, K_NONE, NONE, G_NONE) \
	X(ncclGroupEnd, 209, NONE, K_NONE, NONE, G_NONE) \
	X(ncclCommInitRank, 210, NONE, K_NONE, NONE, G_NCCL_INIT) \
	X(ncclCommInitRankConfig, 211, NONE, K_NONE, NONE, G_NCCL_INIT) \
	X(ncclCommInitRankScalable, 212, NONE, K_NONE, NONE, G_NCCL_INIT_SCALABLE) \
	X(ncclCommInitAll, 213, NONE, K_NONE, NONE, G_NCCL_INIT_ALL) \
	X(ncclCommSplit, 214, NONE, K_NONE, NONE, G_NCCL_SPLIT) \
	X(ncclCommFinalize, 215, NONE, K_NONE, NONE, G_NCCL_COMM) \
	X(ncclCommDestroy, 216, NONE, K_NONE, NONE, G_NCCL_COMM) \
	X(ncclCommAbort, 217, NONE, K_NONE, NONE, G_NCCL_COMM) \
	X(ncclBcast, 218, NONE, K_NONE, NONE, G_NCCL_PEER)

#ifndef INGERO_MULTI_OBJECT
CUDA_FUNCTIONS(CUDA_PROBE)

/*
 * Called from the exit tracepoint for every exiting thread of a traced
 * process: a call it was inside never returns, so report it with the time
 * up to the exit and RET_THREAD_EXITED, count it, and free the thread's
 * entry.
 */
static __always_inline void end_open_calls(u32 pid, u32 tid)
{
	struct thread_calls *t = bpf_map_lookup_elem(&threads, &tid);
	if (!t)
		return;
	u64 now = bpf_ktime_get_ns();
	flush_thread(t, pid, tid, now);
	for (int i = 0; i < CALL_SLOTS; i++) {
		if ((u32)i >= t->depth)
			break;
		emit_call(t->slot[i].op, pid, tid, &t->slot[i], now - t->slot[i].ts,
			  RET_THREAD_EXITED);
		count_loss(LOSS_UNFINISHED);
	}
	bpf_map_delete_elem(&threads, &tid);
}
#endif /* INGERO_MULTI_OBJECT */

#endif
