#!/usr/bin/env python3
"""The protocol edge of `ingero mcp`, as real clients meet it.

Raw HTTP and raw stdio lines where the point is the bytes on the wire
(malformed JSON, status codes), the official Python SDK where the point is
what a client sees (session close, completion, a second loopback address,
sessions and databases), and the start-up refusals (exit codes).

Usage: test_edge.py --bin PATH_TO_INGERO
Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PromptReference
from test_mcp import HttpServer

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "tests/data/ingero-investigations/pytorch-dataloader-starvation.db"
OTHER = REPO / "investigations/pytorch-dataloader-starvation-h200.db"

FAILED: list[str] = []
PASSED = 0


def ok(name: str, cond: bool, detail: Any = "") -> None:
    global PASSED
    if cond:
        PASSED += 1
        print(f"ok   {name}", flush=True)
    else:
        FAILED.append(name)
        print(f"FAIL {name}: {detail}", flush=True)


class Server(HttpServer):
    """The end-to-end test's HTTP server, with raw requests on the side."""

    def __init__(self, binary: str, addr: str, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        super().__init__(binary, args, log, env=env, addr=addr)
        m = re.match(r"http://([^/]+):(\d+)/mcp", self.url)
        assert m
        self.host, self.port = m.group(1), int(m.group(2))

    def post(self, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
        conn.request("POST", "/mcp", body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        ctype = r.getheader("Content-Type") or ""
        conn.close()
        return r.status, ctype, data


def error_of(data: bytes) -> tuple[Any, Any]:
    try:
        v = json.loads(data)
    except ValueError:
        return None, None
    return (v.get("error") or {}).get("code"), v.get("id", "missing")


def http_bodies(binary: str, tmp: Path) -> None:
    """Malformed bodies get JSON-RPC errors with HTTP 400, not 415 text."""
    s = Server(binary, "127.0.0.1:0", ["--db", str(SEED)], tmp / "bodies.log")
    try:
        status, ctype, data = s.post(b'{"jsonrpc": "2.0", "id": 1, "method": ')
        code, rid = error_of(data)
        ok("http: unparsable JSON is 400 with -32700 and id null", status == 400 and "json" in ctype and code == -32700 and rid is None, (status, ctype, data[:200]))
        status, ctype, data = s.post(b'{"id": 7, "params": {}}')
        code, rid = error_of(data)
        ok("http: JSON that is not JSON-RPC is 400 with -32600, keeping the id", status == 400 and code == -32600 and rid == 7, (status, data[:200]))
        status, ctype, data = s.post(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
        code, _ = error_of(data)
        ok("http: a batch is 400 with -32600", status == 400 and code == -32600, (status, data[:200]))
        status, ctype, data = s.post(b"{}", headers={"Content-Type": "text/plain"})
        ok("http: a body that is not declared JSON is still 415", status == 415, (status, data[:200]))
        status, ctype, data = s.post(b"x" * (2 << 20))
        ok("http: an oversized body is 413", status == 413, status)
    finally:
        s.close()


def raw_exchange(s: Server, head: bytes, rest: bytes) -> tuple[str, bytes]:
    """Sends `head`, waits until the server has surely answered and closed,
    sends `rest` on the same connection, then reads everything: what the
    client gets when it is still sending as the server refuses it."""
    import socket
    import time

    with socket.create_connection((s.host, s.port), timeout=10) as sock:
        sock.sendall(head)
        time.sleep(0.3)
        try:
            sock.sendall(rest)
        except OSError as e:
            return f"send failed: {e!r}", b""
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except OSError as e:
            return f"read failed after {len(data)} bytes: {e!r}", data
        return "eof", data


def http_refusals_reach_the_client(binary: str, tmp: Path) -> None:
    """A request refused before it is read (an oversized header or body) gets
    its status, not a connection reset, although the client is still sending;
    and the refusal says the connection closes, so no client reuses it."""
    s = Server(binary, "127.0.0.1:0", ["--db", str(SEED)], tmp / "refusals.log")
    try:
        start = f"POST /mcp HTTP/1.1\r\nHost: {s.host}:{s.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        head = (start + "Mcp-Name: " + "7" * 900_000 + "\r\n").encode()
        how, data = raw_exchange(s, head, b"Content-Length: 2\r\n\r\n{}")
        ok("http: a 900 KB header is answered 431, not reset", how == "eof" and data.startswith(b"HTTP/1.1 431"), (how, data[:120]))
        body = 3 << 20
        head = (start + f"Content-Length: {body}\r\n\r\n").encode() + b"x" * (1 << 20)
        how, data = raw_exchange(s, head, b"x" * (body - (1 << 20)))
        ok("http: a 3 MiB body is answered 413, not reset", how == "eof" and data.startswith(b"HTTP/1.1 413"), (how, data[:120]))
        ok("http: the 413 closes the connection", b"\r\nconnection: close\r\n" in data.lower(), data[:300])
        # A keep-alive client sending oversized bodies one after the other
        # gets every 413: none is lost to a connection the server closed.
        statuses = []
        conn = http.client.HTTPConnection(s.host, s.port, timeout=30)
        for _ in range(20):
            try:
                conn.request("POST", "/mcp", body=b"x" * (3 << 20), headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
                r = conn.getresponse()
                r.read()
                statuses.append(r.status)
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
            except OSError as e:
                statuses.append(repr(e))
                conn.close()
        conn.close()
        ok("http: 20 oversized bodies on one client, 20 answers 413", statuses == [413] * 20, statuses)
    finally:
        s.close()


async def http_session_close(binary: str, tmp: Path) -> None:
    """A legacy session closed by the SDK: DELETE answers 204 and the SDK logs nothing."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("mcp.client.streamable_http")
    handler = Keep(level=logging.DEBUG)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    s = Server(binary, "127.0.0.1:0", ["--db", str(SEED)], tmp / "close.log")
    try:
        async with Client(streamable_http_client(s.url), mode="legacy") as c:
            await c.list_tools()
        failed = [r for r in records if "termination failed" in r.lower()]
        ok("http: the SDK closes its session without a warning", not failed, failed)
        # The same close, seen on the wire.
        conn = http.client.HTTPConnection(s.host, s.port, timeout=30)
        conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "edge", "version": "1"}}}), headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        r = conn.getresponse()
        r.read()
        sid = r.getheader("Mcp-Session-Id")
        conn.close()
        ok("http: legacy initialize opens a session", bool(sid), r.status)
        conn = http.client.HTTPConnection(s.host, s.port, timeout=30)
        conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid or "", "MCP-Protocol-Version": "2025-11-25"})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        ok("http: DELETE of a session answers 204 with no body", r.status == 204 and body == b"", (r.status, body[:100]))
        conn = http.client.HTTPConnection(s.host, s.port, timeout=30)
        conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid or "", "MCP-Protocol-Version": "2025-11-25"})
        r = conn.getresponse()
        r.read()
        conn.close()
        ok("http: a closed session is gone (404)", r.status == 404, r.status)
    finally:
        logger.removeHandler(handler)
        s.close()


async def other_loopback_address(binary: str, tmp: Path) -> None:
    """A bind on 127.0.0.2 answers clients that use that address."""
    s = Server(binary, "127.0.0.2:0", ["--db", str(SEED)], tmp / "lo2.log")
    try:
        for mode in ["legacy", "auto"]:
            try:
                async with Client(streamable_http_client(s.url), mode=mode) as c:
                    tools = await c.list_tools()
                ok(f"http 127.0.0.2 ({mode}): tools listed", len(tools.tools) > 5, len(tools.tools))
            except Exception as e:  # noqa: BLE001
                ok(f"http 127.0.0.2 ({mode}): tools listed", False, repr(e)[:300])
        status, _, data = s.post(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers={"Origin": f"http://127.0.0.2:{s.port}"})
        ok("http 127.0.0.2: its own origin is not refused", status != 403, (status, data[:200]))
        status, _, data = s.post(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers={"Origin": "http://127.0.0.3:1"})
        ok("http 127.0.0.2: another origin is refused", status == 403, (status, data[:200]))
    finally:
        s.close()


async def sessions_and_databases(binary: str, lib: Path, tmp: Path) -> None:
    """open_database holds in a session, and is refused (with the way out) without one."""
    s = Server(binary, "127.0.0.1:0", ["--db", str(lib / SEED.name)], tmp / "db.log")
    try:
        async with Client(streamable_http_client(s.url), mode="legacy") as c:
            r = await c.call_tool("open_database", {"path": OTHER.name})
            ok("http legacy: open_database", not r.is_error, r.content)
            r = await c.call_tool("explain", {})
            path = ((r.structured_content or {}).get("capture") or {}).get("path", "")
            ok("http legacy: the next call reads the opened database", path.endswith(OTHER.name), path)
        async with Client(streamable_http_client(s.url), mode="2026-07-28") as c:
            r = await c.call_tool("open_database", {"path": OTHER.name})
            text = " ".join(getattr(b, "text", "") for b in r.content)
            ok("http 2026-07-28: open_database refused, naming db=", r.is_error and "db=" in text, text[:300])
            r = await c.call_tool("explain", {"db": OTHER.name})
            path = ((r.structured_content or {}).get("capture") or {}).get("path", "")
            ok("http 2026-07-28: db= reads the other database", path.endswith(OTHER.name), path)
    finally:
        s.close()
    params = StdioServerParameters(command=binary, args=["mcp", "--db", str(lib / SEED.name)])
    for mode in ["legacy", "2026-07-28"]:
        async with Client(params, mode=mode) as c:
            r = await c.call_tool("open_database", {"path": OTHER.name})
            ok(f"stdio {mode}: open_database", not r.is_error, r.content)
            r = await c.call_tool("explain", {})
            path = ((r.structured_content or {}).get("capture") or {}).get("path", "")
            ok(f"stdio {mode}: the next call reads the opened database", path.endswith(OTHER.name), path)
            r = await c.call_tool("run_sql", {"sql": "WITH t AS (SELECT 1 UNION ALL SELECT 2) SELECT count(*) AS n FROM t"})
            rows = (r.structured_content or {}).get("rows")
            ok(f"stdio {mode}: run_sql with a CTE", not r.is_error and rows == [[2]], (r.content, rows))
            done = await c.complete(PromptReference(type="ref/prompt", name="investigate"), {"name": "db", "value": "pytorch"})
            ok(f"stdio {mode}: completion of the db argument lists the folder's databases", sorted(done.completion.values) == sorted([SEED.name, OTHER.name]), done.completion.values)
            done = await c.complete(PromptReference(type="ref/prompt", name="compare_runs"), {"name": "baseline", "value": "nothing-like-this"})
            ok(f"stdio {mode}: completion with no match is empty", done.completion.values == [], done.completion.values)


def stdio_lines(binary: str) -> None:
    """Raw lines on stdio: each malformed line gets an error reply, and the session goes on."""
    proc = subprocess.Popen([binary, "mcp", "--db", str(SEED)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    assert proc.stdin and proc.stdout

    def send(line: str) -> dict:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        reply = proc.stdout.readline()
        return json.loads(reply) if reply else {}

    try:
        r = send("{this is not json")
        ok("stdio: a malformed line gets -32700 with id null", r.get("error", {}).get("code") == -32700 and r.get("id", "missing") is None, r)
        r = send('{"id": 5, "params": 1}')
        ok("stdio: a line that is not JSON-RPC gets -32600 with its id", r.get("error", {}).get("code") == -32600 and r.get("id") == 5, r)
        r = send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}))
        ok("stdio: initialize still answered after bad lines", r.get("id") == 1 and "result" in r, r)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        r = send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        ok("stdio: tools/list answered", r.get("id") == 2 and len(r.get("result", {}).get("tools", [])) > 5, str(r)[:200])
        r = send("[]")
        ok("stdio: an empty batch gets -32600", r.get("error", {}).get("code") == -32600, r)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    ok("stdio: closing stdin ends the server cleanly", proc.returncode == 0, proc.returncode)


def start_up(binary: str, tmp: Path) -> None:
    """Start-up refusals and a strong token on a public bind."""
    env = {k: v for k, v in os.environ.items() if k != "INGERO_TOKEN"}
    for args, why in [([], "no token"), (["--token", "a"], "weak token"), (["--token", "x" * 40], "weak token")]:
        out = subprocess.run([binary, "mcp", "--http", "0.0.0.0:0", "--db", str(SEED), *args], capture_output=True, text=True, timeout=30, env=env, stdin=subprocess.DEVNULL)
        ok(f"start: 0.0.0.0 with {why} exits 2", out.returncode == 2 and "token" in out.stderr, (out.returncode, out.stderr[-300:]))
    out = subprocess.run([binary, "mcp", "--sql-timeout", "0", "--db", str(SEED)], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    ok("start: a bad --sql-timeout exits 2", out.returncode == 2, (out.returncode, out.stderr[-200:]))
    token = "Zm9yIHRlc3RzIG9ubHk6IGEgc3Ryb25nIHRva2Vu"
    s = Server(binary, "0.0.0.0:0", ["--db", str(SEED)], tmp / "public.log", env={"INGERO_TOKEN": token})
    try:
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        conn.request("POST", "/mcp", body='{"jsonrpc":"2.0","id":1,"method":"ping"}', headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        r = conn.getresponse()
        r.read()
        ok("start: a public bind with a strong token refuses a request without it (401)", r.status == 401, r.status)
    finally:
        s.close()


def bundled_from_elsewhere(binary: str, tmp: Path) -> None:
    """The example's stdio entry (`ingero mcp`, no --db) works from any directory."""
    cfg = json.loads((REPO / "mcp-config.example.json").read_text())["mcpServers"]
    stdio_entry = cfg["ingero"]
    ok("example: the stdio entry needs no --db", "--db" not in stdio_entry["args"], stdio_entry)
    ok("example: the http entry carries no token the README's command does not set", "headers" not in cfg["ingero-http"], cfg["ingero-http"])
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()

    async def run() -> None:
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}
        params = StdioServerParameters(command=binary, args=stdio_entry["args"], cwd=str(elsewhere), env=env)
        async with Client(params, mode="legacy") as c:
            r = await c.call_tool("get_trace_stats", {})
            ok("example: stdio entry from another directory serves the bundled investigation", not r.is_error, str(r.content)[:200])

    anyio.run(run)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    a = ap.parse_args()
    binary = str(Path(a.bin).resolve())
    with tempfile.TemporaryDirectory(prefix="ingero-edge-") as t:
        tmp = Path(t)
        lib = tmp / "lib"
        lib.mkdir()
        shutil.copy(SEED, lib / SEED.name)
        shutil.copy(OTHER, lib / OTHER.name)
        http_bodies(binary, tmp)
        http_refusals_reach_the_client(binary, tmp)
        anyio.run(http_session_close, binary, tmp)
        anyio.run(other_loopback_address, binary, tmp)
        anyio.run(sessions_and_databases, binary, lib, tmp)
        stdio_lines(binary)
        start_up(binary, tmp)
        bundled_from_elsewhere(binary, tmp)
    print(f"{PASSED} passed, {len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
