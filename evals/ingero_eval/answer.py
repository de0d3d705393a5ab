"""Model mode: grading a model's prose answer against a case's facts.

Keywords match case-insensitively with `_`, `-` and spaces treated alike.
Numbers match when a quantity in the answer, of the same kind (time,
bytes, bandwidth, percent, ratio or a plain count), lies within the fact's
relative tolerance once both are in base units.
"""

from __future__ import annotations

import re
from typing import Any

from .cases import Fact

# Words that show a root-cause class in prose, used when a fact gives none.
CAUSE_WORDS: dict[str, list[str]] = {
    "host_input_pipeline": ["input pipeline", "per-sample", "collate", "data loading on the main", "host compute"],
    "dataloader_worker_contention": ["dataloader worker", "data loader worker", "worker contention", "workers compete"],
    "cpu_contention": ["cpu contention", "cpu saturat", "competing process", "busy loop", "stress-ng"],
    "pageable_memcpy": ["pageable", "pinned", "page-locked"],
    "allocation_spike": ["cudamalloc", "allocation spike", "allocator"],
    "cold_start": ["cold start", "start-up", "startup", "warm up", "warm-up", "context creation"],
}

_UNITS: dict[str, tuple[str, float]] = {
    "ns": ("time", 1e-9), "us": ("time", 1e-6), "µs": ("time", 1e-6), "μs": ("time", 1e-6),
    "ms": ("time", 1e-3), "s": ("time", 1.0), "sec": ("time", 1.0), "secs": ("time", 1.0), "seconds": ("time", 1.0),
    "b": ("bytes", 1.0), "kib": ("bytes", 2.0**10), "mib": ("bytes", 2.0**20), "gib": ("bytes", 2.0**30),
    "kb": ("bytes", 1e3), "mb": ("bytes", 1e6), "gb": ("bytes", 1e9),
    "%": ("percent", 1.0), "percent": ("percent", 1.0), "x": ("ratio", 1.0), "×": ("ratio", 1.0), "": ("count", 1.0),
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS if u), key=len, reverse=True))
_QTY = re.compile(rf"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*(?:({_UNIT_RE})(/s)?(?![A-Za-z]))?", re.I)


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.lower())


def unit_kind(unit: str) -> tuple[str, float]:
    """(kind, factor to base units) of a unit such as ``ms`` or ``GB/s``."""
    u = unit.lower()
    per_s = u.endswith("/s")
    kind, f = _UNITS[u[:-2] if per_s else u]
    return ("bandwidth" if per_s else kind), f


def quantities(text: str) -> list[tuple[str, float]]:
    """Every (kind, value in base units) quantity written in `text`."""
    found = []
    for m in _QTY.finditer(text):
        num = float(m.group(1).replace(",", ""))
        unit = (m.group(2) or "") + (m.group(3) or "")
        kind, f = unit_kind(unit)
        found.append((kind, num * f))
    return found


def says_number(text: str, spec: dict[str, Any]) -> bool:
    """Whether `text` states the quantity `spec` (value, unit, rel_tol)."""
    kind, f = unit_kind(spec["unit"])
    want = float(spec["value"]) * f
    tol = abs(want) * float(spec.get("rel_tol", 0.05))
    return any(k == kind and abs(v - want) <= tol for k, v in quantities(text))


def root_cause_section(answer: str) -> str:
    """The answer's "Root cause" paragraph, or the whole answer without one."""
    m = re.search(r"root cause\**\s*[:\-]\s*(.+?)(?:\n\s*[-*]\s*\*\*|\n\s*\n|\Z)", answer, re.I | re.S)
    return m.group(1) if m else answer


def _words(fact: Fact) -> list[str]:
    if fact.say_any:
        return fact.say_any
    expect = fact.params.get("expect") or fact.params.get("cause")
    return CAUSE_WORDS.get(str(expect), [str(expect)] if expect else [])


def shows(fact: Fact, text: str) -> tuple[bool, str]:
    """Whether `text` shows the fact; with what evidence or what is missing."""
    t = _norm(text)
    parts: list[str] = []
    words = _words(fact)
    if words:
        hits = [w for w in words if _norm(w) in t]
        if not hits:
            return False, f"none of {words}"
        parts.append(f"said {hits[0]!r}")
    missing = [w for w in fact.say_all if _norm(w) not in t]
    if missing:
        return False, f"missing {missing}"
    if fact.say_number:
        spec = fact.say_number
        if not says_number(text, spec):
            return False, f"no {spec['value']} {spec['unit']} (+/- {float(spec.get('rel_tol', 0.05)):.0%})"
        parts.append(f"{spec['value']} {spec['unit']}")
    if not parts and not fact.say_all:
        return False, "fact has no answer-side spec"
    return True, ", ".join(parts) or "all words present"


def grade(facts: list[Fact], forbidden: list[Fact], answer: str) -> list[dict[str, Any]]:
    """Per-fact results for a model answer. A forbidden cause is looked for
    in the root-cause paragraph only, so "not CPU contention" elsewhere in a
    careful answer is not held against it; a forbidden figure is looked for
    on every line of the answer (words and number on the same line)."""
    rows = []
    for f in facts:
        ok, detail = shows(f, answer)
        rows.append({"fact": f.text, "kind": "must", "passed": ok, "detail": detail})
    cause = root_cause_section(answer)
    for f in forbidden:
        spans = answer.splitlines() if f.say_number else [cause]
        hits = [shows(f, s) for s in spans]
        claimed, detail = next((h for h in hits if h[0]), (False, ""))
        rows.append({"fact": f.text, "kind": "must_not", "passed": not claimed, "detail": detail if claimed else "not claimed"})
    return rows
