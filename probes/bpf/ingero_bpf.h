/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0 */
/*
 * The few BPF definitions the ingero kernel programs need, written out so the
 * object builds with nothing but clang (no libbpf headers, no vmlinux.h).
 *
 * Helper numbers and constants are part of the kernel's stable UAPI.
 */
#ifndef INGERO_BPF_H
#define INGERO_BPF_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed int s32;
typedef signed long long s64;

#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))

/* BTF-style map definitions, as libbpf and aya both parse them. */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

/* Map types (enum bpf_map_type). */
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_RINGBUF 27

/* Flags. */
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_RB_NO_WAKEUP 1
#define BPF_F_USER_STACK (1ULL << 8)

/* Helpers (enum bpf_func_id). */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
                                   u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
static u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_get_current_comm)(void *buf, u32 size) = (void *)16;
static u64 (*bpf_jiffies64)(void) = (void *)118;
static long (*bpf_probe_read_user)(void *dst, u32 size, const void *src) = (void *)112;
static long (*bpf_get_stack)(void *ctx, void *buf, u32 size, u64 flags) = (void *)67;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, u64 size, u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, u64 flags) = (void *)132;

/*
 * User registers at a uprobe, x86-64 layout of the kernel's struct pt_regs
 * (the order is ABI: it is what ptrace and perf expose).
 */
#if defined(__TARGET_ARCH_x86)
struct ingero_regs {
	u64 r15, r14, r13, r12, bp, bx, r11, r10;
	u64 r9, r8, ax, cx, dx, si, di, orig_ax;
	u64 ip, cs, flags, sp, ss;
};
#else
#error "ingero probes are written for x86-64 (define __TARGET_ARCH_x86)"
#endif

/*
 * The task fields the tracepoint programs read. preserve_access_index makes
 * clang emit CO-RE relocations, so the loader fixes offsets from kernel BTF.
 */
struct task_struct {
	int pid;
	int tgid;
	int exit_code;
} __attribute__((preserve_access_index));

#endif
