/*
 * A training-loop-shaped program for testing ingero capture against the
 * stand-in CUDA libraries, which it loads with dlopen (as PyTorch does).
 *
 *   workload [options]
 *     --lib-dir DIR      where libcudart.so.13 and libcuda.so.1 are
 *                        (default: the directory of this executable)
 *     --iters N          loop iterations (default 100)
 *     --workers W        forked CPU/memory hogs competing with the loop (default 0)
 *     --worker-ms MS     how long each worker runs (default 300)
 *     --pids FILE        write "parent PID" and "worker PID" lines here
 *     --delay-load-ms MS sleep before loading the libraries (a library loaded
 *                        long after the process started)
 *     --wait-ms MS       sleep after loading the libraries, before any call
 *     --addr-file FILE   after loading the libraries, write the address of
 *                        cuLaunchKernel in this process there (hex, one line)
 *     --stdin            after loading the libraries, wait for a line on stdin
 *     --bench N          time N cudaLaunchKernel calls and print ns per call
 *     --op CLASS         with --bench: N calls of one op class instead (all on
 *                        STREAM, 256 bytes each where there are bytes):
 *                        launch (cudaLaunchKernel), copy (cudaMemcpyAsync),
 *                        memset (cudaMemsetAsync), sync
 *                        (cudaStreamSynchronize), event (cudaEventRecord and
 *                        cudaEventQuery, alternately), alloc (cudaMalloc and
 *                        cudaFree, alternately)
 *     --page-bench N     instead, fault in N fresh 4 KiB pages (64 MiB
 *                        mappings, one write per page, unmapped in turn) and
 *                        print ns per page; --syscall-bench N: N getppid()
 *                        system calls, ns per call
 *     --alarm-ms MS      arm SIGALRM (default action: the process dies) MS after
 *                        loading the libraries, to end it inside a call
 *     --reload N         after the run, unload both libraries (checked in
 *                        /proc/self/maps, exit 76 if still mapped), load the
 *                        runtime again and make N more cudaLaunchKernel calls
 *     --seconds S        repeat the loop until S seconds have passed (soak runs)
 *     --touch-pages N    before the loop, fault in N fresh 4 KiB pages (an
 *                        anonymous mapping with huge pages off, one write
 *                        per page): at least N order-0 page allocations
 *     --spin-ms MS       then stay on the CPU for MS ms without a system call
 *     --side-sync        before the loop, one cudaStreamSynchronize on a second
 *                        thread, joined (with INGERO_STANDIN_EXIT_OFF_MAIN=1 that
 *                        thread ends inside the call)
 *     --new-api          instead of the run below, the newer API (launch_new_api:
 *                        launches of known geometry, graph launch, stream-ordered
 *                        allocation, events, a per-thread-stream variant)
 *
 * Per run it makes exactly: before the loop cudaMalloc, cudaMallocHost,
 * cudaHostAlloc, cuMemAlloc_v2 (1 each); per iteration cudaMemcpyAsync,
 * cudaLaunchKernel, cuLaunchKernel, cudaStreamSynchronize (1 each); after the
 * loop cudaMemcpy x2 (HtoD then DtoH), cuMemcpyHtoDAsync_v2,
 * cuMemcpyDtoHAsync_v2, cuStreamSynchronize, cuCtxSynchronize,
 * cudaDeviceSynchronize, cudaEventSynchronize, cuMemFree_v2, cudaFree (1 each).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct { unsigned int x, y, z; } dim3;
typedef int (*fn_malloc)(void **, size_t);
typedef int (*fn_hostalloc)(void **, size_t, unsigned int);
typedef int (*fn_free)(void *);
typedef int (*fn_memcpy)(void *, const void *, size_t, int);
typedef int (*fn_memcpy_async)(void *, const void *, size_t, int, void *);
typedef int (*fn_launch)(const void *, dim3, dim3, void **, size_t, void *);
typedef int (*fn_sync_handle)(void *);
typedef int (*fn_sync)(void);
typedef int (*fn_cu_alloc)(uint64_t *, size_t);
typedef int (*fn_cu_free)(uint64_t);
typedef int (*fn_cu_htod_async)(uint64_t, const void *, size_t, void *);
typedef int (*fn_cu_dtoh_async)(void *, uint64_t, size_t, void *);
typedef int (*fn_cu_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
			    unsigned, unsigned, void *, void **, void **);

typedef struct {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	void *stream;
	void *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	void *hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;
typedef int (*fn_launch_exc)(const cudaLaunchConfig_t *, const void *, void **);
typedef int (*fn_cu_launch_ex)(const CUlaunchConfig *, void *, void **, void **);
typedef int (*fn_two_handles)(void *, void *);
typedef int (*fn_malloc_async)(void **, size_t, void *);
typedef int (*fn_wait_event)(void *, void *, unsigned int);
typedef int (*fn_cu_dtod)(uint64_t, uint64_t, size_t);

#define STREAM ((void *)0x5157)
#define STREAM2 ((void *)0x5158)
#define EVENT ((void *)0xe7e7)
#define GRAPH ((void *)0x6a6a)
#define HTOD 1
#define DTOH 2

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "workload: missing symbol %s\n", name);
		exit(70);
	}
	return p;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A competing process: spins and faults in fresh pages until `ms` elapse. */
