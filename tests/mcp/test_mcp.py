#!/usr/bin/env python3
"""End-to-end test of `ingero mcp` with the official MCP Python SDK.

Drives the built binary over stdio and streamable HTTP, each in the
2026-07-28 mode (no initialize, discovered) and the legacy 2025-11-25
initialize mode. Checks every tool against its declared outputSchema and
against `ingero explain --json` / `ingero query --json` on the same file,
the prompts, and that bad input gets a proper MCP or HTTP error while the
server stays up.

Usage: test_mcp.py --bin PATH_TO_INGERO [--seed DB] [--only NAME]
Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import base64
import json
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
from typing import Any, Callable

import anyio
import httpx2
import jsonschema
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SEED = REPO / "tests/data/ingero-investigations/pytorch-dataloader-starvation.db"

ANALYSIS_TOOLS = [
    "explain",
    "get_trace_stats",
    "get_causal_chains",
    "get_per_process_breakdown",
    "get_timeline",
    "get_events",
    "get_timeline_chart",
    "get_stacks",
    "get_rank_report",
]
READ_ONLY_TOOLS = ANALYSIS_TOOLS + ["compare_runs", "run_sql", "list_databases", "open_database", "get_trace_status", "list_gpu_processes"]
ALL_TOOLS = READ_ONLY_TOOLS + ["start_trace", "stop_trace", "merge_databases"]
PROMPTS = ["investigate", "compare_runs", "explain_chain"]
TOKEN = "dGVzdHMgb2YgdGhlIGh0dHAgc2VydmVyIG9ubHk"


class Checks:
    """Collects named checks; a failure is recorded and the run continues."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []
        self.skipped: list[str] = []

    def ok(self, name: str, cond: bool, detail: Any = "") -> None:
        if cond:
            self.passed += 1
        else:
            self.failed.append(f"{name}: {detail}")
            print(f"FAIL {name}: {detail}", flush=True)

    def skip(self, name: str, why: str) -> None:
        self.skipped.append(f"{name}: {why}")
        print(f"SKIP {name}: {why}", flush=True)


C = Checks()


