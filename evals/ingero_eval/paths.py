"""A small path language to point into a tool's structured output.

``chains[0].cause``, ``ops[op=cudaMemcpyAsync].p99_ns`` (first item whose
``op`` is that value), ``processes[*role=dataloader_worker]`` (every such
item, as a list) and ``gpu_idle[0].causes.host_compute_ns``.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?((?:\[[^\]]*\])*)$")
_BRACKET = re.compile(r"\[([^\]]*)\]")


class PathError(LookupError):
    """The path does not lead to a value in this output."""


def _select(value: Any, selector: str, path: str) -> Any:
    if re.fullmatch(r"-?\d+", selector):
        if not isinstance(value, list):
            raise PathError(f"{path}: [{selector}] on a non-list")
        i = int(selector)
        if not -len(value) <= i < len(value):
            raise PathError(f"{path}: index {i} out of {len(value)} items")
        return value[i]
    every = selector.startswith("*")
    key, sep, want = selector.lstrip("*").partition("=")
    if not sep or not isinstance(value, list):
        raise PathError(f"{path}: bad selector [{selector}]")
    hits = [v for v in value if isinstance(v, dict) and str(v.get(key)) == want]
    if every:
        return hits
    if not hits:
        raise PathError(f"{path}: no item with {key}={want}")
    return hits[0]


def resolve(doc: Any, path: str) -> Any:
    """The value `path` points to in `doc`; PathError when there is none."""
    value = doc
    for part in path.split("."):
        m = _TOKEN.match(part)
        if m is None:
            raise PathError(f"{path}: cannot parse {part!r}")
        name, brackets = m.group(1), m.group(2)
        if name:
            if not isinstance(value, dict) or name not in value:
                raise PathError(f"{path}: no field {name!r}")
            value = value[name]
        for sel in _BRACKET.findall(brackets):
            value = _select(value, sel, path)
    return value
