/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * Grid, block, dynamic shared memory and stream of a kernel launch, read at
 * function entry (System V x86-64 ABI: integer arguments in rdi, rsi, rdx,
 * rcx, r8, r9, then 8-byte stack slots above the return address at sp).
 * Each launch family costs at most one bpf_probe_read_user.
 */
#ifndef INGERO_LAUNCH_GEOMETRY_H
#define INGERO_LAUNCH_GEOMETRY_H

#include "ingero_bpf.h"

/* How a function passes its launch geometry (the GEOM column of
 * CUDA_FUNCTIONS in cuda.h). */
#define G_NONE 0
/* cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
 * size_t sharedMem, cudaStream_t stream), and the _ptsz and cooperative
 * variants with the same arguments. A dim3 (three u32, 12 bytes) passed by
 * value takes two registers: x | y << 32, then z. So grid is rsi + rdx,
 * block rcx + r8, args r9; sharedMem and stream are stack slots 1 and 2. */
#define G_RT_LAUNCH 1
/* cuLaunchKernel(CUfunction f, unsigned gridDimX, gridDimY, gridDimZ,
 * blockDimX, blockDimY, blockDimZ, unsigned sharedMemBytes, CUstream
 * hStream, void **kernelParams, void **extra), and the _ptsz and cooperative
 * variants: gx..by in rsi..r9, then blockDimZ, sharedMemBytes, hStream in
 * stack slots 1, 2, 3 (an unsigned in a slot has undefined upper bits). */
#define G_DRV_LAUNCH 2
/* cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
 * void **args), and _ptsz: the configuration is read from user memory. */
#define G_RT_CONFIG 3
/* cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
 * void **kernelParams, void **extra), and _ptsz. */
#define G_DRV_CONFIG 4

/*
 * The leading 40 bytes of cudaLaunchConfig_t (driver_types.h, CUDA 12+), in
 * its documented member order:
 *   0 dim3 gridDim; 12 dim3 blockDim; 24 size_t dynamicSmemBytes;
 *  32 cudaStream_t stream; 40 cudaLaunchAttribute *attrs; 48 unsigned numAttrs.
 */
struct ingero_rt_launch_config {
	u32 grid[3];
	u32 block[3];
	u64 shared_mem;
	u64 stream;
};

/*
 * The leading 40 bytes of CUlaunchConfig (cuda.h, CUDA 12+), in its
 * documented member order:
 *   0 unsigned gridDimX, 4 gridDimY, 8 gridDimZ; 12 unsigned blockDimX,
 *  16 blockDimY, 20 blockDimZ; 24 unsigned sharedMemBytes; (4 bytes padding)
 *  32 CUstream hStream; 40 CUlaunchAttribute *attrs; 48 unsigned numAttrs.
 */
struct ingero_cu_launch_config {
	u32 grid[3];
	u32 block[3];
	u32 shared_mem;
	u32 pad;
	u64 stream;
};

/* Where a launch's geometry goes (fields of struct call_val). */
struct launch_out {
	u32 *grid;
	u32 *block;
	u32 *shared_mem;
	u64 *stream;
};

static __always_inline u32 clamp_u32(u64 v)
{
	return v > 0xffffffffULL ? 0xffffffffU : (u32)v;
}

static __always_inline void set_dims(u32 *d, u32 x, u32 y, u32 z)
{
	d[0] = x;
	d[1] = y;
	d[2] = z;
}

/* Fills `out` for a function of family `how` (a constant: the switch folds).
 * Fields stay 0 where a read fails. */
static __always_inline void read_launch(struct ingero_regs *r, int how,
					struct launch_out out)
{
	void *slot1 = (void *)(r->sp + 8);
	switch (how) {
	case G_RT_LAUNCH: {
		u64 st[2] = { 0, 0 }; /* sharedMem, stream */
		bpf_probe_read_user(st, sizeof(st), slot1);
		set_dims(out.grid, (u32)r->si, (u32)(r->si >> 32), (u32)r->dx);
		set_dims(out.block, (u32)r->cx, (u32)(r->cx >> 32), (u32)r->r8);
		*out.shared_mem = clamp_u32(st[0]);
		*out.stream = st[1];
		break;
	}
	case G_DRV_LAUNCH: {
		u64 st[3] = { 0, 0, 0 }; /* blockDimZ, sharedMemBytes, hStream */
		bpf_probe_read_user(st, sizeof(st), slot1);
		set_dims(out.grid, (u32)r->si, (u32)r->dx, (u32)r->cx);
		set_dims(out.block, (u32)r->r8, (u32)r->r9, (u32)st[0]);
		*out.shared_mem = (u32)st[1];
		*out.stream = st[2];
		break;
	}
	case G_RT_CONFIG: {
		struct ingero_rt_launch_config c = {};
		bpf_probe_read_user(&c, sizeof(c), (void *)r->di);
		set_dims(out.grid, c.grid[0], c.grid[1], c.grid[2]);
		set_dims(out.block, c.block[0], c.block[1], c.block[2]);
		*out.shared_mem = clamp_u32(c.shared_mem);
		*out.stream = c.stream;
		break;
	}
	case G_DRV_CONFIG: {
		struct ingero_cu_launch_config c = {};
		bpf_probe_read_user(&c, sizeof(c), (void *)r->di);
		set_dims(out.grid, c.grid[0], c.grid[1], c.grid[2]);
		set_dims(out.block, c.block[0], c.block[1], c.block[2]);
		*out.shared_mem = c.shared_mem;
		*out.stream = c.stream;
		break;
	}
	default:
		break;
	}
}

#endif
