#!/usr/bin/env python3
"""Property-based fuzzing of `ingero mcp` tool arguments, prompt arguments and
resource URIs, through the real MCP edge (the official Python SDK over stdio).

Why it exists: every tool argument comes from a model or a user and reaches
the server as untyped JSON. Whatever arrives, the server must answer within a
time bound with either a result that matches the tool's outputSchema or a
clean error a model can read (a JSON-RPC error, or `isError: true` with a
plain message), never panic, never hang, never read a database outside the
allowed folder, and keep serving the next request.

Two kinds of generated arguments per tool:
  * arbitrary JSON: wrong types, huge or negative numbers, very long and
    unicode strings, nested objects, unknown keys, missing required keys,
    and non-object `arguments`;
  * schema-shaped but hostile: the types the tool's inputSchema asks for,
    filled with edge values (durations such as "-1s" or "1e309s", pids 0/-1/
    2^31, limits 0/huge, paths with `..`, absolute paths outside the allowed
    folder, NUL bytes, SQL aimed at the read-only guard).

Usage: fuzz_tool_args.py --bin PATH_TO_INGERO [--seed DB] [--examples N]
The number of examples per target (each tool, prompts, resources) is
--examples, or INGERO_FUZZ_EXAMPLES, or a small default that keeps a CI run
under about a minute. INGERO_FUZZ_SEED fixes the random seed. Exit status 0
when no property was violated.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import jsonschema
import mcp.types as types
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SEED = REPO / "tests/data/ingero-investigations/pytorch-dataloader-starvation.db"
DEFAULT_EXAMPLES = 12
# JSON-RPC errors that mean "your request was wrong", which is a clean answer.
CLEAN_RPC_CODES = {-32700, -32600, -32601, -32602}
PANIC_MARKERS = re.compile(r"panicked|stack backtrace|RUST_BACKTRACE|\bthread '.*' \w+ at ", re.I)
RAW = TypeAdapter(dict[str, Any])
# Outcomes per target ("ok", "tool error", "rpc error"), to show what a run exercised.
OUTCOMES: dict[str, Counter[str]] = defaultdict(Counter)
SLOWEST: dict[str, float] = defaultdict(float)


class Defect(AssertionError):
    """A property of the server was violated."""


# --------------------------------------------------------------------------
# The server under test.


class Server:
    """`ingero mcp` on stdio, driven from synchronous hypothesis tests through
    an anyio blocking portal (the event loop runs in a helper thread)."""

    def __init__(self, binary: str, seed_db: Path, lib: Path, log: Path, call_timeout: float) -> None:
        self.binary, self.seed_db, self.lib, self.log = binary, seed_db, lib, log
        self.call_timeout = call_timeout
        self.stack: ExitStack | None = None
        self.client: Client | None = None
        self.log_seen = 0
        self.starts = 0

    def start(self) -> None:
        self.stop()
        stack = ExitStack()
        self.portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
        errlog = stack.enter_context(open(self.log, "a"))
        params = StdioServerParameters(
            command=self.binary,
            args=["mcp", "--db", str(self.seed_db), "--allow-dir", str(self.lib), "--sql-timeout", "1"],
            env={**os.environ, "INGERO_LOG": "ingero=warn", "RUST_BACKTRACE": "1"},
        )
        client = Client(stdio_client(params, errlog=errlog), mode="legacy")
        self.client = stack.enter_context(self.portal.wrap_async_context_manager(client))
        self.stack = stack
        self.starts += 1
        tools = self.call(lambda c: c.list_tools())
        self.tools = {t.name: t for t in tools.tools}
        self.prompts = {p.name: p for p in self.call(lambda c: c.list_prompts()).prompts}
        caps = self.client.server_capabilities
        self.has_resources = bool(caps and caps.resources)

    def stop(self) -> None:
        if self.stack is not None:
            stack, self.stack = self.stack, None
            try:
                stack.close()
            except Exception:  # a dead server may fail its own shutdown; the next start is fresh
                pass

    def call(self, fn: Any, timeout: float | None = None) -> Any:
        """Runs `fn(client)` on the loop; TimeoutError past the bound."""
        limit = timeout or self.call_timeout
        client = self.client

        async def bounded() -> Any:
            with anyio.fail_after(limit):
                return await fn(client)

        return self.portal.call(bounded)

    def raw(self, method: str, params: Any) -> dict[str, Any]:
        """A request with params exactly as given (no client-side typing)."""
        req = types.Request[Any, str](method=method, params=params)
        return self.call(lambda c: c.session.send_request(req, RAW))

    def new_log(self) -> str:
        text = self.log.read_text(errors="replace")
        fresh, self.log_seen = text[self.log_seen :], len(text)
        return fresh


# --------------------------------------------------------------------------
# Checks shared by every target.


def readable(msg: str) -> bool:
    """A message a model can act on: some words, no panic or backtrace text."""
    return len(msg.strip()) >= 3 and re.search(r"[A-Za-z]{2}", msg) is not None and not PANIC_MARKERS.search(msg)


def short(v: Any, n: int = 300) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + f"...({len(s)} chars)"


def check_rpc_error(e: MCPError, what: str, target: str, method: str, supported: bool = True) -> None:
    """A JSON-RPC error is clean when it blames the request, says why in
    words, and does not call a method the server offers unknown."""
    OUTCOMES[target]["rpc error"] += 1
    msg = e.error.message or ""
    if e.code not in CLEAN_RPC_CODES:
        raise Defect(f"{what}: JSON-RPC error {e.code} is not a request error: {short(msg)}")
    if e.code == -32601 and supported:
        raise Defect(f"{what}: {method} is served, yet the answer is 'method not found': {short(msg)}")
    if not readable(msg) or msg.strip() == method:
        raise Defect(f"{what}: unclear JSON-RPC error message: {short(msg)}")


def inside(root: Path, value: str) -> bool:
    """Where the server's library would resolve `value`, by the same rules."""
    p = Path(value)
    real = Path(os.path.realpath(p if p.is_absolute() else root / p))
    return real == root or root in real.parents


