/*
 * Stand-in for libnvidia-ml.so.1: the NVML entry points ingero's GPU sampler
 * calls (through nvml-wrapper), answering from environment variables so a
 * test knows the truth by construction. Read once per nvmlInit*:
 *
 *   STANDIN_NVML_FAIL=init        nvmlInit* fails (NVML_ERROR_DRIVER_NOT_LOADED)
 *   STANDIN_NVML_DEVICES=N        number of GPUs (default 1, at most 8)
 *   STANDIN_NVML_PERIOD_MS=MS     driver sample period (default 200)
 *   STANDIN_NVML_UTIL=LIST        GPU utilisation % of sample k = LIST[k % len],
 *                                 LIST = "10,20,30" or "@FILE" (numbers separated
 *                                 by commas or white space); default "0"
 *   STANDIN_NVML_MEM_UTIL=LIST    the same for memory-controller utilisation
 *   STANDIN_NVML_PID_UTIL=LIST    "PID:SM:MEM,PID:SM:MEM": per-process samples,
 *                                 one per pid every STANDIN_NVML_PID_PERIOD_MS
 *                                 (default 500) on every device
 *   STANDIN_NVML_RING=N           samples the driver keeps per series (default
 *                                 100): older ones are gone, as in the driver
 *   STANDIN_NVML_NOT_SUPPORTED=LIST  fields that answer NVML_ERROR_NOT_SUPPORTED,
 *                                 among memory, pcie, clock, power, throttle,
 *                                 samples, process, compute
 *   STANDIN_NVML_COMPUTE=LIST     "PID:BYTES,PID:BYTES": compute processes of
 *                                 device 0 and the GPU memory each holds
 *                                 (BYTES -1: the driver does not say)
 *
 * Like the real library, nvmlInit* and nvmlShutdown are counted: only the
 * first nvmlInit reads the environment and only the last nvmlShutdown ends
 * it, so two users in one process (a capture's sampler and a process
 * listing) do not reset each other.
 *
 * Samples are laid on a grid from the nvmlInit time t0 (gettimeofday, as
 * the driver stamps them): device sample k is stamped t0 + (k+1) * period
 * and exists once that time has passed; the last RING of them can be read.
 * A query returns the samples stamped after its lastSeenTimeStamp, oldest
 * first, or NVML_ERROR_NOT_FOUND when there is none. Asked for the count
 * (NULL buffer), nvmlDeviceGetProcessUtilization answers
 * NVML_ERROR_INSUFFICIENT_SIZE like the real driver; nvmlDeviceGetSamples
 * answers NVML_SUCCESS.
 *
 * Fixed answers of device d: name "Stand-in GPU d", UUID
 * "GPU-00000000-0000-0000-0000-00000000000d", bus id "00000000:0d:00.0",
 * 80 GiB total, (d+1) GiB used, PCIe rx 1000*(d+1) KB/s, tx 500*(d+1) KB/s,
 * SM clock 1980 MHz, power 150000 mW, throttle reasons 0x1 (GPU idle).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9

#define GPU_UTILIZATION_SAMPLES 1
#define MEMORY_UTILIZATION_SAMPLES 2
#define VALUE_TYPE_UNSIGNED_INT 1
#define CLOCK_SM 1
#define PCIE_UTIL_TX_BYTES 0
#define PCIE_UTIL_RX_BYTES 1

#define MAX_DEVICES 8
#define MAX_PATTERN 4096
#define MAX_PIDS 16
#define GIB (1024ULL * 1024ULL * 1024ULL)

struct standin_device {
	unsigned int index;
};
typedef struct standin_device *nvmlDevice_t;

typedef union {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	long long sllVal;
	unsigned short usVal;
} nvmlValue_t;

typedef struct {
	unsigned long long timeStamp;
	nvmlValue_t sampleValue;
} nvmlSample_t;

typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil;
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

struct pattern {
	unsigned int values[MAX_PATTERN];
	unsigned int len;
};

struct pid_util {
	unsigned int pid, sm, mem;
};

struct compute_proc {
	unsigned int pid;
	unsigned long long bytes;
};

/* nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it. */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL

