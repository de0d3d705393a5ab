/*
 * Stand-in for libnccl.so.2: the NCCL entry points ingero probes, with the
 * real names and argument lists (as NCCL 2.28's nccl.h declares them), doing
 * controllable, deterministic fake work. No data moves: the buffers are
 * never read or written, only their sizes count.
 *
 * Communicators
 *   ncclCommInitRank / ncclCommInitRankConfig / ncclCommInitRankScalable
 *     (commIds[0]) with nranks > 1 make a communicator shared by the
 *     processes that pass the same unique id: a POSIX shared-memory object
 *     "/ingero-standin-nccl-<64-bit FNV-1a of the 128 id bytes, hex>" holds
 *     its counters. Init is a barrier: it returns once all nranks ranks have
 *     joined (each rank's pid is in the object; a slot held by a dead
 *     process, from a rank killed in an earlier init, is taken over). The
 *     ranks unlink the name as soon as all have joined (every rank has it
 *     mapped by then), so nothing is left in /dev/shm after a run, even one
 *     whose ranks are killed mid-run; an init that times out unlinks it too.
 *   ncclCommInitAll and nranks == 1 make in-process communicators: their
 *     collectives wait for nobody, they only take the transfer time.
 *   ncclCommSplit (simplified): the new communicator has the parent's rank
 *     and size whatever color and key say; every rank of the parent must
 *     call it with the same color (color -1, NCCL_SPLIT_NOCOLOR, gives
 *     *newcomm = NULL). Its shared object is named from the parent's id, the
 *     number of earlier splits of the parent and the color.
 *   ncclCommCuDevice gives the rank (one GPU per rank), or devlist[i] (else
 *     i) for ncclCommInitAll.
 *
 * Collectives (ncclAllReduce, ncclBroadcast, ncclReduce, ncclAllGather,
 * ncclReduceScatter) on a shared communicator are barriers: each rank
 * records its arrival (CLOCK_MONOTONIC) in the slot of the collective's
 * sequence number, sleeps in ~20 us naps (off-CPU) until all ranks have
 * arrived, then sleeps until the same absolute release time on every rank:
 * the latest arrival + the transfer time, so all ranks return at the same
 * instant. The transfer time is bytes / bandwidth, bytes being the count
 * argument (sendcount for ncclAllGather, recvcount for ncclReduceScatter)
 * times the size of the data type; ranks are expected to pass the same
 * count, as with real NCCL. ncclSend / ncclRecv take the transfer time of
 * their own bytes (no pairing). ncclGroupStart / ncclGroupEnd only count
 * nesting (per thread); ncclGroupEnd returns ncclSuccess.
 *
 * Errors: ncclInvalidArgument (4) for a NULL communicator (or one already
 * destroyed, as far as can be told), a bad data type, rank, root or peer; ncclInvalidUsage (5) for a call on a
 * finalized communicator; ncclSystemError (2), with a line on stderr, when
 * the other ranks do not arrive in time (the communicator then stays
 * broken: its later calls fail at once with the same code).
 *
 * Environment
 *   INGERO_STANDIN_NCCL_GBPS        bandwidth in GB/s (1e9 bytes/s) for the
 *                                   transfer time (default 10; 0 or less:
 *                                   transfers take no time)
 *   INGERO_STANDIN_NCCL_TIMEOUT_MS  how long init and each collective wait
 *                                   for the other ranks (default 30000)
 *   INGERO_STANDIN_NCCL_LOG=FILE    append one line per collective:
 *                                   "pid seq arrive_ns release_ns return_ns"
 *                                   (seq counts the collectives of one
 *                                   communicator from 0; times are
 *                                   CLOCK_MONOTONIC ns)
 *
 * Every exported function makes one real call of a static helper, never of
 * another exported function, with arguments of its own, so none is folded
 * into another (a uprobe on one fires only for calls of it) and each starts
 * with push %rbp (see HELPER below).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Types as nccl.h declares them (the enums as ints). */
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef void *cudaStream_t;
typedef struct ncclConfig ncclConfig_t; /* opaque here: only pointers pass */

