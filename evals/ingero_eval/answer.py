"""Model mode: grading a model's prose answer against a case's facts.

Keywords match case-insensitively with `_`, `-` and spaces treated alike.
Numbers match when a quantity in the answer, of the same kind (time,
bytes, bandwidth, percent, ratio or a plain count), lies within the fact's
relative tolerance once both are in base units.

The grade cannot be had without the tools: an answer after no tool call
scores zero; a figure counts only when a tool result the model received in
that transcript carries it too; a cause counts only at the rank the answer
gives it; a mention inside a negation ("not DataLoader workers") is no claim.
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
    "gpu_bound": ["gpu bound", "gpu-bound", "the gpu is the bottleneck"],
    "launch_bound": ["launch bound", "launch-bound", "launch overhead", "tiny kernels", "small kernels"],
    "slow_workers": ["slow workers", "too few workers", "waiting on workers", "waits on its dataloader workers"],
    "sync_in_loop": ["sync in loop", "synchronisation every step", "synchronization every step", ".item()"],
    "compile_stall": ["compil", "triton", "autotun"],
}

# Words of a cause class too common to place another cause before it when
# ranking ("before the first call (start-up)" is no cold-start claim).
_INCIDENTAL = {"start-up", "startup", "pinned", "allocator", "compil", "host compute"}

# Words that turn the rest of their clause into a denial.
_NEGATION = re.compile(r"\b(not|no|isn't|aren't|wasn't|never|nor|without|rather than|instead of|ruled out|rules out|unlikely)\b")
# Where a clause starts.
_CLAUSE = re.compile(r"[.;:!?\n]|\bbut\b")

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
    """Lower case, `_`, `-` and runs of spaces as one space; line breaks kept
    (they end a clause)."""
    return re.sub(r"[ \t_\-]+", " ", text.lower())


def unit_kind(unit: str) -> tuple[str, float]:
    """(kind, factor to base units) of a unit such as ``ms`` or ``GB/s``."""
    u = unit.lower()
    per_s = u.endswith("/s")
    kind, f = _UNITS[u[:-2] if per_s else u]
    return ("bandwidth" if per_s else kind), f


def _quantities_at(text: str) -> list[tuple[str, float, int]]:
    """Every (kind, value in base units, position) quantity in `text`."""
    found = []
    for m in _QTY.finditer(text):
        num = float(m.group(1).replace(",", ""))
        unit = (m.group(2) or "") + (m.group(3) or "")
        kind, f = unit_kind(unit)
        found.append((kind, num * f, m.start()))
    return found


def quantities(text: str) -> list[tuple[str, float]]:
    """Every (kind, value in base units) quantity written in `text`."""
    return [(k, v) for k, v, _ in _quantities_at(text)]


def says_number(text: str, spec: dict[str, Any]) -> bool:
    """Whether `text` states the quantity `spec` (value, unit, rel_tol)
    outside a denial ("not 42 ms" states nothing)."""
    kind, f = unit_kind(spec["unit"])
    want = float(spec["value"]) * f
    tol = abs(want) * float(spec.get("rel_tol", 0.05))
    low = text.lower()
    return any(k == kind and abs(v - want) <= tol and not negated(low, at) for k, v, at in _quantities_at(text))


def negated(text: str, at: int) -> bool:
    """Whether the word at `at` of normalised `text` sits in a denial: a
    negation earlier in the same clause ("this is not X", "rather than X")."""
    starts = [m.end() for m in _CLAUSE.finditer(text, 0, at)]
    clause = text[(starts[-1] if starts else 0):at]
    return bool(_NEGATION.search(clause))


def first_claim(text: str, words: list[str]) -> int | None:
    """Position of the first mention of any of `words` in normalised `text`
    that is not inside a denial."""
    best = None
    for w in words:
        needle = _norm(w)
        start = 0
        while (i := text.find(needle, start)) >= 0:
            if not negated(text, i):
                best = i if best is None else min(best, i)
                break
            start = i + 1
    return best


def _words(fact: Fact) -> list[str]:
    if fact.say_any:
        return fact.say_any
    expect = fact.params.get("expect") or fact.params.get("cause")
    return CAUSE_WORDS.get(str(expect), [str(expect)] if expect else [])


def rank_of(fact: Fact) -> int | None:
    """The rank a cause fact is about (1 for `chains[0].cause`), or None."""
    m = re.fullmatch(r"chains\[(\d+)\]\.cause", str(fact.params.get("path", "")))
    return int(m.group(1)) + 1 if m and fact.check == "equals" else None


def stated_rank(fact: Fact, text: str) -> int | None:
    """The rank the answer gives the fact's cause: 1 + the number of other
    causes it claims before it (None when it does not claim it)."""
    t = _norm(text)
    mine = first_claim(t, _words(fact))
    if mine is None:
        return None
    cause = str(fact.params.get("expect"))
    earlier = 0
    for other, words in CAUSE_WORDS.items():
        if other == cause:
            continue
        at = first_claim(t, [w for w in words if w not in _INCIDENTAL])
        if at is not None and at < mine:
            earlier += 1
    return earlier + 1


def grounded(spec: dict[str, Any], results: list[str]) -> bool:
    """Whether a tool result carries the quantity `spec` (within its
    tolerance): readable (``99.1%``, ``49.38 s``) or raw (a 0..1 share, ns,
    bytes)."""
    kind, f = unit_kind(spec["unit"])
    want = float(spec["value"]) * f
    tol = abs(want) * float(spec.get("rel_tol", 0.05))
    for text in results:
        for k, v in quantities(text):
            if k == kind and abs(v - want) <= tol:
                return True
            if k != "count":
                continue
            raw = {"time": v * 1e-9, "percent": v * 100.0}.get(kind, v)
            if abs(raw - want) <= tol or (kind == "percent" and abs(v - want) <= tol):
                return True
    return False


def shows(fact: Fact, text: str, results: list[str] | None = None) -> tuple[bool, str]:
    """Whether `text` shows the fact; with what evidence or what is missing.

    With `results` (the tool results of the transcript), a figure must also
    be in one of them; a cause fact about a rank must be claimed at it."""
    t = _norm(text)
    parts: list[str] = []
    words = _words(fact)
    if words:
        at = first_claim(t, words)
        if at is None:
            return False, f"none of {words} (outside a denial)"
        parts.append(f"said {next(w for w in words if _norm(w) in t)!r}")
        rank = rank_of(fact)
        if rank is not None:
            got = stated_rank(fact, text)
            if got != rank:
                return False, f"cause stated at rank {got}, want rank {rank}"
            parts.append(f"at rank {rank}")
    missing = [w for w in fact.say_all if _norm(w) not in t]
    if missing:
        return False, f"missing {missing}"
    if fact.say_number:
        spec = fact.say_number
        if not says_number(text, spec):
            return False, f"no {spec['value']} {spec['unit']} (+/- {float(spec.get('rel_tol', 0.05)):.0%})"
        if results is not None and not grounded(spec, results):
            return False, f"{spec['value']} {spec['unit']} is in no tool result of this transcript"
        parts.append(f"{spec['value']} {spec['unit']}")
    if not parts and not fact.say_all:
        return False, "fact has no answer-side spec"
    return True, ", ".join(parts) or "all words present"


def grade(facts: list[Fact], forbidden: list[Fact], answer: str, results: list[str] | None = None,
          calls: int | None = None) -> list[dict[str, Any]]:
    """Per-fact results for a model answer.

    `results` are the tool results the model received and `calls` how many
    tool calls it made (None: grade the prose alone, as for a hand-written
    answer). No tool call, or no answer, fails every fact. A forbidden cause
    counts when claimed at the rank the fact names (or anywhere, when it
    names none), outside a denial; a forbidden figure counts on any line that
    carries its words and number outside a denial."""
    if calls == 0 or not answer.strip():
        why = "no tool call: nothing in the answer comes from the trace" if calls == 0 else "no answer"
        return [{"fact": f.text, "kind": kind, "passed": False, "detail": why, "ungraded": True}
                for kind, group in (("must", facts), ("must_not", forbidden)) for f in group]
    rows = []
    for f in facts:
        ok, detail = shows(f, answer, results)
        rows.append({"fact": f.text, "kind": "must", "passed": ok, "detail": detail})
    for f in forbidden:
        spans = answer.splitlines() if f.say_number else [answer]
        hits = [shows(f, s) for s in spans]
        claimed, detail = next((h for h in hits if h[0]), (False, ""))
        rows.append({"fact": f.text, "kind": "must_not", "passed": not claimed, "detail": detail if claimed else "not claimed"})
    return rows
