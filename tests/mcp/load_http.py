#!/usr/bin/env python3
"""HTTP load test of `ingero mcp --http`: many live sessions, mixed calls, flat memory.

Why it exists: the HTTP server must stay correct and bounded in memory when
many assistants use it at once for a long time. This script starts the
server on a trace database with a random bearer token, keeps `--sessions`
MCP sessions (2025-11-25 initialize handshake, one Mcp-Session-Id each) live
for `--seconds`, and has each make a random mix of the server's tools,
prompts and list calls with varied arguments (time windows, pids, pages,
chart ranges, SQL limits, other databases of the folder), so most calls miss
the result cache. A session ends after a random number of calls with an HTTP
DELETE and a new one takes its place, so hundreds are opened and closed.

Every response must succeed: HTTP 2xx, no JSON-RPC error, no `isError` (except
the refusals of a window, pid or op the file does not hold, which name what it
holds and the corrected call), and
`structuredContent` valid against the tool's `outputSchema`. The server's RSS
is sampled every second; after a warm-up (the first `--warmup` share of the
run, extended up to half of it until the server's result cache has been
filled once) it may grow by at most max(`--rss-slack-mib`, `--rss-slack-frac`
of the warm-up RSS). Afterwards the server must still answer, and closed sessions
must be gone (404). Prints throughput, latency per call kind and the memory
figures; exits 1 on any failure.

Usage: load_http.py --bin target/release/ingero [--seconds 20] [--sessions 64]
       [--max-calls 20] [--db FILE] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import jsonschema

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "tests/data/ingero-investigations/pytorch-dataloader-starvation.db"
PROTOCOL = "2025-11-25"
MIB = 1024 * 1024
# Results the server's result cache keeps before it empties: until that many
# tool calls have been answered, its memory is still legitimately growing.
CACHE_ENTRIES = 512


class CallFailed(Exception):
    """A response that is not a success."""


@dataclass
class Stats:
    """Everything the sessions and the sampler record."""

    latency: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # the first ones
    error_count: int = 0
    opened: int = 0
    closed: list[str] = field(default_factory=list)
    # (seconds since start, RSS bytes, threads, open fds)
    samples: list[tuple[float, int, int, int]] = field(default_factory=list)
    # CPU seconds used during the load by the server and by this client
    cpu: tuple[float, float] = (0.0, 0.0)
    # RSS, threads and fds once the client has closed its connections
    drained: tuple[int, int, int] = (0, 0, 0)
    t_start: float = 0.0
    tool_calls: int = 0
    # seconds into the run when CACHE_ENTRIES tool calls had been answered
    cache_full_at: float | None = None

    def record(self, label: str, ms: float) -> None:
        self.latency.setdefault(label, []).append(ms)

    def fail(self, label: str, why: str) -> None:
        self.error_count += 1
        if len(self.errors) < 20:
            self.errors.append(f"{label}: {why}"[:400])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_figures(pid: int) -> tuple[int, int, int]:
    """RSS bytes, thread count and open file descriptors of a process."""
    rss = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, threads, len(os.listdir(f"/proc/{pid}/fd"))


def messages(body: str) -> list[dict]:
    """JSON-RPC messages of a JSON or SSE response body."""
    if body.lstrip().startswith("{"):
        return [json.loads(body)]
    out = []
    for line in body.splitlines():
        if line.startswith("data:") and line[5:].strip():
            out.append(json.loads(line[5:]))
    return out


class Client:
    """One MCP session over raw JSON-RPC (small client overhead)."""

    def __init__(self, hc: httpx2.AsyncClient, url: str, token: str):
        self.hc = hc
        self.url = url
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}",
        }
        self.sid = ""
        self.next_id = 0

    async def initialize(self) -> None:
        params = {"protocolVersion": PROTOCOL, "capabilities": {},
                  "clientInfo": {"name": "ingero-load", "version": "0"}}
        r = await self.hc.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        result = self._result(r, 0, "initialize")
        if result.get("protocolVersion") != PROTOCOL:
            raise CallFailed(f"server chose protocol {result.get('protocolVersion')}")
        self.sid = r.headers.get("mcp-session-id", "")
        if not self.sid:
            raise CallFailed("no Mcp-Session-Id in the initialize response")
        self.headers = {**self.headers, "Mcp-Session-Id": self.sid, "MCP-Protocol-Version": PROTOCOL}
        r = await self.hc.post(self.url, headers=self.headers,
                               json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        if r.status_code != 202:
            raise CallFailed(f"notifications/initialized answered HTTP {r.status_code}")

    async def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        r = await self.hc.post(self.url, headers=self.headers, json=msg)
        return self._result(r, self.next_id, method)

    async def close(self) -> None:
        r = await self.hc.delete(self.url, headers=self.headers)
        if not r.is_success:
            raise CallFailed(f"DELETE answered HTTP {r.status_code}")

    @staticmethod
    def _result(r: httpx2.Response, want: int, what: str) -> dict:
        if not r.is_success:
            raise CallFailed(f"{what} answered HTTP {r.status_code}: {r.text[:200]}")
        for m in messages(r.text):
            if m.get("id") == want:
                if "error" in m:
                    raise CallFailed(f"JSON-RPC error {json.dumps(m['error'])[:300]}")
                return m["result"]
        raise CallFailed(f"no response {want} in {r.text[:200]!r}")


class Catalogue:
    """What the server offers, learnt once, and random calls drawn from it."""

    def __init__(self, tools: list[dict], prompts: list[dict], pids: list[int], dbs: list[str]):
        self.tools = {t["name"]: t for t in tools}
        self.validators = {
            name: jsonschema.validators.validator_for(t["outputSchema"])(t["outputSchema"])
            for name, t in self.tools.items() if "outputSchema" in t
        }
        self.prompts = prompts
        self.pids = pids
        self.dbs = dbs

    def window(self, rng: random.Random) -> dict:
        """A random time window (capture lengths are tens of seconds to minutes)."""
        w: dict = {}
        if rng.random() < 0.8:
            since = rng.randint(2, 240)
            w["since"] = f"{since}s" if rng.random() < 0.7 else f"{since * 1000 + rng.randint(0, 999)}ms"
            if rng.random() < 0.3:
                w["until"] = f"{rng.randint(0, since - 1)}s"
        if self.pids and rng.random() < 0.25:
            w["pid"] = rng.choice(self.pids)
        if self.dbs and rng.random() < 0.15:
            w["db"] = rng.choice(self.dbs)
        return w

    def draw(self, rng: random.Random) -> tuple[str, str, dict | None]:
        """(label, method, params) of one random request."""
        kinds = [
            ("get_trace_stats", 5), ("get_causal_chains", 4), ("get_per_process_breakdown", 4),
            ("get_timeline", 3), ("get_events", 4), ("get_timeline_chart", 2), ("run_sql", 4),
            ("explain", 1), ("list_databases", 1), ("open_database", 1),
            ("prompts/get", 2), ("prompts/list", 1), ("tools/list", 1), ("ping", 1),
        ]
        names = [k for k, _ in kinds if "/" in k or k == "ping" or k in self.tools]
        weights = [w for k, w in kinds if k in names]
        kind = rng.choices(names, weights)[0]
        if kind == "ping" or kind.endswith("/list"):
            return kind, kind, {} if kind != "ping" else None
        if kind == "prompts/get":
            p = rng.choice(self.prompts)
            args = {}
            for a in p.get("arguments", []):
                if a.get("required") or rng.random() < 0.5:
                    args[a["name"]] = rng.choice(self.dbs) if self.dbs else f"value {rng.randint(0, 9999)}"
            return f"prompt {p['name']}", kind, {"name": p["name"], "arguments": args}
        args = self.arguments(kind, rng)
        return kind, "tools/call", {"name": kind, "arguments": args}

    def arguments(self, tool: str, rng: random.Random) -> dict:
        if tool == "run_sql":
            n = rng.randint(1, 50)
            sql = rng.choice([
                f"SELECT pid, comm FROM processes LIMIT {n}",
                f"SELECT o.name, COUNT(*) AS n, SUM(c.dur_ns) AS t FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id GROUP BY o.name ORDER BY t DESC LIMIT {n}",
                f"SELECT * FROM host_events ORDER BY ts_ns LIMIT {n} OFFSET {rng.randint(0, 200)}",
                f"SELECT {n} AS k, COUNT(*) AS c FROM sessions",
            ])
            return {"sql": sql, "max_rows": rng.randint(1, 100)}
        if tool == "list_databases":
            return {}
        if tool == "open_database":
            return {"path": rng.choice(self.dbs)}
        args = self.window(rng)
        if tool == "get_timeline":
            args["bucket"] = rng.choice(["100ms", "250ms", "1s", "2s", "5s"])
        elif tool == "get_events":
            args["limit"] = rng.randint(1, 300)
            args["offset"] = rng.randint(0, 400)
            if rng.random() < 0.4:
                args["op"] = rng.choice(["sched_switch", "cudaStreamSynchronize", "cudaLaunchKernel", "mm_page_alloc"])
            if rng.random() < 0.3:
                args["min_dur"] = rng.choice(["10us", "100us", "1ms"])
        elif tool == "get_timeline_chart":
            args.pop("since", None)
            args.pop("until", None)
            start = rng.uniform(0, 60)
            args["start_offset_s"] = round(start, 3)
            args["end_offset_s"] = round(start + rng.uniform(0.5, 30), 3)
            args["width"] = rng.randint(300, 1600)
            args["height"] = rng.randint(300, 900)
        return args

    def check(self, label: str, method: str, params: dict | None, result: dict) -> None:
        """Raises CallFailed unless `result` is a success of its kind."""
        if method == "tools/call":
            if result.get("isError"):
                text = " ".join(c.get("text", "") for c in result.get("content", []))
                # The random windows and pids often miss the file asked: the
                # server then refuses, saying what the file holds and the
                # corrected call. That refusal is the right answer.
                if any(k in text for k in ("Corrected call", "This file:", "count back from the end")):
                    return
                raise CallFailed(f"isError with {json.dumps(params)[:200]}: {text[:200]}")
            validator = self.validators.get(params["name"])
            if validator is not None:
                if "structuredContent" not in result:
                    raise CallFailed("no structuredContent although the tool declares an outputSchema")
                err = jsonschema.exceptions.best_match(validator.iter_errors(result["structuredContent"]))
                if err is not None:
                    raise CallFailed(f"structuredContent does not match outputSchema: {err.message[:200]}")
            if not result.get("content"):
                raise CallFailed("empty content")
        elif method == "prompts/get" and not result.get("messages"):
            raise CallFailed("prompt without messages")
        elif method == "tools/list" and set(t["name"] for t in result.get("tools", [])) != set(self.tools):
            raise CallFailed("tools/list changed between sessions")


async def session(hc, url, token, cat: Catalogue, rng: random.Random, deadline: float, max_calls: int, st: Stats) -> None:
    """One session: handshake, a random number of mixed calls, DELETE."""
    c = Client(hc, url, token)
    label = "initialize"
    try:
        t0 = time.perf_counter()
        await c.initialize()
        st.record(label, (time.perf_counter() - t0) * 1e3)
        st.opened += 1
        for _ in range(rng.randint(1, max_calls)):
            if time.monotonic() >= deadline:
                break
            label, method, params = cat.draw(rng)
            t0 = time.perf_counter()
            result = await c.request(method, params)
            st.record(label, (time.perf_counter() - t0) * 1e3)
            cat.check(label, method, params, result)
            if method == "tools/call":
                st.tool_calls += 1
                if st.tool_calls == CACHE_ENTRIES:
                    st.cache_full_at = time.monotonic() - st.t_start
        label = "DELETE"
        t0 = time.perf_counter()
        await c.close()
        st.record(label, (time.perf_counter() - t0) * 1e3)
        st.closed.append(c.sid)
    except Exception as e:  # noqa: BLE001 - any failure of a call is an error to report
        st.fail(label, f"{type(e).__name__}: {e}")
        if c.sid:
            try:
                await c.close()
            except (CallFailed, httpx2.HTTPError):
                pass
        await anyio.sleep(0.1)  # no busy loop against a broken server


async def worker(hc, url, token, cat, seed: int, deadline: float, max_calls: int, st: Stats) -> None:
    """Keeps one session slot busy until the deadline, recycling sessions."""
    rng = random.Random(seed)
    while time.monotonic() < deadline:
        await session(hc, url, token, cat, rng, deadline, max_calls, st)


async def sampler(pid: int, t_start: float, stop: anyio.Event, st: Stats) -> None:
    """Samples the server's RSS, threads and fds every second until `stop`."""
    while True:
        try:
            rss, threads, fds = proc_figures(pid)
        except OSError:
            return  # the server is gone; the sessions report it
        if rss == 0:
            return  # a zombie: the server has exited
        st.samples.append((time.monotonic() - t_start, rss, threads, fds))
        with anyio.move_on_after(1.0):
            await stop.wait()
        if stop.is_set():
            return


