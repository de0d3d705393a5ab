"""Model mode: a real language model investigates through the MCP tools.

The tools the server lists (capture tools left out) are offered as
function-calling tools; each call the model makes is proxied to the MCP
server and its result sent back, until the model answers in prose.
Configured by environment only; nothing here pretends to be a model.
"""

from __future__ import annotations

import json
import os
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
class Transcript:
    """The model's final answer and the tool calls it made on the way."""

    answer: str = ""
    calls: list[str] = field(default_factory=list)
    error: str | None = None


def function_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """MCP tool definitions as function-calling tools (capture tools left out)."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema}}
        for t in tools
        if t.name not in CAPTURE_TOOLS
    ]


def _chat(ep: Endpoint, messages: list[dict[str, Any]], tools: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
    """One chat turn; returns the assistant message in OpenAI shape."""
    if ep.kind == "openai":
        body = {"model": ep.model, "messages": messages, "tools": tools, "temperature": 0}
        reply = _post(f"{ep.url}/chat/completions", body, ep.key, timeout)
        try:
            return reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as e:
            raise ModelError(f"unexpected reply: {str(reply)[:300]}") from e
    body = {"model": ep.model, "messages": messages, "tools": tools, "stream": False, "options": {"temperature": 0}}
    reply = _post(f"{ep.url}/api/chat", body, None, timeout)
    msg = reply.get("message")
    if not isinstance(msg, dict):
        raise ModelError(f"unexpected reply: {str(reply)[:300]}")
    return msg


def _tool_calls(ep: Endpoint, msg: dict[str, Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    """(call id, tool name, arguments) of each call in an assistant message."""
    calls = []
    for c in msg.get("tool_calls") or []:
        fn = c.get("function", {})
        args = fn.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except json.JSONDecodeError:
                args = {"_unparsed": args}
        calls.append((c.get("id"), fn.get("name", ""), args if isinstance(args, dict) else {}))
    return calls


async def run_model(ep: Endpoint, client: Client, tools: list[dict[str, Any]], prompt: str, question: str,
                    max_turns: int, max_tool_chars: int, timeout: float) -> Transcript:
    """Lets the model investigate with the tools until it answers in prose."""
    out = Transcript()
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"{prompt}\n\nQuestion: {question}"}]
    for _ in range(max_turns):
        try:
            msg = _chat(ep, messages, tools, timeout)
        except ModelError as e:
            out.error = str(e)
            return out
        calls = _tool_calls(ep, msg)
        if not calls:
            out.answer = msg.get("content") or ""
            return out
        messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")})
        for call_id, name, args in calls:
            out.calls.append(name)
            r = await client.call_tool(name, args)
            body = json.dumps(r.structured_content) if r.structured_content is not None else text_of(r)
            if r.is_error:
                body = f"error: {text_of(r)}"
            reply: dict[str, Any] = {"role": "tool", "content": body[:max_tool_chars]}
            if ep.kind == "openai":
                reply["tool_call_id"] = call_id or name
            else:
                reply["tool_name"] = name
            messages.append(reply)
    out.error = f"no final answer after {max_turns} turns"
    return out