def cli_json(binary: str, *args: str) -> Any:
    out = subprocess.run([binary, *args, "--json"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{args}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def covers(mcp: Any, cli: Any) -> bool:
    """Whether an MCP result carries the CLI's JSON: every field with the
    same value. MCP results may add readable companions beside raw numbers
    (`span` beside `span_ns`) and a headline; nothing the CLI says may
    differ or be missing."""
    if isinstance(cli, dict):
        return isinstance(mcp, dict) and all(k in mcp and covers(mcp[k], v) for k, v in cli.items())
    if isinstance(cli, list):
        return isinstance(mcp, list) and len(mcp) == len(cli) and all(covers(a, b) for a, b in zip(mcp, cli))
    return mcp == cli


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def validate(schema: dict, value: Any) -> str | None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    err = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    return None if err is None else f"{err.message} at {list(err.absolute_path)}"


async def expect_tool_error(c: Client, name: str, tool: str, args: dict, pattern: str) -> None:
    """A tool-level error: isError true, message matching `pattern`."""
    try:
        r = await c.call_tool(tool, args)
    except MCPError as e:
        C.ok(name, False, f"protocol error instead of tool error: {e.error.message}")
        return
    msg = text_of(r)
    C.ok(name, r.is_error is True and re.search(pattern, msg, re.I) is not None, f"is_error={r.is_error} {msg[:200]!r}")


async def expect_protocol_error(c: Client, name: str, call: Callable[[], Any], codes: tuple[int, ...]) -> None:
    """A JSON-RPC error with one of `codes`."""
    try:
        r = await call()
    except MCPError as e:
        C.ok(name, e.code in codes, f"code {e.code}: {e.error.message}")
        return
    C.ok(name, False, f"no protocol error; got is_error={getattr(r, 'is_error', None)} {text_of(r)[:200]!r}")


async def still_up(c: Client, name: str) -> None:
    r = await c.call_tool("run_sql", {"sql": "SELECT 1 AS one"})
    C.ok(f"{name}: server still answers", not r.is_error and r.structured_content["rows"] == [[1]], text_of(r)[:200])


HUGE = 900_000


async def huge_values_quoted_in_part(c: Client, label: str) -> None:
    """A 900 KB argument is refused with an error quoting ~80 characters of it
    and its length (or not at all), whichever check refuses it (schema,
    duration parser, database library, prompt lookup)."""
    huge = "7" * HUGE
    for tool, args in [
        ("get_trace_stats", {"pid": huge}),
        ("get_trace_stats", {"since": huge}),
        ("get_timeline", {"bucket": huge}),
        ("open_database", {"path": huge}),
        ("get_events", {"db": huge}),
    ]:
        arg = next(iter(args))
        r = await c.call_tool(tool, args)
        msg = text_of(r)
        C.ok(f"{label}: {tool} {arg} of {HUGE:,} bytes quoted in part",
             r.is_error is True and len(msg) < 600 and "7" * 81 not in msg and ("7" * 80 not in msg or f"({HUGE:,} bytes)" in msg),
             f"is_error={r.is_error} {len(msg)} bytes: {msg[:300]!r}")
    try:
        await c.get_prompt(huge, {})
        C.ok(f"{label}: prompt name of {HUGE:,} bytes refused", False, "no error")
    except MCPError as e:
        msg = e.error.message
        # Over stateless HTTP the name also travels in the Mcp-Name header,
        # which the HTTP layer may refuse first, quoting nothing.
        C.ok(f"{label}: prompt name of {HUGE:,} bytes quoted in part",
             len(msg) < 600 and "7" * 81 not in msg and ("7" * 80 not in msg or f"({HUGE:,} bytes)" in msg),
             f"{len(msg)} bytes: {msg[:300]!r}")


async def exact_instants(c: Client, label: str, seed: Path) -> None:
    """Epoch-ns instants (beyond 2^53, where a double-based JSON reader drops
    digits) arrive as exact decimal strings, with integer offsets beside them."""
    r = await c.call_tool("get_events", {"db": seed.name, "limit": 5, "op": "cudaLaunchKernel"})
    rows = (r.structured_content or {}).get("rows", [])
    C.ok(f"{label}: get_events rows", not r.is_error and len(rows) > 0, text_of(r)[:200])
    window = (r.structured_content or {}).get("window", {})
    C.ok(f"{label}: window instants are strings, offsets integers",
         isinstance(window.get("start_ns"), str) and isinstance(window.get("end_ns"), str)
         and isinstance(window.get("start_offset_ns"), int) and isinstance(window.get("end_offset_ns"), int)
         and int(window["end_ns"]) - int(window["start_ns"]) == window["end_offset_ns"] - window["start_offset_ns"], window)
    for row in rows[:2]:
        ts = row.get("ts_ns")
        C.ok(f"{label}: ts_ns is an exact string beyond 2^53", isinstance(ts, str) and int(ts) > 2**53 and isinstance(row.get("offset_ns"), int), row)
        if not isinstance(ts, str):
            continue
        # The string is the stored value to the last digit: SQL finds it.
        q = await c.call_tool("run_sql", {"db": seed.name, "sql": f"SELECT COUNT(*) AS n FROM cuda_calls WHERE ts_ns = {ts}"})
        C.ok(f"{label}: ts_ns {ts} found by run_sql", not q.is_error and q.structured_content["rows"][0][0] >= 1, text_of(q)[:200])
    r = await c.call_tool("run_sql", {"db": seed.name, "sql": "SELECT MAX(ts_ns) AS t, 9007199254740991 AS safe, 9007199254740992 AS unsafe, 1.5 AS real FROM cuda_calls"})
    row = (r.structured_content or {}).get("rows", [[None, None, None, None]])[0]
    C.ok(f"{label}: run_sql integers beyond 2^53 are strings, others numbers",
         not r.is_error and isinstance(row[0], str) and int(row[0]) > 2**53 and row[1] == 9007199254740991 and row[2] == "9007199254740992" and row[3] == 1.5, row)
    # What a JavaScript client would read from the JSON text: still exact.
    text = json.dumps(r.structured_content)
    as_js = json.loads(text, parse_int=float)
    C.ok(f"{label}: run_sql cell survives a double-based parser", not r.is_error and as_js["rows"][0][0] == row[0], as_js.get("rows"))


async def exercise(c: Client, label: str, binary: str, seed: Path, demo: Path | None, stateful: bool) -> None:
    """Everything a client session can check, on one transport/mode."""
    # Identity and catalogue.
    C.ok(f"{label}: server name", c.server_info is not None and c.server_info.name == "ingero", c.server_info)
    C.ok(f"{label}: instructions", bool(c.instructions) and "get_trace_stats" in c.instructions, c.instructions)
    tools = {t.name: t for t in (await c.list_tools()).tools}
    C.ok(f"{label}: tool set", sorted(tools) == sorted(ALL_TOOLS), sorted(tools))
    schemas: dict[str, dict] = {}
    for name, t in tools.items():
        schemas[name] = t.output_schema or {}
        C.ok(f"{label}: {name} outputSchema", bool(t.output_schema) and t.output_schema.get("type") == "object", t.output_schema)
        C.ok(f"{label}: {name} inputSchema", t.input_schema.get("type") == "object", t.input_schema)
        ann = t.annotations
        ro = bool(ann and ann.read_only_hint)
        C.ok(f"{label}: {name} readOnly annotation", ro == (name in READ_ONLY_TOOLS), ann)
    C.ok(f"{label}: stop_trace destructive", bool(tools["stop_trace"].annotations.destructive_hint), tools["stop_trace"].annotations)

    prompts = {p.name: p for p in (await c.list_prompts()).prompts}
    C.ok(f"{label}: prompt set", sorted(prompts) == sorted(PROMPTS), sorted(prompts))
    inv_args = {a.name: a for a in (prompts["investigate"].arguments or [])}
    C.ok(f"{label}: investigate arguments", "db" in inv_args and "focus" in inv_args, inv_args)
    cmp_args = {a.name: a.required for a in (prompts["compare_runs"].arguments or [])}
    C.ok(f"{label}: compare_runs required args", cmp_args == {"baseline": True, "candidate": True}, cmp_args)
    p = await c.get_prompt("investigate", {"db": seed.name, "focus": "GPU idles between batches"})
    ptext = "\n".join(m.content.text for m in p.messages)
    C.ok(f"{label}: investigate prompt filled", seed.name in ptext and "GPU idles between batches" in ptext and "get_causal_chains" in ptext and "{{" not in ptext, ptext[:200])
    await expect_protocol_error(c, f"{label}: compare_runs without arguments", lambda: c.get_prompt("compare_runs", {}), (-32602,))
    await expect_protocol_error(c, f"{label}: unknown prompt", lambda: c.get_prompt("no_such_prompt", {}), (-32602, -32601))

    # compare_runs: two databases by name; its structured output matches its schema.
    other = demo if demo else seed
    r = await c.call_tool("compare_runs", {"base": seed.name, "new": other.name})
    ok = not r.is_error and r.structured_content is not None
    C.ok(f"{label}: compare_runs", ok, text_of(r)[:300])
    if ok:
        err = validate(schemas["compare_runs"], r.structured_content)
        C.ok(f"{label}: compare_runs matches outputSchema", err is None, err)
        C.ok(f"{label}: compare_runs text leads with the verdict",
             text_of(r).startswith(r.structured_content["verdict"]["sentence"]), text_of(r)[:200])
        # get_causal_chains with compare_with: the same comparison after the chains.
        g = await c.call_tool("get_causal_chains", {"db": other.name, "compare_with": seed.name})
        got = None if g.is_error or g.structured_content is None else g.structured_content.get("comparison")
        C.ok(f"{label}: get_causal_chains compare_with carries compare_runs' comparison",
             got == r.structured_content, text_of(g)[:300])
        if got is not None:
            err = validate(schemas["get_causal_chains"], g.structured_content)
            C.ok(f"{label}: get_causal_chains with compare_with matches outputSchema", err is None, err)
            C.ok(f"{label}: get_causal_chains with compare_with ends with the verdict",
                 r.structured_content["verdict"]["sentence"] in text_of(g).split("Compared with the baseline", 1)[-1],
                 text_of(g)[-300:])

    # Every analysis tool on every database, against the CLI on the same file.
    dbs = [seed] + ([demo] if demo else [])
    for db in dbs:
        dbname = db.name
        real = str(db.resolve())
        report = cli_json(binary, "explain", "--db", real)
        results: dict[str, Any] = {}
        for tool in ANALYSIS_TOOLS:
            args: dict[str, Any] = {"db": dbname}
            if tool == "get_events":
                args["limit"] = 20
            if tool == "get_causal_chains":
                args["detail"] = "full"
            r = await c.call_tool(tool, args)
            ok = not r.is_error and r.structured_content is not None
            C.ok(f"{label}: {tool} on {dbname}", ok, text_of(r)[:300])
            if not ok:
                continue
            results[tool] = r.structured_content
            err = validate(schemas[tool], r.structured_content)
            C.ok(f"{label}: {tool} on {dbname} matches outputSchema", err is None, err)
            C.ok(f"{label}: {tool} on {dbname} has text", len(text_of(r)) > 20, text_of(r)[:100])
        r = await c.call_tool("get_causal_chains", {"db": dbname})
        brief = r.structured_content or {}
        C.ok(f"{label}: get_causal_chains brief on {dbname} matches outputSchema",
             not r.is_error and validate(schemas["get_causal_chains"], brief) is None,
             validate(schemas["get_causal_chains"], brief) if not r.is_error else text_of(r)[:300])
        C.ok(f"{label}: get_causal_chains brief on {dbname}: headline first, text within 4,000 characters",
             list(brief)[:2] == ["headline", "detail"] and brief.get("detail") == "brief" and len(text_of(r)) <= 4000,
             f"keys {list(brief)[:4]}, text {len(text_of(r))} characters")
        r = await c.call_tool("get_timeline_chart", {"db": dbname, "width": 900, "height": 500})
        images = [b for b in r.content if getattr(b, "type", "") == "image"]
        svg = base64.b64decode(images[0].data).decode() if images else ""
        C.ok(f"{label}: get_timeline_chart returns an SVG image ({dbname})",
             not r.is_error and len(images) == 1 and images[0].mime_type == "image/svg+xml" and svg.lstrip().startswith("<svg") and 'width="900"' in svg,
             text_of(r)[:200])
        if "explain" in results:
            C.ok(f"{label}: explain == ingero explain --json ({dbname})", covers(results["explain"], report), "reports differ")
        for tool, key in [("get_trace_stats", "stats"), ("get_causal_chains", "chains"), ("get_per_process_breakdown", "processes")]:
            if tool in results:
                C.ok(f"{label}: {tool} == explain.{key} ({dbname})", covers(results[tool], report[key]), "differs")
        if "get_events" in results:
            page = cli_json(binary, "query", "--db", real, "--limit", "20")
            C.ok(f"{label}: get_events == ingero query --json ({dbname})", results["get_events"] == page, "differs")
        # Windowed and per-process scopes agree with the CLI too.
        windowed = cli_json(binary, "explain", "--db", real, "--since", "30s")
        r = await c.call_tool("get_trace_stats", {"db": dbname, "since": "30s"})
        C.ok(f"{label}: since=30s == explain --since 30s ({dbname})", not r.is_error and covers(r.structured_content, windowed["stats"]), text_of(r)[:200])
        main_pid = next((p["pid"] for p in report["processes"]["processes"] if p.get("cuda_calls", p.get("cuda", 0))), None)
        if main_pid is not None:
            per_pid = cli_json(binary, "explain", "--db", real, "--pid", str(main_pid))
            r = await c.call_tool("get_per_process_breakdown", {"db": dbname, "pid": main_pid})
            C.ok(f"{label}: pid={main_pid} == explain --pid ({dbname})", not r.is_error and covers(r.structured_content, per_pid["processes"]), text_of(r)[:200])
        r = await c.call_tool("get_timeline", {"db": dbname, "bucket": "10s"})
        C.ok(f"{label}: timeline bucket=10s ({dbname})", not r.is_error and validate(schemas["get_timeline"], r.structured_content) is None, text_of(r)[:200])
        r = await c.call_tool("run_sql", {"db": dbname, "sql": "SELECT COUNT(*) AS n FROM cuda_calls"})
        C.ok(f"{label}: run_sql count == raw_cuda_rows ({dbname})", not r.is_error and r.structured_content["rows"] == [[report["capture"]["raw_cuda_rows"]]], text_of(r)[:200])
        if not r.is_error:
            C.ok(f"{label}: run_sql matches outputSchema", validate(schemas["run_sql"], r.structured_content) is None, r.structured_content)

    # Library: listing, opening, confinement.
    r = await c.call_tool("list_databases", {})
    names = [d["name"] for d in (r.structured_content or {}).get("databases", [])]
    C.ok(f"{label}: list_databases", not r.is_error and seed.name in names and validate(schemas["list_databases"], r.structured_content) is None, names)
    other = next((n for n in names if n != seed.name), None)
    if other and not stateful:
        # Stateless HTTP: nothing survives the request, so switching is refused with the way out.
        await expect_tool_error(c, f"{label}: open_database refused without a session", "open_database", {"path": other}, r"stateless HTTP.*db=")
    if other and stateful:
        r = await c.call_tool("open_database", {"path": other})
        C.ok(f"{label}: open_database {other}", not r.is_error and r.structured_content["path"].endswith(other) and validate(schemas["open_database"], r.structured_content) is None, text_of(r)[:200])
        if stateful:
            r = await c.call_tool("explain", {})
            C.ok(f"{label}: open_database persists in the session", not r.is_error and r.structured_content["capture"]["path"].endswith(other), text_of(r)[:200])
            await c.call_tool("open_database", {"path": seed.name})
    for bad in ["../../../../etc/passwd", "/etc/passwd", "../" + seed.parent.name + "/../../" + seed.name, "no-such.db"]:
        await expect_tool_error(c, f"{label}: open_database {bad!r} refused", "open_database", {"path": bad}, r"outside|no such")
    await expect_tool_error(c, f"{label}: db outside refused", "get_trace_stats", {"db": "/etc/hostname"}, r"outside")

    # Capture is off on this server: a clear error, never fake data.
    for tool, args in [("start_trace", {"pids": [1]}), ("get_trace_status", {}), ("stop_trace", {}), ("list_gpu_processes", {})]:
        await expect_tool_error(c, f"{label}: {tool} disabled", tool, args, r"capture is disabled")

    # Bad input, each answered properly, server stays up.
    await expect_protocol_error(c, f"{label}: unknown tool", lambda: c.call_tool("no_such_tool", {}), (-32602, -32601))
    # Arguments that do not match the input schema are tool execution errors
    # (spec 2025-11-25 onwards), so the model can correct itself.
    # They are checked against the advertised inputSchema before the tool
    # runs; the message names the argument and the constraint.
    await expect_tool_error(c, f"{label}: pid of wrong type", "get_trace_stats", {"pid": "abc"}, r'pid: "abc" is not of type "integer"')
    await expect_tool_error(c, f"{label}: sql missing", "run_sql", {}, r"sql: required argument missing")
    await expect_tool_error(c, f"{label}: limit of wrong type", "get_events", {"limit": "many"}, r'limit: "many" is not of type "integer"')
    await expect_tool_error(c, f"{label}: bad duration", "get_trace_stats", {"since": "yesterday"}, r"bad duration")
    await expect_tool_error(c, f"{label}: limit out of range", "get_events", {"limit": 100000}, r"limit: 100000 is greater than the maximum of 1000")
    await expect_tool_error(c, f"{label}: max_rows below its minimum", "run_sql", {"sql": "SELECT 1", "max_rows": 0}, r"max_rows: 0 is less than the minimum of 1")
    await huge_values_quoted_in_part(c, label)
    for sql, why in [
        ("DELETE FROM cuda_calls", r"not allowed|cannot modify"),
        ("COMMIT; DELETE FROM cuda_calls", r"not allowed|one statement"),
        ("SELECT 1; DROP TABLE sessions", r"not allowed|one statement"),
        ("ATTACH DATABASE '/tmp/x.db' AS x", r"not allowed"),
        ("PRAGMA query_only = 0", r"not allowed"),
        ("SELECT load_extension('/tmp/x')", r"not allowed"),
        ("CREATE TEMP TABLE t(x)", r"not allowed"),
        ("SELECT * FROM no_such_table", r"no such table|not allowed"),
        ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c", r"ran longer"),
    ]:
        await expect_tool_error(c, f"{label}: sql {sql[:40]!r}", "run_sql", {"sql": sql}, why)
    r = await c.call_tool("run_sql", {"sql": "SELECT * FROM host_events", "max_rows": 3})
    C.ok(f"{label}: run_sql row cap", not r.is_error and r.structured_content["row_count"] <= 3, text_of(r)[:200])
    await still_up(c, label)
    await exact_instants(c, label, seed)

    # Progress notifications on a long tool.
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    # A window not asked before, so the result is computed, not reused.
    fresh = f"{int(time.time() * 1000) % 50000 + 1000}ms"
    r = await c.call_tool("explain", {"db": seed.name, "since": fresh}, progress_callback=on_progress)
    C.ok(f"{label}: progress notifications", not r.is_error and len(seen) >= 1, seen)


def write_allow_dir(tmp: Path, seed: Path, binary: str) -> tuple[Path, Path, Path | None]:
    """A folder with the seed database, the other recorded ones and, when the
    build has a demo generator, a demo database."""
    lib = tmp / "lib"
    lib.mkdir()
    for f in sorted(seed.parent.glob("*.db")):
        shutil.copy(f, lib / f.name)
    demo: Path | None = lib / "demo-dataloader-starvation.db"
    out = subprocess.run([binary, "demo", "dataloader-starvation", "--db", str(demo)], capture_output=True, text=True)
    if out.returncode != 0 or not demo.exists():
        C.skip("demo database", f"`ingero demo` unavailable in this build ({out.stderr.strip()[:120]})")
        demo = None
    # A symlink escaping the folder must not be listed or opened.
    (lib / "escape.db").symlink_to(seed.resolve())
    return lib, lib / seed.name, demo


async def run_stdio(binary: str, lib: Path, seed: Path, demo: Path | None, mode: str) -> None:
    label = f"stdio/{mode if mode == 'legacy' else '2026-07-28 (discovered)'}"
    params = StdioServerParameters(command=binary, args=["mcp", "--db", str(seed), "--sql-timeout", "1"], env={**os.environ, "INGERO_LOG": "ingero=warn"})
    async with Client(params, mode=mode, read_timeout_seconds=60) as c:
        want = "2025-11-25" if mode == "legacy" else "2026-07-28"
        C.ok(f"{label}: protocol {want}", c.protocol_version == want, c.protocol_version)
        await exercise(c, label, binary, seed, demo, stateful=True)
        r = await c.call_tool("list_databases", {})
        names = [d["name"] for d in r.structured_content["databases"]]
        C.ok(f"{label}: escaping symlink not listed", "escape.db" not in names, names)
        await expect_tool_error(c, f"{label}: escaping symlink not opened", "open_database", {"path": "escape.db"}, r"outside")


class HttpServer:
    """`ingero mcp --http ADDR` (127.0.0.1:0 unless told) in the background; `url` once it listens."""

    def __init__(self, binary: str, args: list[str], log: Path, env: dict[str, str] | None = None, addr: str = "127.0.0.1:0") -> None:
        self.log = log
        self.fh = open(log, "w")
        self.proc = subprocess.Popen([binary, "mcp", "--http", addr, *args], stdout=subprocess.DEVNULL, stderr=self.fh, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        deadline = time.time() + 30
        self.url = ""
        while time.time() < deadline:
            m = re.search(r"listening on (http://\S+/mcp)", log.read_text())
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {log.read_text()}")
            time.sleep(0.05)
        if not self.url:
            raise RuntimeError("server did not start")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.fh.close()


async def run_http(binary: str, lib: Path, seed: Path, demo: Path | None) -> None:
    server = HttpServer(binary, ["--db", str(seed), "--sql-timeout", "1", "--allow-origin", "https://app.example.com"], lib.parent / "http.log", env={"INGERO_TOKEN": TOKEN, "INGERO_LOG": "ingero=debug"})
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        for mode in ["legacy", "auto"]:
            label = f"http/{mode if mode == 'legacy' else '2026-07-28 (discovered)'}"
            async with httpx2.AsyncClient(headers=auth, timeout=60) as hc:
                async with Client(streamable_http_client(server.url, http_client=hc), mode=mode, read_timeout_seconds=60) as c:
                    want = "2025-11-25" if mode == "legacy" else "2026-07-28"
                    C.ok(f"{label}: protocol {want}", c.protocol_version == want, c.protocol_version)
                    await exercise(c, label, binary, seed, demo, stateful=(mode == "legacy"))
        # A client pinned to 2026-07-28 (no discovery round trip) works too.
        async with httpx2.AsyncClient(headers=auth, timeout=60) as hc:
            async with Client(streamable_http_client(server.url, http_client=hc), mode="2026-07-28") as c:
                r = await c.call_tool("get_trace_stats", {})
                C.ok("http/2026-07-28 pinned: get_trace_stats", not r.is_error and r.structured_content is not None, text_of(r)[:200])
        await http_guards(server)
        await http_cancel(server, lib)
    finally:
        server.close()


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
HDRS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def oversized_status(url: str, length: int) -> int:
    """Status of a POST announcing `length` body bytes; the server should answer
    before the body is sent, so only the headers go out."""
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        head = (
            f"POST {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
        )
        s.sendall(head.encode())
        reply = s.recv(4096).decode(errors="replace")
    m = re.match(r"HTTP/1\.1 (\d+)", reply)
    return int(m.group(1)) if m else -1


async def http_guards(server: HttpServer) -> None:
    """Token, Origin and size checks, answered with HTTP errors."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(timeout=30) as hc:
        r = await hc.post(server.url, json=INIT, headers=HDRS)
        C.ok("http: missing token -> 401", r.status_code == 401 and "bearer" in r.headers.get("www-authenticate", "").lower(), r.status_code)
        r = await hc.post(server.url, json=INIT, headers={**HDRS, "Authorization": "Bearer wrong"})
        C.ok("http: wrong token -> 401", r.status_code == 401, r.status_code)
        r = await hc.post(server.url, json=INIT, headers={**HDRS, **auth, "Origin": "https://evil.example"})
        C.ok("http: foreign Origin -> 403", r.status_code == 403, r.status_code)
        r = await hc.post(server.url, json=INIT, headers={**HDRS, **auth, "Origin": "http://localhost.evil.example"})
        C.ok("http: look-alike Origin -> 403", r.status_code == 403, r.status_code)
        for origin in ["http://localhost:6274", "http://127.0.0.1:3000", "https://app.example.com"]:
            r = await hc.post(server.url, json=INIT, headers={**HDRS, **auth, "Origin": origin})
            C.ok(f"http: Origin {origin} accepted", r.status_code == 200, f"{r.status_code} {r.text[:200]}")
        status = oversized_status(server.url, 3 << 20)
        C.ok("http: oversized body -> 413", status == 413, status)
        r = await hc.post(server.url, content=b"{not json", headers={**HDRS, **auth})
        C.ok("http: malformed JSON -> 4xx", 400 <= r.status_code < 500, r.status_code)
    # Still serving after all of that.
    async with httpx2.AsyncClient(headers=auth, timeout=30) as hc:
        async with Client(streamable_http_client(server.url, http_client=hc), mode="legacy") as c:
            await still_up(c, "http after refusals")


async def http_cancel(server: HttpServer, lib: Path) -> None:
    """A client that gives up on a running query gets it interrupted."""
    slow = HttpServer(server.proc.args[0], ["--db", str(lib / DEFAULT_SEED.name), "--sql-timeout", "60"], lib.parent / "http-cancel.log", env={"INGERO_TOKEN": TOKEN, "INGERO_LOG": "ingero=debug"})
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=auth, timeout=60) as hc:
            async with Client(streamable_http_client(slow.url, http_client=hc), mode="legacy") as c:
                started = time.time()
                try:
                    await c.call_tool(
                        "run_sql",
                        {"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c"},
                        read_timeout_seconds=1.5,
                    )
                    C.ok("http: cancelled query", False, "returned instead of timing out")
                except Exception:
                    pass
                deadline = time.time() + 10
                while time.time() < deadline and "interrupted" not in slow.log.read_text():
                    await anyio.sleep(0.1)
                C.ok("http: cancellation interrupts the query", "interrupted" in slow.log.read_text(), slow.log.read_text()[-500:])
                C.ok("http: cancelled well before the 60 s timeout", time.time() - started < 15, time.time() - started)
                await still_up(c, "http after cancellation")
    finally:
        slow.close()


def refusals(binary: str, seed: Path) -> None:
    """Start-up refusals: a public bind without a token, a bad database."""
    out = subprocess.run([binary, "mcp", "--http", "0.0.0.0:0", "--db", str(seed)], capture_output=True, text=True, timeout=30, env={k: v for k, v in os.environ.items() if k != "INGERO_TOKEN"})
    C.ok("http: public bind without token refused (exit 2)", out.returncode == 2 and "token" in out.stderr, (out.returncode, out.stderr[-300:]))
    out = subprocess.run([binary, "mcp", "--http", "0.0.0.0:0", "--db", str(seed), "--token", "a"], capture_output=True, text=True, timeout=30, env={k: v for k, v in os.environ.items() if k != "INGERO_TOKEN"})
    C.ok("http: public bind with a weak token refused (exit 2)", out.returncode == 2 and "weak token" in out.stderr, (out.returncode, out.stderr[-300:]))
    out = subprocess.run([binary, "mcp", "--db", "/nonexistent.db"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    C.ok("mcp: missing database exits 2", out.returncode == 2 and "no such file" in out.stderr, (out.returncode, out.stderr[-300:]))


def build_standins(tmp: Path) -> Path:
    """The stand-in CUDA libraries and their workload, built with make."""
    out = tmp / "standin"
    r = subprocess.run(["make", "-s", "-C", str(REPO / "tests/standin"), f"OUT={out}"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building the stand-in libraries failed: {r.stderr[-400:]}")
    return out / "workload"


async def run_capture_enabled(binary: str, seed: Path, tmp: Path) -> None:
    """With --allow-capture: start_trace on a running process that calls the
    stand-in CUDA libraries, status while it runs, stop, then analyse the new
    database through the same server."""
    capdir = tmp / "captures"
    capdir.mkdir()
    shutil.copy(seed, capdir / seed.name)
    params = StdioServerParameters(command=binary, args=["mcp", "--db", str(capdir / seed.name), "--allow-capture"])
    async with Client(params, mode="legacy") as c:
        await expect_tool_error(c, "capture: status before start", "get_trace_status", {}, r"no capture has been started")
        await expect_tool_error(c, "capture: stop before start", "stop_trace", {}, r"no capture has been started")
        await expect_tool_error(c, "capture: two pids refused", "start_trace", {"pids": [1, 2]}, r"one pid per capture")
        await expect_tool_error(c, "capture: path in output refused", "start_trace", {"pids": [1], "output": "../x.db"}, r"plain file name")
        await expect_tool_error(c, "capture: unusable ring size refused", "start_trace", {"pids": [1], "ring_size": "3K"}, r"ring_size: 3K is not usable.*power of two")
        await expect_tool_error(c, "capture: launch_rows above its range refused", "start_trace", {"pids": [1], "launch_rows": 2000000}, r"launch_rows.*1000000")
        if os.geteuid() != 0:
            await expect_tool_error(c, "capture: needs root", "start_trace", {"pids": [os.getpid()]}, r"root|CAP_BPF")
            # CI runs as root: there a skipped live capture is a failure, not a pass.
            C.ok("capture: live capture ran (INGERO_EBPF_TESTS=require needs root)", os.environ.get("INGERO_EBPF_TESTS") != "require", "not root")
            return
        workload = build_standins(tmp)
        iters = 300
        # Calls that return at once: each iteration's driver launch enters a few
        # microseconds after the previous one, a dense stretch where sampled
        # launch timing leaves launches untimed.
        env = {**os.environ, "INGERO_STANDIN_US": "0"}
        # The workload loads the libraries, then waits for a line on stdin
        # before its first call, so the probes are in place in time.
        proc = subprocess.Popen([str(workload), "--stdin", "--iters", str(iters), "--workers", "2", "--worker-ms", "300"],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            time.sleep(0.3)
            # One driver launch in 8 timed, the others recorded at entry.
            r = await c.call_tool("start_trace", {"pids": [proc.pid], "output": "mcp-capture.db", "ring_size": "64M", "launch_sample": 8})
            C.ok("capture: start_trace", not r.is_error and r.structured_content["running"], text_of(r)[:300])
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
            proc.stdin.close()
            proc.wait(timeout=60)
            r = await c.call_tool("get_trace_status", {})
            C.ok("capture: status reports events", not r.is_error and r.structured_content["cuda_calls"] > 0, text_of(r)[:300])
            r = await c.call_tool("stop_trace", {})
            st = r.structured_content or {}
            C.ok("capture: stop_trace finalises", not r.is_error and st.get("running") is False and st.get("output", "").endswith("mcp-capture.db"), text_of(r)[:300])
            C.ok("capture: nothing lost or left open, no warnings", st.get("lost") == 0 and st.get("unfinished_calls") == 0 and [w for w in st.get("warnings", []) if "nvml" not in str(w).lower()] == [], text_of(r)[:300])
            # No NVIDIA driver here: the capture says so once and goes on.
            nvml = [w for w in st.get("warnings", []) if "nvml" in str(w).lower()]
            C.ok("capture: a missing NVML is one warning", len(nvml) <= 1, nvml)
        finally:
            if proc.poll() is None:
                proc.kill()
        r = await c.call_tool("get_trace_stats", {"db": "mcp-capture.db"})
        ops = {o["op"]: o for o in (r.structured_content or {}).get("ops", [])}
        launch = ops.get("cudaLaunchKernel", {})
        # Exact count from the aggregates; fast calls are folded in the kernel (call folding), so
        # the raw rows are a sample and the op is not "exact" in the rows' sense.
        C.ok("capture: exact cudaLaunchKernel count in the new database", not r.is_error and launch.get("count") == iters, text_of(r)[:400])
        q = await c.call_tool("run_sql", {"db": "mcp-capture.db", "sql": "SELECT COALESCE(SUM(a.count), 0) AS n, COALESCE(SUM(a.estimated_count), 0) AS est, COALESCE(SUM(a.estimated_bounded), 0) AS bnd, (SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o2 ON o2.id = c.op_id WHERE o2.name = 'cuLaunchKernel') AS raw FROM aggregates a JOIN cuda_ops o ON o.id = a.code WHERE a.source = 1 AND o.name = 'cuLaunchKernel'"})
        row = ((q.structured_content or {}).get("rows") or [[0, 0, 0, 0]])[0]
        n, est, bnd, raw = (row.get("n"), row.get("est"), row.get("bnd"), row.get("raw")) if isinstance(row, dict) else (row[0], row[1], row[2], row[3])
        # Every launch counted. The first launch (no previous one) is timed; of the dense ones
        # after it one in 8 is timed, the others counted in the kernel: no raw row for them. The
        # timed ones keep a row within the thread's row budget (call folding), or when slow.
        C.ok("capture: launch_sample=8 counts every driver launch and estimates the untimed ones", not q.is_error and n == iters and iters * 5 // 8 <= est < iters and 0 < raw <= n - est, text_of(q)[:300])
        # Each untimed launch is followed within microseconds by the iteration's synchronize,
        # which bounds it; a preempted thread may leave a few unbounded.
        C.ok("capture: untimed launches bounded by the thread's next call", 0 < bnd <= est, text_of(q)[:300])
        r = await c.call_tool("get_per_process_breakdown", {"db": "mcp-capture.db"})
        procs = (r.structured_content or {}).get("processes", [])
        workers = [p for p in procs if p.get("ppid") == proc.pid]
        C.ok("capture: forked workers attributed to the traced process", len(workers) == 2 and all(p["page_allocs"] > 0 for p in workers), text_of(r)[:400])


async def run_bundled(binary: str, tmp: Path) -> None:
    """Without --db: the bundled H200 investigation is written to the cache folder and served."""
    cache = tmp / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    async with Client(StdioServerParameters(command=binary, args=["mcp"], env=env), mode="legacy") as c:
        r = await c.call_tool("get_causal_chains", {})
        C.ok("bundled: investigation served without --db", not r.is_error and "host_input_pipeline" in text_of(r), text_of(r)[:300])
    C.ok("bundled: cached in XDG_CACHE_HOME/ingero", (cache / "ingero/pytorch-dataloader-starvation-h200.db").exists(), list(cache.rglob("*")))


async def run_merge(binary: str, tmp: Path) -> None:
    """merge_databases: refused without --allow-capture; with it, two node
    databases (the H200 NCCL capture twice) merged into a new file of the
    allowed folder, whose rank report sees both ranks on one clock."""
    nccl = REPO / "investigations/nccl-ws1-h200.db"
    mdir = tmp / "merge"
    mdir.mkdir()
    for name in ("node-a.db", "node-b.db"):
        shutil.copy(nccl, mdir / name)
    plain = StdioServerParameters(command=binary, args=["mcp", "--db", str(mdir / "node-a.db")])
    async with Client(plain, mode="legacy") as c:
        await expect_tool_error(c, "merge: refused without --allow-capture", "merge_databases",
                                {"inputs": ["node-a.db", "node-b.db"]}, r"--allow-capture")
    params = StdioServerParameters(command=binary, args=["mcp", "--db", str(mdir / "node-a.db"), "--allow-capture"])
    async with Client(params, mode="legacy") as c:
        await expect_tool_error(c, "merge: one input refused", "merge_databases", {"inputs": ["node-a.db"]}, r"at least two")
        await expect_tool_error(c, "merge: path output refused", "merge_databases",
                                {"inputs": ["node-a.db", "node-b.db"], "output": "../x.db"}, r"plain file name")
        r = await c.call_tool("merge_databases", {"inputs": ["node-a.db", "node-b.db"], "output": "job.db",
                                                  "nodes": ["a", "b"]})
        sc = r.structured_content or {}
        ins = sc.get("inputs", [])
        C.ok("merge: new database in the allowed folder", not r.is_error and (mdir / "job.db").exists(), text_of(r)[:300])
        # The same file twice: every one of its 241 numbered collectives matches, offset 0.
        src = sqlite3.connect(nccl)
        numbered = src.execute("SELECT COUNT(*) FROM nccl_calls n JOIN cuda_ops o ON o.id = n.op_id "
                               "WHERE o.class = 'collective' AND n.seq >= 0").fetchone()[0]
        src.close()
        C.ok("merge: offsets from the matched collectives",
             len(ins) == 2 and ins[1].get("clock_offset_ns") == 0 and ins[1].get("matched") == numbered
             and [i.get("node") for i in ins] == ["a", "b"], ins)
        await expect_tool_error(c, "merge: existing output refused", "merge_databases",
                                {"inputs": ["node-a.db", "node-b.db"], "output": "job.db"}, r"already exists")
        r = await c.call_tool("get_rank_report", {"db": "job.db"})
        rep = r.structured_content or {}
        arrivals = rep.get("arrivals", [])
        C.ok("merge: rank report over the merged file",
             not r.is_error and len(rep.get("clocks", [])) == 2 and len(arrivals) == 2
             and {a.get("node") for a in arrivals} == {"a", "b"}, text_of(r)[:500])


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--seed", default=str(DEFAULT_SEED))
    ap.add_argument("--only", choices=["stdio", "http"], default=None)
    a = ap.parse_args()
    binary, seed = a.bin, Path(a.seed)
    with tempfile.TemporaryDirectory(prefix="ingero-mcp-e2e-") as tmp_s:
        tmp = Path(tmp_s)
        lib, seed_copy, demo = write_allow_dir(tmp, seed, binary)
        steps: list[tuple[str, Callable[[], Any]]] = []
        if a.only in (None, "stdio"):
            steps += [
                ("stdio legacy", lambda: run_stdio(binary, lib, seed_copy, demo, "legacy")),
                ("stdio 2026-07-28", lambda: run_stdio(binary, lib, seed_copy, demo, "auto")),
                ("capture enabled", lambda: run_capture_enabled(binary, seed_copy, tmp)),
                ("bundled database", lambda: run_bundled(binary, tmp)),
                ("merge databases", lambda: run_merge(binary, tmp)),
            ]
        if a.only in (None, "http"):
            steps += [("http", lambda: run_http(binary, lib, seed_copy, demo))]
        for name, step in steps:
            t0 = time.time()
            try:
                await step()
            except Exception as e:  # a crashed step is one failure; the others still run
                traceback.print_exc()
                C.ok(f"{name}: completed", False, repr(e))
            print(f"-- {name}: {time.time() - t0:.1f} s", flush=True)
        refusals(binary, seed_copy)
    print(f"\n{C.passed} checks passed, {len(C.failed)} failed, {len(C.skipped)} skipped")
    for f in C.failed:
        print(f"  FAILED {f}")
    for s in C.skipped:
        print(f"  skipped {s}")
    return 1 if C.failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
