#!/usr/bin/env python3
"""The capture flow an assistant follows over MCP, end to end with the
official MCP Python SDK against `ingero mcp --allow-capture` on this host:
list the GPU processes, start a bounded capture of the job, poll its
status, then investigate the new database. The job is the stand-in CUDA
workload (tests/standin), run under a name of its own so nothing else on
the machine matches it; the stand-in NVML reports its GPU memory.

Also the refusals around it: unknown arguments (every tool), a capture
asked without a target, an ambiguous process name, a second capture while
one runs, a duration over the operator's limit; and the two limits that
stop a capture by themselves (--capture-max-duration, --capture-max-bytes),
each stopping it cleanly and saying why.

Needs root (eBPF); without it every check that needs a capture fails when
INGERO_EBPF_TESTS=require, as in CI, and is skipped otherwise.

Usage: test_capture_flow.py --bin PATH_TO_INGERO
Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "tests/data/ingero-investigations/pytorch-dataloader-starvation.db"
GPU_MEMORY = 3 * 2**30
# A hang guard for polling, not a timing expectation: captures here end in
# a few seconds.
GIVE_UP_S = 120


class Checks:
    """Named checks; a failure is recorded and the run goes on."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def ok(self, name: str, cond: bool, detail: Any = "") -> bool:
        if cond:
            self.passed += 1
        else:
            self.failed.append(f"{name}: {detail}")
            print(f"FAIL {name}: {detail}", flush=True)
        return cond


C = Checks()


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def schema_error(schema: dict, value: Any) -> str | None:
    cls = jsonschema.validators.validator_for(schema)
    err = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    return None if err is None else f"{err.message} at {list(err.absolute_path)}"


async def refused(c: Client, name: str, tool: str, args: dict, pattern: str) -> str:
    """A tool error (isError) whose text matches `pattern`; returns the text."""
    try:
        r = await c.call_tool(tool, args)
    except MCPError as e:
        C.ok(name, False, f"protocol error instead of a tool error: {e.error.message}")
        return ""
    msg = text_of(r)
    C.ok(name, r.is_error is True and re.search(pattern, msg, re.S) is not None, f"is_error={r.is_error} {msg[:400]!r}")
    return msg


