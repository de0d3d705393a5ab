"""Second zoo: PyTorch workloads that each rebuild one cause of GPU idleness taken
from a real public report (the report's address is in the case's `source`).

One process runs one case. It warms up, sizes its GPU work so that the built
cause takes about `share` (default 0.6) of each step's wall time, runs a steady
phase of about --seconds (or exactly --steps steps), and writes ONE JSON line,
starting with {"zoo_case": ...}, to the standard output it was started with
(saved at start, so a case that redirects fd 1 cannot swallow it). The line
holds the parameters, the report's address and a one-sentence summary, what
each step does (`construction`), the steady phase's figures from zoo.py's
run_steps (`steady`), the cause's own time measured with time.perf_counter
around exactly the cause (`derived.cause_s`, `derived.cause_share_of_wall`),
and `expect`: what an analysis that names the cause must mention, fixed by the
construction (never read from a capture).

Each step is: the cause (the GPU queue is empty meanwhile), then k bf16
matmuls and one torch.cuda.synchronize(). k is chosen in the warm-up from the
cause's measured time: k * t_matmul ~= t_cause * (1 - share) / share.

Usage: python3 zoo2.py --case NAME [--seconds 6] [--steps N] [--set key=value ...]
       python3 zoo2.py --list
       python3 zoo2.py --cases-json        (the case table, as in cases.json)
The module imports without torch; torch is imported inside main().
"""
import argparse
import gc
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "zoo"))
import zoo  # noqa: E402  (the first zoo: mark, span, run_steps, gpu_time, busy_est)

MIB = 1 << 20

# --------------------------------------------------------------------------- the cases
# Every case: defaults (override with --set), the report it rebuilds, and what
# a correct analysis must name. `code` holds Python functions of this file (in
# which the GPU thread spends the cause's time) and kernel or library frames
# certain from the construction; `code_maybe` holds native frames that are
# likely but depend on symbols or versions on the machine.

COMMON = {"n": 8192, "share": 0.6}

CASES = {
    "gc_pauses": {
        "defaults": {"objects": 3_000_000, "ring": 1000, "garbage_pairs": 20000},
        "source": "https://github.com/dpeerlab/segger/issues/46",
        "report_summary": "An explicit gc.collect() inside the per-batch prediction loop made every "
                          "iteration traverse all live Python containers; moving it out of the loop cut "
                          "a run from 83 s to 1.4 s.",
        "expect": {"code": ["collect_garbage"], "code_maybe": ["gc_collect_main", "gc_collect_impl"],
                   "state": "on_cpu", "mechanism": "garbage_collection"},
    },
    "subprocess_per_step": {
        "defaults": {"cmd": "nvidia-smi --query-gpu=utilization.gpu,memory.used,temperature.gpu "
                            "--format=csv,noheader"},
        "source": "https://github.com/Lightning-AI/pytorch-lightning/issues/189",
        "report_summary": "Lightning logged GPU memory by calling nvidia-smi from the training loop, "
                          "which on one cluster made GPU training almost ten times slower.",
        "expect": {"code": ["run_monitor_subprocess", "_communicate", "do_sys_poll"],
                   "code_maybe": ["do_wait", "_posixsubprocess"],
                   "state": "off_cpu_blocked", "mechanism": "process_spawn"},
    },
    "checkpoint_every_step": {
        "defaults": {"layers": 8, "width": 4096},
        "source": "https://github.com/eriklindernoren/PyTorch-YOLOv3/issues/173",
        "report_summary": "The training script called torch.save(model.state_dict(), ...) on every "
                          "batch of the first epoch instead of once per checkpoint interval, making "
                          "weight saving very slow.",
        "expect": {"code": ["save_checkpoint", "_save"],
                   "code_maybe": ["generic_perform_write", "write_record", "cudaMemcpy"],
                   "state": "on_cpu", "mechanism": "checkpoint_write",
                   "state_note": "the thread is on-CPU throughout, but about half of it is inside the "
                                 "device-to-host copies of the GPU state_dict (in CUDA, pageable memory); "
                                 "derived.d2h_share_of_save_est gives the split"},
    },
    "stdout_backpressure": {
        "defaults": {"bytes_per_step": 262144, "line_bytes": 160, "reader_chunk": 16384,
                     "reader_delay_ms": 2.0},
        "source": "https://github.com/MakazhanAlpamys/Soup/issues/688",
        "report_summary": "A training process started with stdout=PIPE blocks on its next write once "
                          "the pipe is full, because only an optional log-streaming client drains it.",
        "expect": {"code": ["log_step_text", "pipe_write"], "code_maybe": ["pipe_wait_writable"],
                   "state": "off_cpu_blocked", "mechanism": "pipe_backpressure"},
    },
    "lock_contention": {
        "defaults": {"k": 8, "gap_ms": 1.0},
        "source": "https://github.com/sgl-project/sglang/pull/13550",
        "report_summary": "The scheduler's main thread blocked in get_stats() on a lock that a backup "
                          "thread held for the whole of slow storage I/O.",
        "expect": {"code": ["record_metrics_locked", "futex_wait"], "code_maybe": ["PyThread_acquire_lock_timed"],
                   "state": "off_cpu_blocked", "mechanism": "lock_contention"},
    },
    "queue_prefetch_starved": {
        "defaults": {"k": 8, "batch": 64, "dim": 1024, "maxsize": 4},
        "source": "https://github.com/wenet-e2e/wenet/pull/656",
        "report_summary": "With a small prefetch the training loop blocks waiting for batches while "
                          "the upstream pipeline is still buffering data.",
        "expect": {"code": ["next_batch_from_queue", "futex_wait"], "code_maybe": ["PyThread_acquire_lock_timed"],
                   "state": "off_cpu_blocked", "mechanism": "input_queue_starvation"},
    },
    "mask_indexing_sync": {
        "defaults": {"elements": 65536, "selects_per_step": 100},
        "source": "https://github.com/pytorch/pytorch/issues/12461",
        "report_summary": "Boolean-mask indexing such as x[mask] calls nonzero, which must copy the "
                          "element count to the host, so each use is a hidden device synchronization.",
        "expect": {"code": ["filter_by_mask", "nonzero"], "code_maybe": ["cudaStreamSynchronize", "cudaMemcpyAsync"],
                   "state": "in_cuda", "mechanism": "hidden_sync"},
    },
    "cpu_side_augment": {
        "defaults": {"batch": 64, "src": 256, "out": 224},
        "source": "https://github.com/pytorch/vision/issues/483",
        "report_summary": "With PIL image augmentation on the CPU the CPU sat near 100% while the GPU "
                          "was idle; without augmentation the GPU reached almost 100%.",
        "expect": {"code": ["augment_batch_on_cpu", "augment_images"],
                   "code_maybe": ["ImagingResample", "ImagingTransform"],
                   "state": "on_cpu", "mechanism": "cpu_preprocessing"},
    },
    "small_file_reads": {
        "defaults": {"files": 20000, "file_bytes": 4096, "reads_per_step": 2000},
        "source": "https://github.com/Fangyh09/Image2LMDB/issues/6",
        "report_summary": "Loading a dataset kept as a large number of small files was slow enough that "
                          "packing it into one LMDB file made training 1.5 times faster.",
        "expect": {"code": ["read_small_files"], "code_maybe": ["path_openat", "do_sys_openat2"],
                   "state": "on_cpu", "mechanism": "small_file_io"},
    },
    "affinity_one_core": {
        "defaults": {"workers": 4, "batch": 32, "dim": 256, "sample_ms": 1.0, "baseline_s": 1.5},
        "source": "https://github.com/pytorch/pytorch/issues/101850",
        "report_summary": "Something in the process restricted the CPU affinity that DataLoader workers "
                          "inherit, so all workers shared one core; restoring it gave a 10x speed-up.",
        "expect": {"code": ["next_batch_from_loader", "_try_get_data", "do_sys_poll"],
                   "code_maybe": [], "state": "off_cpu_blocked", "mechanism": "cpu_affinity_restriction",
                   "state_note": "blocked waiting for the workers' batch; besides, the GPU thread shares its one "
                                 "CPU with the 4 workers and is preempted by them (derived.slowdown_s counts both)"},
    },
    "empty_cache_every_step": {
        "defaults": {"sizes_mib": "512,512,256,256,128,128"},
        "source": "https://github.com/huggingface/transformers/issues/31372",
        "report_summary": "A torch.cuda.empty_cache() added to the Trainer's training step slowed "
                          "training down and was removed again.",
        "expect": {"code": ["release_cached_memory", "allocate_activations", "empty_cache"],
                   "code_maybe": ["cudaFree", "cudaMalloc", "emptyCache"],
                   "state": "in_cuda", "mechanism": "allocator_cache_flush"},
    },
    "cudnn_benchmark_dynamic_shapes": {
        "defaults": {"batch": 8, "channels": 64, "layers": 4, "min_hw": 128, "span": 192},
        "source": "https://github.com/pytorch/pytorch/issues/2759",
        "report_summary": "With cudnn.benchmark = True and a random input size each iteration, a "
                          "ResNet forward pass took 0.6-2.3 s instead of 0.02 s.",
        "expect": {"code": ["conv_on_new_shape", "cudnn"], "code_maybe": ["cudnnFind", "cudnnBackendExecute"],
                   "state": "in_cuda", "mechanism": "cudnn_autotune"},
    },
    "tensor_from_list_of_arrays": {
        "defaults": {"arrays": 128, "shape": "3,32,32"},
        "source": "https://github.com/pytorch/pytorch/issues/13918",
        "report_summary": "torch.tensor() on a list of numpy arrays is orders of magnitude slower than "
                          "converting the list to one numpy array first.",
        "expect": {"code": ["batch_from_list_of_arrays"], "code_maybe": ["recursive_store", "internal_new_from_data"],
                   "state": "on_cpu", "mechanism": "slow_tensor_construction"},
    },
    "pinned_alloc_per_step": {
        "defaults": {"mib": 256},
        "source": "https://github.com/vllm-project/vllm/pull/37006",
        "report_summary": "pin_memory() on every host-to-device copy called cudaHostAlloc, which stalled "
                          "calls for up to about 12 ms; copying straight from pageable memory fixed it.",
        "expect": {"code": ["alloc_pinned_staging", "release_pinned_cache"],
                   "code_maybe": ["cudaHostAlloc", "cudaFreeHost", "cuMemHostAlloc"],
                   "state": "in_cuda", "mechanism": "pinned_host_alloc"},
    },
    "mmap_dataset_faults": {
        "defaults": {"file_mib": 1024, "row_kib": 1024, "rows_per_step": 48},
        "source": "https://github.com/dmlc/dgl/issues/2823",
        "report_summary": "Training on MAG240M took 30 min an epoch instead of 6.5 because numpy memmap "
                          "reads from disk into memory were the bottleneck, not the GPU.",
        "expect": {"code": ["gather_rows_from_memmap", "filemap_fault"], "code_maybe": ["io_schedule"],
                   "state": "off_cpu_blocked", "mechanism": "mmap_page_faults"},
    },
    "ema_on_cpu": {
        "defaults": {"layers": 64, "width": 1024, "decay": 0.999},
        "source": "https://github.com/lucidrains/ema-pytorch/issues/5",
        "report_summary": "The EMA copy of the model was kept and updated on the CPU by iterating over "
                          "all parameters of the online model every step, leaving GPU utilization low.",
        "expect": {"code": ["update_ema_on_cpu"], "code_maybe": ["cudaMemcpyAsync", "cudaStreamSynchronize", "lerp"],
                   "state": "in_cuda", "mechanism": "ema_d2h_copies"},
    },
    "tokenize_in_loop": {
        "defaults": {"texts": 256, "words": 120, "vocab": 8000, "max_length": 256},
        "source": "https://github.com/stanford-oval/genienlp/pull/47",
        "report_summary": "Training examples were tokenized when each batch was requested, CPU-heavy "
                          "work inside the GPU training loop that the PR moved to before training.",
        "expect": {"code": ["tokenize_batch"], "code_maybe": ["encode_batch", "_batch_encode_plus", "tokenizers"],
                   "state": "on_cpu", "mechanism": "tokenization"},
    },
    "thread_oversubscription": {
        "defaults": {"threads": 0, "cpus_allowed": 4, "elements": 4_000_000, "ops": 10},
        "source": "https://github.com/vllm-project/vllm/pull/45124",
        "report_summary": "A CPU torch.concat in the engine process ran about 8x slower with the default "
                          "one intra-op thread per core than with 4 threads, from oversubscription.",
        "expect": {"code": ["cpu_preprocess_oversubscribed"], "code_maybe": ["gomp_barrier_wait", "libgomp"],
                   "state": "off_cpu_preempted", "mechanism": "thread_oversubscription",
                   "state_note": "16 runnable intra-op threads (the GPU thread is one) share 4 CPUs, so the "
                                 "GPU thread waits in the run queue for most of each parallel op"},
    },
}
for _c in CASES.values():
    _c["defaults"] = {**_c["defaults"], **COMMON}

