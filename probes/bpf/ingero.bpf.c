/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * The ingero kernel object: CUDA uprobes (cuda.h) and host tracepoints
 * (host.h), stack samples (stacks.h), sharing one ring buffer and one process-tree filter (common.h).
 */
#include "common.h"
#include "cuda.h"
#include "stacks.h"
#include "host.h"

/* GPL-compatible declaration, required for bpf_probe_read_user and tp_btf. */
char LICENSE[] SEC("license") = "GPL";