static void worker(long ms)
{
	long long end = now_ns() + ms * 1000000LL;
	size_t len = 4u << 20;
	volatile unsigned long sink = 0;
	while (now_ns() < end) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			for (size_t off = 0; off < len; off += 4096)
				p[off] = (char)off;
			munmap(p, len);
		}
		for (int i = 0; i < 200000; i++)
			sink += (unsigned long)i;
	}
	_exit(3);
}

static fn_sync_handle side_sync_fn;

static void *side_sync(void *arg)
{
	(void)arg;
	side_sync_fn(STREAM);
	return NULL;
}

/*
 * The newer API, `iters` rounds, each making exactly (the geometry in
 * threads = grid x block):
 *   cudaLaunchKernel         grid (4,2,1)    block (128,1,1) shared 1024  STREAM   1,024 threads
 *   cudaLaunchKernelExC      grid (64,32,2)  block (256,2,1) shared 4096  STREAM2  2,097,152
 *   cuLaunchKernelEx         grid (16,16,1)  block (32,8,1)  shared 2048  STREAM2  65,536
 *   cudaLaunchKernel_ptsz    grid (3,1,1)    block (96,1,1)  shared 0     stream 0 288
 *   cudaGraphLaunch(GRAPH, STREAM), cudaMallocAsync(65536 bytes, STREAM),
 *   cudaFreeAsync(STREAM), cudaEventRecord(EVENT, STREAM),
 *   cudaStreamWaitEvent(STREAM2, EVENT), cudaEventQuery(EVENT),
 *   cudaEventSynchronize(EVENT), cudaStreamSynchronize_ptsz(0)
 * then once cuMemcpyDtoD_v2 of 4096 bytes. With INGERO_STANDIN_NESTED=1 the
 * stand-in runtime adds, inside each runtime call, its driver call.
 */
