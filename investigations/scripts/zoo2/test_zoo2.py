"""Checks of zoo2.py that need neither torch nor a GPU: the constructed causes
themselves (garbage collection, subprocess, pipe back-pressure, lock, queue,
small files, memory-mapped reads, tokenizer, PIL augmentation), the sizing
arithmetic, the case table, and that a failing case still prints its line.

Run: python3 -m unittest test_zoo2 -v   (numpy, PIL and tokenizers tests are
skipped where those packages are missing)
"""
import importlib.util
import json
import mmap
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo2  # noqa: E402


def have(mod):
    return importlib.util.find_spec(mod) is not None


class Sizing(unittest.TestCase):
    def test_balance_k(self):
        # 0.1 s cause at share 0.6 wants 0.0667 s of GPU: 33 matmuls of 2 ms.
        self.assertEqual(zoo2.balance_k(0.1, 0.002, 0.6), 33)
        self.assertEqual(zoo2.balance_k(1e-6, 0.002, 0.6), 1)
        self.assertEqual(zoo2.balance_k(100.0, 1e-6, 0.6), 1000)
        self.assertEqual(zoo2.balance_k(0.1, 0.0, 0.6), 1)

    def test_period_for(self):
        p = zoo2.period_for(0.02, 0.6)
        self.assertAlmostEqual(p, 0.05)
        self.assertAlmostEqual((p - 0.02) / p, 0.6)


class Table(unittest.TestCase):
    STATES = {"on_cpu", "off_cpu_blocked", "off_cpu_preempted", "in_cuda"}

    def test_every_case_is_complete(self):
        self.assertGreaterEqual(len(zoo2.CASES), 16)
        for name, c in zoo2.CASES.items():
            self.assertTrue(callable(getattr(zoo2, "case_" + name, None)), name)
            self.assertTrue(c["source"].startswith("https://"), name)
            e = c["expect"]
            self.assertIn(e["state"], self.STATES, name)
            self.assertRegex(e["mechanism"], r"^[a-z0-9_]+$", name)
            self.assertTrue(e["code"], name)
            self.assertIn("share", c["defaults"])
            self.assertIn("n", c["defaults"])

    def test_code_names_exist_in_this_file(self):
        with open(os.path.join(HERE, "zoo2.py")) as f:
            src = f.read()
        for name, c in zoo2.CASES.items():
            own = c["expect"]["code"][0]
            self.assertIn(f"def {own}(", src, f"{name}: {own}")

    def test_cases_json_matches(self):
        path = os.path.join(HERE, "cases.json")
        if not os.path.exists(path):
            self.skipTest("cases.json not written yet")
        with open(path) as f:
            self.assertEqual(json.load(f), zoo2.cases_table())

    def test_parse_params(self):
        P = zoo2.parse_params("gc_pauses", ["objects=1e5", "share=0.5"])
        self.assertEqual(P["objects"], 100000)
        self.assertEqual(P["share"], 0.5)
        P = zoo2.parse_params("subprocess_per_step", ["cmd=echo hi"])
        self.assertEqual(P["cmd"], "echo hi")
        with self.assertRaises(SystemExit):
            zoo2.parse_params("gc_pauses", ["nope=1"])

    def test_failing_case_still_prints_one_line(self):
        # Without torch (here) the case fails at the import; with torch but no
        # GPU it fails at CUDA start-up: either way exactly one JSON line.
        r = subprocess.run([sys.executable, os.path.join(HERE, "zoo2.py"), "--case", "gc_pauses",
                            "--seconds", "0.1", "--set", "objects=1000"],
                           capture_output=True, text=True, timeout=120)
        lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
        self.assertEqual(len(lines), 1, r.stdout)
        d = json.loads(lines[0])
        self.assertEqual(d["zoo_case"], "gc_pauses")
        self.assertIn("expect", d)
        self.assertEqual(d["source"], zoo2.CASES["gc_pauses"]["source"])
        if not have("torch"):
            self.assertFalse(d["ok"])
            self.assertIn("torch", d["error"])


