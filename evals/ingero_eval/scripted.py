"""A scripted stand-in for a model: an OpenAI-compatible chat server on
loopback that replays given turns, so every path of model mode (tool calls,
an unknown tool, a loop, an answer after no call, a slow reply) is tested
without a real model.

A script is a list of turns; the server picks the script whose key occurs in
the conversation's first user message (the prompt and question), and the
turn by how many assistant messages the conversation already holds. Past the
end, the last turn repeats (a script ending in a tool call loops). A turn is
one of:

- ``{"tool_calls": [{"name": "get_causal_chains", "arguments": {...}}]}``
- ``{"content": "the answer in prose"}``
- either of them with ``"delay": seconds`` before the reply.

Every request body is kept in ``requests`` for the test to inspect.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = dict[str, Any]


class ScriptedModel:
    """The stand-in server; use as a context manager."""

    def __init__(self, scripts: dict[str, list[Turn]]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL to give as INGERO_EVAL_OPENAI_BASE_URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ScriptedModel":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def reply(self, body: dict[str, Any]) -> tuple[Turn, dict[str, Any]]:
        """The turn for one request and the chat-completions reply built from it."""
        with self._lock:
            self.requests.append(body)
        messages = body.get("messages") or []
        first = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        script = next((turns for key, turns in self.scripts.items() if key in first), None)
        if not script:
            turn: Turn = {"content": "no script matches this conversation"}
        else:
            done = sum(1 for m in messages if m.get("role") == "assistant")
            turn = script[min(done, len(script) - 1)]
        message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
        if "tool_calls" in turn:
            done = sum(1 for m in messages if m.get("role") == "assistant")
            message["tool_calls"] = [
                {"id": f"call-{done}-{i}", "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
                for i, c in enumerate(turn["tool_calls"])
            ]
        finish = "tool_calls" if "tool_calls" in turn else "stop"
        return turn, {"id": "scripted", "object": "chat.completion", "model": body.get("model", "scripted"),
                      "choices": [{"index": 0, "message": message, "finish_reason": finish}]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = json.loads(self.rfile.read(length) or b"{}")
                except (ValueError, json.JSONDecodeError):
                    self.send_error(400)
                    return
                turn, reply = model.reply(body)
                if turn.get("delay"):
                    time.sleep(float(turn["delay"]))
                data = json.dumps(reply).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its time budget): nothing to answer

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
