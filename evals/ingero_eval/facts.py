"""Tool mode: does a tool output carry a fact?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cases import Fact
from .paths import PathError, resolve


@dataclass
class Verdict:
    """Whether the output carries the fact, where it was looked for, and what was found."""

    carried: bool
    where: str
    detail: str


def _near(got: Any, p: dict[str, Any]) -> tuple[bool, str]:
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return False, f"got {got!r}, not a number"
    want = float(p["value"])
    tol = float(p["abs_tol"]) if "abs_tol" in p else abs(want) * float(p.get("rel_tol", 0.05))
    return abs(got - want) <= tol, f"got {got:g}, want {want:g} +/- {tol:g}"


def _count(got: Any, p: dict[str, Any]) -> tuple[bool, str]:
    if not isinstance(got, list):
        return False, f"got {type(got).__name__}, not a list"
    n = len(got)
    ok = n == p["equals"] if "equals" in p else p.get("min", 0) <= n <= p.get("max", n)
    bounds = f"== {p['equals']}" if "equals" in p else f"in [{p.get('min', 0)}, {p.get('max', 'inf')}]"
    return ok, f"{n} items, want {bounds}"


def _max_by(got: Any, p: dict[str, Any]) -> tuple[bool, str]:
    items = [i for i in got if isinstance(i, dict) and isinstance(i.get(p["key"]), (int, float))] if isinstance(got, list) else []
    if not items:
        return False, "no items to rank"
    top = max(items, key=lambda i: i[p["key"]])
    return top.get(p["field"]) == p["expect"], f"largest {p['key']} is {top.get(p['field'])!r}, want {p['expect']!r}"


def _culprit_role(outputs: dict[str, Any], p: dict[str, Any]) -> tuple[bool, str]:
    chain = resolve(outputs.get("get_causal_chains"), f"chains[cause={p['cause']}]")
    procs = resolve(outputs.get("get_per_process_breakdown"), "processes")
    roles = {q["pid"]: q.get("role") for q in procs if isinstance(q, dict)}
    culprits = chain.get("culprit_pids", [])
    hits = [pid for pid in culprits if roles.get(pid) == p["role"]]
    lo, hi = p.get("min", 1), p.get("max", len(culprits))
    return lo <= len(hits) <= hi, f"{len(hits)} of {len(culprits)} culprits of {p['cause']} have role {p['role']}, want {lo}..{hi}"


def sql_key(params: dict[str, Any]) -> str:
    """Where a sql fact's `run_sql` result is kept: ``run_sql:<sql>`` on the
    case's database, ``run_sql@base:<sql>`` on a comparison's baseline."""
    on = params.get("on", "new")
    return f"run_sql:{params['sql']}" if on == "new" else f"run_sql@{on}:{params['sql']}"


def check(fact: Fact, outputs: dict[str, Any]) -> Verdict:
    """Evaluates `fact` against the tool outputs of one investigation.

    `outputs` maps a tool name to its structured result; `run_sql` results
    are keyed by [`sql_key`].
    """
    p = fact.params
    if fact.check == "culprit_role":
        where = f"get_causal_chains.chains[cause={p['cause']}].culprit_pids + get_per_process_breakdown.processes[].role"
        try:
            ok, detail = _culprit_role(outputs, p)
        except PathError as e:
            return Verdict(False, where, str(e))
        return Verdict(ok, where, detail)
    if fact.check == "sql":
        key = sql_key(p)
        where = f"run_sql({p['sql']!r}{', on the baseline' if p.get('on') == 'base' else ''}).rows[0][0]"
        out, path = outputs.get(key), "rows[0][0]"
    else:
        where = f"{fact.tool}.{p['path']}"
        out, path = outputs.get(fact.tool), p["path"]
    if out is None:
        return Verdict(False, where, f"{fact.tool} was not called or returned an error")
    try:
        got = resolve(out, path)
    except PathError as e:
        return Verdict(False, where, str(e))
    if fact.check == "equals":
        ok, detail = got == p["expect"], f"got {got!r}, want {p['expect']!r}"
    elif fact.check in ("near", "sql"):
        ok, detail = _near(got, p)
    elif fact.check == "contains":
        text = str(got).lower()
        hits = [k for k in p["any"] if k.lower() in text]
        ok, detail = bool(hits), f"found {hits}" if hits else f"none of {p['any']} in {str(got)[:120]!r}"
    elif fact.check == "count":
        ok, detail = _count(got, p)
    else:
        ok, detail = _max_by(got, p)
    return Verdict(ok, where, detail)
