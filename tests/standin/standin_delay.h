/*
 * Controllable work inside the stand-in CUDA libraries.
 *
 * INGERO_STANDIN_US       microseconds each call spends (default 0)
 * INGERO_STANDIN_SYNC_US  microseconds each synchronize call spends
 *                         (default: INGERO_STANDIN_US)
 * INGERO_STANDIN_SLOW_EVERY=N, INGERO_STANDIN_SLOW_US=US
 *                         every Nth driver kernel launch of the process
 *                         (the 1st, the N+1th, ...) spends US more
 *                         microseconds (default: none)
 * INGERO_STANDIN_CALL_SLOW_EVERY=N, INGERO_STANDIN_CALL_SLOW_US=US
 *                         every Nth call of any stand-in function of the
 *                         library (the 1st, the N+1th, ...) spends US more
 *                         microseconds (default: none)
 * INGERO_STANDIN_FAIL_EVERY=N
 *                         every Nth call of a function that reports it
 *                         (standin_status: cudaMemcpyAsync) returns 1,
 *                         cudaErrorInvalidValue (default: none)
 * INGERO_STANDIN_EXIT_OFF_MAIN=1
 *                         a synchronize called off the main thread ends its
 *                         thread inside the call (pthread_exit), as a
 *                         cancelled thread would; it never returns
 *
 * The time is spent spinning on CLOCK_MONOTONIC, like a driver polling the
 * GPU, so the call stays on-CPU and its duration is exact.
 */
#ifndef STANDIN_DELAY_H
#define STANDIN_DELAY_H

#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long standin_env_us(const char *name, long fallback)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return fallback;
	return strtol(v, NULL, 10);
}

static long standin_call_us = -1;
static long standin_sync_us = -1;

static void standin_load(void)
{
	if (standin_call_us < 0) {
		standin_call_us = standin_env_us("INGERO_STANDIN_US", 0);
		standin_sync_us = standin_env_us("INGERO_STANDIN_SYNC_US", standin_call_us);
	}
}

static long long standin_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void standin_spin_us(long us)
{
	if (us <= 0)
		return;
	long long end = standin_now_ns() + (long long)us * 1000LL;
	while (standin_now_ns() < end)
		;
}

/* Work of an ordinary call, every Nth one slow
 * (INGERO_STANDIN_CALL_SLOW_EVERY, INGERO_STANDIN_CALL_SLOW_US). */
static void standin_work(void)
{
	static long every = -1, slow_us = 0;
	static unsigned long calls;
	standin_load();
	if (every < 0) {
		slow_us = standin_env_us("INGERO_STANDIN_CALL_SLOW_US", 0);
		every = standin_env_us("INGERO_STANDIN_CALL_SLOW_EVERY", 0);
	}
	standin_spin_us(standin_call_us);
	if (every > 0) {
		unsigned long n = __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
		if (n % (unsigned long)every == 0)
			standin_spin_us(slow_us);
	}
}

/* Return code of a call that reports failures: 1 every Nth call
 * (INGERO_STANDIN_FAIL_EVERY: the 1st, the N+1th, ...), else 0. */
__attribute__((unused)) static int standin_status(void)
{
	static long every = -1;
	static unsigned long calls;
	if (every < 0)
		every = standin_env_us("INGERO_STANDIN_FAIL_EVERY", 0);
	if (every <= 0)
		return 0;
	unsigned long n = __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
	return n % (unsigned long)every == 0 ? 1 : 0;
}

/* Work of a driver kernel launch: an ordinary call's, and every Nth one
 * slow (INGERO_STANDIN_SLOW_EVERY, INGERO_STANDIN_SLOW_US). */
__attribute__((unused)) static void standin_launch_work(void)
{
	static long every = -1, slow_us = 0;
	static unsigned long launches;
	if (every < 0) {
		slow_us = standin_env_us("INGERO_STANDIN_SLOW_US", 0);
		every = standin_env_us("INGERO_STANDIN_SLOW_EVERY", 0);
	}
	standin_work();
	unsigned long n = __atomic_fetch_add(&launches, 1, __ATOMIC_RELAXED);
	if (every > 0 && n % (unsigned long)every == 0)
		standin_spin_us(slow_us);
}

/* Work of a synchronize call. */
static void standin_sync(void)
{
	standin_load();
	standin_spin_us(standin_sync_us);
	if (standin_env_us("INGERO_STANDIN_EXIT_OFF_MAIN", 0) == 1 &&
	    syscall(SYS_gettid) != getpid())
		pthread_exit(NULL);
}

#endif