R = {}  # the result line


def log(*a):
    print("[zoo2]", *a, file=sys.stderr, flush=True)


def io_dir():
    """Where cases put their files: ZOO2_IO_DIR, else ZOO_IO_DIR, else the current directory."""
    return os.environ.get("ZOO2_IO_DIR") or os.environ.get("ZOO_IO_DIR") or os.getcwd()


def balance_k(cause_s, mm_s, share, other_s=0.0, kmax=1000):
    """Matmuls per step so that the cause is about `share` of the step, the
    step's other host work (`other_s`) counted against the GPU's part."""
    if mm_s <= 0 or cause_s <= 0:
        return 1
    gpu_s = cause_s * (1.0 - share) / share - other_s
    return max(1, min(kmax, int(round(gpu_s / mm_s))))


def period_for(gpu_s, share):
    """Step period at which a wait of (period - gpu_s) is `share` of the step."""
    return gpu_s / (1.0 - share)


# --------------------------------------------------------------------------- causes without torch
# These are the constructed causes themselves; tests in test_zoo2.py run them
# without torch or a GPU.


class Node:
    __slots__ = ("nxt", "payload")

    def __init__(self, payload):
        self.nxt = None
        self.payload = payload


def build_cyclic_heap(objects, ring):
    """`objects` GC-tracked nodes linked into rings of `ring`: a long-lived graph of cycles."""
    heads = []
    made = 0
    while made < objects:
        m = min(ring, objects - made)
        first = prev = Node(made)
        for j in range(1, m):
            nd = Node(made + j)
            prev.nxt = nd
            prev = nd
        prev.nxt = first
        heads.append(first)
        made += m
    return heads


def make_garbage_cycles(pairs):
    """Short-lived reference cycles, as a step's temporary objects often are."""
    for _ in range(pairs):
        a = [None]
        b = [a]
        a[0] = b


def collect_garbage():
    """THE CAUSE (gc_pauses): a full collection, as an explicit per-iteration gc.collect() does."""
    return gc.collect()


class GcClock:
    """Times every collection (explicit or automatic) with gc.callbacks."""

    def __init__(self):
        self.t0 = None
        self.by_gen = {}

    def __call__(self, phase, info):
        if phase == "start":
            self.t0 = time.perf_counter()
        elif self.t0 is not None:
            g = info.get("generation", -1)
            n, s = self.by_gen.get(g, (0, 0.0))
            self.by_gen[g] = (n + 1, s + time.perf_counter() - self.t0)
            self.t0 = None

    def reset(self):
        self.by_gen = {}

    def summary(self):
        return {str(g): {"collections": n, "seconds": round(s, 6)} for g, (n, s) in sorted(self.by_gen.items())}