static struct {
	int ready;
	unsigned long long t0_us;
	unsigned long long period_us;
	unsigned long long pid_period_us;
	unsigned long long ring;
	unsigned int devices;
	struct pattern util, mem_util;
	struct pid_util pids[MAX_PIDS];
	unsigned int npids;
	struct compute_proc compute[MAX_PIDS];
	unsigned int ncompute;
	unsigned int inits;
	char not_supported[256];
	struct standin_device handles[MAX_DEVICES];
} st;

static unsigned long long now_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
}

static long env_long(const char *name, long fallback)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return fallback;
	return strtol(v, NULL, 10);
}

static void parse_numbers(const char *text, struct pattern *p)
{
	const char *s = text;
	char *end;
	while (*s && p->len < MAX_PATTERN) {
		while (*s == ',' || *s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
			s++;
		if (!*s)
			break;
		long v = strtol(s, &end, 10);
		if (end == s)
			break;
		p->values[p->len++] = (unsigned int)(v < 0 ? 0 : v);
		s = end;
	}
}

/* "10,20" or "@FILE"; an empty or unreadable list reads as "0". */
static void load_pattern(const char *name, struct pattern *p)
{
	const char *v = getenv(name);
	p->len = 0;
	if (v && v[0] == '@') {
		FILE *f = fopen(v + 1, "r");
		if (f) {
			static char buf[MAX_PATTERN * 8];
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			buf[n] = '\0';
			fclose(f);
			parse_numbers(buf, p);
		}
	} else if (v) {
		parse_numbers(v, p);
	}
	if (p->len == 0) {
		p->values[0] = 0;
		p->len = 1;
	}
}

static void load_pids(void)
{
	const char *v = getenv("STANDIN_NVML_PID_UTIL");
	st.npids = 0;
	while (v && *v && st.npids < MAX_PIDS) {
		unsigned int pid, sm, mem;
		int used = 0;
		if (sscanf(v, "%u:%u:%u%n", &pid, &sm, &mem, &used) != 3)
			break;
		st.pids[st.npids].pid = pid;
		st.pids[st.npids].sm = sm;
		st.pids[st.npids].mem = mem;
		st.npids++;
		v += used;
		if (*v == ',')
			v++;
	}
}

static void load_compute(void)
{
	const char *v = getenv("STANDIN_NVML_COMPUTE");
	st.ncompute = 0;
	while (v && *v && st.ncompute < MAX_PIDS) {
		unsigned int pid;
		long long bytes;
		int used = 0;
		if (sscanf(v, "%u:%lld%n", &pid, &bytes, &used) != 2)
			break;
		st.compute[st.ncompute].pid = pid;
		st.compute[st.ncompute].bytes =
			bytes < 0 ? NVML_VALUE_NOT_AVAILABLE_ULL : (unsigned long long)bytes;
		st.ncompute++;
		v += used;
		if (*v == ',')
			v++;
	}
}

/* Whether `field` is listed in STANDIN_NVML_NOT_SUPPORTED. */
static int unsupported(const char *field)
{
	size_t n = strlen(field);
	const char *s = st.not_supported;
	while ((s = strstr(s, field)) != NULL) {
		int starts = s == st.not_supported || s[-1] == ',';
		int ends = s[n] == '\0' || s[n] == ',';
		if (starts && ends)
			return 1;
		s += n;
	}
	return 0;
}

static nvmlReturn_t init(void)
{
	const char *fail = getenv("STANDIN_NVML_FAIL");
	if (fail && strcmp(fail, "init") == 0)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	if (st.ready) {
		st.inits++;
		return NVML_SUCCESS;
	}
	long devices = env_long("STANDIN_NVML_DEVICES", 1);
	st.devices = (unsigned int)(devices < 0 ? 0 : devices > MAX_DEVICES ? MAX_DEVICES : devices);
	long period = env_long("STANDIN_NVML_PERIOD_MS", 200);
	st.period_us = (unsigned long long)(period > 0 ? period : 200) * 1000ULL;
	long pid_period = env_long("STANDIN_NVML_PID_PERIOD_MS", 500);
	st.pid_period_us = (unsigned long long)(pid_period > 0 ? pid_period : 500) * 1000ULL;
	long ring = env_long("STANDIN_NVML_RING", 100);
	st.ring = (unsigned long long)(ring > 0 ? ring : 100);
	load_pattern("STANDIN_NVML_UTIL", &st.util);
	load_pattern("STANDIN_NVML_MEM_UTIL", &st.mem_util);
	load_pids();
	load_compute();
	const char *ns = getenv("STANDIN_NVML_NOT_SUPPORTED");
	snprintf(st.not_supported, sizeof(st.not_supported), "%s", ns ? ns : "");
	for (unsigned int i = 0; i < MAX_DEVICES; i++)
		st.handles[i].index = i;
	st.t0_us = now_us();
	st.ready = 1;
	st.inits = 1;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
	return init();
}

nvmlReturn_t nvmlInit(void)
{
	return init();
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	(void)flags;
	return init();
}

nvmlReturn_t nvmlShutdown(void)
{
	if (!st.ready)
		return NVML_ERROR_UNINITIALIZED;
	if (--st.inits == 0)
		st.ready = 0;
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	default:
		return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (!st.ready)
		return NVML_ERROR_UNINITIALIZED;
	if (!version || length < 20)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(version, length, "580.159.04-standin");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!st.ready)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = st.devices;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!st.ready)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= st.devices)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &st.handles[index];
	return NVML_SUCCESS;
}

