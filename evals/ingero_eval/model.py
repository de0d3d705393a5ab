"""Model mode: a real language model investigates through the MCP tools.

The tools the server lists (capture tools left out) are offered as
function-calling tools; each call the model makes is proxied to the MCP
server and its result sent back, until the model answers in prose.
Configured by environment only (evals/scripted.py is a stand-in for tests).

Every request asks for at most `max_tokens`; one time budget covers a whole
case; a call to a tool the server does not have, or one that fails, goes
back to the model as a tool error; a long result is cut with a mark saying
so; the model reads each tool's text content or its JSON, as chosen.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from mcp import Client

from .session import CAPTURE_TOOLS, text_of


class ModelError(RuntimeError):
    """The model endpoint failed or answered something unusable."""


@dataclass
class Endpoint:
    """Where the model lives: an OpenAI-compatible API or Ollama."""

    kind: str  # "openai" or "ollama"
    url: str
    model: str
    key: str | None = None

    def describe(self) -> str:
        """Human-readable name of the endpoint and model."""
        return f"{self.model} via {self.kind} at {self.url}"


def endpoint_from_env(env: dict[str, str] | None = None) -> tuple[Endpoint | None, str]:
    """The configured endpoint, or None and why model mode is skipped."""
    env = dict(os.environ if env is None else env)
    model = env.get("INGERO_EVAL_MODEL")
    if env.get("INGERO_EVAL_OPENAI_BASE_URL"):
        if not model:
            return None, "INGERO_EVAL_OPENAI_BASE_URL is set but INGERO_EVAL_MODEL is not"
        key = env.get("INGERO_EVAL_OPENAI_API_KEY") or env.get("OPENAI_API_KEY")
        return Endpoint("openai", env["INGERO_EVAL_OPENAI_BASE_URL"].rstrip("/"), model, key), ""
    if env.get("INGERO_EVAL_OLLAMA_URL"):
        model = env.get("INGERO_EVAL_OLLAMA_MODEL") or model
        if not model:
            return None, "INGERO_EVAL_OLLAMA_URL is set but neither INGERO_EVAL_OLLAMA_MODEL nor INGERO_EVAL_MODEL is"
        return Endpoint("ollama", env["INGERO_EVAL_OLLAMA_URL"].rstrip("/"), model), ""
    return None, (
        "no model configured: set INGERO_EVAL_OPENAI_BASE_URL and INGERO_EVAL_MODEL "
        "(optionally INGERO_EVAL_OPENAI_API_KEY), or INGERO_EVAL_OLLAMA_URL and INGERO_EVAL_MODEL"
    )


def _post(url: str, body: dict[str, Any], key: str | None, timeout: float) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode())
    except urllib.error.HTTPError as e:
        raise ModelError(f"{url}: HTTP {e.code}: {e.read().decode(errors='replace')[:300]}") from e
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError, OSError) as e:
        raise ModelError(f"{url}: {e}") from e


@dataclass
class Limits:
    """Bounds and choices of one model-mode run."""

    max_turns: int = 16
    max_tool_chars: int = 24000
    max_tokens: int = 1024
    timeout: float = 300.0  # seconds per chat request
    budget: float = 900.0  # seconds per case, all requests and tool calls together
    content: str = "text"  # what the model reads of a tool result: "text" or "json"


@dataclass
class Transcript:
    """The model's final answer, each tool call it made on the way (name,
    arguments, outcome) and each tool result as the model received it."""

    answer: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    error: str | None = None


def function_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """MCP tool definitions as function-calling tools (capture tools left out)."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema}}
        for t in tools
        if t.name not in CAPTURE_TOOLS
    ]