static int launch_new_api(void *rt, void *drv, long iters)
{
	fn_launch cudaLaunchKernel = (fn_launch)sym(rt, "cudaLaunchKernel");
	fn_launch cudaLaunchKernel_ptsz = (fn_launch)sym(rt, "cudaLaunchKernel_ptsz");
	fn_launch_exc cudaLaunchKernelExC = (fn_launch_exc)sym(rt, "cudaLaunchKernelExC");
	fn_two_handles cudaGraphLaunch = (fn_two_handles)sym(rt, "cudaGraphLaunch");
	fn_malloc_async cudaMallocAsync = (fn_malloc_async)sym(rt, "cudaMallocAsync");
	fn_two_handles cudaFreeAsync = (fn_two_handles)sym(rt, "cudaFreeAsync");
	fn_two_handles cudaEventRecord = (fn_two_handles)sym(rt, "cudaEventRecord");
	fn_wait_event cudaStreamWaitEvent = (fn_wait_event)sym(rt, "cudaStreamWaitEvent");
	fn_sync_handle cudaEventQuery = (fn_sync_handle)sym(rt, "cudaEventQuery");
	fn_sync_handle cudaEventSynchronize = (fn_sync_handle)sym(rt, "cudaEventSynchronize");
	fn_sync_handle cudaStreamSynchronize_ptsz =
		(fn_sync_handle)sym(rt, "cudaStreamSynchronize_ptsz");
	fn_cu_launch_ex cuLaunchKernelEx = (fn_cu_launch_ex)sym(drv, "cuLaunchKernelEx");
	fn_cu_dtod cuMemcpyDtoD = (fn_cu_dtod)sym(drv, "cuMemcpyDtoD_v2");

	dim3 grid = { 4, 2, 1 }, block = { 128, 1, 1 };
	dim3 grid_pt = { 3, 1, 1 }, block_pt = { 96, 1, 1 };
	cudaLaunchConfig_t rt_cfg = { { 64, 32, 2 }, { 256, 2, 1 }, 4096, STREAM2, NULL, 0 };
	CUlaunchConfig cu_cfg = { 16, 16, 1, 32, 8, 1, 2048, STREAM2, NULL, 0 };
	for (long i = 0; i < iters; i++) {
		void *p = NULL;
		cudaLaunchKernel((const void *)launch_new_api, grid, block, NULL, 1024, STREAM);
		cudaLaunchKernelExC(&rt_cfg, (const void *)launch_new_api, NULL);
		cuLaunchKernelEx(&cu_cfg, NULL, NULL, NULL);
		cudaLaunchKernel_ptsz((const void *)launch_new_api, grid_pt, block_pt, NULL, 0, NULL);
		cudaGraphLaunch(GRAPH, STREAM);
		if (cudaMallocAsync(&p, 65536, STREAM))
			return 78;
		cudaFreeAsync(p, STREAM);
		cudaEventRecord(EVENT, STREAM);
		cudaStreamWaitEvent(STREAM2, EVENT, 0);
		cudaEventQuery(EVENT);
		cudaEventSynchronize(EVENT);
		cudaStreamSynchronize_ptsz(NULL);
	}
	/* Device memory straight from the heap: the copy is not probed twice. */
	uint64_t a = (uint64_t)(uintptr_t)malloc(4096), b = (uint64_t)(uintptr_t)malloc(4096);
	if (!a || !b)
		return 78;
	cuMemcpyDtoD(a, b, 4096);
	free((void *)(uintptr_t)a);
	free((void *)(uintptr_t)b);
	return 0;
}

/* True while a file whose path ends with `name` is mapped in this process. */
static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	size_t n = strlen(name);
	int found = 0;
	if (!f)
		return 1;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");
		line[len] = 0;
		found = len >= n && !strcmp(line + len - n, name);
	}
	fclose(f);
	return found;
}

typedef int (*fn_memset_async)(void *, int, size_t, void *);
typedef int (*fn_event_query)(void *);

/* --op CLASS --bench N: N calls of one op class, timed; prints ns per call,
 * or returns 64 for an unknown class. */