class GcPauses(unittest.TestCase):
    def test_collection_time_grows_with_the_live_heap(self):
        import gc

        clock = zoo2.GcClock()
        gc.callbacks.append(clock)
        try:
            small = zoo2.build_cyclic_heap(10_000, 100)
            t = time.perf_counter()
            zoo2.collect_garbage()
            t_small = time.perf_counter() - t
            big = zoo2.build_cyclic_heap(600_000, 1000)
            gc.collect()
            t = time.perf_counter()
            zoo2.collect_garbage()
            t_big = time.perf_counter() - t
        finally:
            gc.callbacks.remove(clock)
        self.assertEqual(len(big), 600)
        self.assertEqual(len(small), 100)
        self.assertGreater(t_big, 3 * t_small)
        s = clock.summary()
        self.assertIn("2", s)
        self.assertGreaterEqual(s["2"]["collections"], 2)

    def test_garbage_cycles_are_collected(self):
        import gc

        gc.collect()
        gc.disable()  # else the automatic young collections take them first
        try:
            zoo2.make_garbage_cycles(1000)
            self.assertGreaterEqual(zoo2.collect_garbage(), 2000)
        finally:
            gc.enable()

    def test_rings_are_cycles(self):
        heads = zoo2.build_cyclic_heap(2500, 1000)
        self.assertEqual(len(heads), 3)
        n, x = 1, heads[2].nxt
        while x is not heads[2]:
            n, x = n + 1, x.nxt
        self.assertEqual(n, 500)


class Subprocess(unittest.TestCase):
    def test_run(self):
        rc, n = zoo2.run_monitor_subprocess(["sh", "-c", "echo 12, 34"])
        self.assertEqual((rc, n), (0, 7))

    def test_missing_command_falls_back(self):
        self.assertEqual(zoo2.monitor_argv("no-such-tool-zoo2 --x"), ["true"])
        self.assertEqual(zoo2.monitor_argv("sh -c true"), ["sh", "-c", "true"])


CHILD = r"""
import os, sys, time
sys.path.insert(0, {here!r})
import zoo2
saved = os.dup(1)
with zoo2.SlowStdoutReader(4096, 0.005) as rd:
    t = time.perf_counter()
    zoo2.log_step_text(1, 2048, 128)   # 256 KiB
    sys.stdout.flush()
    blocked = time.perf_counter() - t
os.write(saved, ("RESULT %.4f %d\n" % (blocked, rd.proc.returncode)).encode())
"""


class PipeBackpressure(unittest.TestCase):
    def test_writes_block_on_the_slow_reader_and_the_result_reaches_stdout(self):
        r = subprocess.run([sys.executable, "-c", CHILD.format(here=HERE)], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 1, r.stdout[:500])
        _, blocked, rc = lines[0].split()
        # 256 KiB through a reader of at most 4 KiB / 5 ms (0.8 MB/s), less the
        # pipe's 64 KiB: about 0.24 s at least.
        self.assertGreater(float(blocked), 0.15)
        self.assertEqual(int(rc), 0)


