/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Entry/return probe pairs on CUDA runtime and driver functions. The entry
 * program stamps the time and keeps the interesting arguments per thread and
 * function; the return program emits one rec_cuda with the duration.
 */
#ifndef INGERO_CUDA_H
#define INGERO_CUDA_H

#include "common.h"

struct call_key {
	u32 tid;
	u32 op;
};

struct call_val {
	u64 ts;
	u64 size;
	s64 kind;
	u64 stream;
	u32 pid;     /* thread group, so open calls can be reported at stop */
	u32 pad;
};

/* Calls in flight, per thread and function (a plain hash: cheaper than LRU;
 * keys are reused by the same thread, so only dead threads leave entries). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct call_key);
	__type(value, struct call_val);
} calls SEC(".maps");

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

/* Emits one rec_cuda for the call `v` of thread `tid`, ending at `now`. */
static __always_inline void emit_call(u32 op, u32 pid, u32 tid,
				      struct call_val *v, u64 now, s64 ret)
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
	e->dur = now - v->ts;
	e->size = v->size;
	e->kind = v->kind;
	e->stream = v->stream;
	e->ret = ret;
	submit(e);
}

static __always_inline int call_exit(struct ingero_regs *ctx, u32 op)
{
	/* A call returning after the stop stays in the table, where user space
	 * reads it as open at the stop, however long the detach takes. */
	if (is_paused())
		return 0;
	u64 id = bpf_get_current_pid_tgid();
	struct call_key k = { .tid = (u32)id, .op = op };
	struct call_val *v = bpf_map_lookup_elem(&calls, &k);
	if (!v)
		return 0;
	emit_call(op, (u32)(id >> 32), (u32)id, v, bpf_ktime_get_ns(),
		  (s64)(s32)ctx->ax);
	bpf_map_delete_elem(&calls, &k);
	return 0;
}

/* Keeps the entry of call `op` of the current thread until it returns. */
static __always_inline void call_enter(u64 id, u32 op, u64 size, s64 kind,
				       u64 stream)
{
	struct call_key k = { .tid = (u32)id, .op = op };
	struct call_val v = {
		.ts = bpf_ktime_get_ns(),
		.size = size,
		.kind = kind,
		.stream = stream,
		.pid = (u32)(id >> 32),
	};
	if (bpf_map_update_elem(&calls, &k, &v, BPF_ANY))
		count_loss(LOSS_CALL_MAP);
}

/*
 * One probe pair per function: OP_ID is the catalogue id, SIZE/KIND/STREAM are
 * expressions over ARG(n) (evaluated only for traced processes). These are
 * the fallback for kernels without multi-uprobe links (cuda_multi.bpf.c).
 */
#define CUDA_PROBE(name, OP_ID, SIZE, KIND, STREAM)                              \
	SEC("uprobe") int e_##name(struct ingero_regs *ctx)                   \
	{                                                                     \
		u64 id = bpf_get_current_pid_tgid();                          \
		if (!is_tracked((u32)(id >> 32)))                             \
			return 0;                                             \
		call_enter(id, (OP_ID), (SIZE), (KIND), (STREAM));             \
		return 0;                                                     \
	}                                                                     \
	SEC("uretprobe") int r_##name(struct ingero_regs *ctx)                \
	{                                                                     \
		return call_exit(ctx, (OP_ID));                                  \
	}

/* cudaMemcpyKind values */
#define K_NONE (-1)
#define K_HTOD 1
#define K_DTOH 2
#define K_DEFAULT 4

/*
 * Every probed function, once: name, catalogue id (store/src/catalog.rs),
 * then SIZE, KIND, STREAM. Runtime API (libcudart) first, then the driver
 * (libcuda). cudaLaunchKernel(func, dim3 grid, dim3 block, args, shmem,
 * stream): each dim3 takes two registers, so stream is stack word 8.
 * cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra).
 */
#define CUDA_FUNCTIONS(X) \
	X(cudaMalloc, 1, ARG(2), K_NONE, NONE) \
	X(cudaFree, 2, NONE, K_NONE, NONE) \
	X(cudaLaunchKernel, 3, NONE, K_NONE, ARG(8)) \
	X(cudaMemcpy, 4, ARG(3), (s64)ARG(4), NONE) \
	X(cudaStreamSynchronize, 5, NONE, K_NONE, ARG(1)) \
	X(cudaDeviceSynchronize, 6, NONE, K_NONE, NONE) \
	X(cudaMemcpyAsync, 7, ARG(3), (s64)ARG(4), ARG(5)) \
	X(cudaMallocHost, 8, ARG(2), K_NONE, NONE) \
	X(cudaHostAlloc, 9, ARG(2), K_NONE, NONE) \
	X(cudaEventSynchronize, 10, NONE, K_NONE, NONE) \
	X(cudaMallocManaged, 11, ARG(2), K_NONE, NONE) \
	X(cudaFreeHost, 12, NONE, K_NONE, NONE) \
	X(cudaMemsetAsync, 13, ARG(3), K_NONE, ARG(4)) \
	X(cudaMemset, 14, ARG(3), K_NONE, NONE) \
	X(cuLaunchKernel, 101, NONE, K_NONE, ARG(9)) \
	X(cuMemAlloc_v2, 102, ARG(2), K_NONE, NONE) \
	X(cuMemFree_v2, 103, NONE, K_NONE, NONE) \
	X(cuMemcpyHtoDAsync_v2, 104, ARG(3), K_HTOD, ARG(4)) \
	X(cuMemcpyDtoHAsync_v2, 105, ARG(3), K_DTOH, ARG(4)) \
	X(cuStreamSynchronize, 106, NONE, K_NONE, ARG(1)) \
	X(cuCtxSynchronize, 107, NONE, K_NONE, NONE) \
	X(cuMemcpy, 108, ARG(3), K_DEFAULT, NONE) \
	X(cuMemcpyAsync, 109, ARG(3), K_DEFAULT, ARG(4)) \
	X(cuMemAllocManaged, 110, ARG(2), K_NONE, NONE) \
	X(cuMemcpyHtoD_v2, 111, ARG(3), K_HTOD, NONE) \
	X(cuMemcpyDtoH_v2, 112, ARG(3), K_DTOH, NONE)

#ifndef INGERO_MULTI_OBJECT
CUDA_FUNCTIONS(CUDA_PROBE)

#define OP_ID_OF(name, OP_ID, SIZE, KIND, STREAM) OP_ID,
static const u32 cuda_op_ids[] = { CUDA_FUNCTIONS(OP_ID_OF) };
#define N_CUDA_OPS (sizeof(cuda_op_ids) / sizeof(cuda_op_ids[0]))

/*
 * Called from the exit tracepoint for every exiting thread of a traced
 * process: a call it was inside never returns, so report it with the time
 * up to the exit and RET_THREAD_EXITED, count it, and free its entry.
 */
static __always_inline void end_open_calls(u32 pid, u32 tid)
{
	u64 now = bpf_ktime_get_ns();
	for (u32 i = 0; i < N_CUDA_OPS; i++) {
		struct call_key k = { .tid = tid, .op = cuda_op_ids[i] };
		struct call_val *v = bpf_map_lookup_elem(&calls, &k);
		if (!v)
			continue;
		emit_call(k.op, pid, tid, v, now, RET_THREAD_EXITED);
		count_loss(LOSS_UNFINISHED);
		bpf_map_delete_elem(&calls, &k);
	}
}
#endif /* INGERO_MULTI_OBJECT */

#endif
