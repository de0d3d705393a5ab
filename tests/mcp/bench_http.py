#!/usr/bin/env python3
"""Tool-call latency of `ingero mcp --http` under concurrent sessions.

Starts the server on the seed database, opens N sessions (initialize
handshake, 2025-11-25 mode, each with its own Mcp-Session-Id), then every
session calls one tool back to back; latency is measured per call from
request sent to final JSON-RPC response parsed. Prints p50/p99/max and
throughput. Raw JSON-RPC over httpx2, so client overhead stays small.

Usage: bench_http.py --bin target/release/ingero [--sessions 32] [--calls 50]
       [--tool get_trace_stats] [--db FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "tests/data/ingero-investigations/pytorch-dataloader-starvation.db"
HDRS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse(body: str, want_id: int) -> dict:
    """The JSON-RPC response with `want_id` from a JSON or SSE body."""
    texts = [body] if body.lstrip().startswith("{") else [
        line[5:].strip() for line in body.splitlines() if line.startswith("data:")
    ]
    for t in texts:
        if not t:
            continue
        msg = json.loads(t)
        if msg.get("id") == want_id:
            return msg
    raise RuntimeError(f"no response {want_id} in {body[:200]!r}")


async def session(hc: httpx2.AsyncClient, url: str, tool: str, args: dict, calls: int, lat: list[float], errors: list[str], vary: int | None = None) -> None:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    r = await hc.post(url, json=init, headers=HDRS)
    sid = r.headers.get("mcp-session-id")
    parse(r.text, 0)
    h = {**HDRS, "Mcp-Session-Id": sid or "", "MCP-Protocol-Version": "2025-11-25"}
    await hc.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
    for i in range(1, calls + 1):
        call_args = dict(args)
        if vary is not None:
            # A distinct window longer than the capture: same analysis, never a cached result.
            call_args["since"] = f"{100000 + vary * 10000 + i}s"
        req = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": call_args}}
        t0 = time.perf_counter()
        r = await hc.post(url, json=req, headers=h)
        msg = parse(r.text, i)
        lat.append((time.perf_counter() - t0) * 1e3)
        if "error" in msg or msg.get("result", {}).get("isError"):
            errors.append(json.dumps(msg)[:200])
    await hc.delete(url, headers=h)


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--db", default=str(SEED))
    ap.add_argument("--sessions", type=int, default=32)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--tool", default="get_trace_stats")
    ap.add_argument("--args", default="{}", help="tool arguments as JSON")
    ap.add_argument("--uncached", action="store_true", help="give every call a distinct window so no result is reused")
    a = ap.parse_args()
    log = Path(tempfile.mkstemp(prefix="ingero-bench-", suffix=".log")[1])
    with open(log, "w") as fh:
        proc = subprocess.Popen([a.bin, "mcp", "--http", "127.0.0.1:0", "--db", a.db], stdout=subprocess.DEVNULL, stderr=fh)
    try:
        url = ""
        for _ in range(600):
            m = re.search(r"listening on (http://\S+/mcp)", log.read_text())
            if m:
                url = m.group(1)
                break
            time.sleep(0.05)
        if not url:
            raise RuntimeError(log.read_text())
        args = json.loads(a.args)
        limits = httpx2.Limits(max_connections=a.sessions * 2, max_keepalive_connections=a.sessions * 2)
        async with httpx2.AsyncClient(timeout=120, limits=limits) as hc:
            # Warm-up: one session, a few calls (opens the first connections).
            await session(hc, url, a.tool, args, 3, [], [])
            lat: list[float] = []
            errors: list[str] = []
            cpu0 = cpu_seconds(proc.pid)
            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for k in range(a.sessions):
                    tg.start_soon(session, hc, url, a.tool, args, a.calls, lat, errors, k if a.uncached else None)
            wall = time.perf_counter() - t0
            cpu = cpu_seconds(proc.pid) - cpu0
        lat.sort()
        q = statistics.quantiles(lat, n=100, method="inclusive")
        print(f"tool {a.tool} on {Path(a.db).name}{' (uncached)' if a.uncached else ''}: {a.sessions} concurrent sessions x {a.calls} calls = {len(lat)} calls in {wall:.2f} s ({len(lat) / wall:.0f} calls/s)")
        print(f"latency ms: p50 {q[49]:.2f}  p90 {q[89]:.2f}  p99 {q[98]:.2f}  max {lat[-1]:.2f}  min {lat[0]:.2f}")
        print(f"server CPU: {cpu * 1e3 / len(lat):.2f} ms per call ({os.cpu_count()} cores on this machine, load {os.getloadavg()[0]:.1f})")
        if errors:
            print(f"{len(errors)} errors, first: {errors[0]}")
            return 1
        return 0
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(anyio.run(main))
