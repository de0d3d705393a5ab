/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * The CUDA probes as two multi-uprobe programs (kernel 6.6+): one entry and
 * one return program serve every function of a library, told apart by the
 * attach cookie, which is the function's catalogue id. One link per library
 * and direction replaces two perf-event links per function, so a capture
 * attaches and, above all, detaches in a fraction of the time (each classic
 * link waits for its own RCU grace period when it is released).
 *
 * The maps and the read-only configuration have the same names as in
 * ingero.bpf.c: the loader (src/multi_uprobe.rs) points these programs at the
 * maps of the main object, so both sets of programs share one state.
 */
#define INGERO_MULTI_OBJECT 1
#include "common.h"
#include "cuda.h"

/* The cookie given to this attachment point at link creation. */
static u64 (*bpf_get_attach_cookie)(void *ctx) = (void *)174;

/* Cookie bit of a link bound to one process (src/multi_uprobe.rs): the
 * kernel runs its programs for that process's threads only, so the tracked
 * table need not be asked; the low 32 bits are the catalogue id. */
#define COOKIE_SCOPED (1ULL << 32)

/* Whether a call at an attachment point with `cookie` is recorded. */
static __always_inline int call_wanted(u64 id, u64 cookie)
{
	if (cookie & COOKIE_SCOPED)
		return !is_paused();
	return is_tracked((u32)(id >> 32));
}

SEC("uprobe.multi") int cuda_enter(struct ingero_regs *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	u64 cookie = bpf_get_attach_cookie(ctx);
	if (!call_wanted(id, cookie))
		return 0;
	u32 op = (u32)cookie;
	struct call_val v = {};
	switch (op) {
#define CUDA_ENTER_CASE(name, OP_ID, SIZE, KIND, STREAM, GEOM)                   \
	case (OP_ID):                                                          \
		CALL_VAL(v, SIZE, KIND, STREAM, GEOM);                          \
		break;
	CUDA_FUNCTIONS(CUDA_ENTER_CASE)
	default:
		return 0;
	}
	call_enter(id, op, &v);
	return 0;
}

SEC("uretprobe.multi") int cuda_return(struct ingero_regs *ctx)
{
	return call_exit(ctx, (u32)bpf_get_attach_cookie(ctx));
}

/* Kernel function (6.13+): true when a session program runs at the return. */
extern _Bool bpf_session_is_return(void) __attribute__((section(".ksyms")));

/*
 * The driver launch functions under sampled launch timing (cfg_launch_sample
 * > 1), as one uprobe session (kernel 6.13+): the same program runs at entry
 * and, when the entry returned 0, at the return. An untimed launch returns
 * 1 at entry, so the kernel does not hijack its return at all: it costs one
 * trap instead of two. The loader links it to the driver launch functions
 * only (src/loader.rs).
 */
SEC("uprobe.session") int cuda_launch_session(struct ingero_regs *ctx)
{
	u64 cookie = bpf_get_attach_cookie(ctx);
	u32 op = (u32)cookie;
	if (bpf_session_is_return())
		return call_exit(ctx, op);
	u64 id = bpf_get_current_pid_tgid();
	if (!call_wanted(id, cookie))
		return 1;
	struct call_val v = {};
	/* Linked to the driver launch functions only: every other case folds
	 * into the default, so the switch is a few comparisons. */
	switch (op) {
#define CUDA_LAUNCH_CASE(name, OP_ID, SIZE, KIND, STREAM, GEOM)                  \
	case (OP_ID):                                                          \
		if (!is_driver_launch(OP_ID))                                  \
			return 1;                                              \
		CALL_VAL(v, SIZE, KIND, STREAM, GEOM);                          \
		break;
	CUDA_FUNCTIONS(CUDA_LAUNCH_CASE)
	default:
		return 1;
	}
	return launch_enter_sampled(id, op, &v);
}

/*
 * The dynamic loader's _dl_debug_state(): the empty function it calls for
 * debuggers before and after it maps or unmaps objects (every dlopen and
 * dlclose). A traced process may have mapped a new library: user space
 * reads its memory map again. Linked per process to the loader file the
 * process maps (src/loader.rs), so other processes never trap, and nothing
 * runs on any other system call or mapping.
 */
SEC("uprobe.multi/loader") int loader_state(struct ingero_regs *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	if (call_wanted(id, bpf_get_attach_cookie(ctx)))
		notice_mapped_code((u32)(id >> 32));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
