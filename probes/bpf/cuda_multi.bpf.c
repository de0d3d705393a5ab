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

SEC("uprobe.multi") int cuda_enter(struct ingero_regs *ctx)
{
	u64 id = bpf_get_current_pid_tgid();
	if (!is_tracked((u32)(id >> 32)))
		return 0;
	u32 op = (u32)bpf_get_attach_cookie(ctx);
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

char LICENSE[] SEC("license") = "GPL";