static int op_bench(void *rt, const char *op, long n)
{
	static char src[256], dst[256];
	dim3 grid = { 4, 2, 1 }, block = { 128, 1, 1 };
	long long t0 = now_ns();
	if (!strcmp(op, "launch")) {
		fn_launch launch = (fn_launch)sym(rt, "cudaLaunchKernel");
		for (long i = 0; i < n; i++)
			launch((const void *)op_bench, grid, block, NULL, 0, STREAM);
	} else if (!strcmp(op, "copy")) {
		fn_memcpy_async copy = (fn_memcpy_async)sym(rt, "cudaMemcpyAsync");
		for (long i = 0; i < n; i++)
			copy(dst, src, sizeof(src), HTOD, STREAM);
	} else if (!strcmp(op, "memset")) {
		fn_memset_async set = (fn_memset_async)sym(rt, "cudaMemsetAsync");
		for (long i = 0; i < n; i++)
			set(dst, 0, sizeof(dst), STREAM);
	} else if (!strcmp(op, "sync")) {
		fn_sync_handle sync = (fn_sync_handle)sym(rt, "cudaStreamSynchronize");
		for (long i = 0; i < n; i++)
			sync(STREAM);
	} else if (!strcmp(op, "event")) {
		fn_two_handles record = (fn_two_handles)sym(rt, "cudaEventRecord");
		fn_event_query query = (fn_event_query)sym(rt, "cudaEventQuery");
		for (long i = 0; i < n; i++) {
			if (i % 2 == 0)
				record(EVENT, STREAM);
			else
				query(EVENT);
		}
	} else if (!strcmp(op, "alloc")) {
		fn_malloc alloc = (fn_malloc)sym(rt, "cudaMalloc");
		fn_free release = (fn_free)sym(rt, "cudaFree");
		void *p = NULL;
		for (long i = 0; i < n; i++) {
			if (i % 2 == 0)
				alloc(&p, sizeof(src));
			else
				release(p);
		}
	} else {
		fprintf(stderr, "workload: unknown op class %s\n", op);
		return 64;
	}
	printf("%.1f\n", (double)(now_ns() - t0) / (double)(n > 0 ? n : 1));
	return 0;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX] = "";
	long iters = 100, workers = 0, worker_ms = 300, wait_ms = 0, bench = 0;
	long alarm_ms = 0, reload = 0, seconds = 0, touch_pages = 0, spin_ms = 0;
	long delay_load_ms = 0, page_bench = 0, syscall_bench = 0;
	int wait_stdin = 0, side = 0, new_api = 0;
	const char *pids_path = NULL, *addr_path = NULL, *op = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--stdin")) {
			wait_stdin = 1;
			continue;
		}
		if (!strcmp(a, "--side-sync")) {
			side = 1;
			continue;
		}
		if (!strcmp(a, "--new-api")) {
			new_api = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "workload: %s needs a value\n", a);
			return 64;
		}
		i++;
		if (!strcmp(a, "--lib-dir"))
			snprintf(dir, sizeof(dir), "%s", v);
		else if (!strcmp(a, "--iters"))
			iters = atol(v);
		else if (!strcmp(a, "--workers"))
			workers = atol(v);
		else if (!strcmp(a, "--worker-ms"))
			worker_ms = atol(v);
		else if (!strcmp(a, "--pids"))
			pids_path = v;
		else if (!strcmp(a, "--page-bench"))
			page_bench = atol(v);
		else if (!strcmp(a, "--syscall-bench"))
			syscall_bench = atol(v);
		else if (!strcmp(a, "--delay-load-ms"))
			delay_load_ms = atol(v);
		else if (!strcmp(a, "--wait-ms"))
			wait_ms = atol(v);
		else if (!strcmp(a, "--addr-file"))
			addr_path = v;
		else if (!strcmp(a, "--bench"))
			bench = atol(v);
		else if (!strcmp(a, "--op"))
			op = v;
		else if (!strcmp(a, "--alarm-ms"))
			alarm_ms = atol(v);
		else if (!strcmp(a, "--reload"))
			reload = atol(v);
		else if (!strcmp(a, "--seconds"))
			seconds = atol(v);
		else if (!strcmp(a, "--touch-pages"))
			touch_pages = atol(v);
		else if (!strcmp(a, "--spin-ms"))
			spin_ms = atol(v);
		else {
			fprintf(stderr, "workload: unknown option %s\n", a);
			return 64;
		}
	}
	if (!dir[0]) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return 71;
		exe[n] = 0;
		snprintf(dir, sizeof(dir), "%s", dirname(exe));
	}
	if (delay_load_ms > 0)
		usleep((useconds_t)(delay_load_ms * 1000));
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/libcudart.so.13", dir);
	void *rt = dlopen(path, RTLD_NOW);
	snprintf(path, sizeof(path), "%s/libcuda.so.1", dir);
	void *drv = dlopen(path, RTLD_NOW);
	if (!rt || !drv) {
		fprintf(stderr, "workload: %s\n", dlerror());
		return 73;
	}
	if (addr_path) {
		FILE *f = fopen(addr_path, "w");
		if (!f)
			return 74;
		fprintf(f, "%p\n", dlsym(drv, "cuLaunchKernel"));
		fclose(f);
	}
	if (wait_ms > 0)
		usleep((useconds_t)(wait_ms * 1000));
	if (alarm_ms > 0) {
		struct itimerval t = { { 0, 0 }, { alarm_ms / 1000, (alarm_ms % 1000) * 1000 } };
		setitimer(ITIMER_REAL, &t, NULL);
	}
	if (wait_stdin) {
		char line[64];
		if (!fgets(line, sizeof(line), stdin))
			return 72;
	}

	if (new_api)
		return launch_new_api(rt, drv, iters);
	if (op)
		return op_bench(rt, op, bench);

	fn_malloc cudaMalloc = (fn_malloc)sym(rt, "cudaMalloc");
	fn_malloc cudaMallocHost = (fn_malloc)sym(rt, "cudaMallocHost");
	fn_hostalloc cudaHostAlloc = (fn_hostalloc)sym(rt, "cudaHostAlloc");
	fn_free cudaFree = (fn_free)sym(rt, "cudaFree");
	fn_memcpy cudaMemcpy = (fn_memcpy)sym(rt, "cudaMemcpy");
	fn_memcpy_async cudaMemcpyAsync = (fn_memcpy_async)sym(rt, "cudaMemcpyAsync");
	fn_launch cudaLaunchKernel = (fn_launch)sym(rt, "cudaLaunchKernel");
	fn_sync_handle cudaStreamSynchronize = (fn_sync_handle)sym(rt, "cudaStreamSynchronize");
	fn_sync_handle cudaEventSynchronize = (fn_sync_handle)sym(rt, "cudaEventSynchronize");
	fn_sync cudaDeviceSynchronize = (fn_sync)sym(rt, "cudaDeviceSynchronize");
	fn_cu_alloc cuMemAlloc = (fn_cu_alloc)sym(drv, "cuMemAlloc_v2");
	fn_cu_free cuMemFree = (fn_cu_free)sym(drv, "cuMemFree_v2");
	fn_cu_htod_async cuMemcpyHtoDAsync = (fn_cu_htod_async)sym(drv, "cuMemcpyHtoDAsync_v2");
	fn_cu_dtoh_async cuMemcpyDtoHAsync = (fn_cu_dtoh_async)sym(drv, "cuMemcpyDtoHAsync_v2");
	fn_cu_launch cuLaunchKernel = (fn_cu_launch)sym(drv, "cuLaunchKernel");
	fn_sync_handle cuStreamSynchronize = (fn_sync_handle)sym(drv, "cuStreamSynchronize");
	fn_sync cuCtxSynchronize = (fn_sync)sym(drv, "cuCtxSynchronize");

	dim3 grid = { 4, 2, 1 }, block = { 128, 1, 1 };
	if (page_bench > 0) {
		const size_t chunk = 64UL << 20;
		long done = 0;
		long long t0 = now_ns();
		while (done < page_bench) {
			char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				return 75;
			madvise(p, chunk, MADV_NOHUGEPAGE);
			for (size_t off = 0; off < chunk && done < page_bench; off += 4096, done++)
				p[off] = 1;
			munmap(p, chunk);
		}
		printf("%.1f\n", (double)(now_ns() - t0) / (double)page_bench);
		return 0;
	}
	if (syscall_bench > 0) {
		long long t0 = now_ns();
		for (long i = 0; i < syscall_bench; i++)
			syscall(SYS_getppid);
		printf("%.1f\n", (double)(now_ns() - t0) / (double)syscall_bench);
		return 0;
	}
	if (bench > 0) {
		long long t0 = now_ns();
		for (long i = 0; i < bench; i++)
			cudaLaunchKernel((const void *)main, grid, block, NULL, 0, STREAM);
		long long t1 = now_ns();
		printf("%.1f\n", (double)(t1 - t0) / (double)bench);
		return 0;
	}

	pid_t kids[64];
	long nkids = workers < 64 ? workers : 64;
	for (long w = 0; w < nkids; w++) {
		kids[w] = fork();
		if (kids[w] == 0)
			worker(worker_ms);
	}

	void *d = NULL, *h = NULL, *h2 = NULL;
	uint64_t dp = 0;
	cudaMalloc(&d, 1 << 20);
	cudaMallocHost(&h, 8192);
	cudaHostAlloc(&h2, 16384, 0);
	cuMemAlloc(&dp, 2 << 20);
	if (side) {
		pthread_t t;
		side_sync_fn = cudaStreamSynchronize;
		if (pthread_create(&t, NULL, side_sync, NULL) || pthread_join(t, NULL))
			return 77;
	}
	if (touch_pages > 0) {
		size_t len = (size_t)touch_pages * 4096;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 78;
		madvise(p, len, MADV_NOHUGEPAGE);
		for (size_t off = 0; off < len; off += 4096)
			p[off] = 1;
		munmap(p, len);
	}
	if (spin_ms > 0) {
		long long spin_end = now_ns() + spin_ms * 1000000LL;
		while (now_ns() < spin_end)
			;
	}
	long long soak_end = now_ns() + seconds * 1000000000LL;
	do {
		for (long i = 0; i < iters; i++) {
			cudaMemcpyAsync(d, h, 4096, HTOD, STREAM);
			cudaLaunchKernel((const void *)main, grid, block, NULL, 0, STREAM);
			cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, STREAM, NULL, NULL);
			cudaStreamSynchronize(STREAM);
		}
	} while (seconds > 0 && now_ns() < soak_end);
	cudaMemcpy(d, h, 8192, HTOD);
	cudaMemcpy(h, d, 8192, DTOH);
	cuMemcpyHtoDAsync(dp, h, 4096, STREAM);
	cuMemcpyDtoHAsync(h, dp, 4096, STREAM);
	cuStreamSynchronize(STREAM);
	cuCtxSynchronize();
	cudaDeviceSynchronize();
	cudaEventSynchronize(EVENT);
	cuMemFree(dp);
	cudaFree(d);

	if (reload > 0) {
		dlclose(rt);
		dlclose(drv);
		if (mapped("/libcudart.so.13") || mapped("/libcuda.so.1")) {
			fprintf(stderr, "workload: libraries still mapped after dlclose\n");
			return 76;
		}
		usleep(100000);
		snprintf(path, sizeof(path), "%s/libcudart.so.13", dir);
		rt = dlopen(path, RTLD_NOW);
		if (!rt) {
			fprintf(stderr, "workload: %s\n", dlerror());
			return 73;
		}
		cudaLaunchKernel = (fn_launch)sym(rt, "cudaLaunchKernel");
		for (long i = 0; i < reload; i++)
			cudaLaunchKernel((const void *)main, grid, block, NULL, 0, STREAM);
		dlclose(rt);
	}

	int bad = 0;
	for (long w = 0; w < nkids; w++) {
		int st = 0;
		if (waitpid(kids[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
			bad = 1;
	}
	if (pids_path) {
		FILE *f = fopen(pids_path, "w");
		if (!f)
			return 74;
		fprintf(f, "parent %d\n", (int)getpid());
		for (long w = 0; w < nkids; w++)
			fprintf(f, "worker %d\n", (int)kids[w]);
		fclose(f);
	}
	return bad ? 75 : 0;
}