class Job:
    """The stand-in workload under a unique program name, held on stdin
    after it has loaded the stand-in CUDA libraries."""

    def __init__(self, program: Path, *args: str) -> None:
        env = {**os.environ, "INGERO_STANDIN_US": "100"}
        self.proc = subprocess.Popen([str(program), "--stdin", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        self.pid = self.proc.pid
        maps = Path(f"/proc/{self.pid}/maps")
        deadline = time.time() + GIVE_UP_S
        while "libcuda.so.1" not in (maps.read_text() if maps.exists() else ""):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"the stand-in workload {self.pid} never loaded libcuda.so.1")
            time.sleep(0.01)

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.close()

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def build_job(tmp: Path) -> tuple[Path, Path]:
    """The stand-ins, and the workload copied under a name only this run uses."""
    out = tmp / "standin"
    r = subprocess.run(["make", "-s", "-C", str(REPO / "tests/standin"), f"OUT={out}"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building the stand-ins failed: {r.stderr[-400:]}")
    program = out / f"flowjob{os.getpid()}"
    shutil.copy(out / "workload", program)
    return out, program


def server(binary: str, folder: Path, *flags: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    folder.mkdir(exist_ok=True)
    shutil.copy(SEED, folder / SEED.name)
    return StdioServerParameters(command=binary, args=["mcp", "--db", str(folder / SEED.name), "--allow-capture", *flags],
                                 env={**os.environ, "INGERO_LOG": "ingero=warn", **(env or {})})


async def wait_stopped(c: Client, output: str) -> dict:
    """Polls get_trace_status until the capture into `output` has ended."""
    deadline = time.time() + GIVE_UP_S
    while True:
        r = await c.call_tool("get_trace_status", {"output": output})
        st = r.structured_content or {}
        if r.is_error or not st.get("running", False) or time.time() > deadline:
            return st if not r.is_error else {"error": text_of(r)}
        await anyio.sleep(0.2)


async def the_flow(binary: str, tmp: Path, standin: Path, program: Path) -> None:
    """list_gpu_processes -> start_trace (by name, bounded) -> get_trace_status
    -> the analysis tools on the new database; with the refusals on the way."""
    name = program.name
    folder = tmp / "flow"
    first = Job(program, "--iters", "300", "--workers", "2", "--worker-ms", "300")
    second = Job(program, "--iters", "1")
    nvml = {"INGERO_NVML_LIB": str(standin / "libnvidia-ml.so.1"), "STANDIN_NVML_COMPUTE": f"{first.pid}:{GPU_MEMORY}"}
    try:
        async with Client(server(binary, folder, "--capture-max-duration", "10m", env=nvml), mode="legacy", read_timeout_seconds=120) as c:
            C.ok("flow: the instructions tell how to capture", "list_gpu_processes" in (c.instructions or "") and "start_trace" in (c.instructions or ""), c.instructions)
            tools = {t.name: t for t in (await c.list_tools()).tools}
            C.ok("flow: list_gpu_processes is offered", "list_gpu_processes" in tools, sorted(tools))
            start_desc = tools["start_trace"].description or ""
            C.ok("flow: start_trace states the operator's limits", "Operator limits" in start_desc and "10m" in start_desc and "one capture at a time" in start_desc, start_desc)
            for t in tools.values():
                C.ok(f"flow: {t.name} closes its arguments", t.input_schema.get("additionalProperties") is False, t.input_schema)

            # Refusals before anything runs: nothing is started by them.
            msg = await refused(c, "flow: unknown arguments refused", "start_trace",
                                {"command": [str(program)], "db": "cap1.db", "duration": "6s"},
                                r'unknown arguments "command", "db": start_trace accepts pid, pids, process_name, all_processes, ')
            C.ok("flow: the refusal lists every accepted argument", all(a in msg for a in ["pid", "pids", "process_name", "all_processes", "duration", "output", "ring_size"]), msg)
            await refused(c, "flow: unknown argument of an analysis tool refused", "get_trace_stats", {"dbb": SEED.name}, r'unknown argument "dbb": get_trace_stats accepts .*db')
            await refused(c, "flow: unknown argument of a tool without arguments refused", "list_gpu_processes", {"all": True}, r'unknown argument "all": list_gpu_processes takes no arguments')
            await refused(c, "flow: no target is not every process", "start_trace", {"duration": "6s"}, r"say what to trace.*all_processes: true")
            await refused(c, "flow: nothing was started by the refusals", "get_trace_status", {}, r"no capture has been started")
            await refused(c, "flow: a duration over the limit is refused", "start_trace", {"pid": first.pid, "duration": "1h"}, r"--capture-max-duration 10m.*at most 10m")

            # 1. Which GPU processes are there?
            r = await c.call_tool("list_gpu_processes", {})
            listed = {p["pid"]: p for p in (r.structured_content or {}).get("processes", [])}
            C.ok("flow: list_gpu_processes matches its outputSchema", not r.is_error and schema_error(tools["list_gpu_processes"].output_schema, r.structured_content) is None, text_of(r)[:300])
            job = listed.get(first.pid, {})
            C.ok("flow: the job is listed from its memory map", str(job.get("libcuda", "")).endswith("/libcuda.so.1") and job.get("comm") == name, job)
            C.ok("flow: with its command line, user and start time", "--iters 300" in job.get("cmdline", "") and job.get("user") and str(job.get("started_at", "")).endswith("Z"), job)
            C.ok("flow: with the GPU memory NVML reports", job.get("gpu_memory_bytes") == GPU_MEMORY and job.get("gpus") == [0], job)
            C.ok("flow: not traced yet", job.get("traced") is False and job.get("traced_by") is None, job)
            C.ok("flow: the text names the job", f"pid {first.pid}" in text_of(r), text_of(r)[:300])

            # 2. By name: two unrelated jobs of that name are refused, listed.
            msg = await refused(c, "flow: an ambiguous name is refused", "start_trace", {"process_name": name, "duration": "5m"},
                                rf"matches 2 separate GPU processes: .*give the pid")
            C.ok("flow: the refusal lists both candidates", f"pid {first.pid}" in msg and f"pid {second.pid}" in msg, msg)
            await refused(c, "flow: an unknown name is refused", "start_trace", {"process_name": name + "x"}, r"no GPU process is named")
            second.end()
            r = await c.call_tool("start_trace", {"process_name": name, "duration": "5m", "output": "flow.db", "ring_size": "64M"})
            st = r.structured_content or {}
            C.ok("flow: start_trace by the now unambiguous name", not r.is_error and st.get("running") is True and f"pid {first.pid} (" in st.get("target", ""), text_of(r)[:300])
            C.ok("flow: the status states the limits", st.get("limits", {}).get("max_duration_s") == 600 and st.get("limits", {}).get("max_concurrent") == 1, st.get("limits"))
            await refused(c, "flow: a second capture is refused while one runs", "start_trace", {"all_processes": True},
                          r"already running into flow\.db and this server allows 1 at a time \(--capture-max-concurrent\)")
            r = await c.call_tool("list_gpu_processes", {})
            job = next((p for p in (r.structured_content or {}).get("processes", []) if p["pid"] == first.pid), {})
            C.ok("flow: the job is now marked traced", job.get("traced") is True and job.get("traced_by") == "flow.db", job)

            # 3. The job runs to its end; the capture ends with it.
            first.release()
            first.proc.wait(timeout=GIVE_UP_S)
            st = await wait_stopped(c, "flow.db")
            C.ok("flow: the capture ended with its target", st.get("running") is False and st.get("stop_reason") == "target_exited" and st.get("limit_reached") is None, st)
            C.ok("flow: nothing lost", st.get("lost") == 0 and st.get("cuda_calls", 0) > 0, st)
            C.ok("flow: status matches its outputSchema", schema_error(tools["get_trace_status"].output_schema, st) is None, schema_error(tools["get_trace_status"].output_schema, st))
            C.ok("flow: the server's captures are listed", st.get("captures") == [{"output": "flow.db", "running": False}], st.get("captures"))

            # 4. Investigate the new database.
            r = await c.call_tool("get_trace_stats", {"db": "flow.db"})
            ops = {o["op"]: o for o in (r.structured_content or {}).get("ops", [])}
            C.ok("flow: every cudaLaunchKernel of the job is in the new database", not r.is_error and ops.get("cudaLaunchKernel", {}).get("count") == 300, text_of(r)[:300])
            r = await c.call_tool("get_per_process_breakdown", {"db": "flow.db"})
            procs = (r.structured_content or {}).get("processes", [])
            C.ok("flow: the job's forked workers are in it", len([p for p in procs if p.get("ppid") == first.pid]) == 2, text_of(r)[:300])
            r = await c.call_tool("get_causal_chains", {"db": "flow.db"})
            C.ok("flow: get_causal_chains answers on it", not r.is_error and r.structured_content is not None, text_of(r)[:300])
    finally:
        first.end()
        second.end()


def recorded_stop_reason(db: Path) -> str:
    """sessions.stop_reason of the file's last session, read with SQL."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT stop_reason FROM sessions ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        con.close()
    return str(row[0]) if row else ""


async def duration_limit(binary: str, tmp: Path, program: Path) -> None:
    """--capture-max-duration: a capture asked without a duration stops at
    the limit, cleanly, and says so."""
    job = Job(program, "--iters", "100", "--seconds", "600")
    job.release()
    try:
        async with Client(server(binary, tmp / "duration", "--capture-max-duration", "2s"), mode="legacy", read_timeout_seconds=120) as c:
            r = await c.call_tool("start_trace", {"pid": job.pid, "output": "timed.db"})
            C.ok("duration limit: started without a duration", not r.is_error and (r.structured_content or {}).get("running") is True, text_of(r)[:300])
            st = await wait_stopped(c, "timed.db")
            C.ok("duration limit: stopped by the limit", st.get("running") is False and st.get("stop_reason") == "max_duration", st)
            C.ok("duration limit: says which limit", "--capture-max-duration 2s" in str(st.get("limit_reached")), st.get("limit_reached"))
            C.ok("duration limit: finalised, nothing lost", st.get("state") == "stopped" and st.get("lost") == 0 and st.get("cuda_calls", 0) > 0, st)
            C.ok("duration limit: no write-ahead log left", not (tmp / "duration" / "timed.db-wal").exists(), list((tmp / "duration").iterdir()))
            why = recorded_stop_reason(tmp / "duration" / "timed.db")
            C.ok("duration limit: the file records why it stopped", why.startswith("duration ") and why.endswith(" elapsed"), why)
            r = await c.call_tool("get_trace_stats", {"db": "timed.db"})
            C.ok("duration limit: the database is readable", not r.is_error and (r.structured_content or {}).get("ops"), text_of(r)[:300])
    finally:
        job.end()


async def size_limit(binary: str, tmp: Path, program: Path) -> None:
    """--capture-max-bytes: the capture stops once its database reaches the
    size, cleanly, and says so."""
    job = Job(program, "--iters", "100", "--seconds", "600")
    job.release()
    limit = 2 * 2**20
    try:
        async with Client(server(binary, tmp / "size", "--capture-max-bytes", "2M"), mode="legacy", read_timeout_seconds=120) as c:
            desc = next(t.description for t in (await c.list_tools()).tools if t.name == "start_trace")
            C.ok("size limit: stated in start_trace", "2.0 MiB (2097152 bytes)" in (desc or ""), desc)
            r = await c.call_tool("start_trace", {"pid": job.pid, "output": "sized.db"})
            C.ok("size limit: started", not r.is_error and (r.structured_content or {}).get("limits", {}).get("max_bytes") == limit, text_of(r)[:300])
            st = await wait_stopped(c, "sized.db")
            C.ok("size limit: stopped by the limit", st.get("running") is False and st.get("stop_reason") == "max_bytes", st)
            C.ok("size limit: says which limit", "--capture-max-bytes 2.0 MiB" in str(st.get("limit_reached")), st.get("limit_reached"))
            C.ok("size limit: finalised, nothing lost", st.get("state") == "stopped" and st.get("lost") == 0 and st.get("database_bytes", 0) > 0, st)
            C.ok("size limit: no write-ahead log left", not (tmp / "size" / "sized.db-wal").exists(), list((tmp / "size").iterdir()))
            why = recorded_stop_reason(tmp / "size" / "sized.db")
            C.ok("size limit: the file records why it stopped", why == "size limit reached", why)
            r = await c.call_tool("get_trace_stats", {"db": "sized.db"})
            ops = {o["op"]: o for o in (r.structured_content or {}).get("ops", [])}
            C.ok("size limit: the database holds the calls", not r.is_error and ops.get("cudaLaunchKernel", {}).get("count", 0) > 0, text_of(r)[:300])
            r = await c.call_tool("stop_trace", {})
            C.ok("size limit: stop_trace afterwards returns the final state", not r.is_error and (r.structured_content or {}).get("stop_reason") == "max_bytes", text_of(r)[:300])
    finally:
        job.end()


async def two_at_once(binary: str, tmp: Path, program: Path) -> None:
    """--capture-max-concurrent 2: two captures run side by side, a third is
    refused, a process already traced is not traced twice, and stop_trace
    asks which one when several run."""
    jobs = [Job(program, "--iters", "1"), Job(program, "--iters", "1"), Job(program, "--iters", "1")]
    try:
        async with Client(server(binary, tmp / "two", "--capture-max-concurrent", "2"), mode="legacy", read_timeout_seconds=120) as c:
            for i, job in enumerate(jobs[:2]):
                r = await c.call_tool("start_trace", {"pid": job.pid, "output": f"c{i}.db", "duration": "5m"})
                C.ok(f"two at once: capture {i} started", not r.is_error and (r.structured_content or {}).get("running") is True, text_of(r)[:300])
            await refused(c, "two at once: a third is refused", "start_trace", {"pid": jobs[2].pid, "output": "c2.db"},
                          r"2 captures are already running \(c0\.db, c1\.db\) and this server allows 2 at a time")
            await refused(c, "two at once: stop_trace asks which one", "stop_trace", {}, r"2 captures are running \(c0\.db, c1\.db\): name the one to stop with output")
            r = await c.call_tool("stop_trace", {"output": "c0.db"})
            st = r.structured_content or {}
            C.ok("two at once: c0 stopped by name", not r.is_error and st.get("running") is False and st.get("stop_reason") == "requested", text_of(r)[:300])
            C.ok("two at once: c1 still runs", {"output": "c1.db", "running": True} in st.get("captures", []), st.get("captures"))
            await refused(c, "two at once: a process c1 traces is not traced again", "start_trace", {"pid": jobs[1].pid, "output": "dup.db"},
                          rf"pid {jobs[1].pid} .*is already traced by the capture into c1\.db")
            r = await c.call_tool("stop_trace", {})
            C.ok("two at once: the one left stops without a name", not r.is_error and (r.structured_content or {}).get("output", "").endswith("c1.db"), text_of(r)[:300])
            await refused(c, "two at once: an unknown capture name is refused", "get_trace_status", {"output": "nope.db"}, r"no capture into \"nope\.db\".*c0\.db, c1\.db")
    finally:
        for job in jobs:
            job.end()


def bad_limits(binary: str, tmp: Path) -> None:
    """Limits that cannot be met are refused at start-up (exit 2), saying what to give."""
    folder = tmp / "bad"
    folder.mkdir()
    shutil.copy(SEED, folder / SEED.name)
    for flags, want in [
        (["--capture-max-bytes", "lots"], "--capture-max-bytes"),
        (["--capture-max-duration", "0s"], "positive duration"),
        (["--capture-max-concurrent", "0"], "at least 1"),
    ]:
        out = subprocess.run([binary, "mcp", "--db", str(folder / SEED.name), "--allow-capture", *flags],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        C.ok(f"start-up: {' '.join(flags)} refused", out.returncode == 2 and want in out.stderr, (out.returncode, out.stderr[-300:]))
    out = subprocess.run([binary, "mcp", "--db", str(folder / SEED.name), "--capture-max-duration", "5m"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    C.ok("start-up: a capture limit without --allow-capture refused", out.returncode == 2 and "--allow-capture" in out.stderr, (out.returncode, out.stderr[-300:]))


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    binary = ap.parse_args().bin
    with tempfile.TemporaryDirectory(prefix="ingero-capture-flow-") as tmp_s:
        tmp = Path(tmp_s)
        bad_limits(binary, tmp)
        if os.geteuid() != 0:
            print("the capture flow needs root (eBPF)")
            C.ok("capture flow ran (INGERO_EBPF_TESTS=require needs root)", os.environ.get("INGERO_EBPF_TESTS") != "require", "not root")
        else:
            standin, program = build_job(tmp)
            for step_name, step in [
                ("flow", lambda: the_flow(binary, tmp, standin, program)),
                ("duration limit", lambda: duration_limit(binary, tmp, program)),
                ("size limit", lambda: size_limit(binary, tmp, program)),
                ("two at once", lambda: two_at_once(binary, tmp, program)),
            ]:
                try:
                    await step()
                except Exception as e:  # one crashed step is one failure; the others still run
                    traceback.print_exc()
                    C.ok(f"{step_name}: completed", False, repr(e))
    print(f"\n{C.passed} checks passed, {len(C.failed)} failed")
    for f in C.failed:
        print(f"  FAILED {f}")
    return 1 if C.failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
