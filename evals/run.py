#!/usr/bin/env python3
"""Evaluation harness for `ingero mcp`: does an investigation reach the right answer?

Tool mode (always): for every case in evals/cases/, gets the `investigate`
prompt from the server, calls the tools it names in order, and checks that
their outputs carry every required fact and no forbidden claim.

Model mode (only when a model is configured, see ingero_eval/model.py): a
real model investigates through the same tools; its answer is graded
against the same facts.

Usage: run.py --bin PATH_TO_INGERO [--case ID ...] [--mode auto|tool|model]
              [--json FILE|-] [--keep DIR]
Exit status 0 when every case passes in every mode that ran, 1 when one
fails, 2 on a setup error.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingero_eval.answer import grade  # noqa: E402
from ingero_eval.cases import Case, CaseError, load_cases  # noqa: E402
from ingero_eval.facts import check  # noqa: E402
from ingero_eval.model import Endpoint, Limits, endpoint_from_env, function_tools, run_model  # noqa: E402
from ingero_eval.report import case_passed, model_table, tool_table  # noqa: E402
from ingero_eval.session import SetupError, connect, follow_prompt, investigate_prompt, place_case, release_case  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def tool_case(case: Case, inv: Any) -> dict[str, Any]:
    """Tool-mode result of one case: a row per fact."""
    facts = []
    for kind, group in (("must", case.must), ("must_not", case.must_not)):
        for fact in group:
            needed = "run_sql" if fact.check == "sql" else fact.tool
            if needed not in inv.steps:
                carried, where, detail = False, needed, f"the investigate prompt does not name {needed}"
            else:
                v = check(fact, inv.outputs)
                carried, where, detail = v.carried, v.where, v.detail
                err = inv.errors.get(fact.tool)
                if err and not carried:
                    detail = f"{detail}; {fact.tool} failed: {err}"
            passed = carried if kind == "must" else not carried
            facts.append({"fact": fact.text, "kind": kind, "passed": passed, "where": where, "detail": detail})
    return {"id": case.id, "db": case.db_name, "question": case.question, "steps": inv.steps, "facts": facts}


async def run_case(args: argparse.Namespace, case: Case, library: Path, ep: Endpoint | None,
                   report: dict[str, Any]) -> None:
    """Serves one case's database from a server of its own, runs tool mode and
    (when configured) model mode on it, and adds the rows to `report`."""
    async with connect(args.bin, library, case.db_name) as client:
        listed = (await client.list_tools()).tools
        if args.mode in ("auto", "tool"):
            try:
                inv = await follow_prompt(client, case, {t.name for t in listed})
                report["tool_mode"].append(tool_case(case, inv))
            except Exception as e:  # a broken case must not hide the others
                report["tool_mode"].append({"id": case.id, "db": case.db_name, "facts": [], "error": f"{type(e).__name__}: {e}"})
        if ep is not None:
            limits = Limits(args.max_turns, args.max_tool_chars, args.max_tokens, args.timeout, args.case_budget,
                            args.tool_content)
            prompt = await investigate_prompt(client, case)
            t = await run_model(ep, client, function_tools(listed), prompt, case.question, limits)
            report["model_mode"]["limits"] = vars(limits)
            report["model_mode"]["cases"].append({
                "id": case.id, "db": case.db_name, "question": case.question, "calls": t.calls, "answer": t.answer,
                "error": t.error, "facts": grade(case.must, case.must_not, t.answer, t.results, len(t.calls))})
            print(f"model: {case.id}: {len(t.calls)} tool calls{', ' + t.error if t.error else ''}", file=sys.stderr, flush=True)


async def run_all(args: argparse.Namespace, cases: list[Case], library: Path, ep: Endpoint | None) -> dict[str, Any]:
    """Runs every case in turn: its database is placed, served, checked in
    tool mode and then in model mode when configured, and removed again
    (unless `--keep`), so that one unpacked recording is on disk at a time."""
    report: dict[str, Any] = {"tool_mode": [], "model_mode": None}
    if ep is not None:
        report["model_mode"] = {"model": ep.describe(), "limits": {}, "cases": []}
    for case in cases:
        dbs = place_case(case, args.bin, library)
        try:
            await run_case(args, case, library, ep, report)
        finally:
            if not args.keep:
                for db in dbs:
                    release_case(db)
    return report


def main() -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="path to the ingero binary")
    ap.add_argument("--cases", type=Path, default=HERE / "cases", help="folder of case files")
    ap.add_argument("--case", action="append", help="run only this case id (repeatable)")
    ap.add_argument("--mode", choices=["auto", "tool", "model"], default="auto",
                    help="auto: tool mode, plus model mode when a model is configured")
    ap.add_argument("--json", help="write the JSON report to this file (- for stdout)")
    ap.add_argument("--keep", type=Path, help="build the served databases in this folder and keep them")
    ap.add_argument("--max-turns", type=int, default=16, help="model mode: most chat turns per case")
    ap.add_argument("--max-tool-chars", type=int, default=24000, help="model mode: longest tool result sent back")
    ap.add_argument("--timeout", type=float, default=300, help="model mode: seconds per chat request")
    ap.add_argument("--max-tokens", type=int, default=1024, help="model mode: most tokens the model may write per request")
    ap.add_argument("--case-budget", type=float, default=900, help="model mode: seconds for one whole case")
    ap.add_argument("--tool-content", choices=["text", "json"], default="text",
                    help="model mode: the model reads each tool's text content or its JSON")
    args = ap.parse_args()

    try:
        cases = load_cases(args.cases, REPO, args.case)
    except CaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ep, why = endpoint_from_env()
    if args.mode == "tool":
        ep = None
    elif ep is None:
        if args.mode == "model":
            print(f"error: model mode asked for, but {why}", file=sys.stderr)
            return 2
        print(f"model mode skipped: {why}", flush=True)

    with tempfile.TemporaryDirectory(prefix="ingero-eval-") as tmp:
        library = args.keep or Path(tmp) / "lib"
        try:
            report = anyio.run(run_all, args, cases, library, ep)
        except SetupError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    out = sys.stderr if args.json == "-" else sys.stdout
    if report["tool_mode"]:
        print(f"Tool mode: {len(report['tool_mode'])} cases", file=out)
        print(tool_table(report["tool_mode"]), file=out)
    if report["model_mode"]:
        print(model_table(report["model_mode"]["model"], report["model_mode"]["cases"]), file=out)
    if args.json:
        text = json.dumps(report, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    all_cases = report["tool_mode"] + (report["model_mode"]["cases"] if report["model_mode"] else [])
    return 0 if all(case_passed(c) for c in all_cases) else 1


if __name__ == "__main__":
    sys.exit(main())