/* The device behind a handle, or NULL when NVML is down or it is not ours. */
static struct standin_device *dev(nvmlDevice_t d)
{
	if (!st.ready || d < &st.handles[0] || d >= &st.handles[st.devices])
		return NULL;
	return d;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	struct standin_device *d = dev(device);
	if (!d || !name)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	snprintf(name, length, "Stand-in GPU %u", d->index);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	struct standin_device *d = dev(device);
	if (!d || !uuid)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	snprintf(uuid, length, "GPU-00000000-0000-0000-0000-%012x", d->index);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	struct standin_device *d = dev(device);
	if (!d || !pci)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	memset(pci, 0, sizeof(*pci));
	pci->bus = d->index;
	pci->pciDeviceId = 0x233510de;
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02x:00.0", d->index);
	snprintf(pci->busId, sizeof(pci->busId), "00000000:%02x:00.0", d->index);
	return NVML_SUCCESS;
}

static unsigned long long mem_used(struct standin_device *d)
{
	return (d->index + 1ULL) * GIB;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *mem)
{
	struct standin_device *d = dev(device);
	if (!d || !mem)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("memory"))
		return NVML_ERROR_NOT_SUPPORTED;
	mem->total = 80ULL * GIB;
	mem->used = mem_used(d);
	mem->free = mem->total - mem->used;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *mem)
{
	struct standin_device *d = dev(device);
	if (!d || !mem)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if ((mem->version >> 24) != 2)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (unsupported("memory"))
		return NVML_ERROR_NOT_SUPPORTED;
	mem->total = 80ULL * GIB;
	mem->reserved = 0;
	mem->used = mem_used(d);
	mem->free = mem->total - mem->used;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned int *value)
{
	struct standin_device *d = dev(device);
	if (!d || !value)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("pcie"))
		return NVML_ERROR_NOT_SUPPORTED;
	if (counter == PCIE_UTIL_RX_BYTES)
		*value = 1000 * (d->index + 1);
	else if (counter == PCIE_UTIL_TX_BYTES)
		*value = 500 * (d->index + 1);
	else
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
	struct standin_device *d = dev(device);
	if (!d || !clock)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("clock") || type != CLOCK_SM)
		return NVML_ERROR_NOT_SUPPORTED;
	*clock = 1980;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	struct standin_device *d = dev(device);
	if (!d || !power)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("power"))
		return NVML_ERROR_NOT_SUPPORTED;
	*power = 150000;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
						     unsigned long long *reasons)
{
	struct standin_device *d = dev(device);
	if (!d || !reasons)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("throttle"))
		return NVML_ERROR_NOT_SUPPORTED;
	*reasons = 0x1;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
							unsigned long long *reasons)
{
	return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

/* Newest sample index that exists at `now` on a grid of `period` from t0,
 * or -1 when none does yet. */
static long long newest(unsigned long long now, unsigned long long period)
{
	if (now < st.t0_us + period)
		return -1;
	return (long long)((now - st.t0_us) / period) - 1;
}

/* First sample index to return: after `last_seen`, within the ring. */
static long long first_after(unsigned long long last_seen, unsigned long long period,
			     long long top)
{
	long long from = top - (long long)st.ring + 1;
	if (from < 0)
		from = 0;
	if (last_seen >= st.t0_us + period) {
		long long seen = (long long)((last_seen - st.t0_us) / period) - 1;
		if (seen + 1 > from)
			from = seen + 1;
	}
	return from;
}

static unsigned long long stamp(long long k, unsigned long long period)
{
	return st.t0_us + (unsigned long long)(k + 1) * period;
}

nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, int type,
				  unsigned long long lastSeenTimeStamp, int *sampleValType,
				  unsigned int *sampleCount, nvmlSample_t *samples)
{
	struct standin_device *d = dev(device);
	if (!d || !sampleCount || !sampleValType)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("samples"))
		return NVML_ERROR_NOT_SUPPORTED;
	struct pattern *p;
	if (type == GPU_UTILIZATION_SAMPLES)
		p = &st.util;
	else if (type == MEMORY_UTILIZATION_SAMPLES)
		p = &st.mem_util;
	else
		return NVML_ERROR_NOT_SUPPORTED;
	long long top = newest(now_us(), st.period_us);
	long long from = first_after(lastSeenTimeStamp, st.period_us, top);
	if (top < 0 || from > top)
		return NVML_ERROR_NOT_FOUND;
	unsigned int n = (unsigned int)(top - from + 1);
	*sampleValType = VALUE_TYPE_UNSIGNED_INT;
	if (!samples) {
		*sampleCount = n;
		return NVML_SUCCESS;
	}
	if (n > *sampleCount)
		n = *sampleCount;
	for (unsigned int i = 0; i < n; i++) {
		long long k = from + i;
		samples[i].timeStamp = stamp(k, st.period_us);
		samples[i].sampleValue.ullVal = 0;
		samples[i].sampleValue.uiVal = p->values[(unsigned long long)k % p->len];
	}
	*sampleCount = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
					     nvmlProcessUtilizationSample_t *utilization,
					     unsigned int *processSamplesCount,
					     unsigned long long lastSeenTimeStamp)
{
	struct standin_device *d = dev(device);
	if (!d || !processSamplesCount)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("process"))
		return NVML_ERROR_NOT_SUPPORTED;
	long long top = newest(now_us(), st.pid_period_us);
	long long from = first_after(lastSeenTimeStamp, st.pid_period_us, top);
	if (top < 0 || from > top || st.npids == 0)
		return NVML_ERROR_NOT_FOUND;
	unsigned int n = (unsigned int)(top - from + 1) * st.npids;
	if (!utilization) {
		*processSamplesCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (n > *processSamplesCount)
		n = *processSamplesCount;
	for (unsigned int i = 0; i < n; i++) {
		long long k = from + i / st.npids;
		struct pid_util *u = &st.pids[i % st.npids];
		utilization[i].pid = u->pid;
		utilization[i].timeStamp = stamp(k, st.pid_period_us);
		utilization[i].smUtil = u->sm;
		utilization[i].memUtil = u->mem;
		utilization[i].encUtil = 0;
		utilization[i].decUtil = 0;
	}
	*processSamplesCount = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *util)
{
	struct standin_device *d = dev(device);
	if (!d || !util)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	long long top = newest(now_us(), st.period_us);
	unsigned long long k = top < 0 ? 0 : (unsigned long long)top;
	util->gpu = st.util.values[k % st.util.len];
	util->memory = st.mem_util.values[k % st.mem_util.len];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
						     nvmlProcessInfo_t *infos)
{
	struct standin_device *d = dev(device);
	if (!d || !infoCount)
		return d ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
	if (unsupported("compute"))
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned int n = d->index == 0 ? st.ncompute : 0;
	if (!infos || *infoCount < n) {
		*infoCount = n;
		return n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; i++) {
		infos[i].pid = st.compute[i].pid;
		infos[i].usedGpuMemory = st.compute[i].bytes;
		infos[i].gpuInstanceId = 0xFFFFFFFFu;
		infos[i].computeInstanceId = 0xFFFFFFFFu;
	}
	*infoCount = n;
	return NVML_SUCCESS;
}