def after_example(srv: Server, what: str) -> None:
    """The server is alive, answers a simple call, and logged no panic."""
    try:
        r = srv.call(lambda c: c.call_tool("run_sql", {"sql": "SELECT 1 AS one"}))
        ok = not r.is_error and (r.structured_content or {}).get("rows") == [[1]]
        detail = "" if ok else f"answered {short(r)}"
    except BaseException as e:  # noqa: BLE001 - any failure here means the server is gone
        ok, detail = False, f"{type(e).__name__}: {e}"
    log = srv.new_log()
    if not ok:
        srv.start()
        raise Defect(f"{what}: server no longer answers a simple call ({detail}); stderr: {log[-2000:]}")
    if PANIC_MARKERS.search(log):
        srv.start()
        raise Defect(f"{what}: stderr reports a panic: {log[-2000:]}")


def call_tool_checked(srv: Server, tool: str, args: Any) -> None:
    """One tools/call with `args` (any JSON), then the liveness check."""
    what = f"{tool}({short(args, 200)})"
    t0 = time.monotonic()
    try:
        if isinstance(args, dict):
            r = srv.call(lambda c: c.call_tool(tool, args))
            result = r.model_dump(by_alias=True, mode="json", exclude_none=True)
        else:
            result = srv.raw("tools/call", {"name": tool, "arguments": args})
    except MCPError as e:
        check_rpc_error(e, what, tool, "tools/call")
        after_example(srv, what)
        return
    except TimeoutError:
        srv.start()
        raise Defect(f"{what}: no answer within {srv.call_timeout} s")
    except RuntimeError as e:  # the SDK's own outputSchema check
        after_example(srv, what)
        raise Defect(f"{what}: {e}")
    elapsed = time.monotonic() - t0
    SLOWEST[tool] = max(SLOWEST[tool], elapsed)
    check_tool_result(srv, tool, args, result, what)
    after_example(srv, what)