def _chat(ep: Endpoint, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int,
          timeout: float) -> dict[str, Any]:
    """One chat turn; returns the assistant message in OpenAI shape."""
    if ep.kind == "openai":
        body = {"model": ep.model, "messages": messages, "tools": tools, "temperature": 0, "max_tokens": max_tokens}
        reply = _post(f"{ep.url}/chat/completions", body, ep.key, timeout)
        try:
            return reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as e:
            raise ModelError(f"unexpected reply: {str(reply)[:300]}") from e
    body = {"model": ep.model, "messages": messages, "tools": tools, "stream": False,
            "options": {"temperature": 0, "num_predict": max_tokens}}
    reply = _post(f"{ep.url}/api/chat", body, None, timeout)
    msg = reply.get("message")
    if not isinstance(msg, dict):
        raise ModelError(f"unexpected reply: {str(reply)[:300]}")
    return msg


def _tool_calls(msg: dict[str, Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    """(call id, tool name, arguments) of each call in an assistant message."""
    calls = []
    for c in msg.get("tool_calls") or []:
        fn = c.get("function", {}) if isinstance(c, dict) else {}
        args = fn.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except json.JSONDecodeError:
                args = {"_unparsed": args}
        calls.append((c.get("id") if isinstance(c, dict) else None, str(fn.get("name", "")),
                      args if isinstance(args, dict) else {"_unparsed": args}))
    return calls


def _content(r: Any, mode: str) -> str:
    """What the model reads of a successful tool result."""
    as_json = json.dumps(r.structured_content) if r.structured_content is not None else None
    text = text_of(r)
    if mode == "json":
        return as_json or text
    return text or as_json or ""


async def _run_tool(client: Client, known: set[str], name: str, args: dict[str, Any],
                    mode: str) -> tuple[str, str | None]:
    """(what goes back to the model, error or None) for one tool call."""
    if name not in known:
        err = f"unknown tool {name!r}; the tools are: {', '.join(sorted(known))}"
        return f"error: {err}", err
    try:
        r = await client.call_tool(name, args)
    except Exception as e:  # a failed call is the model's to read, not the end of the run
        err = f"{type(e).__name__}: {e}"
        return f"error: {err}", err
    if r.is_error:
        return f"error: {text_of(r)}", text_of(r)[:300]
    return _content(r, mode), None


async def run_model(ep: Endpoint, client: Client, tools: list[dict[str, Any]], prompt: str, question: str,
                    limits: Limits) -> Transcript:
    """Lets the model investigate with the tools until it answers in prose,
    within `limits`."""
    out = Transcript()
    known = {t["function"]["name"] for t in tools}
    deadline = time.monotonic() + limits.budget
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"{prompt}\n\nQuestion: {question}"}]
    for turn in range(limits.max_turns):
        left = deadline - time.monotonic()
        if left <= 0:
            out.error = f"time budget of {limits.budget:g} s for the case spent after {turn} turns"
            return out
        try:
            msg = _chat(ep, messages, tools, limits.max_tokens, min(limits.timeout, left))
        except ModelError as e:
            spent = time.monotonic() >= deadline - 0.05
            out.error = f"time budget of {limits.budget:g} s for the case spent: {e}" if spent else str(e)
            return out
        calls = _tool_calls(msg)
        if not calls:
            out.answer = msg.get("content") or ""
            return out
        messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")})
        for call_id, name, args in calls:
            body, err = await _run_tool(client, known, name, args, limits.content)
            full = len(body)
            if full > limits.max_tool_chars:
                body = body[: limits.max_tool_chars] + (
                    f"\n[truncated: {limits.max_tool_chars:,} of {full:,} characters shown; "
                    "ask for less (a narrower since/until, a pid, a smaller limit)]")
            out.calls.append({"name": name, "arguments": args, "error": err, "chars": full,
                              "truncated": full > limits.max_tool_chars})
            if err is None:
                out.results.append(body)
            reply: dict[str, Any] = {"role": "tool", "content": body}
            if ep.kind == "openai":
                reply["tool_call_id"] = call_id or name
            else:
                reply["tool_name"] = name
            messages.append(reply)
    out.error = f"no final answer after {limits.max_turns} turns"
    return out
