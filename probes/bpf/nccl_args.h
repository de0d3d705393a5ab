/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Arguments of the NCCL functions (libnccl.so.2), read at entry into the
 * fields of a CUDA call record (struct rec_cuda, whose NCCL meaning
 * ingero_events.h gives), and the communicator handle an init call writes,
 * read at its return. Argument positions are those of nccl.h (NCCL 2.28);
 * System V x86-64: integer arguments in rdi, rsi, rdx, rcx, r8, r9, then
 * stack slots; a ncclUniqueId (128 bytes) passed by value goes on the stack
 * and takes no register.
 */
#ifndef INGERO_NCCL_ARGS_H
#define INGERO_NCCL_ARGS_H

#include "ingero_bpf.h"

/* How an NCCL function passes its arguments (the GEOM column of
 * CUDA_FUNCTIONS, after the launch families of launch_geometry.h). */
/* ncclAllReduce(send, recv, count, datatype, op, comm, stream);
 * ncclReduceScatter has the same shape. */
#define G_NCCL_REDUCE_ALL 20
/* ncclBroadcast(send, recv, count, datatype, root, comm, stream). */
#define G_NCCL_BROADCAST 21
/* ncclReduce(send, recv, count, datatype, op, root, comm, stream). */
#define G_NCCL_REDUCE 22
/* ncclAllGather(send, recv, sendcount, datatype, comm, stream). */
#define G_NCCL_ALL_GATHER 23
/* ncclSend/ncclRecv(buff, count, datatype, peer, comm, stream);
 * ncclBcast(buff, count, datatype, root, comm, stream) has the same shape. */
#define G_NCCL_PEER 24
/* ncclCommInitRank(comm *, nranks, ncclUniqueId (by value), rank), and
 * ncclCommInitRankConfig (config * after rank). */
#define G_NCCL_INIT 25
/* ncclCommInitRankScalable(newcomm *, nranks, myrank, nId, commIds *, config *). */
#define G_NCCL_INIT_SCALABLE 26
/* ncclCommInitAll(comms *, ndev, devlist *): one process, ndev communicators. */
#define G_NCCL_INIT_ALL 27
/* ncclCommSplit(comm, color, key, newcomm *, config *). */
#define G_NCCL_SPLIT 28
/* ncclCommFinalize/Destroy/Abort(comm). */
#define G_NCCL_COMM 29

/* No value (reduction op, root or peer of a call that has none). */
#define NCCL_NONE 0xffffffffU

/* Bytes per element of ncclDataType_t, 0 when unknown. */
static __always_inline u64 nccl_type_size(u64 t)
{
	switch (t) {
	case 0: case 1: case 10: case 11: return 1; /* int8, uint8, fp8 x2 */
	case 2: case 3: case 7: return 4;           /* int32, uint32, float32 */
	case 4: case 5: case 8: return 8;           /* int64, uint64, float64 */
	case 6: case 9: return 2;                   /* float16, bfloat16 */
	default: return 0;
	}
}

/* FNV-1a over the 128 bytes of a ncclUniqueId at user address `p`: every
 * rank of one communicator passes the same id, so the key matches their
 * communicators across processes and hosts. 0 when it cannot be read. */
static __always_inline u64 nccl_id_key(const void *p)
{
	u64 h = 0xcbf29ce484222325ULL;
	u64 w[4];
#pragma unroll
	for (int chunk = 0; chunk < 4; chunk++) {
		if (bpf_probe_read_user(w, sizeof(w), (const char *)p + 32 * chunk))
			return 0;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			h ^= w[i];
			h *= 0x100000001b3ULL;
		}
	}
	return h ? h : 1;
}

/* The 8-byte stack argument `n` (1-based) of an NCCL call. */
static __always_inline u64 nccl_stack_arg(struct ingero_regs *r, int n)
{
	u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)(r->sp + 8 * (u64)n));
	return v;
}

static __always_inline void nccl_set_comm(u32 *grid, u64 comm)
{
	grid[0] = (u32)comm;
	grid[1] = (u32)(comm >> 32);
}