async def discover(hc, url, token) -> Catalogue:
    """Learns tools, prompts, pids and databases through one session."""
    c = Client(hc, url, token)
    await c.initialize()
    tools = (await c.request("tools/list", {}))["tools"]
    prompts = (await c.request("prompts/list", {}))["prompts"]
    pids: list[int] = []
    dbs: list[str] = []
    names = {t["name"] for t in tools}
    if "run_sql" in names:
        r = await c.request("tools/call", {"name": "run_sql", "arguments": {"sql": "SELECT DISTINCT pid FROM processes LIMIT 8"}})
        rows = (r.get("structuredContent") or {}).get("rows") or []
        pids = [int(row[0]) for row in rows if isinstance(row, list) and row and isinstance(row[0], int)]
    if "list_databases" in names:
        r = await c.request("tools/call", {"name": "list_databases", "arguments": {}})
        dbs = [d["name"] for d in (r.get("structuredContent") or {}).get("databases", [])]
    await c.close()
    return Catalogue(tools, prompts, pids, dbs)


async def after_checks(hc, url, token, closed: list[str], st: Stats) -> None:
    """The server still answers, closed sessions are really gone, the token is still required."""
    try:
        c = Client(hc, url, token)
        await c.initialize()
        r = await c.request("tools/call", {"name": "get_trace_stats", "arguments": {}})
        if r.get("isError"):
            raise CallFailed("get_trace_stats failed after the run")
        await c.close()
        plain = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for sid in random.Random(0).sample(closed, min(50, len(closed))):
            r = await hc.post(url, json=ping, headers={**plain, "Authorization": f"Bearer {token}",
                                                       "Mcp-Session-Id": sid, "MCP-Protocol-Version": PROTOCOL})
            if r.status_code != 404:
                st.fail("after the run", f"closed session {sid} still answers (HTTP {r.status_code})")
                break
        r = await hc.post(url, json=ping, headers=plain)
        if r.status_code != 401:
            st.fail("after the run", f"a request without the token answered HTTP {r.status_code}, not 401")
    except (CallFailed, httpx2.HTTPError) as e:
        st.fail("after the run", f"server no longer answers: {type(e).__name__}: {e}")


