"""Grades `ingero explain` on the second zoo's recordings against their construction.

Usage: python3 grade_zoo2.py DB_DIR INGERO [--json OUT.json]

For each `zoo2-NAME.db` in DB_DIR, runs `INGERO explain --db FILE --json` and
asks: does the top finding name the cause the case built? The answer comes
from the construction only (cases.json next to this file, written before any
recording was analysed):

- the top finding names one of the case's own functions (the `expect.code`
  entries that are functions defined in zoo2.py, where the workload put the
  cause) in its summary or in its dominant code path; or
- its mechanism is one that is the constructed mechanism (the ACCEPT table
  below, by the case's `expect.mechanism`).

It also checks the rule that no first finding explains under 10% of the loop's
GPU idle time (first to last CUDA call) while 40% or more of it is explained by
no finding (a GPU-bound verdict of a GPU busy longer than the loop idled leads
by busy time instead).
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Mechanism names of the analysis that ARE the constructed mechanism
# (accept.json, shared with the tests).
ACCEPT = {
    k: set(v)
    for k, v in json.load(open(os.path.join(HERE, "accept.json")))["accept"].items()
}


def own_functions():
    src = open(os.path.join(HERE, "zoo2.py")).read()
    return set(re.findall(r"^\s*def ([A-Za-z_][A-Za-z0-9_]*)\(", src, re.M))


def cases():
    d = json.load(open(os.path.join(HERE, "cases.json")))
    return {c["name"]: c for c in (d["cases"] if isinstance(d, dict) else d)}


def grade_one(ing, path, case, functions):
    out = subprocess.run([ing, "explain", "--db", path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-300:]}
    rep = json.loads(out.stdout)["chains"]
    chains = rep.get("chains", [])
    idle = (rep.get("gpu_idle") or [{}])[0]
    whole = max(idle.get("host_wait_ns", 0), 1)
    parts = idle.get("causes", {})
    # The loop's idle: start-up before the first CUDA call and the tail after
    # the last are described (with their code) in the breakdown, not findings.
    loop = max(whole - parts.get("before_first_call_ns", 0) - parts.get("after_last_call_ns", 0), 1)
    explained = sum(c.get("explained_ns", 0) for c in chains)
    unexplained = max(whole - explained, 0) / whole
    loop_unexplained = max(loop - explained, 0) / loop
    if not chains:
        return {"top": None, "named": False, "unexplained_share": round(unexplained, 3)}
    top = chains[0]
    expect = case["expect"]
    names = [n for n in expect.get("code", []) if n in functions]
    code_text = (top.get("code") or [{}])[0].get("text", "") if top.get("code") else ""
    text = top.get("summary", "") + " " + code_text
    by_code = [n for n in names if re.search(r"\b" + re.escape(n) + r"\b", text)]
    by_mechanism = top["cause"] in ACCEPT.get(expect["mechanism"], set())
    return {
        "top": top["cause"],
        "top_summary": top.get("summary", "")[:300],
        # Of the loop's idle time, whichever whole the analysis states.
        "top_explained_share": round(top.get("explained_ns", 0) / loop, 3),
        "unexplained_share": round(unexplained, 3),
        "named": bool(by_code or by_mechanism),
        "named_by": "code" if by_code else ("mechanism" if by_mechanism else None),
        "loop_unexplained_share": round(loop_unexplained, 3),
        # A lead that explains under 10% of the idle time while 40% or more
        # of the loop's idle time is explained by no finding (a GPU-bound
        # verdict leads by busy time, not idle time).
        "misleading_lead": not (top["cause"] == "gpu_bound" and idle.get("busy_ns", 0) >= loop)
        and top.get("explained_ns", 0) / loop < 0.10
        and loop_unexplained >= 0.40,
    }


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    d, ing = sys.argv[1], sys.argv[2]
    functions = own_functions()
    table = {}
    for name, case in sorted(cases().items()):
        path = os.path.join(d, f"zoo2-{name}.db")
        if not os.path.exists(path):
            continue
        table[name] = grade_one(ing, path, case, functions)
    named = sum(1 for r in table.values() if r.get("named"))
    lead = sum(1 for r in table.values() if r.get("misleading_lead"))
    print(f"{'case':32} {'top':28} {'share':>6} {'loop-u':>6}  named")
    for name, r in table.items():
        if "error" in r:
            print(f"{name:32} ERROR {r['error']}")
            continue
        print(f"{name:32} {str(r['top']):28} {r.get('top_explained_share', 0):6.2f} "
              f"{r['loop_unexplained_share']:6.2f}  {r['named']} {r.get('named_by') or ''}"
              f"{'  MISLEADING LEAD' if r.get('misleading_lead') else ''}")
    print(f"named the constructed cause: {named} of {len(table)}; misleading leads: {lead}")
    if "--json" in sys.argv:
        json.dump(table, open(sys.argv[sys.argv.index("--json") + 1], "w"), indent=1)


if __name__ == "__main__":
    main()