/*
 * Fills the record fields of an NCCL call of family `how` (a constant):
 * grid[0..1] the communicator, grid[2] the datatype, block[0] the reduction
 * op (init: nranks; split: color), block[1] the root or peer (init: rank;
 * split: key), `count` the element count, `stream` the stream (init: the
 * address the new communicator is written to, read at the return).
 */
static __always_inline void read_nccl(struct ingero_regs *r, int how, u32 *grid,
				      u32 *block, s64 *count, u64 *stream)
{
	block[0] = NCCL_NONE;
	block[1] = NCCL_NONE;
	switch (how) {
	case G_NCCL_REDUCE_ALL:
		*count = (s64)r->dx;
		grid[2] = (u32)r->cx;
		block[0] = (u32)r->r8;
		nccl_set_comm(grid, r->r9);
		*stream = nccl_stack_arg(r, 1);
		break;
	case G_NCCL_BROADCAST:
		*count = (s64)r->dx;
		grid[2] = (u32)r->cx;
		block[1] = (u32)r->r8;
		nccl_set_comm(grid, r->r9);
		*stream = nccl_stack_arg(r, 1);
		break;
	case G_NCCL_REDUCE:
		*count = (s64)r->dx;
		grid[2] = (u32)r->cx;
		block[0] = (u32)r->r8;
		block[1] = (u32)r->r9;
		nccl_set_comm(grid, nccl_stack_arg(r, 1));
		*stream = nccl_stack_arg(r, 2);
		break;
	case G_NCCL_ALL_GATHER:
		*count = (s64)r->dx;
		grid[2] = (u32)r->cx;
		nccl_set_comm(grid, r->r8);
		*stream = r->r9;
		break;
	case G_NCCL_PEER:
		*count = (s64)r->si;
		grid[2] = (u32)r->dx;
		block[1] = (u32)r->cx;
		nccl_set_comm(grid, r->r8);
		*stream = r->r9;
		break;
	case G_NCCL_INIT:
		block[0] = (u32)r->si;
		block[1] = (u32)r->dx;
		*stream = r->di;
		break;
	case G_NCCL_INIT_SCALABLE:
		block[0] = (u32)r->si;
		block[1] = (u32)r->dx;
		*stream = r->di;
		break;
	case G_NCCL_INIT_ALL:
		block[0] = (u32)r->si;
		*stream = r->di;
		break;
	case G_NCCL_SPLIT:
		block[0] = (u32)r->si;
		block[1] = (u32)r->dx;
		*stream = r->cx;
		break;
	case G_NCCL_COMM:
		nccl_set_comm(grid, r->di);
		break;
	default:
		break;
	}
}

/* Bytes an NCCL call moves per rank: count x element size. */
static __always_inline u64 nccl_bytes(struct ingero_regs *r, int how)
{
	switch (how) {
	case G_NCCL_REDUCE_ALL:
	case G_NCCL_BROADCAST:
	case G_NCCL_REDUCE:
	case G_NCCL_ALL_GATHER:
		return r->dx * nccl_type_size(r->cx);
	case G_NCCL_PEER:
		return r->si * nccl_type_size(r->dx);
	case G_NCCL_INIT:
		/* Not bytes: the key of the communicator's unique id. */
		return nccl_id_key((const void *)(r->sp + 8));
	case G_NCCL_INIT_SCALABLE:
		return nccl_id_key((const void *)r->r8);
	case G_NCCL_SPLIT:
		/* Not bytes: the parent communicator. */
		return r->di;
	default:
		return 0;
	}
}

/* True for the calls that write a new communicator through a pointer
 * argument (kept in the stream field until the return). */
static __always_inline int nccl_makes_comm(u32 op)
{
	return op >= 210 && op <= 214;
}

/* At the return of a call that made a communicator: reads the handle it
 * wrote (the first one, for ncclCommInitAll) into grid[0..1]. */
static __always_inline void nccl_read_new_comm(u32 *grid, u64 *stream)
{
	u64 comm = 0;
	bpf_probe_read_user(&comm, sizeof(comm), (void *)*stream);
	nccl_set_comm(grid, comm);
	*stream = 0;
}

#endif
