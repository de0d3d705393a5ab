"""Readable tables and the JSON report."""

from __future__ import annotations

from typing import Any


def case_passed(case: dict[str, Any]) -> bool:
    """A case passes when every one of its facts does."""
    return not case.get("error") and all(f["passed"] for f in case["facts"])


def tool_table(cases: list[dict[str, Any]]) -> str:
    """Per-case summary of tool mode, then every failing fact with where it was looked for."""
    lines = [f"{'case':34} {'database':42} {'must':>6} {'must_not':>8}  result", "-" * 100]
    for c in cases:
        must = [f for f in c["facts"] if f["kind"] == "must"]
        nots = [f for f in c["facts"] if f["kind"] == "must_not"]
        m = f"{sum(f['passed'] for f in must)}/{len(must)}"
        n = f"{sum(f['passed'] for f in nots)}/{len(nots)}"
        lines.append(f"{c['id'][:34]:34} {c['db'][:42]:42} {m:>6} {n:>8}  {'PASS' if case_passed(c) else 'FAIL'}")
    failures = [(c, f) for c in cases for f in c["facts"] if not f["passed"]]
    failures += [(c, {"kind": "error", "fact": c["error"], "where": "", "detail": ""}) for c in cases if c.get("error")]
    if failures:
        lines.append("")
        lines.append("Failures:")
        for c, f in failures:
            verb = {"must": "missing", "must_not": "forbidden claim carried", "error": "error"}[f["kind"]]
            lines.append(f"  {c['id']}: {verb}: {f['fact']}")
            if f.get("where"):
                lines.append(f"      looked in {f['where']}: {f['detail']}")
    return "\n".join(lines)


def model_table(model: str, cases: list[dict[str, Any]]) -> str:
    """Scored table of model mode: facts shown, forbidden claims avoided, tool calls."""
    lines = [f"Model: {model}", f"{'case':34} {'score':>7} {'must':>6} {'must_not':>8} {'calls':>5}  result", "-" * 80]
    total = got = 0
    for c in cases:
        facts = c["facts"]
        must = [f for f in facts if f["kind"] == "must"]
        nots = [f for f in facts if f["kind"] == "must_not"]
        ok = sum(f["passed"] for f in facts)
        total += len(facts)
        got += ok
        score = f"{ok / len(facts):.0%}" if facts else "-"
        m = f"{sum(f['passed'] for f in must)}/{len(must)}"
        n = f"{sum(f['passed'] for f in nots)}/{len(nots)}"
        verdict = "PASS" if case_passed(c) else "FAIL"
        lines.append(f"{c['id'][:34]:34} {score:>7} {m:>6} {n:>8} {len(c.get('calls', [])):>5}  {verdict}")
        ungraded = [f for f in facts if f.get("ungraded")]
        if ungraded:
            lines.append(f"    all {len(facts)} facts scored 0: {ungraded[0]['detail']}")
        for f in facts:
            if not f["passed"] and not f.get("ungraded"):
                lines.append(f"    {'missing' if f['kind'] == 'must' else 'claimed'}: {f['fact']} ({f['detail']})")
        if c.get("error"):
            lines.append(f"    error: {c['error']}")
    lines.append("-" * 80)
    lines.append(f"overall {got}/{total} facts ({got / total:.0%})" if total else "no facts graded")
    return "\n".join(lines)
