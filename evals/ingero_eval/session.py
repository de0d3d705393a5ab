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
from .facts import sql_key
from .packed import place

# Capture tools read or change the machine, not a database; they are never
# offered or called here.
CAPTURE_TOOLS = {"list_gpu_processes", "start_trace", "stop_trace", "get_trace_status"}
# Arguments the tool-mode investigation passes beyond `db`: the whole chain
# report, since facts may sit in any finding's evidence.
EXTRA_ARGS: dict[str, dict[str, Any]] = {"get_events": {"limit": 20}, "get_causal_chains": {"detail": "full"}}


class SetupError(RuntimeError):
    """The databases or the server could not be prepared."""


def place_case(case: Case, binary: str, folder: Path) -> list[Path]:
    """Puts one case's databases (its own, and a comparison's baseline) into
    `folder` (a demo scenario is generated there; a packed recording is
    unpacked) and returns their paths. The server is confined to `folder`.
    A file already there is kept (`--keep` reruns)."""
    folder.mkdir(parents=True, exist_ok=True)
    placed = [_place_one(case, case.db, case.demo, case.db_name, binary, folder)]
    if case.base_name is not None:
        placed.append(_place_one(case, case.base, case.base_demo, case.base_name, binary, folder))
    return placed


def _place_one(case: Case, db: Path | None, demo: str | None, name: str, binary: str, folder: Path) -> Path:
    dest = folder / name
    if dest.exists():
        return dest
    if demo:
        out = subprocess.run([binary, "demo", demo, "--db", str(dest)], capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise SetupError(f"ingero demo {demo}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
    else:
        assert db is not None
        try:
            place(db, dest)
        except OSError as e:
            free = shutil.disk_usage(folder).free // (1 << 20)
            raise SetupError(f"{case.id}: cannot copy {db} into {folder} ({free} MiB free there): {e}") from e
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
    """The prompt an investigation of this case follows: `investigate` filled
    in for its database and question, or for a comparison case
    `compare_runs` with its baseline and its database."""
    if case.base_name is not None:
        p = await client.get_prompt("compare_runs", {"baseline": case.base_name, "candidate": case.db_name})
    else:
        p = await client.get_prompt("investigate", {"db": case.db_name, "focus": case.question})
    return "\n".join(getattr(m.content, "text", "") for m in p.messages)


def tool_args(case: Case, tool: str) -> dict[str, Any]:
    """The arguments tool mode calls `tool` with for this case: its database
    and [`EXTRA_ARGS`]; in a comparison case `compare_runs` gets both runs
    (every table), and `get_causal_chains` the baseline to compare with."""
    args: dict[str, Any] = {"db": case.db_name, **EXTRA_ARGS.get(tool, {})}
    if case.base_name is not None:
        if tool == "compare_runs":
            return {"base": case.base_name, "new": case.db_name, "detail": "full"}
        if tool == "get_causal_chains":
            args["compare_with"] = case.base_name
    return args


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
    (run_sql only with the queries the case's facts ask for, each on the
    run it names)."""
    prompt = await investigate_prompt(client, case)
    inv = Investigation(prompt, named_tools(prompt, available))
    for tool in inv.steps:
        if tool == "run_sql":
            continue
        out, err = await call(client, tool, tool_args(case, tool))
        if err is None:
            inv.outputs[tool] = out
        else:
            inv.errors[tool] = err
    if "run_sql" in inv.steps:
        for fact in case.must + case.must_not:
            if fact.check == "sql":
                sql, key = fact.params["sql"], sql_key(fact.params)
                db = case.base_name if fact.params.get("on") == "base" else case.db_name
                out, err = await call(client, "run_sql", {"db": db, "sql": sql})
                if err is None:
                    inv.outputs[key] = out
                else:
                    inv.errors[key] = err
    return inv