def check_tool_result(srv: Server, tool: str, args: Any, result: dict[str, Any], what: str, target: str | None = None) -> None:
    content = result.get("content") or []
    texts = [b.get("text", "") for b in content if b.get("type") == "text"]
    OUTCOMES[target or tool]["tool error" if result.get("isError") else "ok"] += 1
    if result.get("isError"):
        msg = "\n".join(texts)
        if not readable(msg):
            raise Defect(f"{what}: tool error without a readable message: {short(msg)}")
        return
    structured = result.get("structuredContent")
    schema = srv.tools[tool].output_schema if tool in srv.tools else None
    if schema:
        if structured is None:
            raise Defect(f"{what}: success without structuredContent")
        cls = jsonschema.validators.validator_for(schema)
        err = jsonschema.exceptions.best_match(cls(schema).iter_errors(structured))
        if err is not None:
            raise Defect(f"{what}: result does not match outputSchema: {err.message} at {list(err.absolute_path)}")
    for t in texts:
        if PANIC_MARKERS.search(t):
            raise Defect(f"{what}: result text carries panic text: {short(t)}")
    # A success must never come from a database outside the allowed folder.
    declared = (srv.tools[tool].input_schema or {}).get("properties") or {} if tool in srv.tools else {}
    if isinstance(args, dict):
        for key in ("db", "path"):
            v = args.get(key) if key in declared else None
            if isinstance(v, str) and v.strip() and "\0" not in v and not inside(srv.lib, v.strip() if key == "db" else v):
                raise Defect(f"{what}: succeeded with {key}={v!r}, which resolves outside {srv.lib}")
    if tool == "open_database" and structured:
        if not inside(srv.lib, structured.get("path", "")):
            raise Defect(f"{what}: opened {structured.get('path')!r}, outside {srv.lib}")
    if tool == "list_databases" and structured:
        for d in structured.get("databases", []):
            if not inside(srv.lib, d.get("path", "")):
                raise Defect(f"{what}: listed {d.get('path')!r}, outside {srv.lib}")


# --------------------------------------------------------------------------
# Strategies: arbitrary JSON.

EDGE_INTS = [0, -1, 1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63), 10**30]
EDGE_FLOATS = [0.0, -0.0, 0.5, -1.5, 1e-300, 5e-324, 1e308, -1e308, 1.7976931348623157e308, 2.0**63, 1e19]
NAN_LIKE = ["NaN", "nan", "Infinity", "-Infinity", "inf", "1e309", "-0", "0x10", "1_000", "+5", ""]


def long_strings() -> st.SearchStrategy[str]:
    return st.builds(lambda ch, n: ch * n, st.sampled_from(["a", "/", ".", "é", "\u202e", "\0", "😀", "%"]), st.integers(1_000, 300_000))