#define ncclSuccess 0
#define ncclUnhandledCudaError 1
#define ncclSystemError 2
#define ncclInternalError 3
#define ncclInvalidArgument 4
#define ncclInvalidUsage 5
#define ncclRemoteError 6
#define ncclInProgress 7

#define STANDIN_NCCL_VERSION 22809
#define SPLIT_NOCOLOR (-1)
#define SLOTS 64
#define NAP_NS 20000L
#define COMM_MAGIC 0x6e63636c5344ULL

/* One barrier slot, used by the collectives whose seq % SLOTS is its index. */
struct slot {
	_Atomic unsigned long long arrived; /* arrivals over every use of the slot */
	_Atomic long long latest;           /* latest arrival time (only grows) */
	char pad[48];
};

/* The shared-memory object behind a multi-process communicator. All zero is
 * its initial state, so whichever rank creates it needs no set-up. */
struct shared {
	_Atomic int nranks;                 /* 0 until the first rank sets it */
	_Atomic int ready;                  /* 1 once all ranks have joined */
	char pad[56];
	struct slot slot[SLOTS];
	_Atomic int pid[];                  /* pid of each rank, 0 if none yet */
};

struct ncclComm {
	unsigned long long magic;
	int rank, nranks, device;
	int finalized, broken;
	unsigned long long key;   /* hash of the unique id (0 for local ones) */
	unsigned long long seq;   /* collectives made so far */
	unsigned long long splits;
	struct shared *sh;        /* NULL: in-process communicator */
	size_t map_len;
};

static __thread int group_depth;

/*
 * Each exported function only calls a HELPER (never inlined) and passes its
 * result through leave(), an empty asm after the call, so the call is a real
 * one, not a tail jump: the function then needs its frame from the start and
 * its first instruction is push %rbp (a function that only tests and returns,
 * or ends in a tail jump, gets no frame, or gets it after its first tests).
 * The arguments differ between any two of them, so none is folded into
 * another.
 */
#define HELPER static __attribute__((noinline))

static inline ncclResult_t leave(ncclResult_t r)
{
	__asm__ volatile("" : "+r"(r));
	return r;
}

static inline const char *leave_str(const char *s)
{
	__asm__ volatile("" : "+r"(s));
	return s;
}