def monitor_argv(cmd):
    argv = cmd.split()
    if argv and shutil.which(argv[0]) is None:
        log(f"{argv[0]} not found; using /bin/true in its place")
        return ["true"]
    return argv


def run_monitor_subprocess(argv):
    """THE CAUSE (subprocess_per_step): a monitoring command run and waited for."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return r.returncode, len(r.stdout)


READER = ("import os, sys, time\n"
          "c = int(sys.argv[1]); d = float(sys.argv[2])\n"
          "while True:\n"
          "    b = os.read(0, c)\n"
          "    if not b:\n"
          "        break\n"
          "    time.sleep(d)\n")


class SlowStdoutReader:
    """fd 1 becomes the write end of a pipe drained by a slow child process.

    The child reads `chunk` bytes, then sleeps `delay_s`. Leaving restores fd 1,
    which closes the pipe, and waits for the child."""

    def __init__(self, chunk, delay_s):
        self.chunk, self.delay_s = chunk, delay_s
        self.proc = None
        self.saved = None

    def __enter__(self):
        r, w = os.pipe()
        self.proc = subprocess.Popen([sys.executable, "-c", READER, str(self.chunk), str(self.delay_s)],
                                     stdin=r, stdout=subprocess.DEVNULL, close_fds=True)
        os.close(r)
        sys.stdout.flush()
        self.saved = os.dup(1)
        os.dup2(w, 1)
        os.close(w)
        return self

    def __exit__(self, *exc):
        try:
            sys.stdout.flush()
        except OSError:
            pass
        os.dup2(self.saved, 1)
        os.close(self.saved)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        return False


def log_step_text(step, nlines, line_bytes, out=None):
    """THE CAUSE (stdout_backpressure): verbose per-step logging to stdout."""
    out = out or sys.stdout
    pad = "x" * max(0, line_bytes - 40)
    for j in range(nlines):
        print(f"step {step:7d} line {j:5d} loss=0.1234 {pad}", file=out)
    return nlines


class MetricsFlusher(threading.Thread):
    """A background thread that holds `lock` while it 'flushes' (a GIL-free wait
    standing for slow storage I/O), then releases it for `gap_s`."""

    def __init__(self, lock, hold_s, gap_s):
        super().__init__(daemon=True, name="metrics-flusher")
        self.lock, self.hold_s, self.gap_s = lock, hold_s, gap_s
        self.stop = threading.Event()
        self.holds = 0

    def run(self):
        while not self.stop.is_set():
            with self.lock:
                time.sleep(self.hold_s)
                self.holds += 1
            time.sleep(self.gap_s)


def record_metrics_locked(lock, store, value):
    """THE CAUSE (lock_contention): the GPU thread records a metric under the shared lock."""
    with lock:
        store.append(value)
        if len(store) > 10000:
            del store[:]


class Producer(threading.Thread):
    """Prefetch thread: each batch takes `period_s` to fetch (a GIL-free wait
    standing for remote or disk reads), then goes into the queue."""

    def __init__(self, q, period_s, make):
        super().__init__(daemon=True, name="prefetcher")
        self.q, self.period_s, self.make = q, period_s, make
        self.stop = threading.Event()
        self.made = 0

    def run(self):
        import queue as _queue
        while not self.stop.is_set():
            time.sleep(self.period_s)
            item = self.make(self.made)
            self.made += 1
            while not self.stop.is_set():
                try:
                    self.q.put(item, timeout=0.2)
                    break
                except _queue.Full:
                    continue


def next_batch_from_queue(q):
    """THE CAUSE (queue_prefetch_starved): take the next prefetched batch."""
    return q.get()


def make_small_files(d, count, size, seed=0):
    rng = random.Random(seed)
    block = bytes(rng.getrandbits(8) for _ in range(size))
    paths = []
    for i in range(count):
        sub = os.path.join(d, f"{i // 1000:03d}")
        if i % 1000 == 0:
            os.makedirs(sub, exist_ok=True)
        p = os.path.join(sub, f"sample_{i:06d}.bin")
        with open(p, "wb") as f:
            f.write(block[i % size:] + block[:i % size])
        paths.append(p)
    return paths


def read_small_files(paths):
    """THE CAUSE (small_file_reads): one open/read/close per sample file."""
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def write_data_file(path, nbytes, block_mib=16, seed=0):
    """A data file of `nbytes`, written, fsynced, and dropped from the page cache."""
    rng = random.Random(seed)
    block = rng.randbytes(block_mib * MIB)
    with open(path, "wb") as f:
        left = nbytes
        while left > 0:
            b = block[:min(left, len(block))]
            f.write(b)
            left -= len(b)
        f.flush()
        os.fsync(f.fileno())
    drop_file_cache(path)


def drop_file_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def gather_rows_from_memmap(open_map, rows, out):
    """THE CAUSE (mmap_dataset_faults): map the dataset file, copy the sampled
    rows (each first touch of a page faults it in from the file), unmap."""
    m = open_map()
    try:
        for j, r in enumerate(rows):
            out[j] = m[r]
    finally:
        del m
    return out


def pseudo_words(n, seed=0):
    rng = random.Random(seed)
    syl = ["ka", "lo", "mi", "tre", "su", "van", "qe", "dor", "pli", "nus", "ax", "zen", "ri", "bo",
           "hal", "ce", "gu", "fy", "ost", "wel"]
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(syl) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def make_texts(words, count, length, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(length)) for _ in range(count)]


def build_local_tokenizer(vocab_size, words, seed=0):
    """A BPE tokenizer trained here from synthetic text (no download)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]"],
                                  show_progress=False)
    tok.train_from_iterator(make_texts(words, 4000, 60, seed), trainer=trainer)
    wrapper = None
    try:
        from transformers import PreTrainedTokenizerFast

        wrapper = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
    except Exception as e:  # noqa: BLE001
        log("transformers wrapper unavailable, using tokenizers directly:", repr(e)[:200])
    return tok, wrapper


def tokenize_ids(tok, wrapper, texts, max_length):
    """Token ids, padded/truncated to max_length: list of lists (no torch)."""
    if wrapper is not None:
        enc = wrapper(texts, padding="max_length", truncation=True, max_length=max_length)
        return enc["input_ids"]
    pad = tok.token_to_id("[PAD]")
    out = []
    for e in tok.encode_batch(texts):
        ids = e.ids[:max_length]
        out.append(ids + [pad] * (max_length - len(ids)))
    return out


# --------------------------------------------------------------------------- GPU work and drivers


class GpuWork:
    """k bf16 n x n matmuls and one synchronize: the step's real GPU work."""

    def __init__(self, torch, n):
        self.torch, self.n = torch, n
        self.x, self.y, self.z = zoo.matmul_setup(torch, n)
        torch.mm(self.x, self.y, out=self.z)
        torch.cuda.synchronize()
        self.timing = zoo.gpu_time(torch, lambda: torch.mm(self.x, self.y, out=self.z), reps=10)
        self.mm_s = self.timing["gpu_s_per_call"]
        self.k = 1

    def balance(self, cause_s, share, other_s=0.0):
        self.k = balance_k(cause_s, self.mm_s, share, other_s)
        return self.k

    def run(self):
        for _ in range(self.k):
            self.torch.mm(self.x, self.y, out=self.z)
        self.torch.cuda.synchronize()

    def per_step_s(self):
        return self.k * self.mm_s

    def describe(self):
        return {"op": f"torch.mm bf16 {self.n}x{self.n} @ {self.n}x{self.n}", "matmuls_per_step": self.k,
                "gpu_s_per_matmul": self.mm_s, "syncs_per_step": 1, "sync": "torch.cuda.synchronize"}