json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(EDGE_INTS),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(EDGE_FLOATS),
    st.text(max_size=40),
    st.sampled_from(NAN_LIKE),
    long_strings(),
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def arbitrary_args(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Known and unknown keys with values of any JSON type, required keys
    often missing; sometimes `arguments` is not an object at all."""
    props = sorted((schema.get("properties") or {}).keys())
    keys = st.one_of(st.sampled_from(props), st.text(max_size=12)) if props else st.text(max_size=12)
    objects = st.dictionaries(keys, json_values, max_size=6)
    not_objects = st.one_of(st.lists(json_leaves, max_size=3), json_leaves.filter(lambda v: v is not None))
    # Mostly objects: one example in eight sends something else.
    return st.integers(0, 7).flatmap(lambda i: not_objects if i == 0 else objects)


# --------------------------------------------------------------------------
# Strategies: schema-shaped, hostile values.

DURATIONS = [
    "-1s", "999999999h", "1e309s", "", " ", "0", "0s", "1ns", "0.0000001ns", "NaN", "nan", "inf", "-inf",
    "1e18", "1e19", "9223372036854775807", "9223372036854775807ns", "9223372036854775808ns", "106751d",
    "106752d", "1.5.5s", "..s", "5µs", "5us", "1h30m", " 30s ", "30s\0", "\u0663s", "1s1s1s1s",
    "100000000000000000000000000000000000000m", "1" * 400 + "s", "30", "30S", "1 s", "s", "1x", "-0s",
    "+1s", "1e3s", "0.1ms", "3sec", "2min", "7d",
]
PIDS = [0, -1, 1, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 2**63, 4242]
COUNTS = [0, 1, -1, 999, 1000, 1001, 65535, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53, 2**63 - 1, 2**64, 10**40]
OFFSETS_S = [0.0, -0.0, -1.0, 0.001, 1.0, 1e-9, 59.9, 1e6, 1e15, 1e308, -1e308, 5e-324, 2.0**63]
VACUUM_TARGET = "/tmp/ingero-fuzz-vacuum-into.db"
SQL = [
    "SELECT 1", "", " ", ";", "SELECT 1;", "SELECT 1;;", "SELECT 1; SELECT 2", "select * from cuda_calls",
    "SELECT * FROM host_events", "SELECT * FROM sqlite_master", "PRAGMA table_info(cuda_calls)",
    "PRAGMA writable_schema=1", "ATTACH DATABASE '/etc/passwd' AS x", "DETACH main", f"VACUUM INTO '{VACUUM_TARGET}'",
    "SELECT load_extension('libc.so.6')", "SELECT readfile('/etc/passwd')", "SELECT writefile('/tmp/x', 'y')",
    "INSERT INTO sessions DEFAULT VALUES", "DELETE FROM cuda_calls", "DROP TABLE cuda_calls", "CREATE TABLE t(x)",
    "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT a", "REINDEX", "ANALYZE", "REPLACE INTO sessions DEFAULT VALUES",
    "WITH x AS (DELETE FROM cuda_calls RETURNING *) SELECT * FROM x", "SELECT 1 /* ; DROP TABLE t */",
    "SELECT '; DROP TABLE cuda_calls; --'", "SELECT 1 -- ; DELETE FROM cuda_calls", "SELECT 1\0; DELETE FROM cuda_calls",
    "SELECT randomblob(100000000)", "SELECT zeroblob(2000000000)", "SELECT printf('%.*c', 1000000000, 'x')",
    "SELECT replace(hex(zeroblob(50000000)), '00', 'ab')", "SELECT * FROM cuda_calls a, cuda_calls b, cuda_calls c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
    "SELECT 1e999", "SELECT -1e999", "SELECT 0.0/0", "SELECT 9223372036854775807 + 1", "SELECT -9223372036854775808",
    "SELECT x'00ff10'", "SELECT char(0)", "SELECT char(55296)", "SELECT CAST(x'ff' AS TEXT)", "SELECT NULL",
    "SELECT 1 AS a, 2 AS a", "SELECT 1 AS \"\"", "SELECT abs(-9223372036854775808)", "SELECT sqlite_version()",
    "SELECT * FROM pragma_table_info('cuda_calls')", "SELECT * FROM pragma_compile_options",
    "SELECT * FROM generate_series(1, 100000000)", "SELECT json('{\"a\":' || 1e999 || '}')",
    "SELECT " + ", ".join(["1"] * 3000), "SELECT " + "(" * 5000 + "1" + ")" * 5000,
]
PATH_LIKE = [
    "..", "../", "../../../../etc/passwd", "/etc/passwd", "/", "", " ", ".", "./", "\0", "a\0b.db", "seed.db\0.txt",
    "~/.ssh/id_rsa", "file:///etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "..\\..\\windows", "sub/../../outside/secret.db",
    "sub/", "sub", "notes.txt", "garbage.db", "empty.db", "escape.db", "dirlink.db", "fifo.db", "missing.db",
    "trace.db", "./trace.db", "sub/other.db", "sub//other.db", "trace.db/", "trace.db/..", "trace.db/../trace.db",
    "é.db", "\u202etrace.db", "CON", "a" * 5000 + ".db", "/proc/self/environ", "/dev/zero", "/dev/stdin",
]
OPS = ["cudaStreamSynchronize", "sched_switch", "cudaLaunchKernel", "%", "_", "*", "' OR 1=1 --", "\0", "", " ", "é" * 200]
PROMPT_VALUES = ["{{db}}", "{{focus}}", "{{baseline}}", "{{candidate}}", "{{chain}}", "{{", "}}", "{{{{db}}}}", "$1", "\\1", "%s"]


def path_values(srv: Server) -> st.SearchStrategy[str]:
    root = str(srv.lib)
    outside = str(srv.lib.parent / "outside" / "secret.db")
    dynamic = [
        root, root + "/", root + "/trace.db", root + "/../outside/secret.db", outside, root + "/sub/../trace.db",
        root + "/./trace.db", root + "x/trace.db", root[:-1], os.path.relpath(outside, root),
        "../" + srv.lib.name + "/trace.db", "../" + srv.lib.name + "/../outside/secret.db",
    ]
    return st.one_of(
        st.sampled_from(PATH_LIKE + dynamic),
        st.lists(st.sampled_from(["..", ".", "sub", "trace.db", "outside", "secret.db", "", "x"]), min_size=1, max_size=8).map("/".join),
        st.text(max_size=30),
        long_strings(),
    )


def types_of(prop: dict[str, Any]) -> set[str]:
    t = prop.get("type")
    found = set(t) if isinstance(t, list) else {t} if t else set()
    for sub in prop.get("anyOf", []) + prop.get("oneOf", []):
        found |= types_of(sub)
    return found - {None, "null"}


def value_for(srv: Server, name: str, prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Edge values of the type `prop` asks for, picked by what the argument means."""
    kinds = types_of(prop)
    lname = name.lower()
    if "string" in kinds:
        if lname in ("since", "until", "bucket", "min_dur", "duration"):
            base = st.one_of(st.sampled_from(DURATIONS), st.from_regex(r"\A[-+]?[0-9.e]{0,14}(ns|us|µs|ms|s|sec|m|min|h|d|x)?\Z"))
        elif lname in ("db", "path", "output"):
            base = path_values(srv)
        elif lname == "sql":
            base = st.one_of(st.sampled_from(SQL), st.text(max_size=60), st.sampled_from(SQL).map(lambda s: s.upper()))
        elif lname == "op":
            base = st.one_of(st.sampled_from(OPS), st.text(max_size=30))
        else:
            base = st.one_of(st.text(max_size=40), long_strings(), st.sampled_from(NAN_LIKE))
    elif "integer" in kinds:
        base = st.one_of(st.sampled_from(PIDS if lname == "pid" else COUNTS), st.integers(-(2**40), 2**40))
    elif "number" in kinds:
        base = st.one_of(st.sampled_from(OFFSETS_S), st.floats(allow_nan=False, allow_infinity=False))
    elif "boolean" in kinds:
        base = st.booleans()
    elif "array" in kinds:
        item = prop.get("items") or {}
        base = st.lists(value_for(srv, name, item) if item else json_leaves, max_size=5)
    elif "object" in kinds:
        base = st.dictionaries(st.text(max_size=8), json_leaves, max_size=3)
    else:
        base = json_values
    # Optional arguments are sometimes an explicit null.
    return base | st.none() if "null" in str(prop.get("type")) or prop.get("anyOf") else base


def schema_args(srv: Server, tool: types.Tool) -> st.SearchStrategy[dict[str, Any]]:
    """Every declared argument with the declared type and an edge value;
    required ones always present, optional ones present or not."""
    schema = tool.input_schema or {}
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def resolve(p: dict[str, Any]) -> dict[str, Any]:
        ref = p.get("$ref", "")
        return defs.get(ref.rsplit("/", 1)[-1], p) if ref else p

    req = {k: value_for(srv, k, resolve(v)) for k, v in props.items() if k in required}
    opt = {k: value_for(srv, k, resolve(v)) for k, v in props.items() if k not in required}
    return st.fixed_dictionaries(req, optional=opt)


# --------------------------------------------------------------------------
# The library the server may read.


def make_library(tmp: Path, seed_db: Path) -> tuple[Path, Path]:
    """An allowed folder holding the seed copy and awkward neighbours, and a
    database outside it that no argument may reach."""
    lib = tmp / "lib"
    (lib / "sub").mkdir(parents=True)
    trace = lib / "trace.db"
    shutil.copy(seed_db, trace)
    shutil.copy(seed_db, lib / "sub" / "other.db")
    (lib / "notes.txt").write_text("not a database\n")
    (lib / "garbage.db").write_bytes(b"SQLite format 3\0" + os.urandom(4000))
    (lib / "empty.db").write_bytes(b"")
    sqlite3.connect(lib / "plain.db").executescript("CREATE TABLE t(x); INSERT INTO t VALUES (1);").close()
    (lib / "dirlink.db").mkdir()
    os.mkfifo(lib / "fifo.db")
    outside = tmp / "outside"
    outside.mkdir()
    shutil.copy(seed_db, outside / "secret.db")
    (lib / "escape.db").symlink_to(outside / "secret.db")
    (lib / "sub" / "up").symlink_to(outside)
    return lib, trace


def snapshot(folder: Path) -> dict[str, str]:
    """Content hash (or kind) of everything under `folder`, links not followed."""
    out: dict[str, str] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = "link -> " + os.readlink(p)
        elif p.is_fifo():
            out[rel] = "fifo"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# --------------------------------------------------------------------------
# Targets.


def hyp_settings(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        database=None,
        print_blob=True,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )


def seeded(fn: Any) -> Any:
    s = os.environ.get("INGERO_FUZZ_SEED")
    return seed(int(s))(fn) if s else fn


def fuzz_tool(srv: Server, name: str, n: int) -> int:
    tool = srv.tools[name]
    count = 0

    # Always tried: edge inputs, and `arguments` that are not an object, once
    # answered "method not found: tools/call".
    @seeded
    @hyp_settings(n)
    @given(args=st.one_of(arbitrary_args(tool.input_schema or {}), schema_args(srv, tool)))
    @example(args={"since": "1e309s"})
    @example(args={"bucket": "1ns"})
    @example(args={"db": "../outside/secret.db"})
    @example(args={"path": "escape.db"})
    @example(args={"pid": 2**31})
    @example(args=["not", "an", "object"])
    def run(args: Any) -> None:
        nonlocal count
        count += 1
        call_tool_checked(srv, name, args)

    run()
    return count


def fuzz_prompts(srv: Server, n: int) -> int:
    names = sorted(srv.prompts)
    arg_names = sorted({a.name for p in srv.prompts.values() for a in (p.arguments or [])})
    count = 0
    values = st.one_of(st.text(max_size=40), st.sampled_from(PROMPT_VALUES), long_strings(), st.sampled_from(NAN_LIKE))
    string_args = st.dictionaries(st.sampled_from(arg_names) | st.text(max_size=10), values, max_size=5)
    any_args = st.one_of(st.dictionaries(st.sampled_from(arg_names) | st.text(max_size=10), json_values, max_size=5), json_leaves)

    @seeded
    @hyp_settings(n)
    @given(
        name=st.integers(0, 3).flatmap(lambda i: st.one_of(st.text(max_size=20), long_strings()) if i == 0 else st.sampled_from(names)),
        args=st.integers(0, 3).flatmap(lambda i: any_args if i == 0 else string_args),
    )
    @example(name="investigate", args={"db": "{{focus}}", "focus": "GPU idles"})
    @example(name="compare_runs", args={"baseline": "a.db", "candidate": "{{baseline}}"})
    def run(name: str, args: Any) -> None:
        nonlocal count
        count += 1
        what = f"prompts/get {name!r} {short(args, 200)}"
        try:
            r = srv.raw("prompts/get", {"name": name, "arguments": args})
        except MCPError as e:
            check_rpc_error(e, what, "prompts", "prompts/get")
            after_example(srv, what)
            return
        except TimeoutError:
            srv.start()
            raise Defect(f"{what}: no answer within {srv.call_timeout} s")
        OUTCOMES["prompts"]["ok"] += 1
        msgs = r.get("messages") or []
        text = "\n".join((m.get("content") or {}).get("text", "") for m in msgs)
        if not msgs or not text.strip():
            raise Defect(f"{what}: empty prompt")
        if name not in srv.prompts:
            raise Defect(f"{what}: unknown prompt answered")
        # Every argument the prompt declares and the client gave is inserted as given.
        declared = {a.name for a in (srv.prompts[name].arguments or [])}
        if isinstance(args, dict):
            for k, v in args.items():
                if k in declared and isinstance(v, str) and v.strip() and v not in text:
                    raise Defect(f"{what}: argument {k}={short(v, 80)} does not appear in the prompt text")
        after_example(srv, what)

    run()
    return count


def fuzz_envelope(srv: Server, n: int) -> int:
    """tools/call params themselves malformed: names of any type, unknown
    tools, a missing name, odd `_meta` (the SDK sends params as an object)."""
    count = 0
    names = st.one_of(st.sampled_from(sorted(srv.tools)), st.text(max_size=30), json_leaves)
    params = st.one_of(
        st.fixed_dictionaries({"name": names}, optional={"arguments": json_values, "_meta": st.dictionaries(st.text(max_size=10), json_values, max_size=3)}),
        # `_meta` is left out here: the SDK itself needs it to be an object.
        st.dictionaries(st.text(max_size=10).filter(lambda k: k != "_meta"), json_values, max_size=3),
    )

    @seeded
    @hyp_settings(n)
    @given(params=params)
    @example(params={"name": "no_such_tool", "arguments": {}})
    @example(params={"name": 7, "arguments": {}})
    @example(params={"arguments": {}})
    def run(params: Any) -> None:
        nonlocal count
        count += 1
        what = f"tools/call params {short(params, 200)}"
        try:
            r = srv.raw("tools/call", params)
        except MCPError as e:
            check_rpc_error(e, what, "tools/call envelope", "tools/call")
            after_example(srv, what)
            return
        except TimeoutError:
            srv.start()
            raise Defect(f"{what}: no answer within {srv.call_timeout} s")
        name = params.get("name") if isinstance(params, dict) else None
        if name in srv.tools:
            check_tool_result(srv, name, params.get("arguments"), r, what, "tools/call envelope")
        elif not r.get("isError"):
            raise Defect(f"{what}: a call without a known tool name succeeded: {short(r)}")
        else:
            OUTCOMES["tools/call envelope"]["tool error"] += 1
        after_example(srv, what)

    run()
    return count


def fuzz_resources(srv: Server, n: int) -> int:
    count = 0
    uris = st.one_of(
        st.sampled_from(["file:///etc/passwd", "ingero://db/trace.db", "ingero://../../etc/passwd", "", "\0", "x" * 10000, "trace.db", "file://" + str(srv.lib / "trace.db")]),
        st.text(max_size=40),
        st.builds(lambda s, p: f"{s}://{p}", st.sampled_from(["file", "ingero", "http", "data"]), st.text(max_size=30)),
    )

    @seeded
    @hyp_settings(n)
    @given(uri=st.one_of(uris, json_leaves))
    def run(uri: Any) -> None:
        nonlocal count
        count += 1
        what = f"resources/read {short(uri, 120)}"
        try:
            r = srv.raw("resources/read", {"uri": uri})
        except MCPError as e:
            check_rpc_error(e, what, "resources", "resources/read", srv.has_resources)
            after_example(srv, what)
            return
        except TimeoutError:
            srv.start()
            raise Defect(f"{what}: no answer within {srv.call_timeout} s")
        OUTCOMES["resources"]["ok"] += 1
        if not srv.has_resources:
            raise Defect(f"{what}: answered although the server offers no resources: {short(r)}")
        for c in r.get("contents") or []:
            if not str(c.get("uri", "")).startswith(("ingero:", "file://" + str(srv.lib))):
                raise Defect(f"{what}: served {short(c.get('uri'))}")
        after_example(srv, what)

    run()
    return count


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--seed", default=str(DEFAULT_SEED))
    ap.add_argument("--examples", type=int, default=int(os.environ.get("INGERO_FUZZ_EXAMPLES", DEFAULT_EXAMPLES)))
    ap.add_argument("--call-timeout", type=float, default=float(os.environ.get("INGERO_FUZZ_CALL_TIMEOUT", 30)))
    ap.add_argument("--only", default=None, help="fuzz only this tool (or 'prompts', 'resources')")
    a = ap.parse_args()
    failures: list[str] = []
    counts: dict[str, int] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ingero-fuzz-") as tmp_s:
        tmp = Path(tmp_s)
        lib, trace = make_library(tmp, Path(a.seed))
        before = snapshot(tmp)
        srv = Server(a.bin, trace, lib.resolve(), tmp / "server.log", a.call_timeout)
        srv.start()
        targets = [(t, lambda t=t: fuzz_tool(srv, t, a.examples)) for t in sorted(srv.tools)]
        targets += [
            ("tools/call envelope", lambda: fuzz_envelope(srv, a.examples)),
            ("prompts", lambda: fuzz_prompts(srv, a.examples)),
            ("resources", lambda: fuzz_resources(srv, max(3, a.examples // 4))),
        ]
        for name, run in targets:
            if a.only and name != a.only:
                continue
            t0 = time.monotonic()
            try:
                counts[name] = run()
            except Exception as e:  # one target's failure is reported; the others still run
                traceback.print_exc()
                failures.append(f"{name}: {e}")
            seen = ", ".join(f"{k} {v}" for k, v in sorted(OUTCOMES[name].items()))
            slow = f", slowest answer {SLOWEST[name]:.2f} s" if name in SLOWEST else ""
            print(f"-- {name}: {counts.get(name, '?')} examples, {time.monotonic() - t0:.1f} s ({seen}{slow})", flush=True)
        srv.stop()
        # Read-only: every file in and next to the allowed folder is as it was.
        after = snapshot(tmp)
        # Nothing is created either: WAL-mode files at rest (the recorded
        # Ingero databases are) get no -wal/-shm files from being read.
        for path in sorted(set(before) | set(after)):
            if path != "server.log" and before.get(path) != after.get(path):
                failures.append(f"integrity: {path} was {'changed' if path in before and path in after else 'created or removed'}")
        if Path(VACUUM_TARGET).exists():
            failures.append(f"integrity: {VACUUM_TARGET} was written")
    total = sum(counts.values())
    print(f"\n{total} examples in {time.monotonic() - started:.1f} s over {len(counts)} targets; "
          f"server started {srv.starts} time(s); {len(failures)} target(s) failed")
    for f in failures:
        print(f"  FAILED {f[:2000]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
