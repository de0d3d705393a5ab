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

static __always_inline int call_exit(struct ingero_regs *ctx, u32 op)
{
	u64 id = bpf_get_current_pid_tgid();
	struct call_key k = { .tid = (u32)id, .op = op };
	struct call_val *v = bpf_map_lookup_elem(&calls, &k);
	if (!v)
		return 0;
	u64 now = bpf_ktime_get_ns();
	struct rec_cuda *e = reserve(sizeof(*e));
	if (e) {
		e->rec = REC_CUDA;
		e->op = (u16)op;
		e->cpu = (u16)bpf_get_smp_processor_id();
		e->pid = (u32)(id >> 32);
		e->tid = (u32)id;
		e->ts = v->ts;
		e->dur = now - v->ts;
		e->size = v->size;
		e->kind = v->kind;
		e->stream = v->stream;
		e->ret = (s64)(s32)ctx->ax;
		submit(e);
	}
	bpf_map_delete_elem(&calls, &k);
	return 0;
}

/*
 * One probe pair per function: OP_ID is the catalogue id, SIZE/KIND/STREAM are
 * expressions over ARG(n) (evaluated only for traced processes).
 */
#define CUDA_PROBE(name, OP_ID, SIZE, KIND, STREAM)                              \
	SEC("uprobe") int e_##name(struct ingero_regs *ctx)                   \
	{                                                                     \
		u64 id = bpf_get_current_pid_tgid();                          \
		if (!is_tracked((u32)(id >> 32)))                             \
			return 0;                                             \
		struct call_key k = { .tid = (u32)id, .op = (OP_ID) };           \
		struct call_val v = {                                         \
			.ts = bpf_ktime_get_ns(),                             \
			.size = (SIZE),                                       \
			.kind = (KIND),                                       \
			.stream = (STREAM),                                   \
		};                                                            \
		if (bpf_map_update_elem(&calls, &k, &v, BPF_ANY))             \
			count_loss(LOSS_CALL_MAP);                            \
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

/* Runtime API (libcudart). Ids match store/src/catalog.rs. */
CUDA_PROBE(cudaMalloc, 1, ARG(2), K_NONE, NONE)
CUDA_PROBE(cudaFree, 2, NONE, K_NONE, NONE)
/* cudaLaunchKernel(func, dim3 grid, dim3 block, args, shmem, stream):
 * each dim3 takes two registers, so shmem and stream are stack words 7, 8. */
CUDA_PROBE(cudaLaunchKernel, 3, NONE, K_NONE, ARG(8))
CUDA_PROBE(cudaMemcpy, 4, ARG(3), (s64)ARG(4), NONE)
CUDA_PROBE(cudaStreamSynchronize, 5, NONE, K_NONE, ARG(1))
CUDA_PROBE(cudaDeviceSynchronize, 6, NONE, K_NONE, NONE)
CUDA_PROBE(cudaMemcpyAsync, 7, ARG(3), (s64)ARG(4), ARG(5))
CUDA_PROBE(cudaMallocHost, 8, ARG(2), K_NONE, NONE)
CUDA_PROBE(cudaHostAlloc, 9, ARG(2), K_NONE, NONE)
CUDA_PROBE(cudaEventSynchronize, 10, NONE, K_NONE, NONE)
CUDA_PROBE(cudaMallocManaged, 11, ARG(2), K_NONE, NONE)
CUDA_PROBE(cudaFreeHost, 12, NONE, K_NONE, NONE)
CUDA_PROBE(cudaMemsetAsync, 13, ARG(3), K_NONE, ARG(4))
CUDA_PROBE(cudaMemset, 14, ARG(3), K_NONE, NONE)

/* Driver API (libcuda). */
/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra) */
CUDA_PROBE(cuLaunchKernel, 101, NONE, K_NONE, ARG(9))
CUDA_PROBE(cuMemAlloc_v2, 102, ARG(2), K_NONE, NONE)
CUDA_PROBE(cuMemFree_v2, 103, NONE, K_NONE, NONE)
CUDA_PROBE(cuMemcpyHtoDAsync_v2, 104, ARG(3), K_HTOD, ARG(4))
CUDA_PROBE(cuMemcpyDtoHAsync_v2, 105, ARG(3), K_DTOH, ARG(4))
CUDA_PROBE(cuStreamSynchronize, 106, NONE, K_NONE, ARG(1))
CUDA_PROBE(cuCtxSynchronize, 107, NONE, K_NONE, NONE)
CUDA_PROBE(cuMemcpy, 108, ARG(3), K_DEFAULT, NONE)
CUDA_PROBE(cuMemcpyAsync, 109, ARG(3), K_DEFAULT, ARG(4))
CUDA_PROBE(cuMemAllocManaged, 110, ARG(2), K_NONE, NONE)
CUDA_PROBE(cuMemcpyHtoD_v2, 111, ARG(3), K_HTOD, NONE)
CUDA_PROBE(cuMemcpyDtoH_v2, 112, ARG(3), K_DTOH, NONE)

#endif