def derived_common(acc, sp, gw):
    steps = max(1, sp["steps"])
    d = {
        "cause_s": round(acc["cause_s"], 6),
        "cause_calls": acc["calls"],
        "cause_per_step_s": round(acc["cause_s"] / steps, 6),
        "cause_share_of_wall": round(acc["cause_s"] / sp["wall_s"], 4) if sp["wall_s"] > 0 else None,
        "gpu_timing": gw.timing,
        "gpu_s_per_step": gw.per_step_s(),
        "gpu_busy_est": zoo.busy_est(gw.per_step_s(), sp["steps"], sp["wall_s"]),
    }
    return d


def fixed_cause(torch, P, A, cause, construction, after=None, warm=3, gw=None, reset=None):
    """Drives a case whose cause takes about the same time every step.

    cause(i) is timed with perf_counter (the cause_s figure); after(out) runs
    outside that timing (e.g. the batch's copy to the GPU); then the GPU work."""
    gw = gw or GpuWork(torch, P["n"])
    acc = {"cause_s": 0.0, "calls": 0}

    def step(i):
        t = time.perf_counter()
        out = cause(i)
        acc["cause_s"] += time.perf_counter() - t
        acc["calls"] += 1
        if after is not None:
            after(out)
        gw.run()

    w0 = zoo.mark()
    samples, others = [], []
    t_warm = time.perf_counter()
    j = 0
    # At least `warm` samples; more (up to 8) while they take under 0.5 s.
    while j < warm or (j < 8 and time.perf_counter() - t_warm < 0.5):
        t = time.perf_counter()
        out = cause(-1 - j)
        t1 = time.perf_counter()
        if after is not None:
            after(out)
        torch.cuda.synchronize()
        samples.append(t1 - t)
        others.append(time.perf_counter() - t1)
        j += 1
    med = statistics.median(samples[1:] if len(samples) > 2 else samples)
    other = statistics.median(others[1:] if len(others) > 2 else others)
    gw.balance(med, P["share"], other)
    k_first = gw.k
    # Three whole steps with that k, then k again from the cause's time inside
    # real steps (a pipe drains, a cache warms while the GPU works).
    in_steps = []
    for j in range(3):
        c0 = acc["cause_s"]
        step(-10 - j)
        in_steps.append(acc["cause_s"] - c0)
    gw.balance(statistics.median(in_steps), P["share"], other)
    R["warmup"] = zoo.span(w0, zoo.mark(), cause_samples_s=[round(s, 6) for s in samples],
                           other_host_s=round(other, 6), k_first=k_first,
                           cause_in_steps_s=[round(s, 6) for s in in_steps])
    R["construction"] = {**construction, "gpu_work": gw.describe(),
                         "step_order": "cause (GPU queue empty), then the GPU work, then one synchronize"}
    acc["cause_s"], acc["calls"] = 0.0, 0
    if reset is not None:
        reset()
    sp = zoo.run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    R["derived"] = derived_common(acc, sp, gw)
    return acc, sp, gw


# --------------------------------------------------------------------------- cases


def case_gc_pauses(torch, P, A):
    t = time.perf_counter()
    heap = build_cyclic_heap(P["objects"], P["ring"])
    gc.collect()
    build_s = time.perf_counter() - t
    clock = GcClock()
    gc.callbacks.append(clock)
    pairs = P["garbage_pairs"]

    def cause(_):
        return collect_garbage()

    def after(_):
        make_garbage_cycles(pairs)

    try:
        acc, sp, gw = fixed_cause(torch, P, A, cause, {
            "cause": "gc.collect() (full, generation 2) every step, called explicitly from collect_garbage()",
            "choice": "explicit per-step collection, as in the report (not an automatic one)",
            "live_heap": f"{P['objects']} GC-tracked Node objects (__slots__) in rings of {P['ring']} "
                         "(reference cycles), alive for the whole run",
            "garbage_per_step": f"{pairs} two-list reference cycles made after the collection (not timed)",
            "heap_build_s": round(build_s, 3), "gc_thresholds": gc.get_threshold(),
        }, after=after, reset=clock.reset)
    finally:
        gc.callbacks.remove(clock)
    R["derived"]["gc_callbacks"] = clock.summary()
    R["derived"]["live_nodes"] = P["objects"]
    R["derived"]["rings"] = len(heap)
    del heap


def case_subprocess_per_step(torch, P, A):
    argv = monitor_argv(P["cmd"])
    codes = {}

    def cause(_):
        rc, n = run_monitor_subprocess(argv)
        codes[rc] = codes.get(rc, 0) + 1
        return n

    fixed_cause(torch, P, A, cause, {
        "cause": "subprocess.run(argv, capture_output=True) every step: fork/exec, read its output "
                 "until EOF, wait for it",
        "argv": argv, "processes_started_per_step": 1,
    })
    R["derived"]["return_codes"] = codes


