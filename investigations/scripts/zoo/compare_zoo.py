"""Constructed vs measured vs reported GPU busy share of recorded zoo cases.

For each database zoo-NAME.db in DIR with its line in DIR/zoo-results.jsonl:
  constructed  the case's own estimate over its steady phase (GPU time per
               step from CUDA events with the queue pre-filled, x steps / wall)
  nvml device  time-weighted mean of the device SM samples (gpu_util_samples,
               kind 1) whose period lies in the steady phase, by SQL
  nvml process mean of the per-process samples of the case's pid stamped in
               the steady phase, by SQL
  explain      `ingero explain --json` limited to the steady phase
               (--since/--until), 1 - idle_share, and its busy source
  full         the same two over the whole capture (explain's process
               lifetime; device samples over that lifetime)

Usage: python3 compare_zoo.py DIR [INGERO]  (prints a Markdown table)
"""
import json
import os
import sqlite3
import subprocess
import sys


def device_mean(db, lo, hi):
    """Time-weighted mean of device SM samples: each covers the time since the previous one."""
    rows = db.execute(
        "SELECT ts_ns, value FROM gpu_util_samples WHERE kind = 1 AND gpu = 0 ORDER BY ts_ns").fetchall()
    num = den = 0.0
    for (t0, _), (t1, v) in zip(rows, rows[1:]):
        a, b = max(t0, lo), min(t1, hi)
        if b > a:
            num += (b - a) * v / 100.0
            den += b - a
    return num / den if den else None


def process_mean(db, pid, lo, hi):
    v = db.execute(
        "SELECT AVG(sm_pct) FROM gpu_process_samples WHERE pid = ? AND ts_ns > ? AND ts_ns <= ?",
        (pid, lo, hi)).fetchone()[0]
    return None if v is None else v / 100.0


def explain(ing, path, since_ms=None, until_ms=None, pid=None):
    cmd = [ing, "explain", "--json", "--db", path]
    if since_ms is not None:
        cmd += ["--since", f"{since_ms}ms", "--until", f"{until_ms}ms"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)["chains"]["gpu_idle"]
    row = next((r for r in rows if pid is None or r["pid"] == pid), None)
    return row


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}"


def main():
    d = sys.argv[1]
    ing = sys.argv[2] if len(sys.argv) > 2 else "ingero"
    lines = {}
    for line in open(os.path.join(d, "zoo-results.jsonl")):
        r = json.loads(line)
        if "record" in r:
            lines[r["record"]] = r
    print("| case | constructed | NVML device (steady) | NVML process (steady) | explain (steady) "
          "| source | NVML device (capture) | explain (capture) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in lines.items():
        path = os.path.join(d, f"zoo-{name}.db")
        if not os.path.exists(path) or not r.get("ok"):
            continue
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        stop = db.execute("SELECT MAX(stopped_ns) FROM sessions").fetchone()[0]
        st = r["steady"]
        lo, hi = st["t0_epoch_ns"], st["t1_epoch_ns"]
        pid = r["pid"]
        est = r.get("derived", {}).get("gpu_busy_est")
        est = est if isinstance(est, (int, float)) else None
        since = (stop - lo) // 1_000_000
        until = (stop - hi) // 1_000_000
        e = explain(ing, path, since, until, pid)
        full = explain(ing, path, pid=pid)
        first, last = db.execute(
            "SELECT first_seen_ns, last_seen_ns FROM processes WHERE pid = ?", (pid,)).fetchone()
        print(f"| {name} | {pct(est)} | {pct(device_mean(db, lo, hi))} | {pct(process_mean(db, pid, lo, hi))} "
              f"| {pct(1 - e['idle_share']) if e else '-'} | {e['busy_source'] if e else '-'} "
              f"| {pct(device_mean(db, first, last))} | {pct(1 - full['idle_share']) if full else '-'} |")


if __name__ == "__main__":
    main()