class LockContention(unittest.TestCase):
    def test_waits_for_the_holder(self):
        lock = threading.Lock()
        hold, gap, work = 0.03, 0.001, 0.01
        fl = zoo2.MetricsFlusher(lock, hold, gap)
        fl.start()
        store, waits = [], []
        try:
            time.sleep(0.01)
            for i in range(12):
                t = time.perf_counter()
                zoo2.record_metrics_locked(lock, store, i)
                waits.append(time.perf_counter() - t)
                time.sleep(work)
        finally:
            fl.stop.set()
            fl.join(2)
        steady = sorted(waits[2:])[len(waits[2:]) // 2]
        # expected wait hold + gap - work = 21 ms
        self.assertGreater(steady, 0.012)
        self.assertLess(steady, 0.035)
        self.assertEqual(len(store), 12)


class QueueStarved(unittest.TestCase):
    def test_consumer_waits_period_minus_work(self):
        q = queue.Queue(maxsize=4)
        pr = zoo2.Producer(q, 0.02, lambda i: i)
        pr.start()
        waits, got = [], []
        try:
            for _ in range(10):
                t = time.perf_counter()
                got.append(zoo2.next_batch_from_queue(q))
                waits.append(time.perf_counter() - t)
                time.sleep(0.005)
        finally:
            pr.stop.set()
            pr.join(2)
        self.assertEqual(got, list(range(10)))
        med = sorted(waits[2:])[len(waits[2:]) // 2]
        self.assertGreater(med, 0.008)
        self.assertLess(med, 0.03)


class Files(unittest.TestCase):
    def test_small_files(self):
        with tempfile.TemporaryDirectory() as d:
            paths = zoo2.make_small_files(d, 2500, 512)
            self.assertEqual(len(paths), 2500)
            self.assertEqual(len(os.listdir(d)), 3)
            blobs = zoo2.read_small_files(random.Random(0).sample(paths, 300))
            self.assertEqual(len(blobs), 300)
            self.assertTrue(all(len(b) == 512 for b in blobs))

    def test_memmap_rows_with_python_mmap(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "data.bin")
            row = 64 * 1024
            zoo2.write_data_file(path, 32 * row, block_mib=1)
            self.assertEqual(os.path.getsize(path), 32 * row)
            f = open(path, "rb")

            class Rows:
                def __init__(self):
                    self.m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)

                def __getitem__(self, r):
                    return self.m[r * row:(r + 1) * row]

            out = [None] * 4
            zoo2.gather_rows_from_memmap(Rows, [3, 0, 31, 7], out)
            with open(path, "rb") as g:
                data = g.read()
            self.assertEqual(out[0], data[3 * row:4 * row])
            self.assertEqual(out[2], data[31 * row:32 * row])
            zoo2.drop_file_cache(path)
            f.close()

    @unittest.skipUnless(have("numpy"), "numpy missing")
    def test_memmap_rows_with_numpy(self):
        import numpy as np

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "data.bin")
            row = 4096
            zoo2.write_data_file(path, 100 * row, block_mib=1)
            out = np.empty((5, row), dtype=np.uint8)

            def open_map():
                return np.memmap(path, dtype=np.uint8, mode="r", shape=(100, row))

            zoo2.gather_rows_from_memmap(open_map, [1, 2, 50, 99, 0], out)
            ref = np.fromfile(path, dtype=np.uint8).reshape(100, row)
            self.assertTrue((out[2] == ref[50]).all())
            self.assertTrue((out[3] == ref[99]).all())


@unittest.skipUnless(have("tokenizers"), "tokenizers missing")
class Tokenizer(unittest.TestCase):
    def test_local_tokenizer(self):
        words = zoo2.pseudo_words(500)
        tok, wrapper = zoo2.build_local_tokenizer(1000, words)
        self.assertLessEqual(tok.get_vocab_size(), 1000)
        texts = zoo2.make_texts(words, 8, 50)
        ids = zoo2.tokenize_ids(tok, wrapper, texts, 64)
        self.assertEqual(len(ids), 8)
        self.assertTrue(all(len(x) == 64 for x in ids))
        raw = zoo2.tokenize_ids(tok, None, texts, 64)
        self.assertEqual(len(raw), 8)
        self.assertTrue(all(len(x) == 64 for x in raw))
        if wrapper is not None:
            self.assertEqual([list(x) for x in ids], raw)
        unk = tok.token_to_id("[UNK]")
        self.assertFalse(any(unk in x for x in raw))


@unittest.skipUnless(have("PIL") and have("numpy"), "PIL or numpy missing")
class Augment(unittest.TestCase):
    def test_shapes(self):
        pool = zoo2.image_pool(4, 64)
        a = zoo2.augment_images(pool, 6, 80, 56, random.Random(0))
        self.assertEqual(a.shape, (6, 56, 56, 3))
        self.assertEqual(str(a.dtype), "uint8")


if __name__ == "__main__":
    unittest.main()