/* ---- small helpers ---- */

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(long long t)
{
	struct timespec ts = { (time_t)(t / 1000000000LL), (long)(t % 1000000000LL) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void nap(void)
{
	struct timespec ts = { 0, NAP_NS };
	nanosleep(&ts, NULL);
}

static long long timeout_ns(void)
{
	static long long ns;
	if (!ns) {
		const char *v = getenv("INGERO_STANDIN_NCCL_TIMEOUT_MS");
		long long ms = v && *v ? strtoll(v, NULL, 10) : 30000;
		ns = (ms > 0 ? ms : 30000) * 1000000LL;
	}
	return ns;
}

static double bandwidth_gbps(void)
{
	static double gbps = -1e300;
	if (gbps == -1e300) {
		const char *v = getenv("INGERO_STANDIN_NCCL_GBPS");
		char *end = NULL;
		double g = v && *v ? strtod(v, &end) : 10.0;
		if (v && *v && end == v)
			g = 10.0;
		gbps = g;
	}
	return gbps;
}

/* Nanoseconds `bytes` take at the configured bandwidth (1 GB/s = 1 byte/ns). */
static long long transfer_ns(size_t bytes)
{
	double g = bandwidth_gbps();
	if (g <= 0)
		return 0;
	return (long long)((double)bytes / g);
}

/* Size of one element of `dt`, 0 for an unknown type. */
static size_t type_size(ncclDataType_t dt)
{
	switch (dt) {
	case 0: /* ncclInt8 */
	case 1: /* ncclUint8 */
	case 10: /* ncclFloat8e4m3 */
	case 11: /* ncclFloat8e5m2 */
		return 1;
	case 6: /* ncclFloat16 */
	case 9: /* ncclBfloat16 */
		return 2;
	case 2: /* ncclInt32 */
	case 3: /* ncclUint32 */
	case 7: /* ncclFloat32 */
		return 4;
	case 4: /* ncclInt64 */
	case 5: /* ncclUint64 */
	case 8: /* ncclFloat64 */
		return 8;
	default:
		return 0;
	}
}

static unsigned long long fnv1a(unsigned long long h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

static unsigned long long splitmix64(unsigned long long *s)
{
	unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void shm_name(char *buf, size_t len, unsigned long long key)
{
	snprintf(buf, len, "/ingero-standin-nccl-%016llx", key);
}

/* Appends a line to INGERO_STANDIN_NCCL_LOG, if set, with one write(). */
static void log_collective(unsigned long long seq, long long arrive, long long release,
			   long long ret)
{
	static int fd = -2;
	if (fd == -2) {
		const char *path = getenv("INGERO_STANDIN_NCCL_LOG");
		fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
				   : -1;
	}
	if (fd < 0)
		return;
	char line[128];
	int n = snprintf(line, sizeof(line), "%d %llu %lld %lld %lld\n", (int)getpid(), seq,
			 arrive, release, ret);
	if (n > 0 && write(fd, line, (size_t)n) < 0)
		return;
}

/* Waits (off-CPU) until *ctr >= target; -1 once `deadline` has passed. */
static int wait_count(_Atomic unsigned long long *ctr, unsigned long long target,
		      long long deadline)
{
	while (atomic_load(ctr) < target) {
		if (now_ns() > deadline)
			return -1;
		nap();
	}
	return 0;
}

static void atomic_max_ll(_Atomic long long *p, long long v)
{
	long long cur = atomic_load(p);
	while (cur < v && !atomic_compare_exchange_weak(p, &cur, v))
		;
}

static int comm_ok(const struct ncclComm *c)
{
	return c && c->magic == COMM_MAGIC;
}

static struct ncclComm *comm_new(int rank, int nranks, int device)
{
	struct ncclComm *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->magic = COMM_MAGIC;
	c->rank = rank;
	c->nranks = nranks;
	c->device = device;
	return c;
}

static void comm_free(struct ncclComm *c)
{
	if (c->sh)
		munmap(c->sh, c->map_len);
	c->magic = 0;
	free(c);
}

static int process_alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/*
 * How many ranks have joined `sh`: all nranks only once every rank's slot
 * holds a live process (a slot of a dead one counts as empty, to be taken).
 */
static int ranks_present(struct shared *sh, int nranks)
{
	int n = 0;
	for (int r = 0; r < nranks; r++)
		n += atomic_load(&sh->pid[r]) != 0;
	if (n < nranks)
		return n;
	for (int r = 0; r < nranks; r++)
		n -= !process_alive(atomic_load(&sh->pid[r]));
	return n;
}

/*
 * Joins the shared communicator `key` as `rank` of `nranks` and waits for
 * the others (the init barrier). `fn` names the caller in messages.
 */
static ncclResult_t join_shared(const char *fn, struct ncclComm *c, unsigned long long key)
{
	char name[64];
	shm_name(name, sizeof(name), key);
	size_t len = sizeof(struct shared) + (size_t)c->nranks * sizeof(_Atomic int);
	int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
	if (fd < 0) {
		fprintf(stderr, "%s (stand-in): shm_open %s: %s\n", fn, name, strerror(errno));
		return ncclSystemError;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || ((size_t)st.st_size < len && ftruncate(fd, (off_t)len) < 0)) {
		fprintf(stderr, "%s (stand-in): sizing %s: %s\n", fn, name, strerror(errno));
		close(fd);
		return ncclSystemError;
	}
	struct shared *sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (sh == MAP_FAILED) {
		fprintf(stderr, "%s (stand-in): mmap %s: %s\n", fn, name, strerror(errno));
		return ncclSystemError;
	}
	c->sh = sh;
	c->map_len = len;
	c->key = key;

	int expect = 0;
	if (!atomic_compare_exchange_strong(&sh->nranks, &expect, c->nranks) &&
	    expect != c->nranks) {
		fprintf(stderr, "%s (stand-in): rank %d says %d ranks, another said %d\n", fn,
			c->rank, c->nranks, expect);
		return ncclInvalidArgument;
	}
	int me = (int)getpid(), held = 0;
	while (!atomic_compare_exchange_strong(&sh->pid[c->rank], &held, me)) {
		/* Taken: by a live process, an error; by a dead one (a rank killed
		 * in init, which left the object behind), take its place. */
		if (process_alive(held)) {
			fprintf(stderr, "%s (stand-in): rank %d already taken by pid %d\n", fn,
				c->rank, held);
			return ncclInvalidArgument;
		}
	}
	long long deadline = now_ns() + timeout_ns();
	int present;
	/* `ready` lets a rank that sees the others only after one of them has
	 * gone on (and perhaps exited) know that they all had joined. */
	while (!atomic_load(&sh->ready) && (present = ranks_present(sh, c->nranks)) < c->nranks) {
		if (now_ns() > deadline) {
			fprintf(stderr,
				"%s (stand-in): rank %d of %d: only %d ranks joined before the timeout\n",
				fn, c->rank, c->nranks, present);
			atomic_compare_exchange_strong(&sh->pid[c->rank], &me, 0);
			shm_unlink(name); /* a retry starts from a fresh object */
			return ncclSystemError;
		}
		nap();
	}
	int was = 0;
	if (atomic_compare_exchange_strong(&sh->ready, &was, 1))
		shm_unlink(name); /* every rank has it mapped: the name is no longer needed */
	return ncclSuccess;
}

/* Common body of the InitRank variants. */
HELPER ncclResult_t init_rank(const char *fn, ncclComm_t *comm, int nranks, const void *id,
			      int rank)
{
	if (!comm || !id || nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	*comm = NULL;
	struct ncclComm *c = comm_new(rank, nranks, rank);
	if (!c)
		return ncclSystemError;
	if (nranks > 1) {
		ncclResult_t r = join_shared(fn, c, fnv1a(FNV_BASIS, id, sizeof(ncclUniqueId)));
		if (r != ncclSuccess) {
			comm_free(c);
			return r;
		}
	}
	*comm = c;
	return ncclSuccess;
}

/* Common body of the collectives; `root` counts only if `has_root`. */
HELPER ncclResult_t collective(const char *fn, ncclComm_t c, size_t count, ncclDataType_t dt,
			       int has_root, int root)
{
	if (!comm_ok(c))
		return ncclInvalidArgument;
	size_t size = type_size(dt);
	if (!size || (has_root && (root < 0 || root >= c->nranks)))
		return ncclInvalidArgument;
	if (c->finalized)
		return ncclInvalidUsage;
	if (c->broken) {
		fprintf(stderr, "%s (stand-in): rank %d: communicator broken by a timeout\n", fn,
			c->rank);
		return ncclSystemError;
	}
	long long xfer = transfer_ns(count * size);
	unsigned long long seq = c->seq++;
	long long arrive = now_ns(), release;
	if (!c->sh) {
		release = arrive + xfer;
	} else {
		/*
		 * Use u = seq / SLOTS of slot seq % SLOTS is complete at (u + 1) * nranks
		 * arrivals. No rank can arrive at use u + 1 (collective seq + SLOTS)
		 * before every rank has arrived at seq + SLOTS - 1, hence has left seq:
		 * the counters never need a reset, and `latest` (which only grows) holds
		 * use u's latest arrival while anyone still reads it.
		 */
		struct slot *s = &c->sh->slot[seq % SLOTS];
		unsigned long long target = (seq / SLOTS + 1) * (unsigned long long)c->nranks;
		atomic_max_ll(&s->latest, arrive);
		atomic_fetch_add(&s->arrived, 1);
		if (wait_count(&s->arrived, target, arrive + timeout_ns()) < 0) {
			fprintf(stderr,
				"%s (stand-in): rank %d of %d: the other ranks did not arrive at "
				"collective %llu in time\n",
				fn, c->rank, c->nranks, seq);
			c->broken = 1;
			return ncclSystemError;
		}
		release = atomic_load(&s->latest) + xfer;
	}
	sleep_until(release);
	log_collective(seq, arrive, release, now_ns());
	return ncclSuccess;
}

/* Common body of ncclSend / ncclRecv. */
HELPER ncclResult_t point_to_point(const char *fn, ncclComm_t c, size_t count,
				   ncclDataType_t dt, int peer)
{
	if (!comm_ok(c))
		return ncclInvalidArgument;
	size_t size = type_size(dt);
	if (!size || peer < 0 || peer >= c->nranks)
		return ncclInvalidArgument;
	if (c->finalized)
		return ncclInvalidUsage;
	if (c->broken) {
		fprintf(stderr, "%s (stand-in): rank %d: communicator broken by a timeout\n", fn,
			c->rank);
		return ncclSystemError;
	}
	sleep_until(now_ns() + transfer_ns(count * size));
	return ncclSuccess;
}

/* Common body of Finalize / Destroy / Abort. */
HELPER ncclResult_t comm_end(const char *fn, ncclComm_t c, int finalize_only)
{
	if (!comm_ok(c)) {
		fprintf(stderr, "%s (stand-in): %s communicator\n", fn, c ? "not a" : "NULL");
		return ncclInvalidArgument;
	}
	if (finalize_only) {
		c->finalized = 1;
		return ncclSuccess;
	}
	comm_free(c);
	return ncclSuccess;
}

HELPER ncclResult_t comm_query(const struct ncclComm *c, int *out, int what)
{
	if (!comm_ok(c) || !out)
		return ncclInvalidArgument;
	*out = what == 0 ? c->nranks : what == 1 ? c->rank : c->device;
	return ncclSuccess;
}

HELPER ncclResult_t get_version(int *version)
{
	if (!version)
		return ncclInvalidArgument;
	*version = STANDIN_NCCL_VERSION;
	return ncclSuccess;
}

HELPER ncclResult_t unique_id(ncclUniqueId *uniqueId)
{
	static _Atomic unsigned long long calls;
	if (!uniqueId)
		return ncclInvalidArgument;
	unsigned long long s = ((unsigned long long)getpid() << 32) ^ (unsigned long long)now_ns() ^
			       (atomic_fetch_add(&calls, 1) * 0xd1b54a32d192ed03ULL);
	for (size_t i = 0; i < sizeof(uniqueId->internal); i += 8) {
		unsigned long long w = splitmix64(&s);
		memcpy(uniqueId->internal + i, &w, 8);
	}
	return ncclSuccess;
}

HELPER const char *error_string(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error";
	case ncclSystemError: return "unhandled system error (stand-in: a rank did not arrive in time?)";
	case ncclInternalError: return "internal error";
	case ncclInvalidArgument: return "invalid argument";
	case ncclInvalidUsage: return "invalid usage";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

HELPER ncclResult_t init_scalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				  const ncclUniqueId *commIds)
{
	if (nId < 1 || !commIds)
		return ncclInvalidArgument;
	return init_rank("ncclCommInitRankScalable", newcomm, nranks, commIds, myrank);
}

HELPER ncclResult_t init_all(ncclComm_t *comms, int ndev, const int *devlist)
{
	if (!comms || ndev < 1)
		return ncclInvalidArgument;
	for (int i = 0; i < ndev; i++) {
		comms[i] = comm_new(i, ndev, devlist ? devlist[i] : i);
		if (!comms[i]) {
			while (i-- > 0)
				comm_free(comms[i]);
			return ncclSystemError;
		}
	}
	return ncclSuccess;
}

HELPER ncclResult_t comm_split(ncclComm_t comm, int color, ncclComm_t *newcomm)
{
	if (!comm_ok(comm) || !newcomm || color < SPLIT_NOCOLOR)
		return ncclInvalidArgument;
	*newcomm = NULL;
	if (comm->finalized)
		return ncclInvalidUsage;
	unsigned long long nth = comm->splits++;
	if (color == SPLIT_NOCOLOR)
		return ncclSuccess;
	struct ncclComm *c = comm_new(comm->rank, comm->nranks, comm->device);
	if (!c)
		return ncclSystemError;
	if (comm->sh) {
		unsigned long long k = fnv1a(FNV_BASIS, &comm->key, sizeof(comm->key));
		k = fnv1a(k, &nth, sizeof(nth));
		k = fnv1a(k, &color, sizeof(color));
		ncclResult_t r = join_shared("ncclCommSplit", c, k);
		if (r != ncclSuccess) {
			comm_free(c);
			return r;
		}
	}
	*newcomm = c;
	return ncclSuccess;
}

/* ncclGroupStart (+1) / ncclGroupEnd (-1): nesting depth of this thread. */
HELPER ncclResult_t group(int delta)
{
	if (group_depth + delta >= 0)
		group_depth += delta;
	return ncclSuccess;
}

/* ---- the exported API ---- */

ncclResult_t ncclGetVersion(int *version)
{
	return leave(get_version(version));
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	return leave(unique_id(uniqueId));
}

const char *ncclGetErrorString(ncclResult_t result)
{
	return leave_str(error_string(result));
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	return leave(init_rank("ncclCommInitRank", comm, nranks, &commId, rank));
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	(void)config; /* always blocking; every setting ignored */
	return leave(init_rank("ncclCommInitRankConfig", comm, nranks, &commId, rank));
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				      ncclUniqueId *commIds, ncclConfig_t *config)
{
	(void)config;
	return leave(init_scalable(newcomm, nranks, myrank, nId, commIds));
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	return leave(init_all(comms, ndev, devlist));
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config)
{
	(void)key; /* the new communicator keeps the parent's rank */
	(void)config;
	return leave(comm_split(comm, color, newcomm));
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	return leave(comm_end("ncclCommFinalize", comm, 1));
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	return leave(comm_end("ncclCommDestroy", comm, 0));
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return leave(comm_end("ncclCommAbort", comm, 0));
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	return leave(comm_query(comm, count, 0));
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	return leave(comm_query(comm, rank, 1));
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	return leave(comm_query(comm, device, 2));
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   cudaStream_t stream)
{
	(void)sendbuff;
	(void)recvbuff;
	(void)op;
	(void)stream;
	return leave(collective("ncclAllReduce", comm, count, datatype, 0, 0));
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff;
	(void)recvbuff;
	(void)stream;
	return leave(collective("ncclBroadcast", comm, count, datatype, 1, root));
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			cudaStream_t stream)
{
	(void)sendbuff;
	(void)recvbuff;
	(void)op;
	(void)stream;
	return leave(collective("ncclReduce", comm, count, datatype, 1, root));
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff;
	(void)recvbuff;
	(void)stream;
	return leave(collective("ncclAllGather", comm, sendcount, datatype, 0, 0));
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	(void)sendbuff;
	(void)recvbuff;
	(void)op;
	(void)stream;
	return leave(collective("ncclReduceScatter", comm, recvcount, datatype, 0, 0));
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff;
	(void)stream;
	return leave(point_to_point("ncclSend", comm, count, datatype, peer));
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		      ncclComm_t comm, cudaStream_t stream)
{
	(void)recvbuff;
	(void)stream;
	return leave(point_to_point("ncclRecv", comm, count, datatype, peer));
}

ncclResult_t ncclGroupStart(void)
{
	return leave(group(1));
}

ncclResult_t ncclGroupEnd(void)
{
	return leave(group(-1));
}
