/*
 * Stand-in process with known functions for the stack sampling tests.
 *
 *   burn [--burn-ms N] [--cuda DIR --blocks N --block-ms M]
 *
 * --burn-ms: spends N ms of CPU in ingero_burn_spin, called from
 *   ingero_burn_outer (both kept out of line, with frame pointers).
 * --cuda: loads DIR/libcudart.so.13 (a stand-in) and makes one cudaMalloc,
 *   so the thread counts as CUDA-calling; then blocks N times for M ms in
 *   ingero_block_here, which enters the kernel itself (an inline syscall,
 *   no libc wrapper) so the innermost user frame is that function.
 * Prints one line when done: "burn iterations=<spin iterations>".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

/* CPU time of this thread: a burn of N ms is N ms on a CPU however busy
 * the machine is (the samples it gets follow its CPU time, not the wall). */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

volatile unsigned long sink;

/* A local on the stack gives the function a frame of its own (gcc drops the
 * frame pointer set-up of a leaf that needs no stack, even when asked to
 * keep frame pointers; a sample there would then skip its caller). */
__attribute__((noinline)) unsigned long ingero_burn_spin(unsigned long n)
{
	volatile unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
	return n;
}

__attribute__((noinline)) unsigned long ingero_burn_outer(double ms)
{
	unsigned long iterations = 0;
	double end = cpu_ms() + ms;
	while (cpu_ms() < end)
		iterations += ingero_burn_spin(100000);
	return iterations;
}

__attribute__((noinline)) void ingero_block_here(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
	(void)ret;
}

typedef int (*fn_malloc)(void **, size_t);

int main(int argc, char **argv)
{
	double burn_ms = 0;
	const char *cuda = NULL;
	long blocks = 0, block_ms = 10;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--burn-ms"))
			burn_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--cuda"))
			cuda = argv[i + 1];
		else if (!strcmp(argv[i], "--blocks"))
			blocks = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--block-ms"))
			block_ms = atol(argv[i + 1]);
	}
	unsigned long iterations = ingero_burn_outer(burn_ms);
	if (cuda) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/libcudart.so.13", cuda);
		void *rt = dlopen(path, RTLD_NOW);
		if (!rt) {
			fprintf(stderr, "burn: %s\n", dlerror());
			return 1;
		}
		fn_malloc cuda_malloc = (fn_malloc)dlsym(rt, "cudaMalloc");
		void *p = NULL;
		if (!cuda_malloc || cuda_malloc(&p, 4096)) {
			fprintf(stderr, "burn: cudaMalloc failed\n");
			return 1;
		}
		for (long i = 0; i < blocks; i++)
			ingero_block_here(block_ms);
	}
	printf("burn iterations=%lu\n", iterations);
	return 0;
}