def case_checkpoint_every_step(torch, P, A):
    L, w = P["layers"], P["width"]
    model = torch.nn.Sequential(*[torch.nn.Linear(w, w, bias=False) for _ in range(L)])
    model = model.to(device="cuda", dtype=torch.bfloat16)
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    d = tempfile.mkdtemp(prefix="zoo2-ckpt-", dir=io_dir())
    path = os.path.join(d, "model.pt")

    def save_checkpoint():
        """THE CAUSE (checkpoint_every_step): torch.save of the GPU model's state_dict."""
        torch.save(model.state_dict(), path)

    try:
        # The save's two parts, measured once: copies to the host, then the write.
        torch.cuda.synchronize()
        t = time.perf_counter()
        sd_cpu = {k: v.detach().to("cpu") for k, v in model.state_dict().items()}
        d2h_s = time.perf_counter() - t
        t = time.perf_counter()
        torch.save(sd_cpu, os.path.join(d, "host.pt"))
        host_save_s = time.perf_counter() - t
        os.unlink(os.path.join(d, "host.pt"))
        del sd_cpu
        typ, mnt = zoo.fs_type(d)
        fixed_cause(torch, P, A, lambda _: save_checkpoint(), {
            "cause": "torch.save(model.state_dict(), path) every step on the training thread, the "
                     "same file overwritten (one file on disk)",
            "model": f"{L} x Linear({w}, {w}, bias=False) bf16 on the GPU", "state_dict_bytes": nbytes,
            "files_written_per_step": 1, "bytes_written_per_step": nbytes, "dir": d, "fs_type": typ,
            "mount": mnt, "parts_measured_once": {"d2h_copy_s": round(d2h_s, 6),
                                                  "save_of_host_copy_s": round(host_save_s, 6)},
        })
        R["derived"]["bytes_written"] = nbytes * R["derived"]["cause_calls"]
        R["derived"]["d2h_share_of_save_est"] = round(d2h_s / max(1e-9, d2h_s + host_save_s), 3)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def case_stdout_backpressure(torch, P, A):
    nlines = max(1, P["bytes_per_step"] // P["line_bytes"])
    delay = P["reader_delay_ms"] / 1e3
    with SlowStdoutReader(P["reader_chunk"], delay) as rd:
        fixed_cause(torch, P, A, lambda i: log_step_text(i, nlines, P["line_bytes"]), {
            "cause": f"{nlines} print() lines of {P['line_bytes']} bytes per step to sys.stdout, whose "
                     "fd 1 is a pipe drained by a slow reader process",
            "bytes_per_step": nlines * P["line_bytes"],
            "reader": f"child process: os.read(0, {P['reader_chunk']}) then time.sleep({delay}) "
                      f"(at most {P['reader_chunk'] / delay / 1e6:.1f} MB/s)",
            "pipe_capacity_bytes_typical": 65536, "result_line": "written to the saved original stdout",
            "reader_pid": rd.proc.pid, "PYTHONUNBUFFERED": os.environ.get("PYTHONUNBUFFERED"),
        })


def case_lock_contention(torch, P, A):
    gw = GpuWork(torch, P["n"])
    gw.k = int(P["k"])
    w0 = zoo.mark()
    for _ in range(3):
        gw.run()
    t = time.perf_counter()
    for _ in range(5):
        gw.run()
    W = (time.perf_counter() - t) / 5
    gap = P["gap_ms"] / 1e3
    hold = max(1e-3, period_for(W, P["share"]) - gap)
    lock = threading.Lock()
    store = []
    acc = {"cause_s": 0.0, "calls": 0}

    def step(i):
        t = time.perf_counter()
        record_metrics_locked(lock, store, i)
        acc["cause_s"] += time.perf_counter() - t
        acc["calls"] += 1
        gw.run()

    fl = MetricsFlusher(lock, hold, gap)
    fl.start()
    try:
        for i in range(5):
            step(-1 - i)
        R["warmup"] = zoo.span(w0, zoo.mark(), gpu_step_s=round(W, 6))
        R["construction"] = {
            "cause": "with lock: store.append(...) in the GPU thread each step; a background thread holds "
                     f"the same threading.Lock for {hold * 1e3:.1f} ms at a time (time.sleep inside the lock, "
                     f"standing for slow storage I/O), then releases it for {gap * 1e3:.1f} ms",
            "hold_s": round(hold, 6), "gap_s": gap, "lock": "threading.Lock", "lock_acquires_per_step": 1,
            "gpu_work": gw.describe(), "gpu_step_s_measured": round(W, 6),
            "expected_wait_per_step_s": round(hold + gap - W, 6),
        }
        acc["cause_s"], acc["calls"] = 0.0, 0
        sp = zoo.run_steps(step, A.seconds, A.steps, A.max_seconds)
    finally:
        fl.stop.set()
        fl.join(5)
    R["steady"] = sp
    R["derived"] = derived_common(acc, sp, gw)
    R["derived"]["flusher_holds"] = fl.holds


def case_queue_prefetch_starved(torch, P, A):
    import queue

    gw = GpuWork(torch, P["n"])
    gw.k = int(P["k"])
    B, D = P["batch"], P["dim"]
    w0 = zoo.mark()
    for _ in range(3):
        gw.run()
    t = time.perf_counter()
    for _ in range(5):
        gw.run()
    W = (time.perf_counter() - t) / 5
    period = period_for(W, P["share"])
    q = queue.Queue(maxsize=int(P["maxsize"]))
    acc = {"cause_s": 0.0, "calls": 0}
    w1 = torch.randn(D, D, device="cuda")

    def make(i):
        return torch.full((B, D), float(i % 1000))

    def step(i):
        t = time.perf_counter()
        b = next_batch_from_queue(q)
        acc["cause_s"] += time.perf_counter() - t
        acc["calls"] += 1
        xb = b.cuda()
        torch.mm(xb, w1)
        gw.run()

    pr = Producer(q, period, make)
    pr.start()
    try:
        for i in range(4):
            step(-1 - i)
        R["warmup"] = zoo.span(w0, zoo.mark(), gpu_step_s=round(W, 6))
        R["construction"] = {
            "cause": "queue.Queue.get() of the next batch in the GPU thread; a prefetch thread makes one "
                     f"batch every {period * 1e3:.1f} ms (time.sleep standing for the fetch, GIL released) "
                     f"and puts it in the queue (maxsize {P['maxsize']})",
            "producer_period_s": round(period, 6), "batch": [B, D], "h2d_bytes_per_step": B * D * 4,
            "gpu_work": gw.describe(), "extra_kernels_per_step": 1, "gpu_step_s_measured": round(W, 6),
        }
        acc["cause_s"], acc["calls"] = 0.0, 0
        sp = zoo.run_steps(step, A.seconds, A.steps, A.max_seconds)
    finally:
        pr.stop.set()
        pr.join(5)
    R["steady"] = sp
    R["derived"] = derived_common(acc, sp, gw)
    R["derived"]["batches_made"] = pr.made


def case_mask_indexing_sync(torch, P, A):
    v = torch.randn(P["elements"], device="cuda")
    m = int(P["selects_per_step"])
    sink = torch.zeros((), device="cuda")

    def filter_by_mask(thr):
        """THE CAUSE (mask_indexing_sync): boolean-mask selections, each a hidden sync."""
        total = sink
        for j in range(m):
            sel = v[v > thr + 1e-4 * j]
            total = total + sel.sum()
        return total

    fixed_cause(torch, P, A, lambda _: filter_by_mask(0.5), {
        "cause": f"{m} x v[v > thr].sum() on {P['elements']} float32 values per step",
        "per_select": "compare kernel, nonzero (scan kernels, a 4-8 byte device-to-host copy of the count "
                      "and a stream synchronize), index kernel, sum kernel",
        "syncs_per_step_in_cause": m, "d2h_copies_per_step": m,
    })


def augment_images(pool, count, big, out, rng):
    """Per-image PIL augmentation: resize, random crop, random flip, small rotation."""
    import numpy as np
    from PIL import Image

    arrs = []
    for j in range(count):
        img = pool[j % len(pool)].resize((big, big), Image.BICUBIC)
        x0, y0 = rng.randint(0, big - out), rng.randint(0, big - out)
        img = img.crop((x0, y0, x0 + out, y0 + out))
        if rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        img = img.rotate(rng.uniform(-15, 15), resample=Image.BILINEAR)
        arrs.append(np.asarray(img))
    return np.stack(arrs)


def image_pool(count, src, seed=0):
    import numpy as np
    from PIL import Image

    nrng = np.random.default_rng(seed)
    return [Image.fromarray(nrng.integers(0, 255, (src, src, 3), dtype=np.uint8)) for _ in range(count)]


def case_cpu_side_augment(torch, P, A):
    rng = random.Random(0)
    src, out, B = P["src"], P["out"], P["batch"]
    pool = image_pool(16, src)
    big = src + 32

    def augment_batch_on_cpu():
        """THE CAUSE (cpu_side_augment): per-image PIL augmentation on the training thread."""
        return torch.from_numpy(augment_images(pool, B, big, out, rng))

    def after(x):
        x.cuda().permute(0, 3, 1, 2).float().div_(255.0)

    fixed_cause(torch, P, A, lambda _: augment_batch_on_cpu(), {
        "cause": f"{B} images per step through PIL: resize {src}->{big} bicubic, random crop {out}, "
                 "random flip, rotate +-15 deg bilinear, np.asarray, np.stack, on the GPU thread",
        "h2d_bytes_per_step": B * out * out * 3, "h2d": "pageable .cuda() after the cause (not timed)",
    }, after=after)


def case_small_file_reads(torch, P, A):
    import numpy as np

    d = tempfile.mkdtemp(prefix="zoo2-files-", dir=io_dir())
    try:
        t = time.perf_counter()
        paths = make_small_files(d, P["files"], P["file_bytes"])
        make_s = time.perf_counter() - t
        rng = random.Random(1)
        k = int(P["reads_per_step"])

        def cause(_):
            return read_small_files(rng.sample(paths, k))

        def after(blobs):
            torch.from_numpy(np.frombuffer(b"".join(blobs), dtype=np.uint8).copy()).cuda()

        typ, mnt = zoo.fs_type(d)
        fixed_cause(torch, P, A, cause, {
            "cause": f"open/read/close of {k} random files of {P['file_bytes']} bytes each per step "
                     "(written at start, so in the page cache)",
            "files": P["files"], "files_opened_per_step": k, "bytes_read_per_step": k * P["file_bytes"],
            "dir": d, "fs_type": typ, "mount": mnt, "make_files_s": round(make_s, 3),
        }, after=after)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def spin_ms(ms):
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def case_affinity_one_core(torch, P, A):
    from torch.utils.data import DataLoader, Dataset

    B, dim, nw, sms = P["batch"], P["dim"], int(P["workers"]), P["sample_ms"]

    class SpinDataset(Dataset):
        def __init__(self):
            self.data = torch.randn(1024, dim)

        def __len__(self):
            return 10 ** 8

        def __getitem__(self, i):
            spin_ms(sms)
            return self.data[i % 1024]

    def loader():
        return iter(DataLoader(SpinDataset(), batch_size=B, num_workers=nw, multiprocessing_context="fork",
                               prefetch_factor=2))

    gw = GpuWork(torch, P["n"])
    one_core_batch_s = B * sms / 1e3          # all workers on one core: one batch's CPU time
    gw.k = balance_k(one_core_batch_s * P["share"], gw.mm_s, P["share"])
    acc = {"cause_s": 0.0, "calls": 0}
    state = {"it": None}

    def next_batch_from_loader():
        """THE CAUSE (affinity_one_core): wait for the DataLoader's next batch."""
        return next(state["it"])

    def step(i):
        t = time.perf_counter()
        b = next_batch_from_loader()
        acc["cause_s"] += time.perf_counter() - t
        acc["calls"] += 1
        b.cuda()
        gw.run()

    w0 = zoo.mark()
    before = sorted(os.sched_getaffinity(0))
    # Baseline: workers forked with the process's full affinity.
    state["it"] = loader()
    try:
        for i in range(6):
            step(-1 - i)
        base = zoo.run_steps(step, P["baseline_s"], name="baseline_full_affinity")
        base["fetch_s"] = round(acc["cause_s"], 6)
    finally:
        state["it"] = None
    acc["cause_s"], acc["calls"] = 0.0, 0
    cpu = before[-1]
    os.sched_setaffinity(0, {cpu})  # this thread; the workers forked below inherit it
    state["it"] = loader()
    try:
        for i in range(6):
            step(-20 - i)
        R["warmup"] = zoo.span(w0, zoo.mark())
        R["phases"] = [base]
        R["construction"] = {
            "cause": f"os.sched_setaffinity(0, {{{cpu}}}) on the GPU thread before the DataLoader forks its "
                     f"{nw} workers, which inherit the one-CPU mask; each sample spins {sms} ms of CPU",
            "affinity_before": before, "affinity_after": sorted(os.sched_getaffinity(0)), "cpu": cpu,
            "workers": nw, "batch": B, "sample_ms": sms, "one_core_batch_cpu_s": one_core_batch_s,
            "gpu_work": gw.describe(), "h2d_bytes_per_step": B * dim * 4,
            "baseline": "the same loop for baseline_s with workers forked before the mask (phases[0])",
        }
        acc["cause_s"], acc["calls"] = 0.0, 0
        sp = zoo.run_steps(step, A.seconds, A.steps, A.max_seconds)
    finally:
        state["it"] = None
        os.sched_setaffinity(0, set(before))
    R["steady"] = sp
    R["derived"] = derived_common(acc, sp, gw)
    b_step = base["wall_s"] / max(1, base["steps"])
    R["derived"]["baseline_s_per_step"] = round(b_step, 6)
    R["derived"]["pinned_s_per_step"] = round(sp["wall_s"] / max(1, sp["steps"]), 6)
    # The restriction's whole cost: wall time beyond the same steps at the baseline's pace.
    R["derived"]["slowdown_s"] = round(max(0.0, sp["wall_s"] - sp["steps"] * b_step), 6)


def case_empty_cache_every_step(torch, P, A):
    sizes = [int(s) * MIB for s in str(P["sizes_mib"]).split(",")]
    parts = {"alloc_s": 0.0, "empty_s": 0.0}

    def allocate_activations():
        return [torch.empty(s, dtype=torch.uint8, device="cuda") for s in sizes]

    def release_cached_memory():
        torch.cuda.empty_cache()

    def cause(_):
        """THE CAUSE (empty_cache_every_step): fresh device allocations (the cache is empty), a
        small use, the tensors dropped, then torch.cuda.empty_cache() returns every free block."""
        t0 = time.perf_counter()
        bufs = allocate_activations()
        t1 = time.perf_counter()
        bufs[-1].fill_(1)
        del bufs
        t2 = time.perf_counter()
        release_cached_memory()
        t3 = time.perf_counter()
        parts["alloc_s"] += t1 - t0
        parts["empty_s"] += t3 - t2

    def reset():
        parts["alloc_s"] = parts["empty_s"] = 0.0

    fixed_cause(torch, P, A, cause, {
        "cause": "each step allocates activations of " + ",".join(str(s // MIB) for s in sizes) +
                 " MiB (cudaMalloc, as the cache was emptied), fills the last, drops them, then calls "
                 "torch.cuda.empty_cache() (cudaFree of every free cached block)",
        "allocs_per_step": len(sizes), "frees_per_step": len(sizes), "bytes_per_step": sum(sizes),
        "kernels_per_step_in_cause": 1, "reserved_after_empty_cache": None,
    }, reset=reset)
    R["construction"]["reserved_after_empty_cache"] = torch.cuda.memory_reserved()
    R["derived"]["alloc_s"] = round(parts["alloc_s"], 6)
    R["derived"]["empty_cache_s"] = round(parts["empty_s"], 6)


def case_cudnn_benchmark_dynamic_shapes(torch, P, A):
    torch.backends.cudnn.benchmark = True
    C, L, B = P["channels"], P["layers"], P["batch"]
    layers = [torch.nn.Conv2d(3, C, 3, padding=1), torch.nn.ReLU()]
    for _ in range(L - 1):
        layers += [torch.nn.Conv2d(C, C, 3, padding=1), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers).cuda().eval()
    lo, span_ = P["min_hw"], P["span"]
    counter = {"i": 0}
    parts = {"first_s": 0.0, "again_s": 0.0}

    def next_shape():
        i = counter["i"]
        counter["i"] += 1
        return lo + i % span_, lo + (i // span_) % span_

    def conv_on_new_shape(x):
        """THE CAUSE (cudnn_benchmark_dynamic_shapes): a forward on a shape never seen before, so
        cuDNN benchmarks algorithms for every convolution."""
        with torch.no_grad():
            y = net(x)
        torch.cuda.synchronize()
        return y

    def run_again(x):
        with torch.no_grad():
            y = net(x)
        torch.cuda.synchronize()
        return y

    def cause(_):
        h, w = next_shape()
        x = torch.randn(B, 3, h, w, device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        conv_on_new_shape(x)
        t1 = time.perf_counter()
        run_again(x)
        t2 = time.perf_counter()
        parts["first_s"] += t1 - t0
        parts["again_s"] += t2 - t1
        return None

    def reset():
        parts["first_s"] = parts["again_s"] = 0.0

    acc, sp, gw = fixed_cause(torch, P, A, cause, {
        "cause": f"torch.backends.cudnn.benchmark = True; each step a new input shape ({B}, 3, h, w), "
                 f"h, w in [{lo}, {lo + span_}) never repeating; forward of {L} Conv2d(3x3, {C} channels) "
                 "+ ReLU under no_grad, synchronized, then the same input again (cached algorithms)",
        "new_shapes_per_step": 1, "convs_benchmarked_per_step": L,
        "cause_s_definition": "first forward on the new shape minus the second forward on it, summed",
    }, reset=reset)
    # The first forward's time includes one ordinary forward: count only the excess.
    R["derived"]["first_forward_s"] = round(parts["first_s"], 6)
    R["derived"]["second_forward_s"] = round(parts["again_s"], 6)
    R["derived"]["cause_s_whole_cause_call"] = R["derived"]["cause_s"]
    excess = max(0.0, parts["first_s"] - parts["again_s"])
    R["derived"]["cause_s"] = round(excess, 6)
    R["derived"]["cause_per_step_s"] = round(excess / max(1, sp["steps"]), 6)
    R["derived"]["cause_share_of_wall"] = round(excess / sp["wall_s"], 4)
    R["derived"]["shapes_seen"] = counter["i"]


def case_tensor_from_list_of_arrays(torch, P, A):
    import warnings

    import numpy as np

    shape = tuple(int(s) for s in str(P["shape"]).split(","))
    nrng = np.random.default_rng(0)
    pool = [nrng.random(shape, dtype=np.float32) for _ in range(int(P["arrays"]))]
    warnings.filterwarnings("ignore", message=".*list of numpy.ndarrays is extremely slow.*")

    def batch_from_list_of_arrays():
        """THE CAUSE (tensor_from_list_of_arrays): torch.tensor() on a Python list of ndarrays."""
        return torch.tensor(pool, device="cuda")

    t = time.perf_counter()
    torch.from_numpy(np.stack(pool)).cuda()
    torch.cuda.synchronize()
    fast_s = time.perf_counter() - t
    elems = int(P["arrays"]) * int(np.prod(shape))
    fixed_cause(torch, P, A, lambda _: batch_from_list_of_arrays(), {
        "cause": f"torch.tensor(list of {P['arrays']} float32 arrays of shape {list(shape)}, device='cuda') "
                 "each step",
        "elements_per_step": elems, "h2d_bytes_per_step": elems * 4,
        "fast_path_once_s": round(fast_s, 6),
        "fast_path": "torch.from_numpy(np.stack(list)).cuda(), timed once for comparison",
    })


def case_pinned_alloc_per_step(torch, P, A):
    nbytes = P["mib"] * MIB
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    if not hasattr(torch._C, "_host_emptyCache"):
        raise RuntimeError("torch._C._host_emptyCache is missing: the pinned cache cannot be emptied")
    parts = {"alloc_s": 0.0, "free_s": 0.0}

    def alloc_pinned_staging():
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def release_pinned_cache():
        torch._C._host_emptyCache()

    def cause(_):
        """THE CAUSE (pinned_alloc_per_step): a new pinned staging buffer each step
        (cudaHostAlloc), used for one host-to-device copy, then freed (cudaFreeHost)."""
        t0 = time.perf_counter()
        staged = alloc_pinned_staging()
        t1 = time.perf_counter()
        dev.copy_(staged, non_blocking=True)
        torch.cuda.synchronize()
        del staged
        t2 = time.perf_counter()
        release_pinned_cache()
        t3 = time.perf_counter()
        parts["alloc_s"] += t1 - t0
        parts["free_s"] += t3 - t2
        return t2 - t1

    def reset():
        parts["alloc_s"] = parts["free_s"] = 0.0

    acc, sp, gw = fixed_cause(torch, P, A, cause, {
        "cause": f"torch.empty({nbytes}, uint8, pin_memory=True) each step, one non_blocking H2D copy "
                 "from it and a synchronize, the tensor dropped, then torch._C._host_emptyCache() so the "
                 "caching host allocator frees the block (the next step's allocation reaches cudaHostAlloc)",
        "pinned_bytes_per_step": nbytes, "pinned_allocs_per_step": 1, "h2d_copies_per_step": 1,
        "cause_s_definition": "allocation + cache release; the copy in between is subtracted",
    }, reset=reset)
    whole = R["derived"]["cause_s"]
    cause_s = parts["alloc_s"] + parts["free_s"]
    R["derived"].update({
        "cause_s_whole_cause_call": whole, "cause_s": round(cause_s, 6),
        "cause_per_step_s": round(cause_s / max(1, sp["steps"]), 6),
        "cause_share_of_wall": round(cause_s / sp["wall_s"], 4),
        "pinned_alloc_s": round(parts["alloc_s"], 6), "pinned_free_s": round(parts["free_s"], 6),
        "copy_and_sync_s": round(whole - cause_s, 6),
    })
    try:
        R["derived"]["host_memory_stats"] = {k: v for k, v in torch.cuda.host_memory_stats().items()
                                             if "alloc" in k.lower() or "free" in k.lower()}
    except Exception:  # noqa: BLE001
        pass


def case_mmap_dataset_faults(torch, P, A):
    import numpy as np

    row_bytes = P["row_kib"] * 1024
    rows = P["file_mib"] * MIB // row_bytes
    k = int(P["rows_per_step"])
    d = tempfile.mkdtemp(prefix="zoo2-mmap-", dir=io_dir())
    path = os.path.join(d, "dataset.bin")
    try:
        t = time.perf_counter()
        write_data_file(path, rows * row_bytes)
        write_s = time.perf_counter() - t
        rng = random.Random(2)
        out_t = torch.empty((k, row_bytes), dtype=torch.uint8, pin_memory=True)
        out = out_t.numpy()  # rows land in pinned memory: the copy to the GPU is quick and async
        dev = torch.empty((k, row_bytes), dtype=torch.uint8, device="cuda")
        drop = {"s": 0.0}

        def open_map():
            return np.memmap(path, dtype=np.uint8, mode="r", shape=(rows, row_bytes))

        def cause(_):
            return gather_rows_from_memmap(open_map, rng.sample(range(rows), k), out)

        def after(batch):
            t = time.perf_counter()
            drop_file_cache(path)  # the cold cache of a dataset larger than memory
            drop["s"] += time.perf_counter() - t
            dev.copy_(out_t, non_blocking=True)

        typ, mnt = zoo.fs_type(d)
        acc, sp, gw = fixed_cause(torch, P, A, cause, {
            "cause": f"np.memmap of a {rows * row_bytes} byte file each step, {k} random rows of "
                     f"{row_bytes} bytes copied out (page faults), unmapped; after the step's copy the "
                     "file's page cache is dropped with posix_fadvise(DONTNEED) (not timed as the cause)",
            "file_bytes": rows * row_bytes, "bytes_faulted_per_step": k * row_bytes, "dir": d,
            "h2d": "one non_blocking copy per step from the pinned row buffer (not timed)",
            "fs_type": typ, "mount": mnt, "write_file_s": round(write_s, 3),
        }, after=after, reset=lambda: drop.update(s=0.0))
        R["derived"]["drop_cache_s"] = round(drop["s"], 6)
        R["derived"]["read_gbps"] = round(k * row_bytes * acc["calls"] / max(1e-9, acc["cause_s"]) / 1e9, 3)
        R["derived"]["note"] = "read_gbps far above the disk's rate means the page cache was not bypassed"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def case_ema_on_cpu(torch, P, A):
    L, w, decay = P["layers"], P["width"], P["decay"]
    model = torch.nn.Sequential(*[torch.nn.Linear(w, w) for _ in range(L)]).cuda()
    params = [p for p in model.parameters()]
    ema = [p.detach().to("cpu").clone() for p in params]
    nbytes = sum(p.numel() * p.element_size() for p in params)
    parts = {"d2h_s": 0.0, "lerp_s": 0.0}

    def update_ema_on_cpu():
        """THE CAUSE (ema_on_cpu): the EMA copy lives on the CPU; every parameter of the online
        model is copied to the host (a synchronous D2H copy) and blended in."""
        with torch.no_grad():
            for e, p in zip(ema, params):
                t0 = time.perf_counter()
                host = p.detach().to("cpu")
                t1 = time.perf_counter()
                e.lerp_(host, 1.0 - decay)
                t2 = time.perf_counter()
                parts["d2h_s"] += t1 - t0
                parts["lerp_s"] += t2 - t1

    def reset():
        parts["d2h_s"] = parts["lerp_s"] = 0.0

    fixed_cause(torch, P, A, lambda _: update_ema_on_cpu(), {
        "cause": f"EMA on the CPU: for each of {len(params)} parameters ({L} x Linear({w}, {w}), fp32 on "
                 "the GPU), p.detach().to('cpu') then ema.lerp_(host, 1 - decay)",
        "d2h_copies_per_step": len(params), "d2h_bytes_per_step": nbytes,
    }, reset=reset)
    R["derived"]["d2h_s"] = round(parts["d2h_s"], 6)
    R["derived"]["cpu_lerp_s"] = round(parts["lerp_s"], 6)


def case_tokenize_in_loop(torch, P, A):
    words = pseudo_words(5000)
    t = time.perf_counter()
    tok, wrapper = build_local_tokenizer(int(P["vocab"]), words)
    build_s = time.perf_counter() - t
    batches = [make_texts(words, int(P["texts"]), int(P["words"]), seed=s) for s in range(4)]
    L = int(P["max_length"])
    emb = torch.nn.Embedding(tok.get_vocab_size(), 1024).cuda()

    def tokenize_batch(texts):
        """THE CAUSE (tokenize_in_loop): raw text tokenized inside the training step."""
        return torch.tensor(tokenize_ids(tok, wrapper, texts, L), dtype=torch.long)

    def after(ids):
        emb(ids.cuda())

    fixed_cause(torch, P, A, lambda i: tokenize_batch(batches[i % len(batches)]), {
        "cause": f"{P['texts']} raw texts of {P['words']} words tokenized per step "
                 f"(padding/truncation to {L}) on the GPU thread",
        "tokenizer": "BPE trained locally with tokenizers on synthetic text, vocab "
                     f"{tok.get_vocab_size()}, wrapped in " +
                     ("transformers.PreTrainedTokenizerFast" if wrapper is not None else "nothing (raw tokenizers)"),
        "TOKENIZERS_PARALLELISM": os.environ.get("TOKENIZERS_PARALLELISM"), "build_s": round(build_s, 3),
        "h2d_bytes_per_step": int(P["texts"]) * L * 8,
    }, after=after)


def case_thread_oversubscription(torch, P, A):
    n_el, ops = int(P["elements"]), int(P["ops"])
    before = sorted(os.sched_getaffinity(0))
    allowed = before[-int(P["cpus_allowed"]):]
    threads = int(P["threads"]) or (os.cpu_count() or 1)
    base_threads = torch.get_num_threads()
    # First restrict the CPUs (as a container's CPU quota does), so that the
    # intra-op pool, created by the first parallel op below, inherits the mask.
    os.sched_setaffinity(0, set(allowed))
    try:
        a = torch.randn(n_el)
        b = torch.randn(n_el)

        def cpu_preprocess_oversubscribed():
            """THE CAUSE (thread_oversubscription): CPU tensor ops with more intra-op threads
            than the CPUs the process may use."""
            c = None
            for _ in range(ops):
                c = torch.cat([a, b])
                c.mul_(1.5).add_(2.0).relu_()
            return c

        torch.set_num_threads(len(allowed))
        cpu_preprocess_oversubscribed()
        t = time.perf_counter()
        for _ in range(3):
            cpu_preprocess_oversubscribed()
        base_s = (time.perf_counter() - t) / 3
        torch.set_num_threads(threads)
        fixed_cause(torch, P, A, lambda _: cpu_preprocess_oversubscribed(), {
            "cause": f"{ops} x (torch.cat of two {n_el}-float CPU tensors, mul_, add_, relu_) per step with "
                     f"{threads} intra-op threads (torch.set_num_threads) while the GPU thread, and the pool it "
                     f"starts, may run on {len(allowed)} CPUs only (os.sched_setaffinity, as a container quota)",
            "intra_op_threads": threads, "cpus_allowed": allowed, "affinity_before": before,
            "default_threads": base_threads,
            "same_ops_with_threads_equal_to_cpus_s": round(base_s, 6),
        }, after=lambda c: c[:1024].cuda())
        R["derived"]["same_ops_with_threads_equal_to_cpus_s"] = round(base_s, 6)
        R["derived"]["slowdown_vs_threads_equal_to_cpus"] = round(
            R["derived"]["cause_per_step_s"] / max(1e-9, base_s), 3)
    finally:
        torch.set_num_threads(base_threads)
        os.sched_setaffinity(0, set(before))


# --------------------------------------------------------------------------- main


def prepare_env(case):
    if case == "tokenize_in_loop":
        os.environ["TOKENIZERS_PARALLELISM"] = "false"


def parse_params(case, sets):
    P = dict(CASES[case]["defaults"])
    for kv in sets:
        k, _, v = kv.partition("=")
        if k not in P:
            raise SystemExit(f"unknown parameter {k} for {case}: {sorted(P)}")
        d = P[k]
        P[k] = v if isinstance(d, str) else type(d)(float(v)) if isinstance(d, int) else type(d)(v)
    return P


def cases_table():
    return [{"name": n, "source": c["source"], "report_summary": c["report_summary"], "expect": c["expect"],
             "defaults": c["defaults"]} for n, c in CASES.items()]


def write_all(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


def on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=list(CASES))
    ap.add_argument("--seconds", type=float, default=6.0, help="steady phase length (default 6)")
    ap.add_argument("--steps", type=int, default=0, help="run exactly this many steady steps instead")
    ap.add_argument("--max-seconds", type=float, default=0.0, help="cap of a --steps run (default 3x+30)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--cases-json", action="store_true", help="print the case table as JSON")
    A = ap.parse_args()
    if A.list:
        for n, c in CASES.items():
            print(n, c["source"], json.dumps(c["defaults"]))
        return 0
    if A.cases_json:
        print(json.dumps(cases_table(), indent=2))
        return 0
    if not A.case:
        ap.error("--case is required")
    result_fd = os.dup(1)  # the JSON line goes here even if a case redirects fd 1
    signal.signal(signal.SIGTERM, on_sigterm)
    meta = CASES[A.case]
    R.update({"zoo_case": A.case, "zoo": "zoo2", "ok": False, "argv": sys.argv[1:], "pid": os.getpid(),
              "tid": threading.get_native_id(), "t_start_epoch_ns": time.time_ns(), "cpus": os.cpu_count(),
              "python": sys.version.split()[0], "source": meta["source"],
              "report_summary": meta["report_summary"], "expect": meta["expect"]})
    rc = 1
    try:
        P = parse_params(A.case, A.set)
        R["params"] = P
        prepare_env(A.case)
        t = time.perf_counter()
        import torch
        R["import_s"] = round(time.perf_counter() - t, 3)
        R["torch"] = torch.__version__
        R["cuda"] = torch.version.cuda
        t = time.perf_counter()
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        R["cuda_init_s"] = round(time.perf_counter() - t, 3)
        R["device"] = torch.cuda.get_device_name(0)
        globals()["case_" + A.case](torch, P, A)
        R["ok"] = True
        rc = 0
    except KeyboardInterrupt as e:
        R["error"] = f"interrupted ({e!r}), probably the driver's timeout"
    except BaseException as e:  # noqa: BLE001
        R["error"] = repr(e)[:1000]
        R["traceback"] = traceback.format_exc()[-3000:]
        log(traceback.format_exc())
    finally:
        R["t_end_epoch_ns"] = time.time_ns()
        try:
            sys.stdout.flush()
        except OSError:
            pass
        write_all(result_fd, (json.dumps(R, default=str) + "\n").encode())
        os.close(result_fd)
    return rc


if __name__ == "__main__":
    sys.exit(main())
