/*
 * One rank of a data-parallel training loop, for testing ingero capture of
 * NCCL against the stand-in libraries: start several as separate processes
 * with the same --id. It loads libcudart.so.13 and libnccl.so.2 with dlopen
 * (RTLD_NOW, as PyTorch does) and calls them through dlsym.
 *
 *   nccl_rank --rank R --world W --id NAME [options]
 *     --rank R           this process's rank, 0 <= R < W (required)
 *     --world W          number of ranks (required)
 *     --id NAME          the communicator: the unique id is NAME's bytes
 *                        zero-padded to 128 (at most 128 bytes), which every
 *                        rank builds by itself (required). Real programs get
 *                        it from ncclGetUniqueId on rank 0 and send it to the
 *                        others out of band.
 *     --lib-dir DIR      where libcudart.so.13 and libnccl.so.2 are
 *                        (default: the directory of this executable)
 *     --iters N          training steps (default 50)
 *     --bytes B          all-reduce size per step: B / 4 ncclFloat32 values
 *                        (default 4194304, 4 MiB)
 *     --step-ms MS       on-CPU work of every rank per step before its
 *                        collective, a spin on CLOCK_MONOTONIC with no system
 *                        call (default 2)
 *     --delay-ms MS      extra on-CPU spin before the collective on this rank
 *                        only: the slow rank (default 0)
 *     --sleep-ms MS      extra off-CPU sleep before the collective (after the
 *                        spins) on this rank only (default 0)
 *     --mix              per step, after the all-reduce, also ncclAllGather
 *                        (sendcount B/4/W), ncclBroadcast from root 0 (B/4),
 *                        ncclReduceScatter (recvcount B/4/W) and, inside one
 *                        ncclGroupStart / ncclGroupEnd, ncclSend to
 *                        (R+1)%W and ncclRecv from (R+W-1)%W (B/4 each)
 *     --pids FILE        append a "rank R pid P" line to FILE (ranks may share
 *                        one file), after loading the libraries
 *     --wait-ms MS       sleep after loading the libraries (and writing
 *                        --pids), before the first call: lets a tracer attach
 *     --config           init with ncclCommInitRankConfig (a zeroed config)
 *                        instead of ncclCommInitRank
 *     --split            after init, ncclCommSplit(comm, 0, R, &sub, NULL),
 *                        one ncclAllReduce on sub, ncclCommDestroy(sub)
 *
 * Calls, in order: ncclGetVersion, ncclCommInitRank (or ...Config),
 * ncclCommCount, ncclCommUserRank (which must give W and R), the --split
 * calls; per step exactly cudaLaunchKernel x1 (grid 1, block 32), the step
 * spin (+ --delay-ms, + --sleep-ms), ncclAllReduce(send, recv, B/4,
 * ncclFloat32, ncclSum, comm, stream 0x1234), the --mix calls,
 * cudaStreamSynchronize(stream); then ncclCommDestroy. The buffers are
 * ordinary malloc memory of B bytes.
 *
 * At the end it prints one line to stdout:
 *   nccl_rank rank=R world=W iters=N allreduce=N elapsed_ms=X
 * (elapsed_ms: the loop of steps alone).
 *
 * Exit codes: 0 ok, 64 usage, 73 dlopen or dlsym failure, 74 an NCCL call
 * failed (named on stderr with its code), 75 ncclCommCount or
 * ncclCommUserRank disagree with --world or --rank.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct { unsigned int x, y, z; } dim3;
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;

typedef int (*fn_launch)(const void *, dim3, dim3, void **, size_t, void *);
typedef int (*fn_stream_sync)(void *);
typedef int (*fn_get_version)(int *);
typedef const char *(*fn_error_string)(int);
typedef int (*fn_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
typedef int (*fn_init_rank_config)(ncclComm_t *, int, ncclUniqueId, int, void *);
typedef int (*fn_comm_query)(ncclComm_t, int *);
typedef int (*fn_comm_destroy)(ncclComm_t);
typedef int (*fn_comm_split)(ncclComm_t, int, int, ncclComm_t *, void *);
typedef int (*fn_all_reduce)(const void *, void *, size_t, int, int, ncclComm_t, void *);
typedef int (*fn_broadcast)(const void *, void *, size_t, int, int, ncclComm_t, void *);
typedef int (*fn_all_gather)(const void *, void *, size_t, int, ncclComm_t, void *);
typedef int (*fn_reduce_scatter)(const void *, void *, size_t, int, int, ncclComm_t, void *);
typedef int (*fn_send)(const void *, size_t, int, int, ncclComm_t, void *);
typedef int (*fn_recv)(void *, size_t, int, int, ncclComm_t, void *);
typedef int (*fn_group)(void);

#define STREAM ((void *)0x1234)
#define NCCL_FLOAT32 7
#define NCCL_SUM 0

static int rank_no = -1;
static fn_error_string error_string;

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "nccl_rank: missing symbol %s\n", name);
		exit(73);
	}
	return p;
}

/* Exits 74 naming the NCCL call `what` if it returned `r` != ncclSuccess. */
static void check(const char *what, int r)
{
	if (r == 0)
		return;
	fprintf(stderr, "nccl_rank: rank %d: %s failed: %d (%s)\n", rank_no, what, r,
		error_string ? error_string(r) : "?");
	exit(74);
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Stays on the CPU for `ms` ms (clock_gettime is a vDSO call, no system call). */
static void spin_ms(long ms)
{
	if (ms <= 0)
		return;
	long long end = now_ns() + ms * 1000000LL;
	while (now_ns() < end)
		;
}

static void sleep_ms(long ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* The kernel "launched" each step: only its address is passed. */
static void dummy_kernel(void)
{
}

static int usage(const char *msg, const char *arg)
{
	fprintf(stderr, "nccl_rank: %s%s\n", msg, arg ? arg : "");
	fprintf(stderr, "usage: nccl_rank --rank R --world W --id NAME [--lib-dir DIR] "
			"[--iters N] [--bytes B] [--step-ms MS] [--delay-ms MS] [--sleep-ms MS] "
			"[--mix] [--pids FILE] [--wait-ms MS] [--config] [--split]\n");
	return 64;
}

/* Parses a non-negative decimal number; -1 if `v` is not one. */
static long long number(const char *v)
{
	char *end = NULL;
	long long n = strtoll(v, &end, 10);
	return end != v && !*end && n >= 0 ? n : -1;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX] = "";
	long long rank = -1, world = -1, iters = 50, bytes = 4 << 20, step_ms = 2, delay_ms = 0;
	long long sleep_for = 0, wait_ms = 0;
	int mix = 0, use_config = 0, split = 0;
	const char *id_name = NULL, *pids_path = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--mix")) {
			mix = 1;
			continue;
		}
		if (!strcmp(a, "--config")) {
			use_config = 1;
			continue;
		}
		if (!strcmp(a, "--split")) {
			split = 1;
			continue;
		}
		if (!v)
			return usage("missing value for ", a);
		i++;
		if (!strcmp(a, "--lib-dir")) {
			snprintf(dir, sizeof(dir), "%s", v);
			continue;
		}
		if (!strcmp(a, "--id")) {
			id_name = v;
			continue;
		}
		if (!strcmp(a, "--pids")) {
			pids_path = v;
			continue;
		}
		long long n = number(v);
		if (n < 0)
			return usage("not a number: ", v);
		if (!strcmp(a, "--rank"))
			rank = n;
		else if (!strcmp(a, "--world"))
			world = n;
		else if (!strcmp(a, "--iters"))
			iters = n;
		else if (!strcmp(a, "--bytes"))
			bytes = n;
		else if (!strcmp(a, "--step-ms"))
			step_ms = n;
		else if (!strcmp(a, "--delay-ms"))
			delay_ms = n;
		else if (!strcmp(a, "--sleep-ms"))
			sleep_for = n;
		else if (!strcmp(a, "--wait-ms"))
			wait_ms = n;
		else
			return usage("unknown option ", a);
	}
	if (rank < 0 || world < 1 || !id_name)
		return usage("--rank, --world and --id are required", NULL);
	if (rank >= world || world > 1 << 20)
		return usage("need 0 <= rank < world", NULL);
	if (strlen(id_name) > sizeof(ncclUniqueId))
		return usage("--id longer than 128 bytes: ", id_name);
	rank_no = (int)rank;

	if (!dir[0]) {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0) {
			fprintf(stderr, "nccl_rank: cannot read /proc/self/exe\n");
			return 73;
		}
		exe[n] = 0;
		snprintf(dir, sizeof(dir), "%s", dirname(exe));
	}
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/libcudart.so.13", dir);
	void *rt = dlopen(path, RTLD_NOW);
	if (!rt) {
		fprintf(stderr, "nccl_rank: %s\n", dlerror());
		return 73;
	}
	snprintf(path, sizeof(path), "%s/libnccl.so.2", dir);
	void *nccl = dlopen(path, RTLD_NOW);
	if (!nccl) {
		fprintf(stderr, "nccl_rank: %s\n", dlerror());
		return 73;
	}

	fn_launch cudaLaunchKernel = (fn_launch)sym(rt, "cudaLaunchKernel");
	fn_stream_sync cudaStreamSynchronize = (fn_stream_sync)sym(rt, "cudaStreamSynchronize");
	fn_get_version ncclGetVersion = (fn_get_version)sym(nccl, "ncclGetVersion");
	error_string = (fn_error_string)sym(nccl, "ncclGetErrorString");
	fn_init_rank ncclCommInitRank = (fn_init_rank)sym(nccl, "ncclCommInitRank");
	fn_init_rank_config ncclCommInitRankConfig =
		(fn_init_rank_config)sym(nccl, "ncclCommInitRankConfig");
	fn_comm_query ncclCommCount = (fn_comm_query)sym(nccl, "ncclCommCount");
	fn_comm_query ncclCommUserRank = (fn_comm_query)sym(nccl, "ncclCommUserRank");
	fn_comm_destroy ncclCommDestroy = (fn_comm_destroy)sym(nccl, "ncclCommDestroy");
	fn_comm_split ncclCommSplit = (fn_comm_split)sym(nccl, "ncclCommSplit");
	fn_all_reduce ncclAllReduce = (fn_all_reduce)sym(nccl, "ncclAllReduce");
	fn_broadcast ncclBroadcast = (fn_broadcast)sym(nccl, "ncclBroadcast");
	fn_all_gather ncclAllGather = (fn_all_gather)sym(nccl, "ncclAllGather");
	fn_reduce_scatter ncclReduceScatter = (fn_reduce_scatter)sym(nccl, "ncclReduceScatter");
	fn_send ncclSend = (fn_send)sym(nccl, "ncclSend");
	fn_recv ncclRecv = (fn_recv)sym(nccl, "ncclRecv");
	fn_group ncclGroupStart = (fn_group)sym(nccl, "ncclGroupStart");
	fn_group ncclGroupEnd = (fn_group)sym(nccl, "ncclGroupEnd");

	if (pids_path) {
		FILE *f = fopen(pids_path, "a");
		if (!f) {
			fprintf(stderr, "nccl_rank: cannot open %s\n", pids_path);
			return 64;
		}
		fprintf(f, "rank %d pid %d\n", rank_no, (int)getpid());
		fclose(f);
	}
	sleep_ms((long)wait_ms);

	size_t count = (size_t)bytes / 4;
	size_t part = count / (size_t)world;
	void *sendbuf = malloc(bytes ? (size_t)bytes : 1);
	void *recvbuf = malloc(bytes ? (size_t)bytes : 1);
	if (!sendbuf || !recvbuf) {
		fprintf(stderr, "nccl_rank: out of memory\n");
		return 74;
	}
	memset(sendbuf, 0, bytes ? (size_t)bytes : 1);

	int version = 0;
	check("ncclGetVersion", ncclGetVersion(&version));
	ncclUniqueId id;
	memset(&id, 0, sizeof(id));
	memcpy(id.internal, id_name, strlen(id_name));
	ncclComm_t comm = NULL;
	if (use_config) {
		/* Zeroed, so every field means "default" (NCCL_CONFIG_UNDEF_INT is
		 * INT_MIN in real NCCL, which the stand-in does not read). */
		static unsigned char config[256];
		check("ncclCommInitRankConfig",
		      ncclCommInitRankConfig(&comm, (int)world, id, rank_no, config));
	} else {
		check("ncclCommInitRank", ncclCommInitRank(&comm, (int)world, id, rank_no));
	}
	int got_world = -1, got_rank = -1;
	check("ncclCommCount", ncclCommCount(comm, &got_world));
	check("ncclCommUserRank", ncclCommUserRank(comm, &got_rank));
	if (got_world != world || got_rank != rank) {
		fprintf(stderr, "nccl_rank: rank %d: communicator says rank %d of %d, want %d of %lld\n",
			rank_no, got_rank, got_world, rank_no, world);
		return 75;
	}
	if (split) {
		ncclComm_t sub = NULL;
		check("ncclCommSplit", ncclCommSplit(comm, 0, rank_no, &sub, NULL));
		check("ncclAllReduce (split)",
		      ncclAllReduce(sendbuf, recvbuf, count, NCCL_FLOAT32, NCCL_SUM, sub, STREAM));
		check("ncclCommDestroy (split)", ncclCommDestroy(sub));
	}

	dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
	long long allreduce = 0;
	long long t0 = now_ns();
	for (long long i = 0; i < iters; i++) {
		cudaLaunchKernel((const void *)dummy_kernel, grid, block, NULL, 0, STREAM);
		spin_ms((long)(step_ms + delay_ms));
		sleep_ms((long)sleep_for);
		check("ncclAllReduce",
		      ncclAllReduce(sendbuf, recvbuf, count, NCCL_FLOAT32, NCCL_SUM, comm, STREAM));
		allreduce++;
		if (mix) {
			int next = (int)((rank + 1) % world), prev = (int)((rank + world - 1) % world);
			check("ncclAllGather",
			      ncclAllGather(sendbuf, recvbuf, part, NCCL_FLOAT32, comm, STREAM));
			check("ncclBroadcast",
			      ncclBroadcast(sendbuf, recvbuf, count, NCCL_FLOAT32, 0, comm, STREAM));
			check("ncclReduceScatter",
			      ncclReduceScatter(sendbuf, recvbuf, part, NCCL_FLOAT32, NCCL_SUM, comm,
						STREAM));
			check("ncclGroupStart", ncclGroupStart());
			check("ncclSend", ncclSend(sendbuf, count, NCCL_FLOAT32, next, comm, STREAM));
			check("ncclRecv", ncclRecv(recvbuf, count, NCCL_FLOAT32, prev, comm, STREAM));
			check("ncclGroupEnd", ncclGroupEnd());
		}
		cudaStreamSynchronize(STREAM);
	}
	long long t1 = now_ns();
	check("ncclCommDestroy", ncclCommDestroy(comm));
	free(sendbuf);
	free(recvbuf);
	printf("nccl_rank rank=%d world=%lld iters=%lld allreduce=%lld elapsed_ms=%.1f\n", rank_no,
	       world, iters, allreduce, (double)(t1 - t0) / 1e6);
	return 0;
}
