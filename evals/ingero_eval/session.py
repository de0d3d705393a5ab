"""The served folder of databases and the MCP client session to `ingero mcp`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

from mcp import Client, StdioServerParameters

from .cases import Case
from .packed import place

# Capture tools read or change the machine, not a database; they are never
# offered or called here.
CAPTURE_TOOLS = {"list_gpu_processes", "start_trace", "stop_trace", "get_trace_status"}
# Arguments the tool-mode investigation passes beyond `db`: the whole chain
# report, since facts may sit in any finding's evidence.
EXTRA_ARGS: dict[str, dict[str, Any]] = {"get_events": {"limit": 20}, "get_causal_chains": {"detail": "full"}}


class SetupError(RuntimeError):
    """The databases or the server could not be prepared."""


def place_case(case: Case, binary: str, folder: Path) -> Path:
    """Puts one case's database into `folder` (a demo scenario is generated
    there; a packed recording is unpacked) and returns its path. The server is
    confined to `folder`. A file already there is kept (`--keep` reruns)."""
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / case.db_name
    if dest.exists():
        return dest
    if case.demo:
        out = subprocess.run([binary, "demo", case.demo, "--db", str(dest)], capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise SetupError(f"ingero demo {case.demo}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    else:
        assert case.db is not None
        try:
            place(case.db, dest)
        except OSError as e:
            free = shutil.disk_usage(folder).free // (1 << 20)
            raise SetupError(f"{case.id}: cannot copy {case.db} into {folder} ({free} MiB free there): {e}") from e
    return dest


def release_case(db: Path) -> None:
    """Removes a case's served database and its SQLite side files, so that
    the disk holds one unpacked recording at a time."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def text_of(result: Any) -> str:
    """The text content of a tool or prompt result."""
    return "\n".join(getattr(c, "text", "") for c in result.content)


@asynccontextmanager
async def connect(binary: str, library: Path, first_db: str) -> AsyncIterator[Client]:
    """An MCP client session with `ingero mcp` over stdio, serving `library`."""
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--db", str(library / first_db), "--allow-dir", str(library)],
        env={**os.environ, "INGERO_LOG": os.environ.get("INGERO_LOG", "ingero=warn")},
    )
    async with Client(params, read_timeout_seconds=300) as client:
        yield client


@dataclass
class Investigation:
    """What one tool-mode investigation saw: the prompt, the tool order it
    named, and each tool's structured output (or error)."""

    prompt: str
    steps: list[str]
    outputs: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


async def investigate_prompt(client: Client, case: Case) -> str:
    """The `investigate` prompt filled in for this case's database and question."""
    p = await client.get_prompt("investigate", {"db": case.db_name, "focus": case.question})
    return "\n".join(getattr(m.content, "text", "") for m in p.messages)


def named_tools(prompt: str, available: set[str]) -> list[str]:
    """Tools the prompt names in backticks, in the order it first names them."""
    seen: list[str] = []
    for name in re.findall(r"`([a-z_]+)`", prompt):
        if name in available and name not in CAPTURE_TOOLS and name not in seen:
            seen.append(name)
    return seen


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[Any, str | None]:
    """Calls a tool; returns (structured output, None) or (None, error text)."""
    r = await client.call_tool(tool, args)
    if r.is_error:
        return None, text_of(r)[:500]
    if r.structured_content is None:
        try:
            return json.loads(text_of(r)), None
        except json.JSONDecodeError:
            return None, "no structured content"
    return r.structured_content, None


async def follow_prompt(client: Client, case: Case, available: set[str]) -> Investigation:
    """Tool mode: gets the prompt and calls, in order, every tool it names
    (run_sql only with the queries the case's facts ask for)."""
    prompt = await investigate_prompt(client, case)
    inv = Investigation(prompt, named_tools(prompt, available))
    for tool in inv.steps:
        if tool == "run_sql":
            continue
        out, err = await call(client, tool, {"db": case.db_name, **EXTRA_ARGS.get(tool, {})})
        if err is None:
            inv.outputs[tool] = out
        else:
            inv.errors[tool] = err
    if "run_sql" in inv.steps:
        for fact in case.must + case.must_not:
            if fact.check == "sql":
                sql = fact.params["sql"]
                out, err = await call(client, "run_sql", {"db": case.db_name, "sql": sql})
                if err is None:
                    inv.outputs[f"run_sql:{sql}"] = out
                else:
                    inv.errors[f"run_sql:{sql}"] = err
    return inv
