/*
 * Stand-in for libcudart.so.13: the runtime API entry points ingero probes,
 * with the real names and argument lists, doing controllable fake work.
 * "Device" memory is ordinary heap memory. With INGERO_STANDIN_NESTED=1
 * some of them call the driver as the real runtime does (see
 * standin_driver).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "standin_delay.h"

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
typedef void *cudaGraphExec_t;
typedef struct { unsigned int x, y, z; } dim3;

/* cudaLaunchConfig_t as driver_types.h declares it (CUDA 12+). */
typedef struct {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	void *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;

/* CUlaunchConfig as cuda.h declares it, for the nested call below. */
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	void *hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

/*
 * INGERO_STANDIN_NESTED=1: runtime functions call the driver function the
 * real runtime calls for them (cudaLaunchKernel -> cuLaunchKernel, ...), in
 * the libcuda.so.1 the process has loaded, after their own work, so the
 * driver call lies strictly inside the runtime call. Unset, no runtime
 * function calls any other probed function.
 */
static void *standin_driver(const char *name)
{
	static int nested = -1;
	static void *lib;
	if (nested < 0)
		nested = standin_env_us("INGERO_STANDIN_NESTED", 0) == 1;
	if (!nested)
		return NULL;
	if (!lib)
		lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	return lib ? dlsym(lib, name) : NULL;
}

typedef int (*drv_launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
			     unsigned, unsigned, void *, void **, void **);
typedef int (*drv_launch_ex_fn)(const CUlaunchConfig *, void *, void **, void **);
typedef int (*drv_handle_fn)(void *);
typedef int (*drv_two_fn)(void *, void *);
typedef int (*drv_wait_fn)(void *, void *, unsigned);
typedef int (*drv_alloc_async_fn)(uint64_t *, size_t, void *);
typedef int (*drv_free_async_fn)(uint64_t, void *);
typedef int (*drv_alloc_fn)(uint64_t *, size_t);
typedef int (*drv_free_fn)(uint64_t);

/* Calls the driver function `name` with one handle argument, if nested. */
static void nest_handle(const char *name, void *handle)
{
	drv_handle_fn f = (drv_handle_fn)standin_driver(name);
	if (f)
		f(handle);
}

/* Calls the driver function `name` with two handle arguments, if nested. */
static void nest_two(const char *name, void *a, void *b)
{
	drv_two_fn f = (drv_two_fn)standin_driver(name);
	if (f)
		f(a, b);
}

static cudaError_t launch_body(const char *driver, const void *func, dim3 grid, dim3 block,
			       void **args, size_t shared_mem, cudaStream_t stream)
{
	standin_work();
	drv_launch_fn f = (drv_launch_fn)standin_driver(driver);
	if (f)
		f((void *)func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
		  (unsigned)shared_mem, stream, args, NULL);
	return 0;
}

cudaError_t cudaMalloc(void **ptr, size_t size)
{
	standin_work();
	drv_alloc_fn f = (drv_alloc_fn)standin_driver("cuMemAlloc_v2");
	if (f) {
		uint64_t p = 0;
		int r = f(&p, size);
		*ptr = (void *)(uintptr_t)p;
		return r;
	}
	*ptr = malloc(size ? size : 1);
	return *ptr ? 0 : 2;
}

cudaError_t cudaFree(void *ptr)
{
	standin_work();
	drv_free_fn f = (drv_free_fn)standin_driver("cuMemFree_v2");
	if (f)
		return f((uint64_t)(uintptr_t)ptr);
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
	return standin_status();
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
	return launch_body("cuLaunchKernel", func, grid, block, args, shared_mem, stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
				  size_t shared_mem, cudaStream_t stream)
{
	return launch_body("cuLaunchKernel_ptsz", func, grid, block, args, shared_mem, stream);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
	standin_work();
	drv_launch_ex_fn f = (drv_launch_ex_fn)standin_driver("cuLaunchKernelEx");
	if (f) {
		CUlaunchConfig c = {
			config->gridDim.x, config->gridDim.y, config->gridDim.z,
			config->blockDim.x, config->blockDim.y, config->blockDim.z,
			(unsigned)config->dynamicSmemBytes, config->stream, NULL, 0,
		};
		f(&c, (void *)func, args, NULL);
	}
	return 0;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graph, cudaStream_t stream)
{
	standin_work();
	nest_two("cuGraphLaunch", graph, stream);
	return 0;
}

cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
	standin_work();
	drv_alloc_async_fn f = (drv_alloc_async_fn)standin_driver("cuMemAllocAsync");
	if (f) {
		uint64_t p = 0;
		int r = f(&p, size, stream);
		*ptr = (void *)(uintptr_t)p;
		return r;
	}
	*ptr = malloc(size ? size : 1);
	return *ptr ? 0 : 2;
}

cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
	standin_work();
	drv_free_async_fn f = (drv_free_async_fn)standin_driver("cuMemFreeAsync");
	if (f)
		return f((uint64_t)(uintptr_t)ptr, stream);
	free(ptr);
	return 0;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	standin_work();
	nest_two("cuEventRecord", event, stream);
	return 0;
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
	standin_work();
	nest_handle("cuEventQuery", event);
	return 0;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	standin_work();
	drv_wait_fn f = (drv_wait_fn)standin_driver("cuStreamWaitEvent");
	if (f)
		f(stream, event, flags);
	return 0;
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	standin_sync();
	nest_handle("cuStreamSynchronize_ptsz", stream);
	return 0;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	standin_sync();
	nest_handle("cuStreamSynchronize", stream);
	return 0;
}

cudaError_t cudaDeviceSynchronize(void)
{
	standin_sync();
	return 0;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	standin_sync();
	nest_handle("cuEventSynchronize", event);
	return 0;
}
