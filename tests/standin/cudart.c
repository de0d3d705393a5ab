/*
 * Stand-in for libcudart.so.13: the runtime API entry points ingero probes,
 * with the real names and argument lists, doing controllable fake work.
 * "Device" memory is ordinary heap memory.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "standin_delay.h"

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
typedef struct { unsigned int x, y, z; } dim3;

cudaError_t cudaMalloc(void **ptr, size_t size)
{
	standin_work();
	*ptr = malloc(size ? size : 1);
	return *ptr ? 0 : 2;
}

cudaError_t cudaFree(void *ptr)
{
	standin_work();
	free(ptr);
	return 0;
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	standin_work();
	*ptr = malloc(size ? size : 1);
	return *ptr ? 0 : 2;
}

cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
	(void)flags;
	standin_work();
	*ptr = malloc(size ? size : 1);
	return *ptr ? 0 : 2;
}

cudaError_t cudaFreeHost(void *ptr)
{
	standin_work();
	free(ptr);
	return 0;
}

cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags)
{
	(void)flags;
	standin_work();
	*ptr = malloc(size ? size : 1);
	return *ptr ? 0 : 2;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, int kind)
{
	(void)kind;
	standin_work();
	memmove(dst, src, count);
	return 0;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind,
			    cudaStream_t stream)
{
	(void)kind;
	(void)stream;
	standin_work();
	memmove(dst, src, count);
	return 0;
}

cudaError_t cudaMemset(void *dst, int value, size_t count)
{
	standin_work();
	memset(dst, value, count);
	return 0;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t count, cudaStream_t stream)
{
	(void)stream;
	standin_work();
	memset(dst, value, count);
	return 0;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
			     size_t shared_mem, cudaStream_t stream)
{
	(void)func;
	(void)grid;
	(void)block;
	(void)args;
	(void)shared_mem;
	(void)stream;
	standin_work();
	return 0;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	(void)stream;
	standin_sync();
	return 0;
}

cudaError_t cudaDeviceSynchronize(void)
{
	standin_sync();
	return 0;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	(void)event;
	standin_sync();
	return 0;
}