def start_server(a) -> tuple[subprocess.Popen, str, str, Path]:
    token = secrets.token_urlsafe(24)
    log = Path(tempfile.mkstemp(prefix="ingero-load-", suffix=".log")[1])
    with open(log, "w") as fh:
        proc = subprocess.Popen([a.bin, "mcp", "--http", "127.0.0.1:0", "--db", a.db, f"--token={token}"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh)
    for _ in range(1200):
        m = re.search(r"listening on (http://\S+/mcp)", log.read_text())
        if m:
            return proc, m.group(1), token, log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text()}")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def report(a, st: Stats, wall: float, bound: int, warm, peak, end) -> None:
    requests = sum(len(v) for v in st.latency.values())
    calls = requests - len(st.latency.get("initialize", [])) - len(st.latency.get("DELETE", []))
    print(f"ingero mcp --http load: {a.sessions} concurrent sessions for {wall:.1f} s on {Path(a.db).name}")
    print(f"  calls {calls} ({calls / wall:.1f}/s); HTTP requests with handshakes and DELETEs {requests} "
          f"({requests / wall:.1f}/s); sessions opened {st.opened}, closed {len(st.closed)}; errors {st.error_count}")
    print(f"  {'call':28} {'n':>7} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    for label in sorted(st.latency, key=lambda k: -len(st.latency[k])):
        v = st.latency[label]
        print(f"  {label:28} {len(v):7} {pct(v, 0.5):9.2f} {pct(v, 0.99):9.2f} {max(v):9.2f}")
    first = st.samples[0]
    print(f"  RSS MiB: start {first[1] / MIB:.1f}, after warm-up ({warm[0]:.0f} s) {warm[1] / MIB:.1f}, "
          f"peak {peak[1] / MIB:.1f} (at {peak[0]:.0f} s), end {end[1] / MIB:.1f}; "
          f"growth after warm-up: to the end {(end[1] - warm[1]) / MIB:+.1f}, "
          f"to the highest {(max(s[1] for s in st.samples if s[0] >= warm[0]) - warm[1]) / MIB:+.1f} "
          f"(bound {bound / MIB:.1f}; result cache first full at "
          f"{'-' if st.cache_full_at is None else f'{st.cache_full_at:.0f} s'})")
    step = max(1, len(st.samples) // 12)
    trace = ", ".join(f"{t:.0f}s {rss / MIB:.0f}" for t, rss, _, _ in st.samples[::step])
    print(f"  RSS MiB over the run: {trace}")
    print(f"  CPU during the load: server {st.cpu[0]:.1f} s, this client {st.cpu[1]:.1f} s "
          f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
    print(f"  threads: start {first[2]}, peak {max(s[2] for s in st.samples)}, end {end[2]}; "
          f"open fds: start {first[3]}, peak {max(s[3] for s in st.samples)}, end {end[3]}")
    print(f"  idle after the run (client disconnected): RSS {st.drained[0] / MIB:.1f} MiB, "
          f"threads {st.drained[1]}, open fds {st.drained[2]}")


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=str(REPO / "target/release/ingero"))
    ap.add_argument("--db", default=str(SEED))
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--max-calls", type=int, default=20, help="a session makes 1 to this many calls, then closes")
    ap.add_argument("--warmup", type=float, default=0.25, help="share of the run before RSS is watched")
    # Once warm, RSS still wanders by some MiB: the result cache empties and
    # refills, the allocator keeps freed pages per thread arena, SQLite page
    # caches fill. A leak grows with calls or sessions and crosses this on
    # long runs (1 KiB per call is 130 MiB in a 300 s release run).
    ap.add_argument("--rss-slack-mib", type=float, default=32, help="RSS growth allowed after warm-up, MiB")
    ap.add_argument("--rss-slack-frac", type=float, default=0.25, help="... or this share of the warm-up RSS, if larger")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    a = ap.parse_args()
    proc, url, token, log = start_server(a)
    st = Stats()
    try:
        limits = httpx2.Limits(max_connections=a.sessions * 2, max_keepalive_connections=a.sessions * 2)
        async with httpx2.AsyncClient(timeout=60, limits=limits) as hc:
            cat = await discover(hc, url, token)
            print(f"seed {a.seed}; {len(cat.tools)} tools, {len(cat.prompts)} prompts, pids {cat.pids}, databases {cat.dbs}")
            stop = anyio.Event()
            cpu0 = cpu_seconds(proc.pid), sum(os.times()[:2])
            t_start = st.t_start = time.monotonic()
            deadline = t_start + a.seconds
            async with anyio.create_task_group() as tg:
                tg.start_soon(sampler, proc.pid, t_start, stop, st)
                async with anyio.create_task_group() as load:
                    for k in range(a.sessions):
                        load.start_soon(worker, hc, url, token, cat, a.seed * 1000 + k, deadline, a.max_calls, st)
                wall = time.monotonic() - t_start
                st.cpu = cpu_seconds(proc.pid) - cpu0[0], sum(os.times()[:2]) - cpu0[1]
                stop.set()
            await after_checks(hc, url, token, st.closed, st)
        # Connections are closed now: what the idle server keeps.
        await anyio.sleep(2)
        if proc.poll() is not None:
            st.fail("server", f"exited with {proc.returncode}")
        else:
            st.drained = proc_figures(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            st.fail("server", "did not stop on SIGTERM within 10 s")
    # Warm-up: the --warmup share of the run, extended (up to half of it)
    # until the result cache has been filled once.
    warm_at = max(a.seconds * a.warmup, min(st.cache_full_at or a.seconds, a.seconds / 2))
    warm = min(st.samples, key=lambda s: abs(s[0] - warm_at))
    after = [s for s in st.samples if s[0] >= warm[0]]
    peak = max(st.samples, key=lambda s: s[1])
    end = st.samples[-1]
    bound = max(int(a.rss_slack_mib * MIB), int(a.rss_slack_frac * warm[1]))
    report(a, st, wall, bound, warm, peak, end)
    failed = False
    if st.error_count:
        print(f"FAIL: {st.error_count} errors; first ones:")
        for e in st.errors[:5]:
            print(f"  {e}")
        failed = True
    if max(s[1] for s in after) - warm[1] > bound:
        print(f"FAIL: RSS grew {(max(s[1] for s in after) - warm[1]) / MIB:.1f} MiB after warm-up "
              f"(bound {bound / MIB:.1f} MiB)")
        failed = True
    if st.opened == 0:
        print("FAIL: no session could be opened")
        failed = True
    if failed:
        print(f"server log: {log}")
        return 1
    log.unlink(missing_ok=True)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
