/*
 * Stand-in for libcuda.so.1: the driver API entry points ingero probes, with
 * the real names and argument lists, doing controllable fake work.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "standin_delay.h"

typedef int CUresult;
typedef uint64_t CUdeviceptr;
typedef void *CUstream;
typedef void *CUfunction;
typedef void *CUevent;
typedef void *CUgraphExec;

/* CUlaunchConfig as cuda.h declares it (CUDA 12+). */
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

/* Shared bodies are static so that one probed entry point never calls
 * another one (that would count two calls). */
static CUresult alloc_body(CUdeviceptr *dptr, size_t size)
{
	standin_work();
	void *p = malloc(size ? size : 1);
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return p ? 0 : 2;
}

static CUresult copy_body(CUdeviceptr dst, CUdeviceptr src, size_t size)
{
	standin_work();
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, size);
	return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	return alloc_body(dptr, size);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	(void)flags;
	return alloc_body(dptr, size);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	standin_work();
	free((void *)(uintptr_t)dptr);
	return 0;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t size, CUstream stream)
{
	(void)stream;
	standin_work();
	memmove((void *)(uintptr_t)dst, src, size);
	return 0;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t size, CUstream stream)
{
	(void)stream;
	standin_work();
	memmove(dst, (const void *)(uintptr_t)src, size);
	return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t size)
{
	standin_work();
	memmove((void *)(uintptr_t)dst, src, size);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t size)
{
	standin_work();
	memmove(dst, (const void *)(uintptr_t)src, size);
	return 0;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t size)
{
	return copy_body(dst, src, size);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream)
{
	(void)stream;
	return copy_body(dst, src, size);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			unsigned int bx, unsigned int by, unsigned int bz,
			unsigned int shared_mem, CUstream stream, void **params, void **extra)
{
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
	(void)shared_mem; (void)stream; (void)params; (void)extra;
	standin_launch_work();
	return 0;
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			     unsigned int bx, unsigned int by, unsigned int bz,
			     unsigned int shared_mem, CUstream stream, void **params, void **extra)
{
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
	(void)shared_mem; (void)stream; (void)params; (void)extra;
	standin_launch_work();
	return 0;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	(void)config; (void)f; (void)params; (void)extra;
	standin_launch_work();
	return 0;
}

CUresult cuGraphLaunch(CUgraphExec graph, CUstream stream)
{
	(void)graph; (void)stream;
	standin_work();
	return 0;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream)
{
	(void)stream;
	return alloc_body(dptr, size);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
	(void)stream;
	standin_work();
	free((void *)(uintptr_t)dptr);
	return 0;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t size)
{
	return copy_body(dst, src, size);
}

CUresult cuEventRecord(CUevent event, CUstream stream)
{
	(void)event; (void)stream;
	standin_work();
	return 0;
}

CUresult cuEventQuery(CUevent event)
{
	(void)event;
	standin_work();
	return 0;
}

CUresult cuEventSynchronize(CUevent event)
{
	(void)event;
	standin_sync();
	return 0;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags)
{
	(void)stream; (void)event; (void)flags;
	standin_work();
	return 0;
}

CUresult cuStreamSynchronize_ptsz(CUstream stream)
{
	(void)stream;
	standin_sync();
	return 0;
}

CUresult cuStreamSynchronize(CUstream stream)
{
	(void)stream;
	standin_sync();
	return 0;
}

CUresult cuCtxSynchronize(void)
{
	standin_sync();
	return 0;
}
